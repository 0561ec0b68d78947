// Projections: per (log, table), a function from a stored payload to the bytes a backend indexes
// (api.md §4). Projections run on one thread at a time per registration, must not block, and
// must not throw (a throw is `runner-failed`). A record a projection cannot index is
// `unindexable{reason}`: counted and removed from the index, never a fault (protocol.md §4.4).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <variant>

namespace dix {

struct unindexable {
  std::string reason;  // 1…48 characters of [A-Za-z0-9_.:-]; a code, never record content
};

struct record_info {
  std::string_view log;
  std::uint32_t table = 0;
  std::string_view record_id;
  std::uint64_t version = 0;
  std::size_t size = 0;  // stored value length (8 + payload)
};

using projection_result = std::variant<std::string, unindexable>;  // backend-encoded bytes
using projection = std::function<projection_result(std::string_view payload, const record_info&)>;

struct table_ref {
  std::string log;
  std::uint32_t table = 0;
  friend bool operator<(const table_ref& a, const table_ref& b) noexcept {
    return a.log != b.log ? a.log < b.log : a.table < b.table;
  }
  friend bool operator==(const table_ref& a, const table_ref& b) noexcept {
    return a.log == b.log && a.table == b.table;
  }
};

// The unindexable reason rule of protocol.md §4.4: valid codes pass, anything else becomes
// "invalid-reason".
std::string normalize_unindexable_reason(std::string_view reason);

}  // namespace dix
