// Deterministic actor tests (actors.md §5): an actor system on CAF's test coordinator, with dix's
// message types and error category registered. Nothing runs until the test says so:
//
//   run()        process messages until every mailbox is empty (never fires a timer)
//   run_once()   process exactly one message, if any
//   advance(d)   move the clock by d, deliver the delayed messages now due, then run()
//   state_of<S>(h)  the state of a stateful actor (caf::stateful_actor<S, …>)
//
// The 0.17 test DSL (caf/test/dsl.hpp) is not used: it crashes under Catch2, and its run() also
// fires pending timeouts regardless of their time, which would hide timer bugs here.
//
// Rules (actors.md §5): no detached spawns (they escape this scheduler); no blocking
// scoped_actor requests — send, run(), then try_receive() (receive with after(0s)); helper
// threads are replaced by fake ports the test triggers; no sleeps. `clock` is the dix::clock the
// composition root gets in actor tests: steady time is the coordinator's clock, so CAF timers
// and core time move together, and wall time is a fake that moves with it (and can be stepped).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/after.hpp>
#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/timespan.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "core/clock.hpp"
#include "messages/type_ids.hpp"

namespace dix::test {

// scheduler.policy = testing, quiet logger, dix types and error category.
class caf_fixture_config : public caf::actor_system_config {
 public:
  caf_fixture_config() {
    set("scheduler.policy", caf::atom("testing"));
    set("logger.file-verbosity", caf::atom("quiet"));
    set("logger.console-verbosity", caf::atom("quiet"));
    configure_dix(*this);
  }
};

// The composition root's clock in actor tests (protocol.md §1.1).
class actor_test_clock final : public dix::clock {
 public:
  static constexpr std::uint64_t default_wall_ns = 1'700'000'000'000'000'000ull;  // Nov 2023

  explicit actor_test_clock(caf::scheduler::test_coordinator& sched,
                            std::uint64_t wall_ns = default_wall_ns)
      : sched_(sched), wall_base_ns_(wall_ns), steady_base_(sched.clock().now()) {}

  steady_time steady_now() const noexcept override { return sched_.clock().now(); }

  std::uint64_t wall_now_ns() const noexcept override {
    auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(steady_now() - steady_base_);
    return wall_base_ns_ + static_cast<std::uint64_t>(elapsed.count());
  }

  // Steps the wall clock alone, as an NTP correction or an operator can (backwards too).
  void set_wall_ns(std::uint64_t wall_ns) noexcept {
    wall_base_ns_ = wall_ns;
    steady_base_ = steady_now();
  }

 private:
  caf::scheduler::test_coordinator& sched_;
  std::uint64_t wall_base_ns_;
  steady_time steady_base_;
};

namespace detail {

// The actor class a handle's stateful actors derive from.
template <class Handle>
struct actor_base_of {
  using type = typename Handle::base;  // typed_actor<…>::base = typed_event_based_actor<…>
};

template <>
struct actor_base_of<caf::actor> {
  using type = caf::event_based_actor;
};

}  // namespace detail

class caf_fixture {
 public:
  caf_fixture()
      : sys(cfg),
        sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())),
        clock((start_clock(sched), sched)) {}

  caf_fixture(const caf_fixture&) = delete;
  caf_fixture& operator=(const caf_fixture&) = delete;

  virtual ~caf_fixture() {
    // Pending delayed messages hold their receivers; drop them so every actor can finish
    // before ~actor_system waits for them.
    sched.clock().cancel_all();
    run();
  }

  // Processes messages until no actor has one left. Timers stay pending.
  std::size_t run() { return sched.run(); }

  // Processes one message; false when none was waiting.
  bool run_once() { return sched.try_run_once(); }

  // Moves the clock forward by d, delivers every delayed message due by then (in time order)
  // and runs until quiet, including timers of zero delay armed along the way. Returns the number
  // of timeouts and delayed messages delivered.
  std::size_t advance(caf::timespan d) {
    auto fired = sched.clock().advance_time(d);
    run();
    for (;;) {
      auto more = sched.clock().advance_time(caf::timespan{0});
      if (more == 0) break;
      fired += more;
      run();
    }
    return fired;
  }

  template <class Rep, class Period>
  std::size_t advance(std::chrono::duration<Rep, Period> d) {
    return advance(std::chrono::duration_cast<caf::timespan>(d));
  }

  // True when a timer or delayed message is armed.
  bool has_pending_timer() const { return sched.has_pending_timeout(); }

  // The state of a stateful actor spawned behind `hdl`; throws std::logic_error when the
  // actor is gone or is not a caf::stateful_actor<State, …> of the handle's kind.
  template <class State, class Handle>
  State& state_of(const Handle& hdl) {
    auto* ptr = caf::actor_cast<caf::abstract_actor*>(hdl);
    if (ptr == nullptr) throw std::logic_error("state_of: invalid actor handle");
    using actor_type = caf::stateful_actor<State, typename detail::actor_base_of<Handle>::type>;
    auto* actor = dynamic_cast<actor_type*>(ptr);
    if (actor == nullptr) throw std::logic_error("state_of: the actor holds another state type");
    return actor->state;
  }

  // The next message of type T in `self`'s mailbox, without blocking (receive with after(0s));
  // nullopt when there is none. Messages of other types stay in the mailbox.
  template <class T>
  static std::optional<T> try_receive(caf::scoped_actor& self) {
    std::optional<T> out;
    self->receive([&](T& x) { out = std::move(x); },
                  caf::after(std::chrono::seconds(0)) >> [] {});
    return out;
  }

  caf_fixture_config cfg;
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;
  actor_test_clock clock;

 private:
  // The coordinator's clock starts at the steady epoch; move it away from zero so no "time 0"
  // means "unset" by accident.
  static void start_clock(caf::scheduler::test_coordinator& s) {
    s.clock().current_time += std::chrono::hours(1);
  }
};

}  // namespace dix::test
