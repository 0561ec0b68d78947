// runner_actor: one registered backend id's runner (actors.md §1). A thin shell over
// runner_core: each handler reads the actor clock, calls the core and carries out the effects it
// returns — requests to the tailer and the backend proxy, timers as delayed messages to itself,
// publications to the readiness slot, lock requests to the lock table. After every event it
// stores a snapshot that status()/metrics() read without asking the actor.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "core/runner_core.hpp"
#include "messages/interfaces.hpp"
#include "ports/ownership.hpp"

namespace dix {

// The latest runner_snapshot, shared with the runtime's status()/metrics().
class snapshot_box {
 public:
  void store(runner_snapshot s) {
    std::lock_guard g(mutex_);
    value_ = std::move(s);
  }
  runner_snapshot load() const {
    std::lock_guard g(mutex_);
    return value_;
  }

 private:
  mutable std::mutex mutex_;
  runner_snapshot value_;
};

struct runner_deps {
  std::string id;
  runner_core::config config;
  log_tailer_actor tailer;
  backend_proxy_actor proxy;
  std::shared_ptr<readiness_slot> slot;
  runner_lock* lock = nullptr;
  std::uint64_t requester = 0;  // this runner's token in the lock table
  std::vector<std::string> logs;
  std::shared_ptr<snapshot_box> snapshot;
};

runner_actor spawn_runner(caf::actor_system& sys, runner_deps deps);

}  // namespace dix
