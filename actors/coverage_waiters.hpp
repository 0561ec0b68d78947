// The runtime's coverage readers (protocol.md §12.5, §12.6; the watcher's coverage part, §9.1):
//
//  * coverage_proof_box: the owner runner's published proof for `current` (its epoch and, per
//    log of the registration, the durable anchor's end sequence), one per registration, found
//    process-wide by the registration's lock-table requester (its token) — so any runtime of the
//    process reads the owner's, whichever runtime it runs in. The owner's side stores it.
//  * read_coverage_here: runtime::read_coverage and admit_query — the time path, then the
//    owner-process proof (step 3).
//  * coverage_waiters: every pending wait_for_coverage of one runtime, evaluated by its watcher
//    thread at each segment change (scan), each waiter resolved once through its callback.
//
// Thread safety: everything may be called from any thread; callbacks run without a lock held.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <dix/primary_store.hpp>
#include <dix/readiness.hpp>

#include "actors/runtime_registry.hpp"
#include "adapters/process_lock_table.hpp"
#include "adapters/readiness_segment.hpp"
#include "core/clock.hpp"
#include "core/coverage_read.hpp"

namespace dix {

class coverage_proof_box {
 public:
  void store(coverage_proof p) {
    std::lock_guard g(mutex_);
    value_ = std::move(p);
  }
  void clear() {
    std::lock_guard g(mutex_);
    value_.reset();
  }
  std::optional<coverage_proof> load() const {
    std::lock_guard g(mutex_);
    return value_;
  }

 private:
  mutable std::mutex mutex_;
  std::optional<coverage_proof> value_;
};

// The process-wide directory of proof boxes by lock-table requester (registration token).
void publish_proof_box(std::uint64_t token, const std::shared_ptr<coverage_proof_box>& box);
std::shared_ptr<coverage_proof_box> proof_box_of(std::uint64_t token);

struct runtime_context;       // actors/runtime_actor.hpp
struct coverage_services;     // actors/backend_host_impl.hpp
class coverage_waiters;

// The services a registration's host gets (admit_query): read_coverage_here and a blocking wait
// through ctx.waiters, holding the context weakly (a host outlives its runtime: then reads are
// unknown and waits stopped).
coverage_services coverage_services_for(const std::shared_ptr<runtime_context>& ctx, const std::string& id);
// runtime::wait_for_coverage and the blocking wait above: the outcome as a future.
future<void> wait_for_coverage_here(coverage_waiters& waiters, const std::string& id, index_time_t since,
                                    std::chrono::milliseconds timeout, cancel_token cancel);

// §12.5 in the owner's process: the double read and the time path; when that is not `bounded`
// and the slot reads `ready`, the owner's proof (through `locks`) against each of its logs'
// latest sequence, captured under the commit mutex of the store in `stores` that holds the log;
// a second double read. `current` with upper bound 0, else what the time path said; any error
// (no slot, a log not attached here, a closed store) reads as the time path's answer.
coverage read_coverage_here(const readiness_segment& segment, const process_lock_table& locks,
                            const std::vector<std::shared_ptr<primary_store>>& stores, std::string_view id,
                            std::chrono::milliseconds tolerance, const clock& time);

// Whether the runtime's query admission refuses strict and bounded queries that the coverage
// read does not prove (api.md §7). On (decision 0019 item 10): the owner captures at `ready`, and
// callers reading their own writes query in `wait` mode. Kept as a constant so that the
// admission tests name what they switch on.
inline constexpr bool query_admission_enforced = true;

class coverage_waiters {
 public:
  using done_fn = std::function<void(result<void>)>;

  coverage_waiters(std::shared_ptr<readiness_segment> segment, std::shared_ptr<const runtime_registry> registry,
                   const clock& time, std::chrono::milliseconds max_wait,
                   std::shared_ptr<const clock> keep_time = nullptr);  // keeps `time` alive, if owned

  // runtime::wait_for_coverage (§12.6): fails at once through `done` with stopped (closed),
  // not_registered (`id` not registered in this runtime), invalid_argument (since 0, timeout
  // outside 0…max_coverage_wait); else the waiter is queued with deadline now + timeout, the
  // id's local runner gets a coverage wake if it is the id's first waiter, and the watcher is
  // woken to look (and to sleep no longer than the new deadline).
  void add(const std::string& id, index_time_t since, std::chrono::milliseconds timeout, cancel_token cancel,
           done_fn done);
  // One look (the watcher's, after every wake; `timed_out`: its wait ended without a change):
  // each waiter judged (judge_waiter: it waits through unknown, needs-rebuild and rebuilding up
  // to its deadline) and resolved unless still waiting; the demand of each id raised to its largest pending since; a
  // coverage wake to the local runner of every registered id whose demand exceeds its
  // coverage_time (again only after a slot change or a timed-out wait).
  void scan(bool timed_out);
  // How long the watcher may sleep: until the nearest deadline, at most `cap`.
  std::chrono::milliseconds sleep_bound(std::chrono::milliseconds cap) const;
  // The registration `token` ended (unregistered, or its runtime stopping): its waiters fail
  // stopped.
  void end_registration(std::uint64_t token);
  // The runtime stops: every waiter fails stopped, and so does every later add.
  void close();
  std::size_t pending() const;

 private:
  struct waiter {
    std::string id;
    std::uint64_t token = 0;
    std::shared_ptr<segment_slot> slot;
    bool rebuilds = false;  // the backend can reset: a needs-rebuild index is rebuilt (judge_waiter)
    index_time_t since = 0;
    steady_point deadline;
    cancel_token cancel;
    cancel_callback wake;  // pokes the watcher when cancelled
    done_fn done;
  };
  // Removes the waiters `pick` selects and returns them (caller holds mutex_).
  template <class Pick>
  std::vector<std::shared_ptr<waiter>> take(Pick pick);

  std::shared_ptr<readiness_segment> segment_;
  std::shared_ptr<const runtime_registry> registry_;
  const clock& time_;
  std::shared_ptr<const clock> keep_time_;
  std::chrono::milliseconds max_wait_;

  mutable std::mutex mutex_;  // guards what follows
  bool closed_ = false;
  std::vector<std::shared_ptr<waiter>> waiters_;  // arrival order
  std::map<std::uint64_t, std::uint64_t> demand_woken_;  // token → slot change counter at the last demand wake
};

}  // namespace dix
