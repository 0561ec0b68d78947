#include "adapters/coverage_readers.hpp"

#include <string>

#include "adapters/readiness_segment.hpp"
#include "core/coverage_read.hpp"
#include "core/names.hpp"

namespace dix {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

coverage read_coverage_at(const fs::path& home_db, std::string_view id, milliseconds tolerance, const clock& time) {
  coverage unknown;
  unknown.tolerance = tolerance;
  if (!is_valid_backend_id(id)) return unknown;
  try {
    auto view = segment_view::open(home_db, segment_view::access::read_only);
    if (!view || !*view) return unknown;
    auto index = (*view)->find(id);
    if (!index) return unknown;
    // The lock before the slot, as read_readiness: a time read after seeing a runtime attached
    // was published by an attached runtime, never a leftover of a crashed run.
    auto attached = (*view)->runtime_attached();
    if (!attached || !*attached) return unknown;
    return time_path((*view)->read_coverage(*index), time.wall_now_ns(), tolerance);
  } catch (...) {
    return unknown;  // never fails (api.md §7)
  }
}

coverage read_coverage(const fs::path& home_db, std::string_view id, milliseconds tolerance) {
  return read_coverage_at(home_db, id, tolerance, system_clock());
}

result<void> wait_for_coverage_counted(const fs::path& home_db, std::string_view id, index_time_t since,
                                       milliseconds timeout, cancel_token cancel, wait_stats& stats) {
  if (auto ok = check_backend_id(id, "wait_for_coverage"); !ok) return ok;
  if (auto ok = check_wait_arguments("wait_for_coverage", since, timeout, free_wait_max_timeout); !ok) return ok;
  const auto deadline = std::chrono::steady_clock::now() + timeout;  // fixed at the call, as `since`
  auto view = segment_view::open(home_db, segment_view::access::read_write);
  if (!view) return view.error();
  if (!*view) return error{errc::not_registered, "wait_for_coverage: " + home_db.string() + " has no readiness segment"};
  auto index = (*view)->find(id);
  if (!index) {
    return error{errc::not_registered, "wait_for_coverage: backend id \"" + std::string(id) +
                                           "\" has no slot in the readiness segment of " + home_db.string()};
  }
  auto slot = (*view)->slot(*index);
  // cancel() pokes the slot's counter: the futex wait below returns and the loop sees the flag.
  auto wake = cancel.on_cancel([slot] { slot->poke(); });
  const std::string name(id);
  for (;;) {
    // The counter before the look: a change after it makes the wait return at once.
    const auto seen = slot->change_counter();
    auto attached = (*view)->runtime_attached();
    coverage_reading r;
    if (attached && *attached) r = slot->read_coverage();  // else unknown: keep waiting
    const auto now = std::chrono::steady_clock::now();
    // Whether a needs-rebuild index will be rebuilt is the owner's to know: this process waits
    // (within its timeout) as for one that will.
    auto verdict = judge_waiter(cancel.cancelled(), r, since, deadline, now, true);
    if (verdict != waiter_verdict::waiting) return waiter_outcome(verdict, name, since);
    if (slot->coverage_demand() < since) {
      slot->raise_coverage_demand(since);  // a change: the next look comes at once
      stats.raised_demand = true;
      continue;
    }
    slot->wait_change(seen, sleep_bound({deadline}, now, timeout));
    ++stats.wakeups;
  }
}

result<void> wait_for_coverage(const fs::path& home_db, std::string_view id, index_time_t since, milliseconds timeout,
                               cancel_token cancel) {
  wait_stats ignored;
  return wait_for_coverage_counted(home_db, id, since, timeout, std::move(cancel), ignored);
}

}  // namespace dix
