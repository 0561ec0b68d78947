// What the shipped backends' queries return (backends.md §0): rows naming records
// {log, table, record_id, version}, with the coverage answer of the admission that let the query
// run (api.md §7).
#pragma once

#include <cstdint>
#include <string>

#include <dix/readiness.hpp>

namespace dix {

struct record_ref {
  std::string log;
  std::uint32_t table = 0;
  std::string record_id;
  std::uint64_t version = 0;
  friend bool operator==(const record_ref& a, const record_ref& b) noexcept {
    return a.log == b.log && a.table == b.table && a.record_id == b.record_id && a.version == b.version;
  }
};

template <class Rows>
struct query_result {
  Rows rows;
  dix::coverage coverage;  // the admission's answer
};

}  // namespace dix
