// What the shipped backends' queries return (backends.md §0): the rows, each naming a record by
// its reference and the version the index holds, and the coverage answer of the admission the
// query passed first. Plain values; std only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <dix/readiness.hpp>

namespace dix {

// A record as an index holds it: its log, table and id, and the version (header time) of the
// value it was indexed from.
struct record_ref {
  std::string log;
  std::uint32_t table = 0;
  std::string record_id;
  std::uint64_t version = 0;
  friend bool operator==(const record_ref& a, const record_ref& b) noexcept {
    return a.log == b.log && a.table == b.table && a.record_id == b.record_id && a.version == b.version;
  }
};

// A ranked row: the record and its score (the backend says what the score means and in which
// order rows come; hnsw_backend: the distance, ascending).
struct scored_ref {
  record_ref ref;
  double score = 0;
};

template <class Rows>
struct query_result {
  Rows rows;
  dix::coverage coverage;  // the admission's answer
};

// One query of any shipped backend, as backend::query takes it (issue 29; it is also what an
// index node answers, <dix/remote.hpp>): rocksdb_index_backend answers lookup and range,
// xapian_backend search, hnsw_backend knn; any other kind is not_supported.
enum class query_kind : std::uint8_t { lookup, range, search, knn };

struct index_query {
  std::string id;  // the backend id asked
  query_kind kind = query_kind::lookup;
  std::string text;  // lookup: the key; range: begin; search: the query string
  std::string end;   // range: end (exclusive)
  std::vector<float> vector;  // knn
  std::size_t limit = 10;     // rows; knn: k. 1…10 000
  std::size_t offset = 0;     // search
  std::size_t ef = 64;        // knn
  coverage_mode mode;
};

// Rows with their scores (0 for lookup and range; Xapian's weight; knn's distance) and the
// admission's coverage.
using query_rows = query_result<std::vector<scored_ref>>;

}  // namespace dix
