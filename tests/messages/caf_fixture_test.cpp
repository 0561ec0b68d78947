// tests/support/caf_fixture.hpp: typed exchanges, run/run_once and fake time on CAF's test
// coordinator, with the typed interfaces of messages/interfaces.hpp.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include <caf/send.hpp>

#include "messages/interfaces.hpp"
#include "support/caf_fixture.hpp"

using namespace std::chrono_literals;
using dix::test::caf_fixture;

namespace {

dix::cursor durable_cursor() {
  auto c = dix::cursor::make({{"main", "identity-main", 42, 1'042}});
  REQUIRE(c);
  return *c;
}

// A backend proxy stand-in implementing the whole backend_proxy_actor interface.
struct fake_proxy_state {
  std::uint64_t durable_queries = 0;
  std::vector<dix::epoch_t> epochs_seen;
};

dix::backend_proxy_actor::behavior_type fake_proxy(
  dix::backend_proxy_actor::stateful_pointer<fake_proxy_state> self) {
  return {
    [](const dix::deliver& d) {
      return dix::delivery_result_msg{d.gen, dix::delivery_result::accepted, {}};
    },
    [self](const dix::durable_query& q) {
      ++self->state.durable_queries;
      return dix::durable{q.gen, durable_cursor(), caf::error{}};
    },
    [](const dix::flush_request& r) { return dix::flush_done{r.gen, caf::error{}}; },
    [](const dix::shutdown_request& r) {
      return dix::quiescence{r.epoch, dix::make_error(dix::errc::backend_failed, "rejected (test)")};
    },
    [self](const dix::state_change_msg& c) { self->state.epochs_seen.push_back(c.epoch); },
    [](const dix::flush_done&) {},
    [](const dix::quiescence&) {},
    [](const dix::reset_request& r) { return dix::reset_done{r.gen, r.epoch, caf::error{}}; },
    [](const dix::reset_done&) {},
    [](const dix::coverage_publish&) {},
    [](const dix::digest_open& o) {
      return dix::digest_opened{o.gen, std::nullopt, dix::make_error(dix::errc::not_supported, "no digest (test)")};
    },
    [](const dix::verify_run&) {},
    [](const dix::verify_drop&) {},
    [](const dix::verify_tick&) {},
  };
}

// Asks the proxy for its durable cursor once and keeps the answer.
struct asker_state {
  std::optional<dix::durable> reply;
  caf::error error;
};

caf::behavior asker(caf::stateful_actor<asker_state>* self, dix::backend_proxy_actor proxy) {
  // No timeout: backend requests carry none (actors.md §2).
  self->request(proxy, caf::infinite, dix::durable_query{7})
    .then([self](dix::durable& d) { self->state.reply = std::move(d); },
          [self](caf::error& e) { self->state.error = std::move(e); });
  return {[](const dix::wake&) {}};
}

// Arms one delayed timer message to itself and records what fires.
struct timer_state {
  std::vector<dix::timer> fired;
};

caf::behavior timer_owner(caf::stateful_actor<timer_state>* self) {
  self->delayed_send(self, 5s, dix::timer{dix::timer_kind::flush_age, 3});
  return {[self](const dix::timer& t) { self->state.fired.push_back(t); }};
}

}  // namespace

TEST_CASE_METHOD(caf_fixture, "caf_fixture: a typed request is answered once the system runs",
                 "[actor][messages]") {
  auto proxy = sys.spawn(fake_proxy);
  auto client = sys.spawn(asker, proxy);
  CHECK_FALSE(state_of<asker_state>(client).reply.has_value());  // nothing ran yet
  run();
  auto& got = state_of<asker_state>(client);
  REQUIRE(got.reply.has_value());
  CHECK(!got.error);
  CHECK(got.reply->gen == 7);
  REQUIRE(got.reply->cursor.has_value());
  CHECK(*got.reply->cursor == durable_cursor());
  CHECK(state_of<fake_proxy_state>(proxy).durable_queries == 1);
}

TEST_CASE_METHOD(caf_fixture,
                 "caf_fixture: a scoped actor sends, run() delivers, receive with after(0s) "
                 "collects the reply",
                 "[actor][messages]") {
  auto proxy = sys.spawn(fake_proxy);
  caf::scoped_actor self{sys};
  self->send(proxy, dix::flush_request{11, dix::flush_reason::threshold});
  CHECK_FALSE(try_receive<dix::flush_done>(self).has_value());  // the proxy has not run
  run();
  auto reply = try_receive<dix::flush_done>(self);
  REQUIRE(reply.has_value());
  CHECK(reply->gen == 11);
  CHECK(!reply->error);
  CHECK_FALSE(try_receive<dix::flush_done>(self).has_value());  // exactly one reply

  self->send(proxy, dix::shutdown_request{4});
  run();
  auto shutdown = try_receive<dix::quiescence>(self);
  REQUIRE(shutdown.has_value());
  CHECK(shutdown->epoch == 4);
  CHECK(dix::to_errc(shutdown->error) == dix::errc::backend_failed);
}

TEST_CASE_METHOD(caf_fixture, "caf_fixture: run_once processes one message at a time",
                 "[actor][messages]") {
  auto proxy = sys.spawn(fake_proxy);
  run();  // initialization
  caf::anon_send(proxy, dix::state_change_msg{dix::state_change_kind::changed, 5});
  caf::anon_send(proxy, dix::state_change_msg{dix::state_change_kind::changed, 6});
  CHECK(run_once());
  CHECK(state_of<fake_proxy_state>(proxy).epochs_seen == std::vector<dix::epoch_t>{5});
  CHECK(run_once());
  CHECK(state_of<fake_proxy_state>(proxy).epochs_seen == std::vector<dix::epoch_t>{5, 6});
  CHECK_FALSE(run_once());
}

TEST_CASE_METHOD(caf_fixture, "caf_fixture: a delayed message fires only after advance()",
                 "[actor][messages]") {
  auto start_steady = clock.steady_now();
  auto start_wall = clock.wall_now_ns();
  auto owner = sys.spawn(timer_owner);
  run();
  CHECK(has_pending_timer());
  CHECK(state_of<timer_state>(owner).fired.empty());  // run() never fires timers
  CHECK(advance(4999ms) == 0);
  CHECK(state_of<timer_state>(owner).fired.empty());
  CHECK(advance(1ms) == 1);
  auto& fired = state_of<timer_state>(owner).fired;
  REQUIRE(fired.size() == 1);
  CHECK(fired[0].kind == dix::timer_kind::flush_age);
  CHECK(fired[0].gen == 3);
  CHECK_FALSE(has_pending_timer());
  // CAF's clock and the cores' clock moved together.
  CHECK(clock.steady_now() - start_steady == 5s);
  CHECK(clock.wall_now_ns() - start_wall == 5'000'000'000u);
  clock.set_wall_ns(start_wall - 1);  // a wall-clock step back leaves the actor clock alone
  CHECK(clock.wall_now_ns() == start_wall - 1);
  CHECK(clock.steady_now() - start_steady == 5s);

  // A timer still armed at the end of a test: the fixture drops it, so teardown cannot hang.
  sys.spawn(timer_owner);
  run();
  CHECK(has_pending_timer());
}

TEST_CASE("interfaces: every actor handle of the wiring diagram is a distinct typed handle",
          "[actor][messages]") {
  dix::supervisor_actor supervisor;
  dix::runner_actor runner;
  dix::log_tailer_actor tailer;
  dix::backend_proxy_actor proxy;
  dix::readiness_publisher_actor publisher;
  CHECK_FALSE(supervisor);
  CHECK_FALSE(runner);
  CHECK_FALSE(tailer);
  CHECK_FALSE(proxy);
  CHECK_FALSE(publisher);
  static_assert(!std::is_same<dix::runner_actor, dix::log_tailer_actor>::value);
  static_assert(!std::is_same<dix::backend_proxy_actor, dix::readiness_publisher_actor>::value);
}
