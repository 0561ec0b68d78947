// [actor] The owner's coverage through the runner, tailer, proxy and publisher actors (protocol.md
// §12.1–§12.4) on CAF's test coordinator: the captures the tailer takes, the publication through
// the readiness publisher into a real segment slot, the demand it clears there, the backend's
// publish_coverage hook, the coverage refresh of an idle owner. The watcher's part (raising the
// demand, the coverage wake) is played by the test: it writes coverage_demand into the slot and
// sends the wake. The last test runs the tailer over a real RocksDB primary store.
#include <catch2/catch.hpp>

#include "adapters/primary_store_impl.hpp"
#include "adapters/rocksdb_log_source.hpp"
#include "adapters/rocksdb_store_reader.hpp"
#include "adapters/test_support.hpp"
#include "support/wired_id.hpp"

using namespace dix;
using namespace std::chrono_literals;

namespace {

// The registration's tailer, proxy and runner, spawned from a spec and stopped at the end.
struct spawned : test::wired_id {
  log_tailer_actor tailer;
  backend_proxy_actor proxy;
  runner_actor runner;

  void spawn(const std::shared_ptr<supervised_spec>& spec) {
    tailer = spec->spawn_tailer();
    proxy = spec->spawn_proxy();
    runner = spec->spawn_runner(tailer, proxy, std::nullopt);
  }
  void stop() {
    caf::anon_send_exit(runner, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(proxy, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(tailer, caf::exit_reason::user_shutdown);
    run();
  }
  ~spawned() override { stop(); }
};

struct pipeline : spawned {
  explicit pipeline(runner_options o = {}) {
    spawn(wiring(o));
    // Built, ready and idle; barriers from here on only when a test runs one.
    commit("a", "1");
    advance(1000ms);
    REQUIRE(slot->read().state == readiness_state::ready);
    REQUIRE(snapshot->load().state == runner_state::idle);
    backend->auto_barrier = false;
  }
  index_time_t commit(const std::string& id, const std::string& value, std::uint32_t table = 1) {
    auto [sequence, time] = store.commit({test::put(table, id, value)});
    (void)sequence;
    caf::anon_send(runner, dix::wake{wake_flag::commit});
    run();
    return time;
  }
  // A waiter in any process: the demand raised in the slot, then the watcher's coverage wake.
  void demand(index_time_t since) {
    slot->raise_coverage_demand(since);
    caf::anon_send(runner, dix::wake{wake_flag::coverage});
    run();
  }
  std::uint64_t flushes(flush_reason r) { return snapshot->load().flushes[static_cast<std::size_t>(r)]; }
};

}  // namespace

TEST_CASE("actors: a coverage wake with non-durable work requests flush(coverage) and publishes coverage soon after the barrier, well before max_flush_age", "[actor][coverage]") {
  pipeline p;
  const auto age_flushes = p.flushes(flush_reason::age);  // the build's
  const auto written = p.commit("b", "2");
  const auto start = p.clock.steady_now();
  p.demand(written);
  CHECK(p.flushes(flush_reason::coverage) == 1);
  CHECK(p.slot->coverage_time() < written);  // not durable yet
  CHECK(p.slot->coverage_demand() == written);
  p.backend->barrier();  // the backend's barrier ends: changed, reconciliation
  p.run();
  CHECK(p.slot->coverage_time() > written);
  CHECK(p.slot->coverage_demand() == 0);  // reached: the publisher cleared it
  CHECK(p.clock.steady_now() - start < 10ms);  // no timer was needed, far below max_flush_age
  CHECK(p.flushes(flush_reason::age) == age_flushes);
  // The entry that covers the published capture is durable: the hook is called with its
  // positions — at most once per max_flush_age, so perhaps only after one more (the last was the
  // capture at ready).
  p.advance(1000ms);
  REQUIRE_FALSE(p.backend->coverage_hooks.empty());
  CHECK(p.backend->coverage_hooks.back().first == p.slot->coverage_time());
  CHECK(p.backend->coverage_hooks.back().second.at("main") == p.store.latest());
}

TEST_CASE("actors: a demand stays in the slot until a published coverage_time reaches it", "[actor][coverage]") {
  pipeline p;
  const index_time_t beyond = 1'000'000'000;  // a waiter's since that no capture of this test reaches
  p.demand(beyond);
  const auto published = p.slot->coverage_time();
  CHECK(published > 0);          // the drain's capture was certified …
  CHECK(published < beyond);
  CHECK(p.slot->coverage_demand() == beyond);  // … and the demand it does not reach survives
  REQUIRE(p.slot->clear_coverage_demand(beyond));  // that waiter gave up
  const auto written = p.commit("b", "2");
  p.demand(written);
  p.backend->barrier();
  p.run();
  CHECK(p.slot->coverage_time() > written);
  CHECK(p.slot->coverage_demand() == 0);
}

TEST_CASE("actors: an idle owner refreshes coverage_time without writes, and no system transaction wakes it (behaviour 28)", "[actor][coverage]") {
  pipeline p;
  p.advance(1000ms);
  auto last = p.slot->coverage_time();
  REQUIRE(last > 0);
  // A system transaction (another runtime's epoch record, say) and its wake: the idle owner
  // runs no turn for it.
  p.store.commit({test::fake_op{op_kind::put, 0, "epoch/other", "1", true}}, header_flag::system, true);
  const auto read_before = p.snapshot->load().logs.at(0).read_sequence;
  caf::anon_send(p.runner, dix::wake{static_cast<std::uint8_t>(wake_flag::commit | wake_flag::system)});
  p.run();
  CHECK(p.snapshot->load().logs.at(0).read_sequence == read_before);
  // Eleven minutes of actor time without a write: coverage_time keeps rising with every
  // max_flush_age, and the refresh turns read the system transaction.
  for (int second = 0; second < 660; ++second) {
    p.advance(1000ms);
    CHECK(p.slot->coverage_time() > last);
    last = p.slot->coverage_time();
  }
  CHECK(p.snapshot->load().logs.at(0).read_sequence == p.store.latest());
  CHECK(p.snapshot->load().state == runner_state::idle);
  CHECK(p.slot->read().state == readiness_state::ready);
}

TEST_CASE("actors: coverage is never published under another epoch, nor while the index is not ready", "[actor][coverage]") {
  pipeline p;
  p.advance(1000ms);
  const auto before = p.slot->coverage_time();
  REQUIRE(before > 0);
  // Another owner minted meanwhile (the slot's epoch moved on): the drain's capture is covered by
  // the durable entry (no commit since), yet this runner certifies nothing under its old epoch.
  p.slot->raise_epoch_floor(p.slot->owner_epoch() + 5);
  p.demand(before + 1);
  p.advance(2000ms);
  CHECK(p.slot->coverage_time() == before);
  // Not ready: a rebuild publishes rebuilding with coverage_time 0, and nothing until ready.
  pipeline q;
  q.backend->auto_barrier = true;
  q.backend->hold_work_barriers = true;  // the barrier that ends the rebuild waits for the release below
  q.slot->request_rebuild();
  caf::anon_send(q.runner, dix::wake{wake_flag::rebuild});
  q.run();
  REQUIRE(q.slot->read().state == readiness_state::rebuilding);
  CHECK(q.slot->coverage_time() == 0);
  // The boundary's acceptance asked for the barrier that ends the rebuild at once (decision 0062;
  // issue 29 wanted it for a waiting reader); until that barrier completes the index stays
  // rebuilding and publishes no coverage, and a demand meanwhile asks no second barrier.
  CHECK(q.backend->flushes_waiting() == 1);  // asked for now, not at the age timer
  q.demand(q.commit("c", "3"));
  REQUIRE(q.slot->read().state == readiness_state::rebuilding);  // the boundary is not durable yet
  CHECK(q.slot->coverage_time() == 0);
  CHECK(q.backend->flushes_waiting() == 1);
  q.backend->auto_barrier = false;
  q.backend->release_work_barriers();
  q.run();  // the boundary durable: ready, and coverage again — no time passed
  REQUIRE(q.slot->read().state == readiness_state::ready);
  q.backend->auto_barrier = true;
  q.demand(q.commit("d", "4"));
  q.backend->barrier();
  q.run();
  CHECK(q.slot->coverage_time() > 0);
}

namespace {

// The same wiring over a real RocksDB primary store: the tailer reads its WAL and captures under
// its commit mutex; the backend is the simulated one, barriers when the test runs them.
struct rocksdb_pipeline : spawned {
  test::temp_dir dir;
  std::shared_ptr<primary_store> primary = test::open_store(dir / "db");

  rocksdb_pipeline() {
    REQUIRE(primary->create_table(2));
    auto w = unwired();
    w.logs = {wired_log{std::make_shared<rocksdb_log_source>(primary), std::make_shared<rocksdb_store_reader>(primary)}};
    w.attached = {attached_log{"main", primary->identity()}};
    spawn(wire(std::move(w)));
    write(1, "a");
    advance(1000ms);
    REQUIRE(slot->read().state == readiness_state::ready);
    backend->auto_barrier = false;
  }
  ~rocksdb_pipeline() override { stop(); }  // the actors hold the store: gone before its directory
  index_time_t write(std::uint32_t table, const std::string& id) {
    auto txn = primary->begin();
    txn.put(table, id, "v");
    auto info = txn.commit().value();
    caf::anon_send(runner, dix::wake{wake_flag::commit});
    run();
    return info.time;
  }
};

}  // namespace

TEST_CASE("actors: over a real RocksDB store, an unrelated commit after a pending relevant write never moves coverage_time past that write before its barrier (behaviour 21)", "[actor][coverage]") {
  rocksdb_pipeline p;
  p.advance(300ms);
  const auto unrelated_first = p.write(2, "x0");
  CHECK(p.slot->coverage_time() > unrelated_first);  // cursor progress alone certifies it
  p.advance(300ms);
  const auto relevant = p.write(1, "b");  // accepted by the backend, no barrier yet
  for (int i = 1; i <= 4; ++i) {
    p.advance(300ms);  // every turn captures
    const auto unrelated = p.write(2, "x" + std::to_string(i));
    p.slot->raise_coverage_demand(unrelated);
    caf::anon_send(p.runner, dix::wake{wake_flag::coverage});
    p.run();
    CHECK(p.slot->coverage_time() < relevant);
  }
  p.backend->barrier();
  p.run();
  CHECK(p.slot->coverage_time() > relevant);  // the barrier made the write durable
  CHECK(p.slot->coverage_demand() == 0);
}
