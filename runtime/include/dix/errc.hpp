// dix error codes: one enum for every operating error the runtime reports, each documented with
// whether retrying helps. Values never change: they travel as CAF error codes between processes.
#pragma once

#include <cstdint>
#include <string_view>
#include <system_error>

namespace dix {

enum class errc : std::uint8_t {
  none = 0,                     // success
  invalid_argument = 1,         // bad call or option; the message names field and range. Retry: no
  store_format_mismatch = 2,    // store `format` record is not 1. Retry: no
  segment_layout_mismatch = 3,  // foreign readiness segment layout. Retry: no (operator)
  segment_full = 4,             // no free readiness slot. Retry: no (operator)
  cursor_invalid = 5,           // cursor violates formats.md §3. Retry: no (rebuild)
  log_corrupt = 6,              // WAL unreadable or a batch invalid. Retry: no (rebuild)
  log_retention = 7,            // a needed transaction was purged. Retry: no (rebuild)
  log_missing = 8,              // log not attached or its identity changed. Retry: no (rebuild)
  record_corrupt = 9,           // stored value invalid. Retry: no
  index_lagging = 10,           // gate refused a write / coverage deadline passed. Retry: yes, after a pause
  unavailable = 11,             // index needs-rebuild, unavailable or unknown. Retry: no, until readiness changes
  rebuilding = 12,              // index rebuilding. Retry: yes, later
  timeout = 13,                 // another deadline (remote connect/request). Retry: yes
  cancelled = 14,               // the caller cancelled. Retry: no
  stopped = 15,                 // runtime or registration stopped. Retry: no
  backend_failed = 16,          // backend failed, or its shutdown was rejected. Retry: no
  not_registered = 17,          // id not registered / no slot / no segment. Retry: no
  already_registered = 18,      // id registered in this runtime. Retry: no
  io_error = 19,                // storage or system call failed; path already open. Retry: yes (transient)
  message_invalid = 20,         // remote message malformed, oversized or of another version. Retry: no
  not_supported = 21,           // optional backend operation absent. Retry: no
};

inline constexpr std::uint8_t errc_count = 22;

// The category named "dix"; message() renders the enumerator name.
const std::error_category& dix_category() noexcept;

std::error_code make_error_code(errc e) noexcept;

// True for the codes whose operation may succeed when simply retried later.
bool is_retryable(errc e) noexcept;

// The enumerator name, e.g. "log_retention"; "unknown" for values outside the enum.
std::string_view to_string(errc e) noexcept;

}  // namespace dix

namespace std {
template <>
struct is_error_code_enum<dix::errc> : true_type {};
}  // namespace std
