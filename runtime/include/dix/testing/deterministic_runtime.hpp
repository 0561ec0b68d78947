// The real runtime actor (<dix/caf.hpp>), run deterministically under CAF 0.17's test coordinator
// (caf::scheduler::test_coordinator, scheduler.policy = testing) for an application's actor tests:
// the same code as dix::spawn_runtime, with its actors scheduled by the coordinator instead of
// threads of their own, its watcher's looks made when the test says, and its time taken from the
// coordinator's clock. docs/testing.md; docs/examples/real_runtime_test.cpp.
//
//   caf::actor_system_config cfg;
//   cfg.set("scheduler.policy", caf::atom("testing"));
//   dix::configure(cfg);
//   caf::actor_system sys{cfg};
//   auto store = dix::primary_store::open(dir, {}).value();
//   auto rt = dix::testing::deterministic_runtime::spawn(sys, {store}).value();
//   auto index = std::make_shared<dix::testing::memory_backend>("by-colour");
//   … send rt.actor() a register_index of `index`, commit, then …
//   rt.settle();                           // every message, every look, until nothing moves
//   rt.advance(std::chrono::seconds(1));   // the runner's flush timer: the index durable
//
// What the test must keep to (each is a data race or a hang otherwise, as the coordinator's job
// queue is not locked and nothing runs while the test's thread is elsewhere):
//  * Every backend completes on the calling thread: its flush, shutdown and reset completions
//    and its on_state_change callbacks run inside the call (dix::testing::memory_backend does).
//    The shipped RocksDB, Xapian and hnswlib backends complete on applier threads of their own:
//    test them with the conformance kit, not here.
//  * Commit on the test's thread (the thread that runs the coordinator): a commit wakes the
//    runtime's runners from the committing thread. commit_transaction sent to the runtime runs on
//    the coordinator, which is that thread.
//  * Nothing happens on its own: run the coordinator (sched.run(), or settle()), look (look(),
//    settle()) and move time (advance()). A coverage wait and a `wait`-mode query are resolved by
//    a look; a runner's flush by its timer (max_flush_age) or a coverage demand.
//  * The writer gate's delay, if a test lets an index lag that far, is a real sleep of the
//    committing thread (up to max_write_delay): keep tests below the gate's budget.
//
// Other processes still see it as a runtime: it takes the home store's runner locks and
// publishes readiness in the store's shared segment as spawn_runtime does.
#pragma once

#include <memory>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/timespan.hpp>

#include <dix/caf.hpp>
#include <dix/options.hpp>
#include <dix/primary_store.hpp>

namespace dix::testing {

class deterministic_runtime {
 public:
  // Spawns the runtime over `stores` in `sys` as dix::spawn_runtime does (the same checks and
  // errors), not detached. `sys` must run on caf::scheduler::test_coordinator (else
  // invalid_argument) and have been configured with dix::configure. The runtime actor starts:
  // its first messages are run before this returns.
  static caf::expected<deterministic_runtime> spawn(caf::actor_system& sys,
                                                    std::vector<std::shared_ptr<primary_store>> stores,
                                                    runtime_options options = {});

  deterministic_runtime(deterministic_runtime&& other) noexcept;
  deterministic_runtime& operator=(deterministic_runtime&& other) noexcept;
  deterministic_runtime(const deterministic_runtime&) = delete;
  deterministic_runtime& operator=(const deterministic_runtime&) = delete;
  // Ends the runtime unless it has ended: an exit message (user_shutdown: every id released, as
  // stop_runtime), then the coordinator runs until it has ended. Timers are not fired: a release
  // that waits for a backend's barrier completes only if the backend completes synchronously.
  ~deterministic_runtime();

  // The runtime actor to talk to.
  const runtime_actor& actor() const noexcept;

  // One look of the runtime's watcher (what its thread does after every wake in production):
  // each registered id whose slot changed is reported to the runtime actor (readiness_changed and
  // runner_state_changed for subscribers follow when the coordinator runs), rebuild requests of
  // other processes are passed on, coverage waiters are judged — resolved if covered, failed if
  // past their deadline on the coordinator's clock — and runners with a coverage demand woken.
  // Only sends messages: run the coordinator afterwards.
  void look();

  // Runs the coordinator and looks, alternately, until a run finds no message: everything the
  // runtime, its actors and the application can do without time moving has been done. Never
  // fires a timer. Returns how many messages it ran. Throws std::logic_error when something still
  // moves after 10 000 rounds (two actors messaging each other forever).
  std::size_t settle();

  // Settles, then moves the coordinator's clock (which the runtime's timers and cores read) by `d`
  // in steps: to each pending timer's time in turn, firing it and settling, then to the end,
  // settling again. A timer armed on the way fires too if it falls within `d`.
  std::size_t advance(caf::timespan d);

 private:
  struct state;
  explicit deterministic_runtime(std::unique_ptr<state> s) noexcept;
  void end() noexcept;
  std::unique_ptr<state> s_;
};

}  // namespace dix::testing
