// [actor] The runtime's watcher (actors/watcher.hpp, protocol.md §9.1) without its thread: the test
// calls scan() itself (actors.md §5) over a real readiness segment in a temporary directory and a
// runtime_registry of hand-made entries. Recording actors on CAF's test coordinator stand in for
// the runners (they take `wake`) and for the runtime actor (it takes `readiness_observed`); the
// test runs the coordinator after each scan and reads what they recorded.
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "actors/runtime_registry.hpp"
#include "actors/watcher.hpp"
#include "adapters/readiness_segment.hpp"
#include "messages/publication.hpp"
#include "messages/runner.hpp"
#include "support/caf_fixture.hpp"
#include "support/temp_dir.hpp"

using namespace dix;
using namespace std::chrono_literals;

namespace {

struct runner_state {
  std::vector<std::uint8_t> wakes;  // the flags of every wake, in arrival order
};

// Stands in for a runner: records the wakes it is sent.
caf::behavior recording_runner(caf::stateful_actor<runner_state>* self) {
  return {[self](wake& w) { self->state.wakes.push_back(w.flags); }};
}

struct observer_state {
  std::vector<readiness_observed> seen;
};

// Stands in for the runtime actor: records the observations it is sent.
caf::behavior recording_observer(caf::stateful_actor<observer_state>* self) {
  return {[self](readiness_observed& o) { self->state.seen.push_back(std::move(o)); }};
}

struct watcher_fixture : test::caf_fixture {
  test::temp_dir home;
  std::shared_ptr<readiness_segment> segment = readiness_segment::attach(home.path()).value();
  std::shared_ptr<runtime_registry> registry = std::make_shared<runtime_registry>();
  caf::actor observer = sys.spawn(recording_observer);
  watcher watch{segment, registry, observer, 1000ms};
  std::uint64_t next_token = 1;
  std::vector<caf::actor> runners;

  ~watcher_fixture() override {
    if (observer) caf::anon_send_exit(observer, caf::exit_reason::user_shutdown);
    for (const auto& r : runners) caf::anon_send_exit(r, caf::exit_reason::user_shutdown);
    run();
  }

  caf::actor spawn_runner() { return runners.emplace_back(sys.spawn(recording_runner)); }

  // Registers `id` with its claimed slot and a recording runner; returns the runner.
  caf::actor add(const std::string& id) {
    auto runner = spawn_runner();
    auto e = std::make_shared<registration_entry>();
    e->id = id;
    e->token = next_token++;
    e->slot = segment->claim(id).value();
    e->set_runner(caf::actor_cast<runner_actor>(runner));
    registry->put(e);
    return runner;
  }

  std::shared_ptr<segment_slot> slot_of(const std::string& id) { return segment->claim(id).value(); }

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

  std::vector<std::uint8_t>& wakes_of(const caf::actor& runner) { return state_of<runner_state>(runner).wakes; }
  std::vector<readiness_observed>& observations() { return state_of<observer_state>(observer).seen; }
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

TEST_CASE("watcher: a registered id without a runner yet is skipped, and its runner is woken once it has one", "[actor][watcher]") {
  watcher_fixture f;
  auto e = std::make_shared<registration_entry>();
  e->id = "idx";
  e->token = 7;
  e->slot = f.slot_of("idx");
  f.registry->put(e);
  f.request_rebuild_elsewhere("idx");
  f.scan();  // nothing to send to; must not fail
  auto runner = f.spawn_runner();
  e->set_runner(caf::actor_cast<runner_actor>(runner));
  f.scan(true);  // the slot has not changed since the look without a runner, so only a timeout reminds
  REQUIRE(f.wakes_of(runner).size() == 1);
  CHECK(f.wakes_of(runner)[0] == wake_flag::rebuild);
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
