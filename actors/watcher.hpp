// The runtime's watcher (protocol.md §9.1, actors.md §1): one helper thread per runtime that
// sleeps on the segment's change counter (FUTEX_WAIT; any process's change wakes it, so does
// stop()), bounded by max_flush_age, and after every wake looks at the slots of the runtime:
//
//  * a registered id whose slot holds a rebuild request: its local runner gets a rebuild wake and
//    the supervisor a `revive` (an escalated registration gets its children back, actors.md §3) —
//    again only when the slot changed since, or the wait timed out (a busy runner that leaves the
//    flag publishes when done);
//  * a registered id whose runner owns it, with `dix verify` request files (formats.md §8): each
//    is taken (renamed away) and the runtime gets verify_requested;
//  * an observed id (one with subscribers): when its slot's change counter moved, the runtime
//    gets readiness_observed with the slot as read now.
//
// Coverage (protocol.md §9.1, §12.6): with a coverage_waiters set, every look also evaluates the
// runtime's coverage waiters and wakes the runners whose slot's demand exceeds its coverage_time,
// and the wait lasts until the nearest waiter deadline at most.
//
// scan() is one such look, without waiting: the thread calls it after every wake, actor tests
// (where no helper thread runs, actors.md §5) call it themselves.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <caf/actor.hpp>
#include <caf/actor_control_block.hpp>

#include "actors/runtime_registry.hpp"
#include "adapters/readiness_segment.hpp"

namespace dix {

class coverage_waiters;  // actors/coverage_waiters.hpp

class watcher {
 public:
  // `observer` receives readiness_observed (the runtime actor); the registry names the ids whose
  // runners a rebuild request wakes; `supervisor` (may be null) gets `revive` for them.
  watcher(std::shared_ptr<readiness_segment> segment, std::shared_ptr<const runtime_registry> registry,
          caf::actor observer, std::chrono::milliseconds timeout, caf::actor supervisor = nullptr);
  ~watcher();  // stop()
  watcher(const watcher&) = delete;
  watcher& operator=(const watcher&) = delete;

  // Starts the thread. io_error when it cannot be started.
  result<void> start();
  // Wakes the thread and joins it. Idempotent; scan() still works afterwards.
  void stop();

  // Observed ids (thread-safe): the runtime adds an id when it gets its first subscriber and
  // removes it with the last.
  void observe(const std::string& id, std::shared_ptr<segment_slot> slot);
  void unobserve(const std::string& id);

  // The runtime's coverage waiters; set before start().
  void set_coverage(std::shared_ptr<coverage_waiters> waiters);

  // One look at every slot; `timed_out`: the wait ended without a change.
  void scan(bool timed_out);

 private:
  void run();

  std::shared_ptr<readiness_segment> segment_;
  std::shared_ptr<const runtime_registry> registry_;
  caf::weak_actor_ptr observer_;    // weak: the runtime actor owns this watcher
  caf::weak_actor_ptr supervisor_;  // weak: the runtime actor owns it too
  std::chrono::milliseconds timeout_;
  std::shared_ptr<coverage_waiters> coverage_;
  std::thread thread_;
  std::atomic<bool> stop_{false};

  std::mutex mutex_;  // guards what follows; scan() holds it
  struct observed {
    std::shared_ptr<segment_slot> slot;
    std::uint64_t counter = 0;  // the change counter of the last observation sent
    bool sent = false;
  };
  std::map<std::string, observed> observed_;
  // Per registration token: the runner last woken for a rebuild request (none: only the
  // supervisor was told) and the slot's change counter then. A new runner (a respawn) or a new
  // registration of the id is woken at once.
  struct last_wake {
    caf::actor_addr runner;
    std::uint64_t counter = 0;
  };
  std::map<std::uint64_t, last_wake> woken_;
};

}  // namespace dix
