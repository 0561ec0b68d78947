// What a runtime knows of its current registrations (their records, actors/registration_record.hpp),
// readable from any thread: the runtime actor changes it; the blocking facade's status/metrics/
// readiness, the store commit listeners and the watcher read it without asking the actor
// (actors.md §1: no public call blocks on an actor). They read a record's settings and runner,
// never its stage (the runtime actor's alone).
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
#include "actors/registration_record.hpp"
#include "adapters/readiness_segment.hpp"
#include "messages/interfaces.hpp"

namespace dix {

// protocol.md §14 for one registration at `now`: the runner's snapshot with its ages computed
// now, the slot's fields (readiness, lag gate, attempts, coverage time) and the backend's own
// unindexable count; coverage_age_ms is the wall age of the slot's coverage_time at
// `wall_now_ns` (≥ 0; 0 while none is published).
runner_metrics metrics_of(const registration_record& e, steady_time now, std::uint64_t wall_now_ns);

class runtime_registry {
 public:
  std::shared_ptr<registration_record> find(std::string_view id) const;
  std::vector<std::shared_ptr<registration_record>> all() const;
  void put(std::shared_ptr<registration_record> e);
  // Unregistration, first half (protocol.md §2.4: the id leaves at once): moves `id` out of the
  // current registrations, if `token` is its current one, into the detached ones, whose release
  // the runtime actor starts when it takes them. Returns whether it moved. Any thread.
  bool detach(std::string_view id, std::uint64_t token);
  // The runtime actor takes a detached registration (null: none, or taken already), or all.
  std::shared_ptr<registration_record> take_detached(std::uint64_t token);
  std::vector<std::shared_ptr<registration_record>> take_all_detached();
  // A commit wake (wake_flag::commit, with wake_flag::system for a system transaction) for the
  // runner of every current registration, coalesced by its bell (commit_wake).
  void wake_all(std::uint8_t flags) const;
  void wake(std::string_view id, std::uint8_t flags) const;
  // Called (without the registry's lock) with each registration detach() moved out: its coverage
  // waiters fail stopped. Set once, before the first registration.
  void set_detach_listener(std::function<void(std::uint64_t token)> listener);

 private:
  using entry_list = std::vector<std::shared_ptr<registration_record>>;
  void publish_list();  // caller holds mutex_

  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<registration_record>, std::less<>> current_;
  std::map<std::uint64_t, std::shared_ptr<registration_record>> detached_;  // by token
  std::function<void(std::uint64_t token)> on_detach_;
  // A copy of current_'s entries for wake_all, replaced whole on every change: a commit listener
  // wakes the runners without taking mutex_ (so never waits behind a registration).
  std::shared_ptr<const entry_list> list_ = std::make_shared<const entry_list>();
};

}  // namespace dix
