// What a runtime knows of its current registrations, readable from any thread: the runtime actor
// changes it; the blocking facade's status/metrics/readiness, the store commit listeners and the
// watcher read it without asking the actor (actors.md §1: no public call blocks on an actor).
// An id leaves it at once when it is unregistered (protocol.md §2.4), before its release settles.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <dix/backend.hpp>
#include <dix/primary_store.hpp>
#include <dix/runtime.hpp>

#include "actors/backend_host_impl.hpp"
#include "actors/runner_actor.hpp"
#include "adapters/readiness_segment.hpp"
#include "core/commit_bell.hpp"
#include "messages/interfaces.hpp"

namespace dix {

class coverage_proof_box;  // actors/coverage_waiters.hpp
class ownership;
class state_change_relay;

// One registration, from register_index until its release settled (and, with a rejected
// shutdown, until the runtime ends).
struct registration_entry {
  registration_entry();  // with its proof box: the wiring hands it to the runner before put()

  std::string id;
  std::uint64_t token = 0;  // its requester in the lock table; unique in the process
  std::shared_ptr<dix::backend> backend;  // qualified: the member reuses the type's name
  bool rebuildable = false;
  std::shared_ptr<segment_slot> slot;
  std::shared_ptr<backend_host_impl> host;
  std::shared_ptr<snapshot_box> snapshot = std::make_shared<snapshot_box>();
  std::shared_ptr<state_change_relay> relay;
  std::shared_ptr<ownership> owner;  // the registration's ownership record (its lock-table calls)
  subscription changes;  // the backend's state changes; the runtime actor's alone
  // The stores of the registration's logs (attach order) and how often their WAL listing is
  // sampled for the §13.2 figures of metrics(): the lag tick.
  std::vector<std::shared_ptr<primary_store>> log_stores;
  std::chrono::milliseconds wal_sample_interval{1000};
  // The owner's proof for `current` reads (protocol.md §12.5 step 3), found process-wide by token
  // once put() publishes it. Made with the entry, never null: the runner's wiring copies it
  // before the entry is put (a box made only at put() left every runner without one).
  std::shared_ptr<coverage_proof_box> proof;

  // The registration's current runner (the supervisor respawns it after a crash) and that
  // runner's commit bell (none: commit wakes go as messages of their own).
  void set_runner(const runner_actor& r, std::shared_ptr<commit_bell> bell = nullptr);
  runner_actor runner() const;
  // A commit wake for the current runner (§8.2): rings its bell, and sends a wake only when the
  // bell was silent. Any thread, no lock.
  void commit_wake(bool system) const;

 private:
  struct runner_ref {
    runner_actor actor;
    std::shared_ptr<commit_bell> bell;
  };
  // Replaced whole (std::atomic_load/atomic_store): a commit reads it without a mutex of ours.
  std::shared_ptr<const runner_ref> runner_ = std::make_shared<const runner_ref>();
};

// protocol.md §14 for one registration at `now`: the runner's snapshot with its ages computed
// now, the slot's fields (readiness, lag gate, attempts, coverage time) and the backend's own
// unindexable count; coverage_age_ms is the wall age of the slot's coverage_time at
// `wall_now_ns` (≥ 0; 0 while none is published).
runner_metrics metrics_of(const registration_entry& e, steady_time now, std::uint64_t wall_now_ns);

class runtime_registry {
 public:
  std::shared_ptr<registration_entry> find(std::string_view id) const;
  std::vector<std::shared_ptr<registration_entry>> all() const;
  void put(std::shared_ptr<registration_entry> e);
  // Unregistration, first half (protocol.md §2.4: the id leaves at once): moves `id` out of the
  // current registrations, if `token` is its current one, into the detached ones, whose release
  // the runtime actor starts when it takes them. Returns whether it moved. Any thread.
  bool detach(std::string_view id, std::uint64_t token);
  // The runtime actor takes a detached registration (null: none, or taken already), or all.
  std::shared_ptr<registration_entry> take_detached(std::uint64_t token);
  std::vector<std::shared_ptr<registration_entry>> take_all_detached();
  // A commit wake (wake_flag::commit, with wake_flag::system for a system transaction) for the
  // runner of every current registration, coalesced by its bell (commit_wake).
  void wake_all(std::uint8_t flags) const;
  void wake(std::string_view id, std::uint8_t flags) const;
  // Called (without the registry's lock) with each registration detach() moved out: its coverage
  // waiters fail stopped. Set once, before the first registration.
  void set_detach_listener(std::function<void(std::uint64_t token)> listener);

 private:
  using entry_list = std::vector<std::shared_ptr<registration_entry>>;
  void publish_list();  // caller holds mutex_

  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<registration_entry>, std::less<>> current_;
  std::map<std::uint64_t, std::shared_ptr<registration_entry>> detached_;  // by token
  std::function<void(std::uint64_t token)> on_detach_;
  // A copy of current_'s entries for wake_all, replaced whole on every change: a commit listener
  // wakes the runners without taking mutex_ (so never waits behind a registration).
  std::shared_ptr<const entry_list> list_ = std::make_shared<const entry_list>();
};

}  // namespace dix
