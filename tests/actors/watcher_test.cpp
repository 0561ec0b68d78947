// [actor] The runtime's watcher (actors/watcher.hpp, protocol.md §9.1) without its thread: the test
// calls scan() itself (actors.md §5) over the hand-made registrations of support/registered_ids.hpp
// (a real readiness segment in a temporary directory, recording runners); a recording actor
// stands in for the runtime actor as the observer. The test runs the coordinator after each scan
// and reads what they recorded.
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "actors/coverage_waiters.hpp"
#include "actors/watcher.hpp"
#include "adapters/readiness_segment.hpp"
#include "support/recorders.hpp"
#include "support/registered_ids.hpp"

using namespace dix;
using namespace std::chrono_literals;

namespace {

struct watcher_fixture : test::registered_ids {
  caf::actor observer = sys.spawn(test::recording_observer);
  watcher watch{segment, registry, observer, 1000ms};

  ~watcher_fixture() override {
    if (observer) caf::anon_send_exit(observer, caf::exit_reason::user_shutdown);
    run();
  }

  // Another party of the database (a CLI, another runtime) asks for a rebuild through its own
  // read-write mapping of the segment, as the free function request_rebuild does.
  void request_rebuild_elsewhere(const std::string& id) {
    auto view = segment_view::open(home.path(), segment_view::access::read_write).value();
    REQUIRE(view);
    auto index = view->find(id);
    REQUIRE(index);
    view->slot(*index)->request_rebuild();
  }

  // One look, then the coordinator delivers what it sent.
  void scan(bool timed_out = false) {
    watch.scan(timed_out);
    run();
  }

  std::vector<readiness_observed>& observations() { return state_of<test::observer_state>(observer).seen; }
};

}  // namespace

TEST_CASE("watcher: a rebuild request another party stores in a registered id's slot wakes its runner with the rebuild flag", "[actor][watcher]") {
  watcher_fixture f;
  auto runner = f.add("idx");
  f.scan();
  CHECK(f.wakes_of(runner).empty());  // no request: nothing to wake for
  f.request_rebuild_elsewhere("idx");
  f.scan();
  REQUIRE(f.wakes_of(runner).size() == 1);
  CHECK(f.wakes_of(runner)[0] == wake_flag::rebuild);
  CHECK(f.observations().empty());  // nobody subscribed to the id
}

TEST_CASE("watcher: a pending request wakes again only when the slot changed since the last wake or the wait timed out", "[actor][watcher]") {
  watcher_fixture f;
  auto runner = f.add("idx");
  auto slot = f.slot_of("idx");
  f.request_rebuild_elsewhere("idx");
  f.scan();
  REQUIRE(f.wakes_of(runner).size() == 1);
  f.scan();  // another process's change elsewhere in the segment woke the watcher: this slot is unchanged
  CHECK(f.wakes_of(runner).size() == 1);
  f.scan(true);  // the wait timed out: a busy runner that left the flag is reminded
  CHECK(f.wakes_of(runner).size() == 2);
  slot->publish(readiness_state::ready, readiness_reason::none, 0);  // the slot changed, the flag still set
  f.scan();
  CHECK(f.wakes_of(runner).size() == 3);
  REQUIRE(slot->consume_rebuild_request());  // the owner took the request
  f.scan(true);
  f.scan();
  CHECK(f.wakes_of(runner).size() == 3);
  for (auto flags : f.wakes_of(runner)) CHECK(flags == wake_flag::rebuild);
}

TEST_CASE("watcher: only the runner of the id whose slot holds the request is woken, and per id only after its own slot changed", "[actor][watcher]") {
  watcher_fixture f;
  auto a = f.add("alpha");
  auto b = f.add("beta");
  f.request_rebuild_elsewhere("beta");
  f.scan();
  CHECK(f.wakes_of(a).empty());
  CHECK(f.wakes_of(b).size() == 1);
  f.request_rebuild_elsewhere("alpha");
  f.scan();  // alpha's slot changed, beta's did not
  CHECK(f.wakes_of(a).size() == 1);
  CHECK(f.wakes_of(b).size() == 1);
}

TEST_CASE("watcher: a request in the slot of an id this runtime has not registered, or has detached, wakes no runner", "[actor][watcher]") {
  watcher_fixture f;
  auto runner = f.add("idx");
  auto other = f.slot_of("elsewhere");  // claimed by some runtime of the database, not registered here
  other->request_rebuild();
  f.scan(true);
  CHECK(f.wakes_of(runner).empty());
  REQUIRE(f.registry->detach("idx", 1));
  f.request_rebuild_elsewhere("idx");
  f.scan(true);
  CHECK(f.wakes_of(runner).empty());
}

TEST_CASE("watcher: a registered id without a runner yet is skipped, and its runner is woken at the next scan once it has one", "[actor][watcher]") {
  watcher_fixture f;
  auto e = f.put("idx", 7);
  f.request_rebuild_elsewhere("idx");
  f.scan();  // nothing to send to; must not fail
  auto runner = f.spawn_runner();
  e->set_runner(caf::actor_cast<runner_actor>(runner));
  f.scan();  // the slot has not changed, but no runner was woken for it yet: no timeout needed
  REQUIRE(f.wakes_of(runner).size() == 1);
  CHECK(f.wakes_of(runner)[0] == wake_flag::rebuild);
  f.scan();
  CHECK(f.wakes_of(runner).size() == 1);  // woken once for this counter
}

TEST_CASE("watcher: a respawned runner, or a new registration of the id, is woken for a pending request without waiting for a change or a timeout", "[actor][watcher]") {
  watcher_fixture f;
  auto e = f.put("idx", 7);
  auto first = f.spawn_runner();
  e->set_runner(caf::actor_cast<runner_actor>(first));
  f.request_rebuild_elsewhere("idx");
  f.scan();
  REQUIRE(f.wakes_of(first).size() == 1);
  auto respawned = f.spawn_runner();  // the supervisor replaced the runner; the slot is unchanged
  e->set_runner(caf::actor_cast<runner_actor>(respawned));
  f.scan();
  CHECK(f.wakes_of(respawned).size() == 1);
  REQUIRE(f.registry->detach("idx", 7));
  f.registry->take_all_detached();
  auto again = f.put("idx", 8);  // a replacement registration of the id
  auto third = f.spawn_runner();
  again->set_runner(caf::actor_cast<runner_actor>(third));
  f.scan();
  CHECK(f.wakes_of(third).size() == 1);
}

TEST_CASE("watcher: an observed id is reported at its first look and then at every change of its slot's counter, with the slot as read then", "[actor][watcher][observe]") {
  watcher_fixture f;
  auto slot = f.slot_of("idx");
  f.watch.observe("idx", slot);
  f.scan();
  REQUIRE(f.observations().size() == 1);  // the first look reports the value now
  CHECK(f.observations()[0].id == "idx");
  CHECK(f.observations()[0].change_counter == slot->change_counter());
  CHECK(f.observations()[0].readiness.state == slot->read().state);
  f.scan(true);  // unchanged, timed out or not: nothing new
  CHECK(f.observations().size() == 1);
  slot->publish(readiness_state::rebuilding, readiness_reason::rebuild_requested, 2);
  f.scan();
  REQUIRE(f.observations().size() == 2);
  CHECK(f.observations()[1].change_counter == slot->change_counter());
  CHECK(f.observations()[1].change_counter > f.observations()[0].change_counter);
  CHECK(f.observations()[1].readiness.state == readiness_state::rebuilding);
  CHECK(f.observations()[1].readiness.reason == readiness_reason::rebuild_requested);
  CHECK(f.observations()[1].readiness.rebuild_attempts == 2);
}

TEST_CASE("watcher: an observed id need not be registered, and an unobserved one is no longer reported", "[actor][watcher][observe]") {
  watcher_fixture f;
  auto a = f.slot_of("alpha");
  auto b = f.slot_of("beta");
  f.watch.observe("alpha", a);
  f.watch.observe("beta", b);
  f.scan();
  REQUIRE(f.observations().size() == 2);
  f.watch.unobserve("alpha");
  a->publish(readiness_state::ready, readiness_reason::none, 0);
  b->publish(readiness_state::ready, readiness_reason::none, 0);
  f.scan();
  REQUIRE(f.observations().size() == 3);
  CHECK(f.observations()[2].id == "beta");
  CHECK(f.observations()[2].readiness.state == readiness_state::ready);
}

TEST_CASE("watcher: observing an id twice keeps one observation, with no second report for an unchanged slot", "[actor][watcher][observe]") {
  watcher_fixture f;
  auto slot = f.slot_of("idx");
  f.watch.observe("idx", slot);
  f.scan();
  f.watch.observe("idx", slot);  // a second subscriber
  f.scan();
  CHECK(f.observations().size() == 1);
}

TEST_CASE("watcher: with its observer gone it still wakes runners for rebuild requests", "[actor][watcher]") {
  watcher_fixture f;
  auto runner = f.add("idx");
  f.watch.observe("idx", f.slot_of("idx"));
  caf::anon_send_exit(f.observer, caf::exit_reason::user_shutdown);
  f.run();
  f.observer = caf::actor{};  // the runtime actor ended: the watcher's weak reference expires
  f.request_rebuild_elsewhere("idx");
  f.scan();
  REQUIRE(f.wakes_of(runner).size() == 1);
  CHECK(f.wakes_of(runner)[0] == wake_flag::rebuild);
}

TEST_CASE("watcher: stop without a started thread does nothing, and scan works after it", "[actor][watcher]") {
  watcher_fixture f;
  auto runner = f.add("idx");
  f.watch.stop();
  f.watch.stop();
  f.request_rebuild_elsewhere("idx");
  f.scan();
  CHECK(f.wakes_of(runner).size() == 1);
}

namespace {

// A watcher with coverage waiters and one registered id, ready with coverage_time 50.
struct coverage_fixture : watcher_fixture {
  std::shared_ptr<coverage_waiters> waiters = std::make_shared<coverage_waiters>(segment, registry, clock, 30000ms);
  caf::actor runner = add("idx");
  std::shared_ptr<segment_slot> slot = slot_of("idx");
  coverage_fixture() {
    watch.set_coverage(waiters);
    slot->apply(slot_publication{readiness_state::ready, readiness_reason::none, 0, index_time_t{50}, std::nullopt});
  }
};

}  // namespace

TEST_CASE("watcher: a coverage demand above a registered id's coverage_time, raised by another process's waiter, wakes its runner with the coverage flag, again only after a change or a timeout", "[actor][watcher][coverage]") {
  coverage_fixture f;
  auto& runner = f.runner;
  auto& slot = f.slot;
  f.scan();
  CHECK(f.wakes_of(runner).empty());  // no demand
  auto view = segment_view::open(f.home.path(), segment_view::access::read_write).value();
  view->slot(*view->find("idx"))->raise_coverage_demand(100);  // the free wait_for_coverage elsewhere
  f.scan();
  REQUIRE(f.wakes_of(runner).size() == 1);
  CHECK(f.wakes_of(runner)[0] == wake_flag::coverage);
  f.scan();  // unchanged slot
  CHECK(f.wakes_of(runner).size() == 1);
  f.scan(true);  // timed out: reminded
  CHECK(f.wakes_of(runner).size() == 2);
  slot->set_coverage_time(100);  // the owner covered the demand
  f.scan(true);
  CHECK(f.wakes_of(runner).size() == 2);
}

TEST_CASE("watcher: the first coverage waiter of an id sends its runner a coverage wake, a second one does not, and the look raises the demand", "[actor][watcher][coverage]") {
  coverage_fixture f;
  auto& waiters = f.waiters;
  auto& runner = f.runner;
  auto& slot = f.slot;
  std::vector<result<void>> outcomes;
  waiters->add("idx", 80, 1000ms, {}, [&](result<void> r) { outcomes.push_back(std::move(r)); });
  f.run();
  REQUIRE(f.wakes_of(runner).size() == 1);
  CHECK(f.wakes_of(runner)[0] == wake_flag::coverage);
  waiters->add("idx", 90, 1000ms, {}, [&](result<void> r) { outcomes.push_back(std::move(r)); });
  f.run();
  CHECK(f.wakes_of(runner).size() == 1);
  f.watch.scan(false);  // the look raises the demand to 90 and so wakes the runner once more
  f.run();
  CHECK(slot->coverage_demand() == 90);
  CHECK(f.wakes_of(runner).size() == 2);
  slot->set_coverage_time(90);
  f.scan();
  CHECK(outcomes.size() == 2);
  for (auto& o : outcomes) CHECK(o);
}

TEST_CASE("watcher: a pending request is told to the supervisor too (it revives an escalated registration), also for an id without a runner, once per change", "[actor][watcher][supervision]") {
  test::registered_ids ids;
  caf::actor supervisor = ids.sys.spawn(test::recording_supervisor);
  watcher watch{ids.segment, ids.registry, nullptr, 1000ms, supervisor};
  auto& revived = ids.state_of<test::supervisor_state>(supervisor).revived;
  auto e = ids.put("idx", 7);  // escalated: no runner, none to come
  watch.scan(false);
  ids.run();
  CHECK(revived.empty());  // no request
  auto view = segment_view::open(ids.home.path(), segment_view::access::read_write).value();
  REQUIRE(view);
  view->slot(*view->find("idx"))->request_rebuild();
  watch.scan(false);
  ids.run();
  CHECK(revived == std::vector<std::uint64_t>{7});
  watch.scan(false);
  ids.run();
  CHECK(revived.size() == 1);  // the slot has not changed since
  watch.scan(true);  // a timed-out wait looks again
  ids.run();
  CHECK(revived.size() == 2);
  caf::anon_send_exit(supervisor, caf::exit_reason::user_shutdown);
  ids.run();
}
