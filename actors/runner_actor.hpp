// runner_actor: one registered backend id's runner (actors.md §1). A thin shell over
// runner_core: each handler reads the actor clock, calls the core and carries out the effects it
// returns — requests to the tailer and the backend proxy, timers as delayed messages to itself,
// publications as requests to the runtime's readiness publisher, lock requests and releases
// through the registration's ownership record (actors/ownership.hpp). The order they are carried
// out in is core/runner_interpreter.hpp's, which the simulation runs too: a release of the lock
// waits until every publication before it has landed (`published`), what follows waits behind
// it, and the commit bell's wakes are coalesced. After every
// event, and before any of its effects is carried out, it stores a snapshot that status()/
// metrics() read without asking the actor: whoever sees a publication of this runner in the
// segment finds the runner's snapshot at least as new. The epoch mint and the rebuild request's
// consumption stay direct atomic operations on the slot: they are not publications.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "core/clock.hpp"
#include "core/commit_bell.hpp"
#include "core/runner_core.hpp"
#include "messages/interfaces.hpp"
#include "ports/ownership.hpp"

namespace dix {

class coverage_proof_box;  // actors/coverage_waiters.hpp

class ownership;  // actors/ownership.hpp
struct registration_settings;  // actors/registration_record.hpp

// The latest runner_snapshot, shared with the runtime's status()/metrics(). `version` counts the
// stores, so a reader can order what it saw (subscriptions drop an event older than the value
// they already reported).
class snapshot_box {
 public:
  void store(runner_snapshot s) {
    std::lock_guard g(mutex_);
    value_ = std::move(s);
    ++version_;
  }
  runner_snapshot load() const {
    std::lock_guard g(mutex_);
    return value_;
  }
  // Stores what `make` returns while holding the box: `make` may publish something a reader can
  // see (the epoch it mints) and a reader of the box then waits for the snapshot that includes it.
  template <class Make>
  void store_with(Make&& make) {
    std::lock_guard g(mutex_);
    value_ = make();
    ++version_;
  }
  // Replaces the value by `change(value)` under the box's lock; returns the new version.
  template <class Change>
  std::uint64_t update(Change&& change) {
    std::lock_guard g(mutex_);
    value_ = change(std::move(value_));
    return ++version_;
  }
  std::pair<runner_snapshot, std::uint64_t> load_versioned() const {
    std::lock_guard g(mutex_);
    return {value_, version_};
  }

 private:
  mutable std::mutex mutex_;
  runner_snapshot value_;
  std::uint64_t version_ = 0;
};

// What one runner incarnation is given: the registration's settings (shared, never copied: its
// id, runner config, slot, publisher, lock, snapshot and proof boxes, status callback, link
// report and clock) and what is this incarnation's own.
struct runner_deps {
  std::shared_ptr<const registration_settings> settings;
  log_tailer_actor tailer;
  backend_proxy_actor proxy;
  std::shared_ptr<ownership> record;  // the registration's ownership record, lent by the supervisor
  // The core's config is the settings' runner config with these two (runner_core::config): a
  // replacement after a crash starts condemned; each incarnation has generations of its own.
  std::optional<readiness_reason> start_condemned;
  std::uint64_t generation_base = 0;
  // This runner's commit bell (core/commit_bell.hpp): every wake it handles takes it, so the
  // commits rung since count as one commit wake. Optional: without one, commit wakes come as
  // messages of their own.
  std::shared_ptr<commit_bell> bell;
};

runner_actor spawn_runner(caf::actor_system& sys, runner_deps deps);

}  // namespace dix
