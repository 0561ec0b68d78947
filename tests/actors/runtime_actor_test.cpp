// [actor] The runtime actor (<dix/caf.hpp>) on CAF's test coordinator: a real primary store and a
// real readiness segment in a temporary directory, the simulated backend, no detached actors and
// no watcher thread (the test runs the watcher's scan() itself, actors.md §5). The requests are
// those a CAF application sends; the answers are collected from a scoped actor's mailbox.
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <set>
#include <type_traits>

#include <dix/caf.hpp>
#include <dix/runtime.hpp>

#include "actors/runtime_root.hpp"
#include "actors/runtime_work.hpp"
#include "adapters/meta_records.hpp"
#include "adapters/primary_store_impl.hpp"
#include "adapters/readiness_segment.hpp"
#include "actors/watcher.hpp"
#include "support/caf_fixture.hpp"
#include "support/sim_backend.hpp"
#include "support/temp_dir.hpp"
#include "support/wrapped_backend.hpp"

using namespace dix;
using namespace std::chrono_literals;

namespace {

constexpr std::uint32_t table = 1;

struct runtime_fixture : test::caf_fixture {
  test::temp_dir dir;
  std::shared_ptr<primary_store> store;
  std::shared_ptr<runtime_context> ctx;
  runtime_actor_impl rt;
  caf::scoped_actor self{sys};

  explicit runtime_fixture(runtime_options o = {}) {
    store_options so;
    so.log_name = "main";
    store = primary_store::open(dir / "db", so).value();
    REQUIRE(store->create_table(table));
    ctx = prepare_runtime({store}, o).value();
    ctx->detached = false;        // the test coordinator runs every actor
    ctx->watcher_thread = false;  // the test calls ctx->watch->scan()
    ctx->time = &clock;
    rt = spawn_runtime_actor(sys, ctx);
    run();
  }
  ~runtime_fixture() override {
    caf::anon_send_exit(rt, caf::exit_reason::user_shutdown);
    run();
  }

  static registration index_of(std::shared_ptr<backend> b, std::optional<runner_options> o = {}) {
    registration r;
    r.backend = std::move(b);
    r.projections[table_ref{"main", table}] = [](std::string_view payload, const record_info&) -> projection_result {
      return std::string(payload);
    };
    r.options = o;
    return r;
  }

  // Sends `request` to the runtime, runs until quiet and returns the answer (a T or an error). An
  // answer still pending (a release waiting for a barrier) reads as timeout.
  template <class T, class Request>
  result<T> ask(Request request) {
    self->send(rt, std::move(request));
    run();
    std::optional<T> value;
    dix::error failure{errc::timeout, "no answer yet"};
    self->receive([&](T& x) { value = std::move(x); }, [&](caf::error& err) { failure = to_dix_error(err); },
                  caf::after(std::chrono::seconds(0)) >> [] {});
    if (value) return std::move(*value);
    return failure;
  }

  void commit(const std::string& id, const std::string& value) {
    auto txn = store->begin();
    txn.put(table, id, value);
    REQUIRE(txn.commit());
    run();
  }

  // What the watcher thread does after a wake, then the messages it caused.
  void watch() {
    ctx->watch->scan(false);
    run();
  }

  // A simulated backend registered as `id`, one record committed and made durable.
  std::shared_ptr<test::sim_backend> ready_index(const std::string& id = "idx") {
    auto backend = std::make_shared<test::sim_backend>(id);
    REQUIRE(ask<index_registered>(register_index{index_of(backend)}));
    commit("a", "1");
    advance(std::chrono::milliseconds(1000));
    return backend;
  }

  // Whether the process lock table grants `id` to another requester at once (then given back).
  bool lock_free(const std::string& id) {
    bool granted = false;
    ctx->locks->acquire(id, 999, [&](result<void> r, bool) { granted = static_cast<bool>(r); });
    ctx->locks->release(id, 999);
    return granted;
  }

  template <class Event>
  std::vector<Event> drain() {
    std::vector<Event> out;
    while (auto e = try_receive<Event>(self)) out.push_back(std::move(*e));
    return out;
  }
};

}  // namespace

static_assert(!std::is_copy_constructible_v<dix::runtime> && !std::is_move_constructible_v<dix::runtime> &&
                  !std::is_copy_assignable_v<dix::runtime>,
              "two copies of a runtime would both stop in their destructors");

TEST_CASE("runtime actor: configure may be called twice on one config", "[actor][runtime]") {
  caf::actor_system_config cfg;
  dix::configure(cfg);
  dix::configure(cfg);
  cfg.set("scheduler.policy", caf::atom("testing"));
  caf::actor_system sys{cfg};
  CHECK(sys.render(make_error(errc::io_error, "disk")) == "dix: io_error (disk)");
}

TEST_CASE("runtime actor: registration, status, metrics, readiness and stop as requests", "[actor][runtime]") {
  runtime_fixture f;
  auto backend = std::make_shared<test::sim_backend>("idx");
  auto registered = f.ask<index_registered>(register_index{runtime_fixture::index_of(backend)});
  REQUIRE(registered);
  CHECK(registered->id == "idx");
  CHECK(f.ask<index_registered>(register_index{runtime_fixture::index_of(backend)}).error().value() == errc::already_registered);
  f.commit("a", "1");
  f.advance(1000ms);  // the age flush makes it durable
  auto status = f.ask<status_report>(query_status{"idx"});
  REQUIRE(status);
  REQUIRE(status->status);
  CHECK(status->status->state == runner_state::idle);
  auto readiness = f.ask<readiness_report>(query_readiness{"idx"});
  REQUIRE(readiness);
  CHECK(readiness->value.state == readiness_state::ready);
  auto metrics = f.ask<metrics_report>(query_metrics{"idx"});
  REQUIRE(metrics);
  REQUIRE(metrics->metrics);
  CHECK(metrics->metrics->owner);
  CHECK(metrics->metrics->delivered_records == 1);
  CHECK(f.ask<readiness_report>(query_readiness{"other"}).error().value() == errc::not_registered);
  CHECK(f.ask<readiness_report>(query_readiness{".bad"}).error().value() == errc::invalid_argument);
  CHECK_FALSE(f.ask<status_report>(query_status{"other"})->status);
  REQUIRE(f.ask<runtime_stopped>(stop_runtime{}));
  CHECK(f.ask<index_registered>(register_index{runtime_fixture::index_of(backend)}).error().value() == errc::stopped);
  CHECK_FALSE(f.ask<status_report>(query_status{"idx"})->status);  // stop unregistered it
}

TEST_CASE("runtime actor: a subscriber hears the index become ready and its runner's states until it unsubscribes", "[actor][runtime][subscribe]") {
  runtime_fixture f;
  auto backend = std::make_shared<test::sim_backend>("idx");
  backend->hold_work_barriers = true;  // the fresh index's rebuild ends after the subscription
  REQUIRE(f.ask<index_registered>(register_index{runtime_fixture::index_of(backend)}));
  auto first = f.ask<subscribed>(subscribe{"idx"});
  REQUIRE(first);
  CHECK(first->status);  // registered here: its runner's status comes with it
  f.commit("a", "1");
  backend->release_work_barriers();
  f.advance(1000ms);
  f.watch();
  auto changes = f.drain<readiness_changed>();
  REQUIRE_FALSE(changes.empty());
  CHECK(changes.back().id == "idx");
  CHECK(changes.back().readiness.state == readiness_state::ready);
  for (std::size_t i = 1; i < changes.size(); ++i) CHECK_FALSE(changes[i].readiness.state == changes[i - 1].readiness.state);
  auto states = f.drain<runner_state_changed>();
  REQUIRE_FALSE(states.empty());
  CHECK(states.back().status.state == runner_state::idle);
  CHECK(states.back().status.epoch == f.ask<readiness_report>(query_readiness{"idx"})->value.owner_epoch);

  REQUIRE(f.ask<unsubscribed>(unsubscribe{"idx"}));
  f.commit("b", "2");
  f.advance(1000ms);
  f.watch();
  CHECK(f.drain<readiness_changed>().empty());
  CHECK(f.drain<runner_state_changed>().empty());
  CHECK(f.ask<subscribed>(subscribe{"nobody"}).error().value() == errc::not_registered);
}

TEST_CASE("runtime actor: a subscriber that terminates is forgotten: the runtime keeps no reference to it", "[actor][runtime][subscribe]") {
  runtime_fixture f;
  REQUIRE(f.ask<index_registered>(register_index{runtime_fixture::index_of(std::make_shared<test::sim_backend>("idx"))}));
  runtime_actor rt = f.rt;
  auto subscriber = f.sys.spawn([rt](caf::event_based_actor* self) -> caf::behavior {
    self->request(rt, caf::infinite, subscribe{"idx"}).then([](subscribed&) {});
    return {[self](const std::string&) { self->quit(); }, [](const readiness_changed&) {}, [](const runner_state_changed&) {}};
  });
  f.run();
  caf::weak_actor_ptr weak = caf::actor_cast<caf::weak_actor_ptr>(subscriber);
  caf::anon_send(subscriber, std::string("quit"));
  subscriber = nullptr;
  f.run();
  f.commit("a", "1");  // events for nobody
  f.advance(1000ms);
  f.watch();
  CHECK_FALSE(weak.lock());  // the down message dropped the runtime's handle: the actor is gone
}

TEST_CASE("runtime actor: metrics age between events: a runner parked in deferred reports stalled_ms growing with the clock", "[actor][runtime][metrics]") {
  runtime_fixture f;
  auto backend = std::make_shared<test::sim_backend>("idx");
  backend->auto_barrier = false;
  backend->cap = 1;
  runner_options o;
  o.max_flush_age = 600000ms;  // no timer fires in this test: only the clock moves
  REQUIRE(f.ask<index_registered>(register_index{runtime_fixture::index_of(backend, o)}));
  f.commit("a", "1");
  f.commit("b", "2");  // deferred: the backend holds one batch already
  auto before = f.ask<metrics_report>(query_metrics{"idx"});
  REQUIRE(before->metrics);
  REQUIRE(before->metrics->deferred_bytes > 0);
  f.advance(2000ms);
  auto after = f.ask<metrics_report>(query_metrics{"idx"});
  CHECK(after->metrics->stalled_ms == before->metrics->stalled_ms + 2000);
  CHECK(after->metrics->lag_ms >= 2000);
  backend->auto_barrier = true;  // the release at the end may complete
}

TEST_CASE("runtime actor: unregister removes the id at once, a replacement registers while the release is pending and takes over when it settles", "[actor][runtime][unregister]") {
  runtime_fixture f;
  auto first = std::make_shared<test::sim_backend>("idx");
  REQUIRE(f.ask<index_registered>(register_index{runtime_fixture::index_of(first)}));
  f.commit("a", "1");
  f.advance(1000ms);
  const auto e1 = f.ask<readiness_report>(query_readiness{"idx"})->value.owner_epoch;
  REQUIRE(e1 > 0);
  first->auto_barrier = false;  // flush(shutdown) waits: the release stays pending
  f.self->send(f.rt, unregister_index{"idx"});
  f.run();
  CHECK_FALSE(f.ask<status_report>(query_status{"idx"})->status);  // gone at once
  CHECK_FALSE(test::caf_fixture::try_receive<index_unregistered>(f.self));  // not released yet

  auto second = std::make_shared<test::sim_backend>("idx");
  REQUIRE(f.ask<index_registered>(register_index{runtime_fixture::index_of(second)}));  // not already_registered
  f.commit("b", "2");
  CHECK(f.ask<status_report>(query_status{"idx"})->status->state == runner_state::waiting_lock);

  first->barrier();  // the shutdown flush completes: shutdown, then the lock goes to the replacement
  f.run();
  CHECK(test::caf_fixture::try_receive<index_unregistered>(f.self));
  CHECK_FALSE(first->subscribed());  // the registration's subscription ended before the answer
  f.advance(1000ms);
  auto now = f.ask<readiness_report>(query_readiness{"idx"})->value;
  CHECK(now.state == readiness_state::ready);
  CHECK(now.owner_epoch > e1);
  CHECK(f.ask<metrics_report>(query_metrics{"idx"})->metrics->owner);
  CHECK(second->durable_index().count(test::index_key("main", table, "b")) == 1);
}

TEST_CASE("runtime actor: a registration whose backend cannot subscribe fails whole and the id can register again", "[actor][runtime][register]") {
  runtime_fixture f;
  auto inner = std::make_shared<test::sim_backend>("idx");
  auto unsubscribable = std::make_shared<test::wrapped_backend>(inner);  // its subscription throws (§2.2)
  unsubscribable->fail_subscription = true;
  auto refused = f.ask<index_registered>(register_index{runtime_fixture::index_of(unsubscribable)});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::backend_failed);
  CHECK_THAT(refused.error().message(), Catch::Contains("on_state_change"));
  CHECK_FALSE(f.ask<status_report>(query_status{"idx"})->status);
  f.commit("a", "1");
  CHECK(inner->seen.empty());  // nothing was wired for it
  REQUIRE(inner->host() != nullptr);
  CHECK_FALSE(inner->host()->is_owner_epoch(inner->host()->readiness().owner_epoch));  // its host ended
  auto again = std::make_shared<test::sim_backend>("idx");
  REQUIRE(f.ask<index_registered>(register_index{runtime_fixture::index_of(again)}));
  CHECK(again->subscribed());
}

TEST_CASE("runtime actor: a registration whose epoch cannot be incremented (epoch/<id> or the slot at 2^64-1) fails record_corrupt and wires nothing", "[actor][runtime][register][epoch]") {
  constexpr auto top = std::numeric_limits<epoch_t>::max();
  runtime_fixture f;
  REQUIRE(commit_system(*f.store, {meta_op{op_kind::put, "epoch/idx", meta::encode_u64(top)}}));
  auto inner = std::make_shared<test::sim_backend>("idx");
  auto refused = f.ask<index_registered>(register_index{runtime_fixture::index_of(inner)});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::record_corrupt);
  CHECK_THAT(refused.error().message(), Catch::Contains("epoch/idx"));
  CHECK(inner->host() == nullptr);  // never attached

  // The record is sound, the segment's slot is not: the floor cannot lift it, the mint would wrap.
  auto slot = f.ctx->segment->claim("other").value();
  slot->raise_epoch_floor(top);
  auto other = std::make_shared<test::sim_backend>("other");
  refused = f.ask<index_registered>(register_index{runtime_fixture::index_of(other)});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::record_corrupt);
  CHECK_THAT(refused.error().message(), Catch::Contains("(other)") && Catch::Contains("2^64-1"));
  CHECK(other->host() == nullptr);
  CHECK(slot->owner_epoch() == top);  // never wrapped
}

TEST_CASE("runtime actor: after its registration ended a backend's host answers no epoch and no query, and stays callable", "[actor][runtime][host]") {
  runtime_fixture f;
  auto backend = f.ready_index();
  auto* host = backend->host();
  REQUIRE(host != nullptr);
  const auto epoch = host->readiness().owner_epoch;
  REQUIRE(host->is_owner_epoch(epoch));
  REQUIRE(f.ask<index_unregistered>(unregister_index{"idx"}));
  // An applier thread draining late may still call it (api.md §5).
  CHECK_FALSE(host->is_owner_epoch(epoch));
  CHECK(host->readiness().state == readiness_state::ready);  // the value when it ended
  CHECK(host->admit_query(coverage_mode{}).error().value() == errc::not_registered);
  host->note_unindexable("late");
  host->request_rebuild();
  f.run();
  CHECK(f.ask<readiness_report>(query_readiness{"idx"})->value.state == readiness_state::ready);
}

TEST_CASE("runtime actor: the same backend object registered again while its release is pending waits for that release, then is attached again", "[actor][runtime][register]") {
  runtime_fixture f;
  auto backend = f.ready_index();
  backend->auto_barrier = false;  // flush(shutdown) waits: the release stays pending
  f.self->send(f.rt, unregister_index{"idx"});
  f.run();
  f.self->send(f.rt, register_index{runtime_fixture::index_of(backend)});
  f.run();
  CHECK(backend->attaches == 1);  // no call into the backend while its release runs (api.md §5)
  CHECK_FALSE(test::caf_fixture::try_receive<index_registered>(f.self));
  backend->auto_barrier = true;
  backend->barrier();  // the release settles; the waiting registration goes on
  f.run();
  CHECK(test::caf_fixture::try_receive<index_unregistered>(f.self));
  CHECK(test::caf_fixture::try_receive<index_registered>(f.self));
  CHECK(backend->attaches == 2);
  f.commit("b", "2");
  f.advance(1000ms);
  CHECK(backend->durable_index().count(test::index_key("main", table, "b")) == 1);
}

TEST_CASE("runtime actor: a backend object whose previous registration kept its lock after a rejected shutdown cannot register again", "[actor][runtime][register]") {
  runtime_fixture f;
  auto backend = f.ready_index();
  backend->reject_shutdown = true;
  CHECK(f.ask<index_unregistered>(unregister_index{"idx"}).error().value() == errc::backend_failed);
  auto again = f.ask<index_registered>(register_index{runtime_fixture::index_of(backend)});
  REQUIRE_FALSE(again);
  CHECK(again.error().value() == errc::backend_failed);
  CHECK_THAT(again.error().message(), Catch::Contains("request_rebuild retries that release"));
  CHECK(backend->attaches == 1);
  auto other = std::make_shared<test::sim_backend>("idx");  // another object of the id may: it waits for the lock
  CHECK(f.ask<index_registered>(register_index{runtime_fixture::index_of(other)}));
  backend->reject_shutdown = false;
}

TEST_CASE("runtime actor: killed, it frees its locks and ends its registrations' hosts, the backend may still call its host", "[actor][runtime][kill]") {
  runtime_fixture f;
  auto backend = f.ready_index();
  auto* host = backend->host();
  const auto epoch = f.ask<readiness_report>(query_readiness{"idx"})->value.owner_epoch;
  REQUIRE(host->is_owner_epoch(epoch));
  caf::anon_send_exit(f.rt, caf::exit_reason::kill);  // no stop: the abnormal end
  f.run();
  CHECK_FALSE(host->is_owner_epoch(epoch));  // ended, and still valid
  CHECK(host->admit_query(coverage_mode{}).error().value() == errc::not_registered);
  CHECK(f.lock_free("idx"));  // the lock-table entry was given back
}

TEST_CASE("runtime actor: when its supervisor or its readiness publisher ends, it ends too: the runners go with the supervisor, the locks are freed, a waiting stop fails stopped", "[actor][runtime][kill]") {
  const bool supervisor = GENERATE(true, false);
  CAPTURE(supervisor);
  runtime_fixture f;
  auto backend = f.ready_index();
  auto runner = f.ctx->registry->find("idx")->runner();
  REQUIRE(runner);
  f.self->monitor(f.rt);
  f.self->monitor(runner);
  backend->auto_barrier = false;  // the stop waits for a barrier that never comes
  f.self->send(f.rt, stop_runtime{});
  f.run();
  REQUIRE(f.try_receive<runtime_stopped>(f.self) == std::nullopt);
  auto helper = supervisor ? f.ctx->supervisor : f.ctx->publisher;
  caf::anon_send_exit(caf::actor_cast<caf::actor>(helper), caf::exit_reason::kill);
  f.run();
  std::optional<caf::error> stop_failure;
  std::vector<caf::actor_addr> ended;
  for (int i = 0; i < 3; ++i) {
    f.self->receive([&](caf::error& err) { stop_failure = err; }, [&](caf::down_msg& dm) { ended.push_back(dm.source); },
                    caf::after(std::chrono::seconds(0)) >> [] {});
  }
  REQUIRE(stop_failure);
  CHECK(to_errc(*stop_failure) == errc::stopped);
  CHECK_THAT(error_text(*stop_failure), Catch::Contains(supervisor ? "supervisor ended" : "publisher ended"));
  CHECK(std::count(ended.begin(), ended.end(), f.rt.address()) == 1);
  CHECK(std::count(ended.begin(), ended.end(), runner.address()) == 1);
  CHECK(f.lock_free("idx"));

}

TEST_CASE("runtime actor: wait_coverage answers coverage_reached once the slot covers since, index_lagging at the deadline, stopped at stop, and refuses bad requests at once", "[actor][runtime][coverage]") {
  runtime_fixture f;
  f.ready_index();
  auto slot = f.ctx->segment->find("idx");
  REQUIRE(slot);
  REQUIRE(slot->read().state == readiness_state::ready);
  auto answer = [&]() -> std::optional<result<coverage_reached>> {
    std::optional<result<coverage_reached>> out;
    f.self->receive([&](coverage_reached& x) { out = result<coverage_reached>(x); },
                    [&](caf::error& err) { out = result<coverage_reached>(to_dix_error(err)); },
                    caf::after(std::chrono::seconds(0)) >> [] {});
    return out;
  };
  // An hour ahead of the wall clock: the owner's own captures (index times of now) never cover it,
  // so only the coverage time this test stores answers the waiter.
  const auto wall_ns = static_cast<index_time_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  const index_time_t since = std::max(slot->coverage_time(), wall_ns) + 3'600'000'000'000ull;
  f.self->send(f.rt, wait_coverage{"idx", since, 5000});
  f.run();
  f.watch();
  CHECK_FALSE(answer());
  CHECK(slot->coverage_demand() == since);  // raised for the owner's flush
  slot->set_coverage_time(since);
  f.watch();
  auto reached = answer();
  REQUIRE(reached);
  REQUIRE(*reached);
  CHECK((*reached)->id == "idx");
  CHECK((*reached)->since == since);

  f.self->send(f.rt, wait_coverage{"idx", since + 1, 5000});
  f.run();
  f.watch();
  CHECK_FALSE(answer());
  f.advance(std::chrono::milliseconds(5000));
  f.watch();
  auto lagging = answer();
  REQUIRE(lagging);
  REQUIRE_FALSE(*lagging);
  CHECK(lagging->error().value() == errc::index_lagging);

  CHECK(f.ask<coverage_reached>(wait_coverage{"idx", 0, 10}).error().value() == errc::invalid_argument);
  CHECK(f.ask<coverage_reached>(wait_coverage{"idx", 1, 30001}).error().value() == errc::invalid_argument);
  CHECK(f.ask<coverage_reached>(wait_coverage{"nope", 1, 10}).error().value() == errc::not_registered);

  f.self->send(f.rt, wait_coverage{"idx", since + 2, 5000});
  f.run();
  CHECK_FALSE(answer());
  f.self->send(f.rt, stop_runtime{});
  f.run();
  f.advance(std::chrono::milliseconds(2000));
  bool stopped_waiter = false;
  for (int i = 0; i < 2; ++i) {
    f.self->receive([&](coverage_reached&) {}, [&](runtime_stopped&) {},
                    [&](caf::error& err) { stopped_waiter = stopped_waiter || to_dix_error(err).value() == errc::stopped; },
                    caf::after(std::chrono::seconds(0)) >> [] {});
  }
  CHECK(stopped_waiter);
}

// Issue 29: a CAF application registers an index and at once asks to read its own write. The new
// index has no cursor: it passes through needs-rebuild and rebuilding (its reset held here, so the
// test sees that state) before its first ready. The wait waits through every one of them.
TEST_CASE("runtime actor: wait_coverage sent right after register_index waits through the first build and answers coverage_reached at ready", "[actor][runtime][coverage][first-build]") {
  runtime_fixture f;
  auto txn = f.store->begin();
  txn.put(table, "a", "1");
  auto written = txn.commit();
  REQUIRE(written);
  auto backend = std::make_shared<test::sim_backend>("idx");
  backend->hold_reset = true;
  REQUIRE(f.ask<index_registered>(register_index{f.index_of(backend)}));
  auto slot = f.ctx->segment->find("idx");
  REQUIRE(slot);
  auto answer = [&]() -> std::optional<result<coverage_reached>> {
    std::optional<result<coverage_reached>> out;
    f.self->receive([&](coverage_reached& x) { out = result<coverage_reached>(x); },
                    [&](caf::error& err) { out = result<coverage_reached>(to_dix_error(err)); },
                    caf::after(std::chrono::seconds(0)) >> [] {});
    return out;
  };
  f.self->send(f.rt, wait_coverage{"idx", written->time, 30000});
  f.run();
  f.watch();
  std::set<readiness_state> seen{slot->read().state};
  CHECK_FALSE(answer());
  // The rebuild holds at its reset: the index reads rebuilding, and a brief wait made now ends at
  // its deadline with rebuilding (retry later), while the first one goes on waiting.
  for (int i = 0; i < 20 && !backend->resetting(); ++i) {
    f.advance(std::chrono::milliseconds(100));
    f.watch();
    seen.insert(slot->read().state);
  }
  REQUIRE(backend->resetting());
  REQUIRE(slot->read().state == readiness_state::rebuilding);
  CHECK_FALSE(answer());
  f.self->send(f.rt, wait_coverage{"idx", written->time, 100});
  f.run();
  f.watch();
  CHECK_FALSE(answer());
  f.advance(std::chrono::milliseconds(100));
  f.watch();
  auto brief = answer();
  REQUIRE(brief);
  REQUIRE_FALSE(*brief);
  CHECK(brief->error().value() == errc::rebuilding);
  CHECK(is_retryable(brief->error().value()));
  // The build goes on to ready; the first wait is answered then, and only then.
  REQUIRE(backend->finish_reset());
  std::optional<result<coverage_reached>> reached;
  for (int i = 0; i < 50 && !reached; ++i) {
    f.run();
    f.advance(std::chrono::milliseconds(200));
    f.watch();
    seen.insert(slot->read().state);
    reached = answer();
    if (!reached) CHECK((slot->read().state != readiness_state::ready || slot->coverage_time() < written->time));
  }
  REQUIRE(reached);
  REQUIRE(*reached);
  CHECK((*reached)->since == written->time);
  CHECK(slot->read().state == readiness_state::ready);
  CHECK(seen.count(readiness_state::rebuilding) == 1);
}

TEST_CASE("runtime actor: wait_coverage on an index whose backend cannot reset and whose cursor is missing fails unavailable at once", "[actor][runtime][coverage][first-build]") {
  runtime_fixture f;
  auto txn = f.store->begin();
  txn.put(table, "a", "1");
  auto written = txn.commit();
  REQUIRE(written);
  auto backend = std::make_shared<test::sim_backend>("idx");
  backend->can_reset = false;
  REQUIRE(f.ask<index_registered>(register_index{f.index_of(backend)}));
  auto slot = f.ctx->segment->find("idx");
  REQUIRE(slot);
  for (int i = 0; i < 20 && slot->read().state != readiness_state::needs_rebuild; ++i) f.advance(std::chrono::milliseconds(100));
  REQUIRE(slot->read().state == readiness_state::needs_rebuild);
  f.self->send(f.rt, wait_coverage{"idx", written->time, 30000});
  f.run();
  f.watch();
  std::optional<caf::error> refused;
  f.self->receive([&](coverage_reached&) {}, [&](caf::error& err) { refused = err; },
                  caf::after(std::chrono::seconds(0)) >> [] {});
  REQUIRE(refused);
  CHECK(to_dix_error(*refused).value() == errc::unavailable);
}

// -- commits and queries as messages (issue 29) ---------------------------------------------------

TEST_CASE("runtime actor: commit_transaction commits to the store its log names, in order, and answers its sequence and time", "[actor][runtime][commit]") {
  runtime_fixture f;
  auto first = f.ask<transaction_committed>(commit_transaction{
    "main", {write_op{write_kind::put, table, "a", "1"}, write_op{write_kind::put, table, "b", "2"}}, commit_sync::store_default});
  REQUIRE(first);
  CHECK(first->log == "main");
  CHECK(first->sequence > 0);
  CHECK(first->time > 0);
  auto a = f.store->get(table, "a");
  REQUIRE(a);
  REQUIRE(*a);
  CHECK((*a)->payload == "1");
  CHECK((*a)->version == first->time);
  // The home store when no log is named; a delete; a commit that syncs.
  auto second = f.ask<transaction_committed>(commit_transaction{"", {write_op{write_kind::del, table, "a", ""}}, commit_sync::sync});
  REQUIRE(second);
  CHECK(second->sequence > first->sequence);
  CHECK(second->time > first->time);
  auto gone = f.store->get(table, "a");
  REQUIRE(gone);
  CHECK_FALSE(*gone);
  // Nothing to write: nothing written.
  auto empty = f.ask<transaction_committed>(commit_transaction{"main", {}, commit_sync::store_default});
  REQUIRE(empty);
  CHECK(empty->sequence == 0);
  // Several sent at once are committed in the order sent.
  for (int i = 0; i < 5; ++i) {
    f.self->send(f.rt, commit_transaction{"main", {write_op{write_kind::put, table, "seq", std::to_string(i)}}, commit_sync::store_default});
  }
  f.run();
  std::vector<std::uint64_t> sequences;
  for (int i = 0; i < 5; ++i) {
    f.self->receive([&](transaction_committed& c) { sequences.push_back(c.sequence); }, [](caf::error&) {},
                    caf::after(std::chrono::seconds(0)) >> [] {});
  }
  REQUIRE(sequences.size() == 5);
  CHECK(std::is_sorted(sequences.begin(), sequences.end()));
  auto last = f.store->get(table, "seq");
  REQUIRE(last);
  REQUIRE(*last);
  CHECK((*last)->payload == "4");
}

TEST_CASE("runtime actor: commit_transaction refuses an unknown log, an invalid operation, a refusing gate and a stopped runtime, writing nothing", "[actor][runtime][commit]") {
  runtime_fixture f;
  const auto before = latest_sequence(*f.store);
  auto unknown = f.ask<transaction_committed>(commit_transaction{"elsewhere", {write_op{write_kind::put, table, "a", "1"}}, commit_sync::store_default});
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().value() == errc::invalid_argument);
  CHECK(unknown.error().message().find("elsewhere") != std::string::npos);
  auto invalid = f.ask<transaction_committed>(commit_transaction{"main", {write_op{write_kind::put, table, "", "1"}}, commit_sync::store_default});
  REQUIRE_FALSE(invalid);
  CHECK(invalid.error().value() == errc::invalid_argument);
  set_admission_hook(*f.store, [](std::uint32_t) {
    admission a;
    a.kind = admit_kind::reject;
    a.backend_id = "by-colour";
    return a;
  });
  auto refused = f.ask<transaction_committed>(commit_transaction{"main", {write_op{write_kind::put, table, "a", "1"}}, commit_sync::store_default});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::index_lagging);
  CHECK(is_retryable(refused.error().value()));
  set_admission_hook(*f.store, nullptr);
  CHECK(latest_sequence(*f.store) == before);
  REQUIRE(f.ask<runtime_stopped>(stop_runtime{}));
  auto stopped = f.ask<transaction_committed>(commit_transaction{"main", {write_op{write_kind::put, table, "a", "1"}}, commit_sync::store_default});
  REQUIRE_FALSE(stopped);
  CHECK(stopped.error().value() == errc::stopped);
  CHECK(latest_sequence(*f.store) == before);
}

TEST_CASE("runtime actor: query_index refuses an unknown id, a limit outside 1…10000 and a backend that answers no queries", "[actor][runtime][query]") {
  runtime_fixture f;
  f.ready_index();
  query_index q;
  q.id = "nobody";
  CHECK(f.ask<index_rows>(q).error().value() == errc::not_registered);
  q.id = "idx";
  q.limit = 0;
  CHECK(f.ask<index_rows>(q).error().value() == errc::invalid_argument);
  q.limit = 10001;
  CHECK(f.ask<index_rows>(q).error().value() == errc::invalid_argument);
  q.limit = 10;
  auto unsupported = f.ask<index_rows>(q);  // the simulated backend keeps backend::query's default
  REQUIRE_FALSE(unsupported);
  CHECK(unsupported.error().value() == errc::not_supported);
  REQUIRE(f.ask<runtime_stopped>(stop_runtime{}));
  CHECK(f.ask<index_rows>(q).error().value() == errc::stopped);
}

TEST_CASE("runtime actor: query_index runs 8 queries at once, queues 256 more in arrival order and refuses the next with unavailable", "[actor][runtime][query]") {
  query_gate<int> gate;
  std::vector<int> started;
  for (int i = 0; i < 8; ++i) {
    int p = i;
    REQUIRE(gate.admit(p) == query_gate<int>::verdict::start);
  }
  for (int i = 8; i < 8 + 256; ++i) {
    int p = i;
    REQUIRE(gate.admit(p) == query_gate<int>::verdict::queued);
  }
  int over = 999;
  CHECK(gate.admit(over) == query_gate<int>::verdict::refused);
  CHECK(gate.running() == 8);
  CHECK(gate.queued() == 256);
  auto next = gate.finished();
  REQUIRE(next);
  CHECK(*next == 8);  // the oldest queued starts, still counted running
  CHECK(gate.running() == 8);
  for (int i = 9; i < 8 + 256; ++i) {
    auto n = gate.finished();
    REQUIRE(n);
    CHECK(*n == i);
  }
  for (int i = 0; i < 8; ++i) CHECK_FALSE(gate.finished());
  CHECK(gate.running() == 0);
  CHECK_FALSE(gate.finished());
  CHECK(gate.running() == 0);
}

// -- subscriptions a typed actor can use (issue 29) --------------------------------------------------

static_assert(subscribed_events<readiness_subscriber>() == subscribe_readiness);
static_assert(subscribed_events<runner_state_subscriber>() == subscribe_runner_state);
static_assert(subscribed_events<event_subscriber>() == subscribe_events_all);
static_assert(subscribed_events<caf::actor>() == subscribe_events_all);
// A larger interface that declares one of the events gets that one.
static_assert(subscribed_events<readiness_subscriber::extend<caf::reacts_to<std::string>>>() == subscribe_readiness);

TEST_CASE("runtime actor: a typed readiness subscriber receives readiness_changed only, never a message it did not declare", "[actor][runtime][subscribe]") {
  runtime_fixture f;
  auto backend = std::make_shared<test::sim_backend>("idx");
  backend->hold_work_barriers = true;  // the fresh index's rebuild ends after the subscription
  REQUIRE(f.ask<index_registered>(register_index{runtime_fixture::index_of(backend)}));
  runtime_actor rt = f.rt;
  auto heard = std::make_shared<std::vector<readiness_state>>();
  auto unexpected = std::make_shared<int>(0);
  auto subscriber = f.sys.spawn([rt, heard, unexpected](readiness_subscriber::pointer self) -> readiness_subscriber::behavior_type {
    self->set_default_handler([unexpected](caf::scheduled_actor* s, caf::message_view& x) -> caf::result<caf::message> {
      ++*unexpected;
      return caf::drop(s, x);
    });
    self->request(rt, caf::infinite, subscription_for<readiness_subscriber>("idx")).then([](subscribed&) {});
    return {[heard](const readiness_changed& e) { heard->push_back(e.readiness.state); }};
  });
  f.run();
  f.commit("a", "1");
  backend->release_work_barriers();
  f.advance(1000ms);
  f.watch();
  REQUIRE_FALSE(heard->empty());
  CHECK(heard->back() == readiness_state::ready);
  CHECK(*unexpected == 0);  // the runner's state changes were not sent to it
  caf::anon_send_exit(subscriber, caf::exit_reason::user_shutdown);
  f.run();
}

TEST_CASE("runtime actor: subscribe_all covers the ids registered now and later until unsubscribe_all, an explicit subscription stays", "[actor][runtime][subscribe]") {
  runtime_fixture f;
  REQUIRE(f.ask<index_registered>(register_index{runtime_fixture::index_of(std::make_shared<test::sim_backend>("idx"))}));
  f.commit("a", "1");
  f.advance(1000ms);
  f.watch();
  auto all = f.ask<subscribed_all>(subscribe_all{});
  REQUIRE(all);
  CHECK(all->ids == std::vector<std::string>{"idx"});
  // The values now, at once, as events.
  auto now = f.drain<readiness_changed>();
  REQUIRE(now.size() == 1);
  CHECK(now[0].id == "idx");
  CHECK(now[0].readiness.state == readiness_state::ready);
  CHECK(f.drain<runner_state_changed>().size() == 1);
  // An id registered later is heard from its first change.
  REQUIRE(f.ask<index_registered>(register_index{runtime_fixture::index_of(std::make_shared<test::sim_backend>("idy"))}));
  f.commit("b", "2");
  f.advance(1000ms);
  f.watch();
  auto later = f.drain<readiness_changed>();
  CHECK(std::any_of(later.begin(), later.end(), [](const auto& e) { return e.id == "idy" && e.readiness.state == readiness_state::ready; }));
  CHECK_FALSE(f.drain<runner_state_changed>().empty());  // idy's runner, from its start
  // An explicit subscription of idx stays when the all-ids one ends.
  REQUIRE(f.ask<subscribed>(subscribe{"idx", subscribe_readiness}));
  REQUIRE(f.ask<unsubscribed_all>(unsubscribe_all{}));
  f.drain<readiness_changed>();
  f.drain<runner_state_changed>();
  REQUIRE(f.ask<rebuild_requested>(rebuild_index{"idx"})->accepted);
  REQUIRE(f.ask<rebuild_requested>(rebuild_index{"idy"})->accepted);
  f.advance(1000ms);
  f.watch();
  f.advance(1000ms);
  f.watch();
  auto after = f.drain<readiness_changed>();
  CHECK_FALSE(after.empty());
  CHECK(std::all_of(after.begin(), after.end(), [](const auto& e) { return e.id == "idx"; }));  // idy: no longer
  CHECK(f.drain<runner_state_changed>().empty());  // idx's explicit subscription is readiness only
}

TEST_CASE("runtime actor: a subscription naming no event or an unknown one is refused", "[actor][runtime][subscribe]") {
  runtime_fixture f;
  REQUIRE(f.ask<index_registered>(register_index{runtime_fixture::index_of(std::make_shared<test::sim_backend>("idx"))}));
  CHECK(f.ask<subscribed>(subscribe{"idx", 0}).error().value() == errc::invalid_argument);
  CHECK(f.ask<subscribed>(subscribe{"idx", 4}).error().value() == errc::invalid_argument);
  CHECK(f.ask<subscribed_all>(subscribe_all{0}).error().value() == errc::invalid_argument);
  CHECK(f.ask<subscribed_all>(subscribe_all{7}).error().value() == errc::invalid_argument);
}

TEST_CASE("commit_transaction: the writes travel in one buffer, decode in order, and a buffer that does not decode writes nothing", "[actor][runtime][commit]") {
  commit_transaction m{"main", {write_op{write_kind::put, table, "a", "1"}, write_op{write_kind::del, table, "b", ""}}};
  m.put(table, "c", std::string(300, 'x'));
  CHECK(m.size() == 3);
  auto ops = m.ops();
  REQUIRE(ops.size() == 3);
  CHECK(ops[0] == write_op{write_kind::put, table, "a", "1"});
  CHECK(ops[1] == write_op{write_kind::del, table, "b", ""});
  CHECK(ops[2].payload.size() == 300);
  CHECK(commit_transaction{}.ops().empty());
  auto broken = m;
  broken.count = 4;  // one more than it holds
  CHECK(broken.ops().empty());
  auto truncated = m;
  truncated.writes.pop_back();
  CHECK_FALSE(truncated.for_each([](write_kind, std::uint32_t, std::string_view, std::string_view) {}));
  runtime_fixture f;
  const auto before = latest_sequence(*f.store);
  auto refused = f.ask<transaction_committed>(broken);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::invalid_argument);
  CHECK(latest_sequence(*f.store) == before);
}

TEST_CASE("runtime actor: a backend whose query throws answers backend_failed, and its worker's slot is free again", "[actor][runtime][query]") {
  runtime_fixture f;
  auto inner = std::make_shared<test::sim_backend>("idx");
  auto throwing_query = std::make_shared<test::wrapped_backend>(inner);
  throwing_query->throw_on_query = true;
  REQUIRE(f.ask<index_registered>(register_index{runtime_fixture::index_of(throwing_query)}));
  query_index q;
  q.id = "idx";
  // More than the 8 slots, one after another: a slot a throwing query took would be lost for good.
  for (int i = 0; i < 12; ++i) {
    auto answered = f.ask<index_rows>(q);
    REQUIRE_FALSE(answered);
    CHECK(answered.error().value() == errc::backend_failed);
    CHECK(answered.error().message().find("exploded") != std::string::npos);
  }
}

namespace dix {
namespace {

// The committer under the test coordinator (decision 0046): its mailbox holds what the test sent,
// so whether answers are held is the test's to decide.
struct committer_fixture : test::caf_fixture {
  test::temp_dir dir;
  std::shared_ptr<primary_store> store;
  committer_actor committer;
  caf::scoped_actor self{sys};
  committer_fixture() {
    store_options so;
    so.log_name = "main";
    store = primary_store::open(dir / "db", so).value();
    REQUIRE(store->create_table(7));
    committer = spawn_committer(sys, store, /*detached=*/false);
    run();
  }
  void send_put(const std::string& id, commit_sync sync = commit_sync::store_default) {
    self->send(committer, commit_transaction{"main", {write_op{write_kind::put, 7, id, "v"}}, sync});
  }
  std::vector<std::uint64_t> answers() {
    std::vector<std::uint64_t> out;
    for (;;) {
      bool got = false;
      self->receive([&](transaction_committed& c) { out.push_back(c.sequence), got = true; },
                    [&](caf::error&) { got = true; }, caf::after(std::chrono::seconds(0)) >> [] {});
      if (!got) return out;
    }
  }
};

TEST_CASE("committer: answers held while commits wait are sent when the actor is killed, in commit order", "[actor][runtime][commit]") {
  committer_fixture f;
  for (int i = 0; i < 3; ++i) f.send_put("k" + std::to_string(i));
  f.run_once();  // the first commit, with two more waiting: its answer may be held
  f.run_once();  // the second
  caf::anon_send_exit(f.committer, caf::exit_reason::kill);  // skips the exit handler
  f.run();
  auto got = f.answers();
  REQUIRE(got.size() >= 2);  // both commits made are answered; the third may never have run
  CHECK(std::is_sorted(got.begin(), got.end()));
  auto first = f.store->get(7, "k0");
  REQUIRE(first);
  CHECK(*first);
}

TEST_CASE("committer: a commit that asks for a sync first sends the answers held before it", "[actor][runtime][commit]") {
  committer_fixture f;
  f.send_put("a");
  f.send_put("b", commit_sync::sync);
  f.send_put("c");
  f.run_once();  // "a" committed with two waiting: held when it was fast
  f.run_once();  // "b" may wait (a sync): "a" is answered before "b" commits
  auto got = f.answers();
  REQUIRE_FALSE(got.empty());
  f.run();
  auto rest = f.answers();
  got.insert(got.end(), rest.begin(), rest.end());
  CHECK(got.size() == 3);
  CHECK(std::is_sorted(got.begin(), got.end()));
}

}  // namespace
}  // namespace dix
