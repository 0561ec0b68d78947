// The readers' side of coverage (protocol.md §12.5, §12.6), as pure decisions: what a double
// read of a slot means for read_coverage (the time path, the owner-process `current` proof), what
// one coverage waiter's outcome is at a look, how long a waiting thread may sleep, and the
// arguments wait_for_coverage refuses. The adapters do the loads (readiness_segment.hpp); the
// watcher and the free functions drive these with the clock's `now`.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <dix/readiness.hpp>
#include <dix/result.hpp>

namespace dix {

// One double read (§12.5): `state` and `epoch` as the last read saw them (the second pair);
// `coverage_time` only when usable — both pairs saw `ready` with the same epoch and the time is
// not 0 (0 = none, formats.md §4.3). Absent after the re-reads ran out.
struct coverage_reading {
  readiness_state state = readiness_state::unknown;
  epoch_t epoch = 0;
  std::optional<index_time_t> coverage_time;
};

// The double read's attempts: the first read and at most three re-reads (decision 0019).
inline constexpr int coverage_read_attempts = 4;

// What the five loads of one attempt saw, in load order.
struct coverage_loads {
  readiness_state state1 = readiness_state::unknown;
  epoch_t epoch1 = 0;
  index_time_t coverage_time = 0;
  readiness_state state2 = readiness_state::unknown;
  epoch_t epoch2 = 0;
};
// The reading of one attempt; `settled` tells whether it ends the double read: both pairs saw
// the same state and epoch (a `ready` pair makes the time usable; another state needs none).
coverage_reading judge_loads(const coverage_loads& l, bool& settled) noexcept;

// §12.5 steps 1, 2 and 4 (the time path, any process): not ready → unknown; a usable time T
// gives the lag upper bound max(0, wall_now − T) in whole milliseconds, rounded up, so a wall
// clock stepped back reads 0; `bounded` when the tolerance is positive and ≥ that bound; else
// unknown (the bound still reported). `tolerance` is echoed.
coverage time_path(const coverage_reading& r, std::uint64_t wall_now_ns, std::chrono::milliseconds tolerance) noexcept;

// The owner runner's published proof (§12.5 step 3): its epoch and, per log of the
// registration, the durable anchor's end sequence (sequence + op count − 1).
struct coverage_proof {
  epoch_t epoch = 0;
  std::map<std::string, std::uint64_t> durable_end;
};
// Step 3's test: every log of `latest` (each log's latest sequence captured under its commit
// mutex) has a durable end ≥ its latest sequence (a log without writes, latest 0, needs none),
// the proof's epoch equals the first double read's, and the second double read still shows
// `ready` with that epoch.
bool proves_current(const coverage_proof& proof, const std::map<std::string, std::uint64_t>& latest,
                    const coverage_reading& first, const coverage_reading& second) noexcept;

// One coverage waiter at one look (protocol.md §12.6). A wait waits through the index's way to `ready` (its
// first build after registration, a rebuild after a lost cursor, a runtime starting), so a
// read-your-writes wait made right after registering succeeds once the index is built. In order:
//   cancelled                                 → cancelled
//   ready, coverage_time ≥ since              → covered
//   unavailable (latched: only an operator's rebuild request ends it)  → unavailable
//   needs-rebuild and `rebuilds` false (nothing will rebuild the index) → unavailable
//   deadline passed: rebuilding/needs-rebuild → building (the error `rebuilding`: retry later)
//                    otherwise               → lagging (`index_lagging`: retry after a pause)
//   otherwise (unknown, needs-rebuild, rebuilding, ready but behind)   → waiting
// `rebuilds`: whether a needs-rebuild index will be rebuilt without an operator — the runtime's
// waiter knows its registration's backend (it can reset); the free function cannot tell and
// passes true (its timeout bounds the wait).
enum class waiter_verdict : std::uint8_t { waiting, covered, cancelled, unavailable, building, lagging };
using steady_point = std::chrono::steady_clock::time_point;
waiter_verdict judge_waiter(bool cancelled, const coverage_reading& r, index_time_t since, steady_point deadline,
                            steady_point now, bool rebuilds) noexcept;
// The outcome a verdict other than waiting resolves with: success, or the error (cancelled,
// unavailable, rebuilding, index_lagging) with a message naming `id`.
result<void> waiter_outcome(waiter_verdict v, const std::string& id, index_time_t since);

// How long a waiting thread sleeps: until the nearest deadline, capped at `cap` (max_flush_age
// for the watcher), never negative; `cap` without deadlines.
std::chrono::milliseconds sleep_bound(const std::vector<steady_point>& deadlines, steady_point now,
                                      std::chrono::milliseconds cap) noexcept;

// §12.6's immediate invalid_argument: since 0, timeout negative or above `max_timeout`
// (max_coverage_wait, or 600 000 ms for the free function, api.md §2). `who` starts the message.
result<void> check_wait_arguments(const char* who, index_time_t since, std::chrono::milliseconds timeout,
                                  std::chrono::milliseconds max_timeout);
inline constexpr std::chrono::milliseconds free_wait_max_timeout{600000};

// api.md §7, admit_query: the refusal a coverage read gives under `mode` (strict needs current,
// bounded current or bounded); nullopt admits.
std::optional<error> admission_refusal(const coverage& c, coverage_kind kind);

}  // namespace dix
