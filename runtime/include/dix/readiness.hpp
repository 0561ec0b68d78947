// Readiness ("may I serve from this index at all?") and coverage ("does it include what I
// committed?"), as any process reads them (api.md §7; formats.md §4.5 codes).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <optional>
#include <string_view>

#include <dix/result.hpp>

namespace dix {

using std::chrono::milliseconds;

enum class readiness_state : std::uint8_t { unknown, ready, rebuilding, needs_rebuild, unavailable };

// formats.md §4.5 reason codes, same numbers.
enum class readiness_reason : std::uint8_t {
  none, cursor_missing, cursor_unoffered, log_missing, log_retention, log_corrupt, reload,
  backend_failed, runner_failed, condemned, shutdown_failed, rebuild_failed, rebuild_exhausted,
  rebuild_requested, registration_changed, verify_failed };
// The highest reason code: a reader of the segment or a message takes codes up to it.
inline constexpr readiness_reason last_readiness_reason = readiness_reason::verify_failed;

// "ready", "needs-rebuild"; "log-retention", "registration-changed" (formats.md §4.5 spellings).
std::string_view to_string(readiness_state s) noexcept;
std::string_view to_string(readiness_reason r) noexcept;

// Why an owner's backend holds deliveries back, for readers in other processes (the slot's
// `hold`, docs/formats.md; decision 0013). Readers map unknown numbers to none.
enum class backend_hold : std::uint8_t {
  none = 0,
  low_disk_space = 1,  // its filesystem is below the backend's free-space reserve
  remote_unreachable = 2,  // a remote backend's index node cannot be reached (it reconnects)
};
// "none", "low-disk-space", "remote-host-unreachable"
std::string_view to_string(backend_hold h) noexcept;

// A remote backend's link to its index node (issue 28), as the owner's backend last reported it
// (backend_host::note_link): published with the owner's lag figures, so `dix status` shows it from
// any process.
struct link_figures {
  std::string address;                 // host:port; the metrics segment keeps the first 24 bytes
  bool connected = false;              // a session is open
  std::uint64_t round_trip_us = 0;     // the last ping's; 0 unknown
  std::uint32_t window_batches = 0;    // sent, not yet acknowledged
  std::uint64_t window_bytes = 0;
  std::uint64_t durable_sequence = 0;  // the first log's anchor in the last durable cursor; 0 none
  std::uint64_t connects = 0;          // sessions opened so far
};

inline bool operator==(const link_figures& a, const link_figures& b) {
  return a.address == b.address && a.connected == b.connected && a.round_trip_us == b.round_trip_us
         && a.window_batches == b.window_batches && a.window_bytes == b.window_bytes
         && a.durable_sequence == b.durable_sequence && a.connects == b.connects;
}
inline bool operator!=(const link_figures& a, const link_figures& b) { return !(a == b); }

struct readiness {
  readiness_state state = readiness_state::unknown;
  readiness_reason reason = readiness_reason::none;
  std::uint32_t rebuild_attempts = 0;
  epoch_t owner_epoch = 0;
};

inline bool operator==(const readiness& a, const readiness& b) {
  return a.state == b.state && a.reason == b.reason && a.rebuild_attempts == b.rebuild_attempts
         && a.owner_epoch == b.owner_epoch;
}
inline bool operator!=(const readiness& a, const readiness& b) { return !(a == b); }

enum class coverage_state : std::uint8_t { unknown, bounded, current };

struct coverage {
  coverage_state state = coverage_state::unknown;
  milliseconds tolerance{0};
  std::optional<milliseconds> lag_upper_bound;
};

enum class coverage_kind : std::uint8_t { strict, bounded, wait };

struct coverage_mode {
  coverage_kind kind = coverage_kind::bounded;  // Default: bounded
  milliseconds tolerance{3000};                 // bounded. Default: 3000 ms
  index_time_t since = 0;                       // wait: the index time to be covered
  milliseconds timeout{0};                      // wait: ≤ max_coverage_wait
};

}  // namespace dix
