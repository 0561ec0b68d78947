// Behaviour 22 (protocol.md §12.4–§12.6, §17 item 22) end to end: a real owner — dix::runtime
// over a real RocksDB primary store and a real rocksdb_index_backend in temp dirs — configured
// with a max_flush_age far longer than the test, so only the coverage demand can make a write
// durable in time. What proves the path is the owner's flush counters (a coverage flush, no age
// flush), never elapsed time. Waiters in this process use runtime::wait_for_coverage (the watcher
// thread); the waiter in another process is a child forked before any thread or RocksDB exists
// here, calling the blocking free function (futex on the slot's change counter). Real threads and
// real time: waits are futures, pipes and futex waits, their timeouts only failure guards.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/runtime.hpp>

#include "adapters/coverage_readers.hpp"
#include "adapters/test_support.hpp"
#include "support/child.hpp"
#include "support/index_registration.hpp"
#include "support/wrapped_backend.hpp"

using namespace dix;
using namespace std::chrono_literals;
using dix::test::index_registration;
using dix::test::temp_dir;

namespace {

// Longer than any failure guard below: an age flush within the test would mean a defect.
constexpr std::chrono::milliseconds long_flush_age = 600000ms;

runtime_options long_flush_age_options() {
  runtime_options o;
  o.runner.max_flush_age = long_flush_age;
  o.max_coverage_wait = 600000ms;
  return o;
}

std::uint64_t flushes(const runtime& rt, flush_reason reason) {
  return rt.metrics("by-value").value().flushes[static_cast<std::size_t>(reason)];
}

errc code_of(future<void> f) {
  auto r = f.get();
  return r ? errc::none : r.error().value();
}

// One owner: a runtime with a long max_flush_age over a store and a wrapped RocksDB index, ready
// and idle once started. A new index becomes ready only when its rebuild's boundary is durable,
// which without a waiter only the age timer asks for (protocol.md §6.2): so the index is built
// first by a runtime with the default flush age, and the long-flush-age owner then resumes it
// from its durable cursor, ready at its first idle pass.
// The registration of `logs` (table 1 of each), each record's payload its one key.
registration two_table_registration(std::shared_ptr<backend> b, const std::vector<std::string>& logs) {
  registration r;
  r.backend = std::move(b);
  for (const auto& log : logs) {
    r.projections[table_ref{log, 1}] = [](std::string_view payload, const record_info&) -> projection_result {
      return encode_keys({std::string(payload)});
    };
  }
  return r;
}

struct owner {
  temp_dir dir;
  std::filesystem::path home = dir / "db";
  std::shared_ptr<primary_store> store;
  std::shared_ptr<primary_store> side;  // a second log ("side"), when started with two logs
  std::unique_ptr<runtime> rt;
  std::shared_ptr<test::wrapped_backend> index;
  std::optional<registration_handle> handle;
  epoch_t built_epoch = 0;

  std::shared_ptr<rocksdb_index_backend> open_index() const {
    rocksdb_index_options o;
    o.path = dir / "index";
    return rocksdb_index_backend::create("by-value", o).value();
  }
  std::vector<std::shared_ptr<primary_store>> stores() const {
    if (side) return {store, side};
    return {store};
  }
  std::vector<std::string> logs() const {
    if (side) return {"main", "side"};
    return {"main"};
  }
  // Tables 1 (projected) and 2 (not) in every store.
  void start(bool two_logs = false) {
    store = test::open_store(home);
    REQUIRE(store->create_table(2));
    if (two_logs) {
      side = test::open_store(dir / "side", test::options("side"));
      REQUIRE(side->create_table(2));
    }
    {
      auto builder = runtime::create(stores()).value();
      builder->register_index(two_table_registration(open_index(), logs())).value();
      test::put_records(*store, "built", 2);
      REQUIRE(test::wait_readiness(home, "by-value", test::is_ready));
      built_epoch = builder->readiness("by-value")->owner_epoch;
      REQUIRE(builder->stop().get());
    }
    rt = runtime::create(stores(), long_flush_age_options()).value();
    index = std::make_shared<test::wrapped_backend>(open_index());
    handle = rt->register_index(two_table_registration(index, logs())).value();
    REQUIRE(test::wait_readiness(home, "by-value",
                                 [&](const dix::readiness& r) { return test::is_ready(r) && r.owner_epoch > built_epoch; }));
    REQUIRE(index->resets == 0);  // resumed from its durable cursor, not rebuilt
  }

  coverage_state read_now() const { return rt->read_coverage("by-value", 0ms).state; }
  // A strict query's admission through the backend's host (protocol.md §12.5: strict needs current).
  errc admit_strict() const {
    coverage_mode strict;
    strict.kind = coverage_kind::strict;
    auto r = index->host()->admit_query(strict);
    return r ? errc::none : r.error().value();
  }
  // Waits until read_coverage answers `current`: the owner's proof is stored in the same runner
  // event that publishes the coverage a waiter saw, so this is one look in the usual case; a
  // look per segment change (futex) with the 30 s failure bound of wait_segment otherwise.
  bool until_current() const {
    return test::wait_segment(home, [&] { return read_now() == coverage_state::current; });
  }
  // Waits (the coverage demand: a coverage flush) until the index covers `since`.
  void cover(index_time_t since) const {
    auto waiting = rt->wait_for_coverage("by-value", since, 300000ms);
    REQUIRE(waiting.wait_for(120s) == std::future_status::ready);  // failure guard only
    REQUIRE(waiting.get());
  }
};

}  // namespace

TEST_CASE("behaviour 22: wait_for_coverage after a write resolves through the coverage demand and a coverage flush, long before max_flush_age",
          "[system][coverage][behaviour-22]") {
  owner w;
  w.start();
  const auto coverage_flushes = flushes(*w.rt, flush_reason::coverage);
  const auto written = test::put_records(*w.store, "k", 3);
  // since = the commit's time, fixed at the call; a later commit does not move it.
  auto waiting = w.rt->wait_for_coverage("by-value", written.time, 300000ms);
  REQUIRE(waiting.wait_for(120s) == std::future_status::ready);  // failure guard only
  CHECK(code_of(std::move(waiting)) == errc::none);
  CHECK(w.rt->metrics("by-value")->coverage_time >= written.time);
  CHECK(flushes(*w.rt, flush_reason::coverage) > coverage_flushes);  // the demand asked for the barrier
  CHECK(flushes(*w.rt, flush_reason::age) == 0);                     // the age timer never fired
  CHECK(w.store->get(1, "k0").value().has_value());
  REQUIRE(w.rt->stop().get());
}

TEST_CASE("behaviour 22: the free wait_for_coverage in another process resolves on a futex wake after the owner's coverage flush",
          "[system][coverage][behaviour-22]") {
  temp_dir scratch;
  test::pipe_pair go;      // parent → child: the since to wait for (8 bytes)
  test::pipe_pair report;  // child → parent: 'k' or 'f', then the wake-up count
  owner w;
  // Forked before this process has a thread or a RocksDB handle; the child maps the segment
  // itself through the free function and touches nothing else.
  const pid_t child = test::fork_child([&]() {
    index_time_t since = 0;
    char bytes[sizeof since];
    for (std::size_t got = 0; got < sizeof bytes;) {
      const auto n = ::read(go.read_end, bytes + got, sizeof bytes - got);
      if (n <= 0) return 11;
      got += static_cast<std::size_t>(n);
    }
    std::memcpy(&since, bytes, sizeof since);
    wait_stats stats;
    auto r = wait_for_coverage_counted(w.home, "by-value", since, 300000ms, {}, stats);
    const char out[3] = {r ? 'k' : 'f', stats.raised_demand ? 'd' : '-',
                         static_cast<char>('0' + std::min<std::uint64_t>(stats.wakeups, 9))};
    return ::write(report.write_end, out, 3) == 3 ? 0 : 10;
  });
  w.start();
  const auto coverage_flushes = flushes(*w.rt, flush_reason::coverage);
  const auto written = test::put_records(*w.store, "c", 2);
  char since_bytes[sizeof written.time];
  std::memcpy(since_bytes, &written.time, sizeof since_bytes);
  REQUIRE(::write(go.write_end, since_bytes, sizeof since_bytes) == static_cast<ssize_t>(sizeof since_bytes));
  CHECK(report.receive() == 'k');
  CHECK(report.receive() == 'd');        // the child's demand drove the owner
  const char wakeups = report.receive();
  CHECK(wakeups >= '1');                 // it slept and a slot change woke it …
  CHECK(wakeups <= '9');
  CHECK(test::wait_exit(child) == 0);
  CHECK(flushes(*w.rt, flush_reason::coverage) > coverage_flushes);  // … after a coverage flush
  CHECK(flushes(*w.rt, flush_reason::age) == 0);
  REQUIRE(w.rt->stop().get());
}

TEST_CASE("behaviour 22: with a real owner a waiter fails index_lagging at its deadline and stopped at unregister",
          "[system][coverage][behaviour-22]") {
  owner w;
  w.start();
  // An hour ahead: no capture of this run reaches it.
  const auto far = test::put_records(*w.store, "k", 1).time + 3'600'000'000'000ull;
  CHECK(code_of(w.rt->wait_for_coverage("by-value", far, 20ms)) == errc::index_lagging);
  auto at_unregister = w.rt->wait_for_coverage("by-value", far, 300000ms);
  auto released = w.handle->unregister();
  REQUIRE(at_unregister.wait_for(120s) == std::future_status::ready);  // at once, not at its deadline
  CHECK(code_of(std::move(at_unregister)) == errc::stopped);
  REQUIRE(released.get());
  CHECK(code_of(w.rt->wait_for_coverage("by-value", far, 1000ms)) == errc::not_registered);
  REQUIRE(w.rt->stop().get());
}

// Issue 29 changed behaviour 22's rebuild case: a wait waits through a rebuild up to its
// deadline, and fails rebuilding only when the index is still being built then.
TEST_CASE("behaviour 22: with a real owner a waiter waits through a rebuild, fails rebuilding at its deadline if still built, and every wait fails stopped after stop",
          "[system][coverage][behaviour-22]") {
  owner w;
  w.start();
  const auto far = test::put_records(*w.store, "k", 1).time + 3'600'000'000'000ull;
  // A waiter pending when the rebuild is requested goes on waiting through the condemnation
  // (needs-rebuild) and the rebuild. Held barriers keep the rebuild's boundary from becoming
  // durable, so the index stays rebuilding (the long flush age alone would not: the pending
  // waiter's demand may ask for a coverage flush).
  auto pending = w.rt->wait_for_coverage("by-value", far, 300000ms);
  w.index->hold_flushes = true;
  REQUIRE(w.rt->request_rebuild("by-value"));
  REQUIRE(test::wait_readiness(w.home, "by-value",
                               [](const dix::readiness& r) { return r.state == readiness_state::rebuilding; }));
  // A brief waiter begun during the rebuild: its deadline comes while the index is still built.
  auto brief = w.rt->wait_for_coverage("by-value", far, 200ms);
  REQUIRE(brief.wait_for(120s) == std::future_status::ready);
  auto late = brief.get();
  REQUIRE_FALSE(late);
  CHECK(late.error().value() == errc::rebuilding);
  CHECK(pending.wait_for(0s) == std::future_status::timeout);  // still waiting through it
  CHECK(flushes(*w.rt, flush_reason::age) == 0);
  REQUIRE(w.rt->stop().get());  // flush(shutdown) passes the held barriers
  REQUIRE(pending.wait_for(120s) == std::future_status::ready);
  CHECK(code_of(std::move(pending)) == errc::stopped);
  CHECK(code_of(w.rt->wait_for_coverage("by-value", far, 1000ms)) == errc::stopped);
}

// Issue 29: read-your-writes right after registering a new index. The store already holds the
// write; the index is new (no cursor), so it is first built by a scan. A wait for the write, a
// query in `wait` mode for it, both made right after register_index, succeed once the build is
// ready: no unavailable, no rebuilding on the way. The owner's flush age is far longer than the
// test: what ends the build in time is the waiters' demand.
TEST_CASE("issue 29: a wait and a wait-mode query made right after registering a new index wait through its first build",
          "[system][coverage][first-build]") {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  const auto written = test::put_records(*store, "k", 3);
  auto rt = runtime::create({store}, long_flush_age_options()).value();
  rocksdb_index_options o;
  o.path = dir / "index";
  auto index = rocksdb_index_backend::create("by-value", o).value();
  auto handle = rt->register_index(two_table_registration(index, {"main"}));
  REQUIRE(handle);
  auto waited = rt->wait_for_coverage("by-value", written.time, 120000ms);
  coverage_mode mine;
  mine.kind = coverage_kind::wait;
  mine.since = written.time;
  mine.timeout = 120000ms;
  auto queried = std::async(std::launch::async, [&] { return index->lookup("value-1", 10, mine); });
  REQUIRE(waited.wait_for(150s) == std::future_status::ready);
  CHECK(code_of(std::move(waited)) == errc::none);
  REQUIRE(queried.wait_for(150s) == std::future_status::ready);
  auto rows = queried.get();
  if (!rows) FAIL_CHECK(rows.error().message());
  else CHECK(rows->rows.size() == 1);  // the write is read
  CHECK(rt->readiness("by-value")->state == readiness_state::ready);
  CHECK(rt->metrics("by-value").value().flushes[static_cast<std::size_t>(flush_reason::age)] == 0);
  REQUIRE(rt->stop().get());
}

// -- `current` in the owner's process (protocol.md §12.5 step 3, issue 33) -----------------------
// Each of these failed before the registration handed its runner the proof box: read_coverage
// never answered `current` and every strict admission was refused index_lagging.

TEST_CASE("current coverage: an idle owner's index that covers a write reads current, and strict queries are admitted",
          "[system][coverage][current]") {
  owner w;
  w.start();
  const auto written = test::put_records(*w.store, "k", 3);
  w.cover(written.time);
  CHECK(w.until_current());
  auto m = w.rt->metrics("by-value").value();
  CHECK(m.owner);
  CHECK(w.admit_strict() == errc::none);
  auto c = w.rt->read_coverage("by-value", 0ms);
  CHECK(c.state == coverage_state::current);
  CHECK(c.lag_upper_bound == 0ms);
  REQUIRE(w.rt->stop().get());
}

TEST_CASE("current coverage: a write accepted but not durable refuses strict and reads bounded within a tolerance, and its barrier makes it current",
          "[system][coverage][current]") {
  owner w;
  w.start();
  w.cover(test::put_records(*w.store, "k", 1).time);
  REQUIRE(w.until_current());
  const int accepted = w.index->accepted();
  const auto pending = test::put_records(*w.store, "p", 2);
  // Accepted by the backend; with max_flush_age 10 min and no waiter, no barrier follows it.
  REQUIRE(w.index->wait_accepted(accepted + 1, 30000ms));
  CHECK(w.read_now() != coverage_state::current);
  CHECK(w.admit_strict() == errc::index_lagging);
  CHECK(w.rt->read_coverage("by-value", 600000ms).state == coverage_state::bounded);
  CHECK(w.rt->metrics("by-value")->flushes[static_cast<std::size_t>(flush_reason::age)] == 0);
  w.cover(pending.time);  // the coverage flush: the write's barrier
  CHECK(w.until_current());
  CHECK(w.admit_strict() == errc::none);
  CHECK(w.rt->read_coverage("by-value", 600000ms).state != coverage_state::unknown);
  REQUIRE(w.rt->stop().get());
  // Issue 29 item 8: a stopped runtime speaks for no index (protocol.md §15), though the slot
  // still holds the last owner's recent coverage time.
  CHECK(w.rt->read_coverage("by-value", 600000ms).state == coverage_state::unknown);
  CHECK(w.rt->read_coverage("by-value", 600000ms).tolerance == 600000ms);
}

TEST_CASE("current coverage: an unrelated commit after a pending relevant write never certifies past it",
          "[system][coverage][current]") {
  owner w;
  w.start();
  w.cover(test::put_records(*w.store, "k", 1).time);
  REQUIRE(w.until_current());
  const auto certified = w.rt->metrics("by-value")->coverage_time;
  w.index->hold_flushes = true;  // barriers wait; flush(shutdown) passes
  const auto relevant = test::put_records(*w.store, "r", 1);
  const auto unrelated = test::put_records(*w.store, "u", 1, 2);  // table 2: projected by no one
  // A waiter for the unrelated commit: the owner drains past both and asks for a barrier, held.
  auto waiting = w.rt->wait_for_coverage("by-value", unrelated.time, 300000ms);
  REQUIRE(w.index->wait_flush_held(30000ms));
  CHECK(w.read_now() != coverage_state::current);
  CHECK(w.admit_strict() == errc::index_lagging);
  const auto m = w.rt->metrics("by-value").value();
  CHECK(m.coverage_time >= certified);
  CHECK(m.coverage_time < relevant.time);  // never past the write that is not durable
  CHECK(waiting.wait_for(0ms) == std::future_status::timeout);
  w.index->release_flushes();
  REQUIRE(waiting.wait_for(120s) == std::future_status::ready);
  CHECK(waiting.get());
  CHECK(w.until_current());
  REQUIRE(w.rt->stop().get());
}

TEST_CASE("current coverage: with two logs each log's pending write holds current back",
          "[system][coverage][current]") {
  owner w;
  w.start(true);
  w.cover(test::put_records(*w.store, "k", 1).time);
  REQUIRE(w.until_current());
  const auto on_main = test::put_records(*w.store, "m", 1);
  CHECK(w.read_now() != coverage_state::current);
  CHECK(w.admit_strict() == errc::index_lagging);
  w.cover(on_main.time);
  CHECK(w.until_current());
  const auto on_side = test::put_records(*w.side, "s", 1);
  CHECK(w.read_now() != coverage_state::current);  // main is durable; side is not
  CHECK(w.admit_strict() == errc::index_lagging);
  w.cover(on_side.time);
  CHECK(w.until_current());
  CHECK(w.admit_strict() == errc::none);
  REQUIRE(w.rt->stop().get());
}

TEST_CASE("current coverage: the home store closed under the owner fails closed",
          "[system][coverage][current]") {
  owner w;
  w.start();
  w.cover(test::put_records(*w.store, "k", 1).time);
  REQUIRE(w.until_current());
  REQUIRE(w.store->close());
  // The latest sequence cannot be read under the commit mutex any more: nothing proves current.
  CHECK(w.read_now() == coverage_state::unknown);
  CHECK(w.admit_strict() == errc::index_lagging);
  (void)w.rt->stop().get();
}
