// The public runtime API over real RocksDB stores and backends (real threads, real time; waits
// are on futures, never sleeps).
#include <catch2/catch.hpp>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/runtime.hpp>

#include "adapters/process_lock_table.hpp"
#include "adapters/readiness_segment.hpp"
#include "adapters/test_support.hpp"
#include "support/index_registration.hpp"
#include "support/lag_wait.hpp"
#include "support/wrapped_backend.hpp"

using namespace dix;
using namespace std::chrono_literals;
using dix::test::index_registration;
using dix::test::make_index_at;
using dix::test::temp_dir;
using dix::test::wait_segment;

namespace {

std::shared_ptr<rocksdb_index_backend> make_index(const temp_dir& dir, const std::string& id = "by-value") {
  return make_index_at(dir / id, id);
}

}  // namespace

TEST_CASE("runtime: registration checks fail without side effects (protocol §2.1)", "[adapter][runtime]") {
  temp_dir dir;
  auto store = test::open_store(dir / "db");
  auto rt = runtime::create({store}).value();
  registration none;
  CHECK(rt->register_index(none).error().value() == errc::invalid_argument);
  auto r = index_registration(make_index(dir));
  r.projections.clear();
  CHECK(rt->register_index(r).error().value() == errc::invalid_argument);
  auto wrong_log = index_registration(make_index(dir, "x"));
  wrong_log.projections = {{table_ref{"aux", 1}, wrong_log.projections.begin()->second}};
  CHECK_THAT(rt->register_index(wrong_log).error().message(), Catch::Contains("not attached"));
  auto wrong_table = index_registration(make_index(dir, "y"));
  wrong_table.projections = {{table_ref{"main", 9}, wrong_table.projections.begin()->second}};
  CHECK_THAT(rt->register_index(wrong_table).error().message(), Catch::Contains("does not exist"));
  auto bad_options = index_registration(make_index(dir, "z"));
  bad_options.options = runner_options{};
  bad_options.options->max_chunk_records = 0;
  CHECK_THAT(rt->register_index(bad_options).error().message(), Catch::StartsWith("runner_options.max_chunk_records = 0"));
  auto long_version = index_registration(make_index(dir, "w"));
  long_version.projection_version = std::string(257, 'v');
  CHECK(rt->register_index(long_version).error().value() == errc::invalid_argument);
  REQUIRE(rt->register_index(index_registration(make_index(dir))));
  CHECK(rt->register_index(index_registration(make_index(dir, "by-value"))).error().value() == errc::already_registered);
  CHECK(rt->status("x") == std::nullopt);  // nothing of the failed registrations remains
}

TEST_CASE("runtime: stop returns the same future every call, afterwards registration fails stopped", "[adapter][runtime][stop]") {
  temp_dir dir;
  auto store = test::open_store(dir / "db");
  auto rt = runtime::create({store}).value();
  auto index = make_index(dir);
  auto h = rt->register_index(index_registration(index)).value();
  test::put_records(*store, "k", 10);
  auto a = rt->stop();
  auto b = rt->stop();
  REQUIRE(a.get().has_value());
  REQUIRE(b.get().has_value());
  CHECK(&a.get() == &b.get());  // one shared state
  CHECK(rt->register_index(index_registration(make_index(dir, "later"))).error().value() == errc::stopped);
  CHECK(h.unregister().get().error().value() == errc::stopped);  // §15: every call but a few fails stopped
  // What became durable is exactly described by the index's cursor.
  auto durable = index->durable_cursor();
  REQUIRE(durable);
}

TEST_CASE("runtime: create refuses an empty store list and duplicate log names", "[adapter][runtime]") {
  temp_dir dir;
  auto one = test::open_store(dir / "one");
  auto two = test::open_store(dir / "two");  // also log "main"
  CHECK(runtime::create({}).error().value() == errc::invalid_argument);
  CHECK(runtime::create({one, two}).error().value() == errc::invalid_argument);
  runtime_options o;
  o.max_write_delay = std::chrono::milliseconds(0);
  CHECK_THAT(runtime::create({one}, o).error().message(), Catch::StartsWith("runtime_options.max_write_delay = 0"));
}

// -- the defects issue 9 found against protocol.md: each of these failed before its fix -----------

TEST_CASE("runtime: unregister removes the id at once, and a replacement registered while the release is pending takes over after it (protocol §2.4)", "[adapter][runtime][unregister]") {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  auto rt = runtime::create({store}).value();
  auto slow = std::make_shared<test::wrapped_backend>(make_index(dir, "by-value"));
  auto h = rt->register_index(index_registration(slow)).value();
  test::put_records(*store, "k", 5);
  REQUIRE(test::wait_readiness(home, "by-value", test::is_ready));
  const auto e1 = rt->readiness("by-value")->owner_epoch;
  slow->hold_shutdown = true;
  auto released = h.unregister();
  CHECK_FALSE(rt->status("by-value"));  // gone at once, before the release settled
  auto replacement = rt->register_index(index_registration(make_index_at(dir / "second")));
  REQUIRE(replacement);  // not already_registered: it waits for the lock
  auto table = process_lock_table::for_home(home / "dix");
  REQUIRE(table->wait_until("by-value", [](bool owned, std::size_t waiters) { return owned && waiters == 1; }, 30s));
  const bool held = slow->wait_shutdown_held(30s);
  CHECK(held);
  CHECK(released.wait_for(0s) != std::future_status::ready);
  slow->hold_shutdown = false;
  slow->finish_held_shutdown();
  REQUIRE(released.get());
  CHECK(slow->subscribers() == 0);  // the registration's subscription ended before the future resolved
  REQUIRE(test::wait_readiness(home, "by-value", [&](const dix::readiness& r) { return test::is_ready(r) && r.owner_epoch > e1; }));
  CHECK(rt->status("by-value"));
}

TEST_CASE("runtime: after a rejected shutdown and the retried release, a replacement registered meanwhile acquires the id (protocol §9.7)", "[adapter][runtime][unregister]") {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  auto rt = runtime::create({store}).value();
  auto refusing = std::make_shared<test::wrapped_backend>(make_index(dir, "by-value"));
  auto h = rt->register_index(index_registration(refusing)).value();
  test::put_records(*store, "k", 5);
  REQUIRE(test::wait_readiness(home, "by-value", test::is_ready));
  refusing->refuse_shutdown = true;
  auto rejected = h.unregister().get();
  REQUIRE_FALSE(rejected);
  CHECK(rejected.error().value() == errc::backend_failed);
  const auto held = rt->readiness("by-value").value();
  CHECK(held.state == readiness_state::unavailable);
  auto replacement = rt->register_index(index_registration(make_index_at(dir / "second")));
  REQUIRE(replacement);  // the id left the runtime; the held lock is the old registration's
  CHECK(rt->status("by-value"));
  refusing->refuse_shutdown = false;
  CHECK(rt->request_rebuild("by-value"));  // §11.2 first row: retries that release only
  // The lock goes to the replacement, which mints a larger epoch and, finding the slot
  // unavailable, latches it and lets go (§9.2 step 5: it needs a request of its own).
  REQUIRE(test::wait_readiness(home, "by-value", [&](const dix::readiness& r) { return r.owner_epoch > held.owner_epoch; }));
  auto table = process_lock_table::for_home(home / "dix");
  REQUIRE(table->wait_until("by-value", [](bool owned, std::size_t waiters) { return !owned && waiters == 0; }, 30s));
  CHECK(rt->status("by-value")->state == runner_state::unavailable);
}

TEST_CASE("runtime: a registration whose state-change subscription throws fails whole (protocol §2.2)", "[adapter][runtime][register]") {
  temp_dir dir;
  auto store = test::open_store(dir / "db");
  auto rt = runtime::create({store}).value();
  auto backend = std::make_shared<test::wrapped_backend>(make_index(dir, "by-value"));
  backend->fail_subscription = true;
  auto r = rt->register_index(index_registration(backend));
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::backend_failed);
  CHECK_FALSE(rt->status("by-value"));
  backend->fail_subscription = false;
  REQUIRE(rt->register_index(index_registration(backend)));  // nothing of the failed one remains
  CHECK(backend->subscribers() == 1);
}

TEST_CASE("runtime: a backend may call its host after its registration ended: no epoch is its, no query is admitted (api.md §5)", "[adapter][runtime][host]") {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  auto rt = runtime::create({store}).value();
  auto backend = std::make_shared<test::wrapped_backend>(make_index(dir, "by-value"));
  auto h = rt->register_index(index_registration(backend)).value();
  test::put_records(*store, "k", 5);
  REQUIRE(test::wait_readiness(home, "by-value", test::is_ready));
  auto* host = backend->host();
  REQUIRE(host != nullptr);
  const auto epoch = rt->readiness("by-value")->owner_epoch;
  REQUIRE(host->is_owner_epoch(epoch));
  REQUIRE(h.unregister().get());
  CHECK_FALSE(host->is_owner_epoch(epoch));
  CHECK(host->admit_query(coverage_mode{}).error().value() == errc::not_registered);
  host->note_unindexable("late");
  host->request_rebuild();
}

TEST_CASE("runtime: destroying a runtime releases the lock a rejected shutdown kept, so another runtime of the process takes the id over (protocol §15)", "[adapter][runtime][stop]") {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  auto rt1 = runtime::create({store}).value();
  auto rt2 = runtime::create({store}).value();
  auto refusing = std::make_shared<test::wrapped_backend>(make_index(dir, "by-value"));
  rt1->register_index(index_registration(refusing)).value();
  test::put_records(*store, "k", 5);
  REQUIRE(test::wait_readiness(home, "by-value", test::is_ready));
  refusing->refuse_shutdown = true;
  CHECK_FALSE(rt1->stop().get());
  rt2->register_index(index_registration(make_index_at(dir / "second"))).value();
  auto table = process_lock_table::for_home(home / "dix");
  REQUIRE(table->wait_until("by-value", [](bool owned, std::size_t waiters) { return owned && waiters == 1; }, 30s));
  const auto held_epoch = rt1->readiness("by-value")->owner_epoch;
  rt1.reset();
  // rt2's runner gets the lock and mints a larger epoch (it then finds the slot unavailable and
  // latches it, §9.2 step 5, until a request of its own).
  REQUIRE(test::wait_readiness(home, "by-value", [&](const dix::readiness& r) { return r.owner_epoch > held_epoch; }));
  REQUIRE(table->wait_until("by-value", [](bool owned, std::size_t waiters) { return !owned && waiters == 0; }, 30s));
  CHECK(rt2->status("by-value")->state == runner_state::unavailable);
}

TEST_CASE("runtime: readiness reads the slot of an id registered only in another runtime of the database (api.md §6)", "[adapter][runtime]") {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  auto rt1 = runtime::create({store}).value();
  auto rt2 = runtime::create({store}).value();
  rt1->register_index(index_registration(make_index(dir))).value();
  test::put_records(*store, "k", 5);
  REQUIRE(test::wait_readiness(home, "by-value", test::is_ready));
  auto seen = rt2->readiness("by-value");
  REQUIRE(seen);
  CHECK(seen->state == readiness_state::ready);
  CHECK_FALSE(rt2->status("by-value"));  // not registered there
  CHECK(rt2->readiness("unknown-id").error().value() == errc::not_registered);
  CHECK(rt2->readiness(".bad").error().value() == errc::invalid_argument);
}

TEST_CASE("runtime: runtime_options::slot_count sizes a new segment: the third id of a two-slot segment fails segment_full", "[adapter][runtime]") {
  temp_dir dir;
  auto store = test::open_store(dir / "db");
  runtime_options o;
  o.slot_count = 2;
  auto rt = runtime::create({store}, o).value();
  REQUIRE(rt->register_index(index_registration(make_index(dir, "one"))));
  REQUIRE(rt->register_index(index_registration(make_index(dir, "two"))));
  auto third = rt->register_index(index_registration(make_index(dir, "three")));
  REQUIRE_FALSE(third);
  CHECK(third.error().value() == errc::segment_full);
  CHECK_FALSE(rt->status("three"));
}

TEST_CASE("runtime: a fresh index over many records is rebuilt in one attempt", "[adapter][runtime][rebuild]") {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  for (int b = 0; b < 200; ++b) test::put_records(*store, "b" + std::to_string(b) + "-", 1000);
  auto rt = runtime::create({store}).value();
  rt->register_index(index_registration(make_index(dir))).value();
  REQUIRE(test::wait_readiness(home, "by-value", test::is_ready));
  auto m = rt->metrics("by-value").value();
  INFO(rt->status("by-value")->message);
  CHECK(m.last_fault == readiness_reason::cursor_missing);
  CHECK(m.rebuilt_records == 200000);
  CHECK(m.delivered_records >= 200000);
  CHECK(m.delivered_records < 210000);
}

TEST_CASE("runtime: a lagging index refuses writes with index_lagging and nothing is written, the gate opens after a durable advance, and unregistering the last registration forces it open (protocol 13)",
          "[adapter][runtime][gate][behaviour-24]") {
  temp_dir dir;
  auto store = test::open_store(dir / "db");
  runtime_options o;
  o.runner.max_lag = 1ms;  // B = max(1, 2 × max_flush_age) = 4 ms: trips fast
  o.runner.max_flush_age = 2ms;
  o.max_write_delay = 1ms;
  auto rt = runtime::create({store}, o).value();
  auto slow = std::make_shared<test::wrapped_backend>(make_index(dir));
  auto h = rt->register_index(index_registration(slow)).value();
  auto locks = process_lock_table::for_home(dir / "db" / "dix");
  CHECK(locks->registrations("by-value") == 1);  // counted in the process (§9.1)
  test::put_records(*store, "a", 3);
  REQUIRE(test::wait_readiness(dir / "db", "by-value", test::is_ready));
  auto view = segment_view::open(dir / "db", segment_view::access::read_write).value();
  auto slot = view->slot(view->find("by-value").value());
  auto gate = [&] { return slot->lag_gate(); };
  // Every write so far covered and the gate open: with nothing in flight the 4 ms budget cannot
  // trip while a loaded machine delays the runner, so the next commit meets the open gate.
  auto settle = [&] {
    REQUIRE(rt->wait_for_coverage("by-value", test::covering_now().since, 30s).get());
    REQUIRE(wait_segment(dir / "db", [&] { return gate() == 0; }));
  };
  settle();

  // The backend stops barriering: its accepted work ages past B.
  slow->hold_flushes = true;
  test::put_records(*store, "b", 1);
  REQUIRE(wait_segment(dir / "db", [&] { return gate() == 0xFFFFFFFFu; }));
  CHECK(rt->metrics("by-value")->lag_gate == 0xFFFFFFFFu);
  // (lag_ms itself is not checked here: which component tripped a 4 ms budget depends on the
  // scheduler — an unread age before the batch is accepted reads 0 once it is in flight; the core
  // tests check each component deterministically.)
  const auto before = latest_sequence(*store);
  auto t = store->begin();
  t.put(1, "refused", "v");
  auto refused = t.commit();
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::index_lagging);
  CHECK(latest_sequence(*store) == before);  // nothing written
  CHECK_FALSE(store->get(1, "refused").value().has_value());
  auto replicated = store->begin(txn_flags::replicated);
  replicated.put(1, "replicated", "v");
  CHECK(replicated.commit());  // never gated

  // Barriers resume: a durable advance after the trip, the end of the log reached → open.
  slow->release_flushes();
  REQUIRE(wait_segment(dir / "db", [&] { return gate() == 0; }));
  settle();  // the replicated write too
  auto later = store->begin();
  later.put(1, "later", "v");
  CHECK(later.commit());

  // Closed again, then the last registration of the id unregisters: forced open.
  settle();
  slow->hold_flushes = true;
  test::put_records(*store, "c", 1);
  REQUIRE(wait_segment(dir / "db", [&] { return gate() == 0xFFFFFFFFu; }));
  REQUIRE(h.unregister().get());
  CHECK(gate() == 0);
  CHECK(locks->registrations("by-value") == 0);
  slow->release_flushes();
  auto after = store->begin();
  after.put(1, "after", "v");
  CHECK(after.commit());  // the admission entries went with the release
}

TEST_CASE("runtime: the owner's stop kept the gate for a handoff, the waiting registration unregistered while the release ran: the gate is forced open at the unlock (protocol 13.4)",
          "[adapter][runtime][gate][behaviour-24]") {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  runtime_options o;
  o.runner.max_lag = 1ms;  // B = 4 ms: trips fast
  o.runner.max_flush_age = 2ms;
  o.max_write_delay = 1ms;
  auto rt1 = runtime::create({store}, o).value();
  auto rt2 = runtime::create({store}, o).value();
  auto first = std::make_shared<test::wrapped_backend>(make_index(dir));
  auto h1 = rt1->register_index(index_registration(first)).value();
  test::put_records(*store, "a", 3);
  REQUIRE(test::wait_readiness(home, "by-value", test::is_ready));
  auto view = segment_view::open(home, segment_view::access::read_write).value();
  auto slot = view->slot(view->find("by-value").value());
  auto second = std::make_shared<test::wrapped_backend>(make_index(dir));
  auto h2 = rt2->register_index(index_registration(second)).value();  // waits for the lock
  auto locks = process_lock_table::for_home(home / "dix");
  CHECK(locks->registrations("by-value") == 2);
  REQUIRE(wait_segment(home, [&] { return slot->lag_gate() == 0; }));

  first->hold_flushes = true;  // no durable advance: the owner's gate trips
  auto b = store->begin(txn_flags::replicated);
  b.put(1, "b", "v");
  REQUIRE(b.commit());
  REQUIRE(wait_segment(home, [&] { return slot->lag_gate() == 0xFFFFFFFFu; }));

  first->hold_shutdown = true;
  auto released = h1.unregister();  // another registration counted: the gate stays for a handoff
  REQUIRE(first->wait_shutdown_held(20s));
  CHECK(slot->lag_gate() == 0xFFFFFFFFu);
  REQUIRE(h2.unregister().get());   // the waiter withdraws: no registration is left
  CHECK(locks->registrations("by-value") == 0);
  REQUIRE(first->finish_held_shutdown());
  REQUIRE(released.get());
  // Nobody inherits it: an exceeded gate left here refused every write to the table until some
  // later owner proved catch-up.
  CHECK(slot->lag_gate() == 0);
  first->release_flushes();
  auto t = store->begin();
  t.put(1, "after", "v");
  CHECK(t.commit());
}

TEST_CASE("runtime: metrics carry the per-log WAL figures of protocol 13.2", "[adapter][runtime][gate]") {
  temp_dir dir;
  auto o = test::options();
  o.wal_size_limit_mb = 1024;
  auto store = test::open_store(dir / "db", o);
  auto rt = runtime::create({store}).value();
  auto h = rt->register_index(index_registration(make_index(dir))).value();
  test::put_records(*store, "a", 5);
  REQUIRE(test::wait_readiness(dir / "db", "by-value", test::is_ready));
  // The log figures come with the owner's first pull, which may follow `ready` (an acquisition
  // or a rebuild's end publishes it at the logs' opening): the owner's lag figures carry the log
  // once it pulled, and the snapshot metrics() reads is stored before they are published.
  REQUIRE(test::wait_lag(dir / "db", "by-value", [](const lag_figures& l) { return !l.logs.empty(); }));
  auto m = rt->metrics("by-value").value();
  REQUIRE(m.logs.size() == 1);
  CHECK(m.logs[0].log == "main");
  CHECK(m.logs[0].wal_retained_bytes > 0);
  CHECK(m.logs[0].wal_oldest_sequence >= 1);
  CHECK(m.logs[0].retention_headroom_bytes > 0);
  CHECK(m.logs[0].retention_headroom_bytes <= std::int64_t{1024} << 20);
  CHECK(m.logs[0].retention_headroom_ms == -1);  // the durable anchor is in the live WAL file
  CHECK(m.lag_gate == 0);  // no policy: 0
}

TEST_CASE("runtime: wait_for_coverage fails at once on bad arguments and unknown ids, and its waiters fail stopped at unregister and at stop", "[adapter][runtime][coverage]") {
  temp_dir dir;
  auto store = test::open_store(dir / "db");
  runtime_options o;
  o.max_coverage_wait = 60000ms;
  auto rt = runtime::create({store}, o).value();
  auto h = rt->register_index(index_registration(make_index(dir))).value();
  auto code = [](future<void> f) {
    auto r = f.get();
    return r ? errc::none : r.error().value();
  };
  const auto far = test::put_records(*store, "k", 1).time + 3'600'000'000'000ull;  // an hour ahead: never covered here
  CHECK(code(rt->wait_for_coverage("by-value", 0, 10ms)) == errc::invalid_argument);
  CHECK(code(rt->wait_for_coverage("by-value", far, 60001ms)) == errc::invalid_argument);
  CHECK(code(rt->wait_for_coverage("other", far, 10ms)) == errc::not_registered);
  auto unregistered = rt->wait_for_coverage("by-value", far, 60000ms);
  auto released = h.unregister();
  REQUIRE(unregistered.wait_for(20s) == std::future_status::ready);  // at once, not at its deadline
  CHECK(code(std::move(unregistered)) == errc::stopped);
  REQUIRE(released.get());
  auto h2 = rt->register_index(index_registration(make_index(dir, "second"))).value();
  auto at_stop = rt->wait_for_coverage("second", far, 60000ms);
  auto stopped = rt->stop();
  REQUIRE(at_stop.wait_for(20s) == std::future_status::ready);
  CHECK(code(std::move(at_stop)) == errc::stopped);
  REQUIRE(stopped.get());
  CHECK(code(rt->wait_for_coverage("second", far, 10ms)) == errc::stopped);
  CHECK(rt->read_coverage("second", 3000ms).state == coverage_state::unknown);  // never fails
}
