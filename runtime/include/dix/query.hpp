// What the shipped backends' queries return (backends.md §0): the rows, each naming a record by
// its reference and the version the index holds, and the coverage answer of the admission the
// query passed first. Plain values; std only.
#pragma once

#include <cstdint>
#include <string>

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

}  // namespace dix
