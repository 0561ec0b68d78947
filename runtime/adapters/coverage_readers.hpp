// The free coverage readers (api.md §7; protocol.md §12.5 steps 1, 2, 4 and §12.6): what
// <dix/free_functions.hpp> declares, plus the forms the tests drive — an injected wall clock for
// read_coverage, and a count of the blocking wait's futex wake-ups (no polling loop: each
// wake-up is a change of the slot, a cancellation or the deadline).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string_view>

#include <dix/free_functions.hpp>

#include "core/clock.hpp"

namespace dix {

// read_coverage with the wall clock of `time`.
coverage read_coverage_at(const std::filesystem::path& home_db, std::string_view id, std::chrono::milliseconds tolerance,
                          const clock& time);

// What one blocking wait did: the futex waits that returned (a change, a cancellation's poke or
// the deadline) and whether it raised the slot's coverage demand.
struct wait_stats {  // atomic: a test reads them while the waiter runs
  std::atomic<std::uint64_t> wakeups{0};
  std::atomic<bool> raised_demand{false};
};

// wait_for_coverage, counting into `stats`.
result<void> wait_for_coverage_counted(const std::filesystem::path& home_db, std::string_view id, index_time_t since,
                                       std::chrono::milliseconds timeout, cancel_token cancel, wait_stats& stats);

}  // namespace dix
