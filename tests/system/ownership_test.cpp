// Ownership across runtimes of one process over the real adapters: the shared readiness segment,
// the process lock table with its flock crash guard, epochs persisted in the home store, the
// condemnation marker and the registration fingerprint (protocol.md §9, §10; formats.md §4, §5).
// Real threads and real time (the public API); waits are futex waits on the segment's change
// counter or futures, bounded by generous failure timeouts, never sleeps.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <set>
#include <functional>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/free_functions.hpp>
#include <dix/runtime.hpp>

#include "adapters/primary_store_impl.hpp"
#include "adapters/process_lock_table.hpp"
#include "adapters/readiness_segment.hpp"
#include "adapters/test_support.hpp"
#include "support/index_registration.hpp"
#include "support/owner_process.hpp"
#include "support/wrapped_backend.hpp"

using namespace dix;
using namespace std::chrono_literals;
using dix::test::temp_dir;

namespace {

using test::wait_readiness;
using test::is_ready;

using test::index_registration;
using test::make_index_at;
// Waits (the lock table's condition variable, 30 s failure bound) until one runner of this
// process owns by-value and exactly one waits behind it. (The waiter's status() may say
// "dormant" a moment longer: its snapshot is stored after the lock request is carried out.)
bool waiting_behind_owner(const std::filesystem::path& home) {
  auto table = process_lock_table::for_home(home / "dix");
  return table->wait_until("by-value", [](bool owned, std::size_t waiters) { return owned && waiters == 1; }, 30s);
}

// Two runtimes of one process over one store; rt1 owns by-value through a backend whose
// shutdown is then made to fail (the setup of behaviour 16).
struct refused_shutdown {
  temp_dir dir;
  std::filesystem::path home = dir / "db";
  std::shared_ptr<primary_store> store = test::open_store(home);
  std::unique_ptr<runtime> rt1 = runtime::create({store}).value();
  std::unique_ptr<runtime> rt2 = runtime::create({store}).value();
  std::shared_ptr<test::wrapped_backend> refusing = std::make_shared<test::wrapped_backend>(make_index_at(dir / "a"));

  refused_shutdown() {
    rt1->register_index(index_registration(refusing)).value();
    test::put_records(*store, "k", 5);
    REQUIRE(wait_readiness(home, "by-value", is_ready));
    refusing->refuse_shutdown = true;
  }
  // rt2 registers the id too; it can only wait behind the held lock.
  void register_second() { rt2->register_index(index_registration(make_index_at(dir / "b"))).value(); }
};

}  // namespace

TEST_CASE("ownership: two runtimes of one process, the same id: one owns, the other never contends, the handoff is immediate under a larger epoch (behaviour 13)", "[system][ownership]") {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  auto rt1 = runtime::create({store}).value();
  auto rt2 = runtime::create({store}).value();
  auto a = make_index_at(dir / "a");
  auto b = make_index_at(dir / "b");
  auto h1 = rt1->register_index(index_registration(a)).value();
  test::put_records(*store, "k", 20);
  REQUIRE(wait_readiness(home, "by-value", is_ready));
  const auto e1 = read_readiness(home, "by-value")->owner_epoch;
  REQUIRE(rt1->metrics("by-value")->owner);

  auto h2 = rt2->register_index(index_registration(b)).value();
  for (int i = 0; i < 50; ++i) test::put_records(*store, "m" + std::to_string(i) + "-", 2);
  // However many commits: rt1 keeps the lock, rt2 only waits, no new epoch is minted.
  REQUIRE(wait_readiness(home, "by-value", [&](const dix::readiness& r) { return is_ready(r); }));
  CHECK(rt1->metrics("by-value")->owner);
  CHECK_FALSE(rt2->metrics("by-value")->owner);
  CHECK(rt2->metrics("by-value")->delivered_batches == 0);
  CHECK(waiting_behind_owner(home));
  CHECK(read_readiness(home, "by-value")->owner_epoch == e1);

  REQUIRE(h1.unregister().get());  // flush(shutdown) → shutdown(epoch) → handoff
  auto a_durable = a->durable_cursor().value();
  REQUIRE(wait_readiness(home, "by-value", [&](const dix::readiness& r) { return is_ready(r) && r.owner_epoch > e1; }));
  const auto e2 = read_readiness(home, "by-value")->owner_epoch;
  CHECK(rt2->metrics("by-value")->owner);
  test::put_records(*store, "after", 5);
  CHECK(a->durable_cursor().value() == a_durable);  // the ex-owner's backend receives nothing more

  // The ex-owner's backend object, registered again, waits, and serves a larger epoch after rt2 stops.
  auto h1b = rt1->register_index(index_registration(a)).value();
  REQUIRE(rt2->stop().get());
  REQUIRE(wait_readiness(home, "by-value", [&](const dix::readiness& r) { return is_ready(r) && r.owner_epoch > e2; }));
  CHECK(rt1->metrics("by-value")->owner);
  CHECK(rt1->metrics("by-value")->epoch > e2);
  REQUIRE(rt1->stop().get());
}

TEST_CASE("ownership: epochs stay monotone across a restart with readiness.seg deleted (behaviour 15)", "[system][ownership]") {
  temp_dir dir;
  const auto home = dir / "db";
  epoch_t first = 0;
  {
    auto store = test::open_store(home);
    auto rt = runtime::create({store}).value();
    rt->register_index(index_registration(make_index_at(dir / "idx"))).value();
    test::put_records(*store, "k", 5);
    REQUIRE(wait_readiness(home, "by-value", is_ready));
    first = read_readiness(home, "by-value")->owner_epoch;
    REQUIRE(rt->stop().get());
  }
  REQUIRE(first >= 1);
  REQUIRE(std::filesystem::remove(home / "dix" / "readiness.seg"));
  auto store = test::open_store(home);
  auto rt = runtime::create({store}).value();
  rt->register_index(index_registration(make_index_at(dir / "idx"))).value();
  REQUIRE(wait_readiness(home, "by-value", is_ready));
  CHECK(read_readiness(home, "by-value")->owner_epoch > first);  // the floor came from epoch/<id>
  REQUIRE(rt->stop().get());
}

// Waits until the id is ready under an epoch above `above` (a rebuild mints one).
bool ready_above(const std::filesystem::path& home, const std::string& id, epoch_t above) {
  return wait_readiness(home, id, [&](const dix::readiness& r) { return is_ready(r) && r.owner_epoch > above; });
}

TEST_CASE("ownership: a changed projection_version condemns with registration-changed, marker first, and one rebuild makes the index ready under the new fingerprint (behaviour 2)", "[system][ownership][rebuild]") {
  temp_dir dir;
  const auto home = dir / "db";
  std::string first_fingerprint;
  epoch_t e1 = 0;
  {
    auto store = test::open_store(home);
    auto rt = runtime::create({store}).value();
    rt->register_index(index_registration(make_index_at(dir / "idx"), "v1")).value();
    test::put_records(*store, "k", 5);
    REQUIRE(wait_readiness(home, "by-value", is_ready));
    CHECK_FALSE(read_meta(*store, "condemned/by-value").value());
    first_fingerprint = read_meta(*store, "registration/by-value").value().value();  // the build recorded it
    e1 = read_readiness(home, "by-value")->owner_epoch;
    REQUIRE(rt->stop().get());
  }
  auto store = test::open_store(home);
  auto v2 = std::make_shared<test::wrapped_backend>(make_index_at(dir / "idx"));
  {
    auto rt = runtime::create({store}).value();
    rt->register_index(index_registration(v2, "v2")).value();
    REQUIRE(ready_above(home, "by-value", e1 + 1));  // acquisition's epoch, then the rebuild's
    CHECK(rt->metrics("by-value")->last_fault == readiness_reason::registration_changed);
    CHECK(v2->resets == 1);
    // The rebuild's first `ready` wrote the new fingerprint and deleted the marker first (§10.4).
    CHECK_FALSE(read_meta(*store, "condemned/by-value").value());
    CHECK(read_meta(*store, "registration/by-value").value().value() != first_fingerprint);
    REQUIRE(rt->stop().get());
  }
  // The new fingerprint is trusted from now on: the same registration resumes, no reset.
  auto again = std::make_shared<test::wrapped_backend>(make_index_at(dir / "idx"));
  auto rt = runtime::create({store}).value();
  rt->register_index(index_registration(again, "v2")).value();
  REQUIRE(wait_readiness(home, "by-value", is_ready));
  CHECK(again->resets == 0);
  REQUIRE(rt->stop().get());
}

TEST_CASE("ownership: projecting a new table condemns with registration-changed, and after one rebuild the table's existing records are indexed (behaviour 2, rebuild half)", "[system][ownership][rebuild]") {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  REQUIRE(store->create_table(2));
  test::put_records(*store, "k", 5);
  test::put_records(*store, "t2-", 4, 2);  // records of a table nobody projects yet
  auto with_table = [](registration r) {
    r.projections[table_ref{"main", 2}] = [](std::string_view payload, const record_info&) -> projection_result {
      return encode_keys({"t2:" + std::string(payload)});
    };
    return r;
  };
  epoch_t e1 = 0;
  {
    auto rt = runtime::create({store}).value();
    auto index = make_index_at(dir / "idx");
    rt->register_index(index_registration(index)).value();
    REQUIRE(wait_readiness(home, "by-value", is_ready));
    CHECK(index->lookup("t2:value-1", 10, test::covering_now()).value().rows.empty());
    e1 = read_readiness(home, "by-value")->owner_epoch;
    REQUIRE(rt->stop().get());
  }
  auto rt = runtime::create({store}).value();
  auto index = make_index_at(dir / "idx");
  rt->register_index(with_table(index_registration(index))).value();
  REQUIRE(ready_above(home, "by-value", e1 + 1));
  CHECK(rt->metrics("by-value")->last_fault == readiness_reason::registration_changed);
  for (int i = 0; i < 4; ++i) {
    auto rows = index->lookup("t2:value-" + std::to_string(i), 10, test::covering_now()).value().rows;
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].table == 2);
    CHECK(rows[0].record_id == "t2-" + std::to_string(i));
  }
  CHECK(index->lookup("value-3", 10, test::covering_now()).value().rows.size() == 1);  // the old table is still there
  REQUIRE(rt->stop().get());
}

TEST_CASE("ownership: a rejected shutdown keeps the lock, publishes unavailable, shutdown-failed, and every stop returns the same failing future (behaviour 16, first half)", "[system][ownership][stop]") {
  refused_shutdown f;
  auto first = f.rt1->stop();
  auto second = f.rt1->stop();
  REQUIRE_FALSE(first.get());
  CHECK(first.get().error().value() == errc::backend_failed);
  CHECK(&first.get() == &second.get());
  auto r = read_readiness(f.home, "by-value").value();
  CHECK(r.state == readiness_state::unavailable);
  CHECK(r.reason == readiness_reason::shutdown_failed);
  // The lock stays held: another runtime of the process registering the id only waits.
  f.register_second();
  test::put_records(*f.store, "more", 5);
  f.rt2->wake();
  CHECK(waiting_behind_owner(f.home));
  CHECK_FALSE(f.rt2->metrics("by-value")->owner);
  CHECK(read_readiness(f.home, "by-value")->state == readiness_state::unavailable);
}

TEST_CASE("ownership: another process reads ready published by the owner, without a runtime (dix status)", "[system][ownership]") {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  auto rt = runtime::create({store}).value();
  rt->register_index(index_registration(make_index_at(dir / "idx"))).value();
  test::put_records(*store, "k", 5);
  REQUIRE(wait_readiness(home, "by-value", is_ready));
  auto out = test::run({DIX_BINARY, "status", "--db", home.string(), "--json"}, dir.path());
  CHECK(out.exit_code == 0);
  CHECK_THAT(out.out, Catch::Contains("\"id\":\"by-value\"") && Catch::Contains("\"state\":\"ready\""));
  CHECK_THAT(out.out, Catch::Contains("\"attached\":true"));
  REQUIRE(rt->stop().get());
}

TEST_CASE("ownership: `dix rebuild` from a process without a runtime makes the idle owner rebuild through its watcher, without any commit: one reset, marker first, ready under a larger epoch (behaviour 20)", "[system][ownership][rebuild]") {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  auto rt = runtime::create({store}).value();
  auto inner = make_index_at(dir / "idx");
  auto index = std::make_shared<test::wrapped_backend>(inner);
  rt->register_index(index_registration(index)).value();
  rt->register_index(index_registration(make_index_at(dir / "other", "other"))).value();
  test::put_records(*store, "k", 5);
  REQUIRE(wait_readiness(home, "by-value", is_ready));
  REQUIRE(wait_readiness(home, "other", is_ready));
  const auto e1 = read_readiness(home, "by-value")->owner_epoch;
  const auto other_epoch = read_readiness(home, "other")->owner_epoch;
  const int resets_before = index->resets;

  // The runtime's own answers (§11.2): unknown id false; the free function refuses likewise.
  CHECK_FALSE(rt->request_rebuild("nope"));
  CHECK(request_rebuild(home, "nope").error().value() == errc::not_registered);
  CHECK(request_rebuild(dir / "no-such-db", "by-value").error().value() == errc::not_registered);
  CHECK(request_rebuild(home, ".bad").error().value() == errc::invalid_argument);

  // Another process, idle owner, no commit: the watcher sees the flag and wakes the owner.
  auto asked = test::run({DIX_BINARY, "rebuild", "--db", home.string(), "by-value"}, dir.path());
  INFO(asked.out << asked.err);
  REQUIRE(asked.exit_code == 0);
  CHECK_THAT(asked.out, Catch::Contains("rebuild requested for by-value"));
  REQUIRE(ready_above(home, "by-value", e1));
  CHECK(index->resets == resets_before + 1);
  CHECK(rt->metrics("by-value")->last_fault == readiness_reason::rebuild_requested);
  CHECK(rt->metrics("by-value")->rebuilt_records == 5);
  CHECK_FALSE(read_meta(*store, "condemned/by-value").value());  // deleted again at the first ready
  CHECK(inner->lookup("value-4", 10, test::covering_now()).value().rows.size() == 1);
  // Consumed: the flag is clear again (a read-write view of the slot says so).
  auto view = segment_view::open(home, segment_view::access::read_write).value();
  REQUIRE(view);
  CHECK_FALSE(view->slot(*view->find("by-value"))->rebuild_requested());
  CHECK(read_readiness(home, "other")->owner_epoch == other_epoch);  // the other index is untouched

  // In-process, the same path; the answer after stop is false.
  CHECK(rt->request_rebuild("other"));
  REQUIRE(ready_above(home, "other", other_epoch));
  REQUIRE(rt->stop().get());
  CHECK_FALSE(rt->request_rebuild("other"));

  auto usage = test::run({DIX_BINARY, "rebuild", "--db", home.string()}, dir.path());
  CHECK(usage.exit_code == 2);
  auto unknown = test::run({DIX_BINARY, "rebuild", "--db", home.string(), "nope"}, dir.path());
  CHECK(unknown.exit_code == 1);
  CHECK_THAT(unknown.err, Catch::Contains("has no slot"));
}

TEST_CASE("ownership: a rebuild request made through the runtime that only waits reaches the owner of the other runtime, which rebuilds", "[system][ownership][rebuild]") {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  auto rt1 = runtime::create({store}).value();
  auto rt2 = runtime::create({store}).value();
  auto owner = std::make_shared<test::wrapped_backend>(make_index_at(dir / "a"));
  rt1->register_index(index_registration(owner)).value();
  test::put_records(*store, "k", 5);
  REQUIRE(wait_readiness(home, "by-value", is_ready));
  rt2->register_index(index_registration(make_index_at(dir / "b"))).value();
  REQUIRE(waiting_behind_owner(home));
  const auto e1 = read_readiness(home, "by-value")->owner_epoch;
  const int resets_before = owner->resets;

  CHECK(rt2->request_rebuild("by-value"));  // rt2's runner waits: the flag is for the owner
  REQUIRE(ready_above(home, "by-value", e1));
  CHECK(owner->resets == resets_before + 1);  // the owner of epoch e1 consumed it and rebuilt
  CHECK(rt1->metrics("by-value")->owner);
  CHECK(rt1->metrics("by-value")->last_fault == readiness_reason::rebuild_requested);
  CHECK(waiting_behind_owner(home));  // the waiter still waits
  REQUIRE(rt1->stop().get());
  REQUIRE(rt2->stop().get());
}

TEST_CASE("ownership: after a rejected shutdown at stop, request_rebuild retries only the release, the waiting runtime then acquires and its own pending request rebuilds the index under a larger epoch (behaviour 16, second half)", "[system][ownership][stop][rebuild]") {
  refused_shutdown f;
  REQUIRE_FALSE(f.rt1->stop().get());
  const auto held_epoch = read_readiness(f.home, "by-value")->owner_epoch;
  const int resets_before = f.refusing->resets;  // the first build's
  f.register_second();
  REQUIRE(waiting_behind_owner(f.home));  // the held lock: rt2 only waits
  CHECK(f.rt2->request_rebuild("by-value"));
  // The holder cannot take the request (it is not serving), so the lock stays where it was.
  CHECK(waiting_behind_owner(f.home));

  // The backend recovers; only the release is retried, through the stopped runtime.
  f.refusing->refuse_shutdown = false;
  CHECK(f.rt1->request_rebuild("by-value"));
  auto table = process_lock_table::for_home(f.home / "dix");
  REQUIRE(table->wait_until("by-value", [](bool owned, std::size_t waiters) { return !owned || waiters == 0; }, 30s));
  CHECK_FALSE(f.rt1->stop().get());  // still the same failing future
  // rt2 acquired: its own pending request is consumed at acquisition and, before the inherited
  // `unavailable` is latched, revives it: rt2 rebuilds its index (a fresh directory) from a scan
  // and ends ready under an epoch larger than the held one.
  REQUIRE(wait_readiness(f.home, "by-value", [&](const dix::readiness& r) {
    return r.state == readiness_state::ready && r.owner_epoch > held_epoch;
  }));
  auto m = f.rt2->metrics("by-value");
  REQUIRE(m);
  CHECK(m->owner);
  CHECK(m->rebuilt_records == 5);
  CHECK(f.refusing->resets == resets_before);  // rt1's backend was only shut down again, not reset
  CHECK(f.rt1->request_rebuild("by-value") == false);  // nothing held any more
  REQUIRE(f.rt2->stop().get());
}

// issue 33 item 2 (protocol.md §9.6, §11.4 step 3): a release — stop or unregister — while the
// owner's backend is still resetting waits for the reset: the backend hears nothing else until
// the reset ended, the stop's future settles and the lock is handed on only after the release
// (flush(shutdown), shutdown of the rebuild's epoch) that follows it, and the successor runtime
// rebuilds to an index equal to the primary. A failed reset ends the same way. Before the fix
// the stop settled at once, the backend got flush(shutdown) and shutdown while its reset ran
// and the second runtime acquired before the reset ended.
namespace {

enum class release_by { stop, unregister };

void release_during_held_reset(release_by how, bool reset_fails) {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  auto rt1 = runtime::create({store}).value();
  auto rt2 = runtime::create({store}).value();
  auto a = std::make_shared<test::wrapped_backend>(make_index_at(dir / "a"));
  auto b = make_index_at(dir / "b");
  auto h1 = rt1->register_index(index_registration(a)).value();
  test::put_records(*store, "k", 20);
  REQUIRE(wait_readiness(home, "by-value", is_ready));
  rt2->register_index(index_registration(b)).value();
  REQUIRE(waiting_behind_owner(home));

  a->hold_resets = true;
  REQUIRE(rt1->request_rebuild("by-value"));
  REQUIRE(a->wait_reset_held(30s));
  const auto rebuild_epoch = read_readiness(home, "by-value")->owner_epoch;
  test::put_records(*store, "during", 5);
  shared_future<void> released = how == release_by::stop ? rt1->stop() : h1.unregister();
  // Anything after the held reset's call: the release's flush or shutdown.
  const auto past_reset = [](const std::vector<std::string>& calls) { return calls.empty() || calls.back().rfind("reset(", 0) != 0; };
  // Nothing reaches the backend while its reset runs (a bounded look: before the fix the
  // release's flush came within milliseconds) …
  CHECK_FALSE(a->wait_calls(past_reset, 2000ms));
  CHECK(a->calls_during_reset().empty());
  // … the release has not settled and the lock is still the owner's, the other runtime waiting.
  CHECK(released.wait_for(0ms) == std::future_status::timeout);
  CHECK(waiting_behind_owner(home));
  CHECK_FALSE(rt2->metrics("by-value")->owner);

  REQUIRE(a->finish_held_reset(reset_fails));
  REQUIRE(released.wait_for(120s) == std::future_status::ready);  // failure guard only
  CHECK(released.get());
  const auto calls = a->calls();
  CHECK(a->calls_during_reset().empty());
  // The order: reset(E) → its end → flush(shutdown) → shutdown(E), nothing in between.
  const auto reset_at = std::find(calls.begin(), calls.end(), "reset(" + std::to_string(rebuild_epoch) + ")");
  REQUIRE(reset_at != calls.end());
  REQUIRE(std::distance(reset_at, calls.end()) == 4);
  CHECK(reset_at[1] == (reset_fails ? "reset failed" : "reset end"));
  CHECK(reset_at[2] == "flush(shutdown)");
  CHECK(reset_at[3] == "shutdown(" + std::to_string(rebuild_epoch) + ")");

  // The successor acquires under a larger epoch, rebuilds (the slot said rebuilding) and ends
  // ready and equal to the primary: 20 + 5 records, each under its own payload key.
  REQUIRE(wait_readiness(home, "by-value", [&](const dix::readiness& r) { return is_ready(r) && r.owner_epoch > rebuild_epoch; }));
  CHECK(rt2->metrics("by-value")->owner);
  auto rows = b->range("", "\x7f", 1000, test::covering_now()).value().rows;
  std::set<std::string> ids;
  for (const auto& r : rows) ids.insert(r.record_id);
  CHECK(rows.size() == 25);
  CHECK(ids.size() == 25);
  CHECK(ids.count("during4") == 1);
  REQUIRE(rt2->stop().get());
  if (how == release_by::unregister) REQUIRE(rt1->stop().get());
}

}  // namespace

TEST_CASE("ownership: a stop while the owner's reset runs waits for it, then releases, and the successor rebuilds equal", "[system][ownership][reset]") {
  release_during_held_reset(release_by::stop, false);
}

TEST_CASE("ownership: an unregister while the owner's reset runs waits for it, then releases, and the successor rebuilds equal", "[system][ownership][reset]") {
  release_during_held_reset(release_by::unregister, false);
}

TEST_CASE("ownership: a release waiting for a reset that fails still hands the lock on", "[system][ownership][reset]") {
  release_during_held_reset(release_by::stop, true);
}

// issue 33 item 2 across processes: the owner process is SIGKILLed while its backend's reset of
// `by-value` runs (the cursor gone, entries maybe left). A successor runtime acquires once the
// process is gone (its flock and RocksDB's LOCK with it), rebuilds the very directory the reset
// was destroying and ends ready and equal to the primary under a larger epoch.
TEST_CASE("ownership: SIGKILL of an owner inside a held reset: the successor rebuilds the same index and ends ready and equal", "[system][ownership][reset]") {
  temp_dir dir;
  epoch_t rebuild_epoch = 0;
  {
    test::owner_process owner(dir.path());
    for (int i = 0; i < 20; ++i) owner.put("k" + std::to_string(i), "p-" + std::to_string(i));
    REQUIRE(wait_readiness(owner.home(), "by-value", is_ready));
    owner.rebuild_with_held_reset();
    const auto r = read_readiness(owner.home(), "by-value").value();
    CHECK(r.state == readiness_state::rebuilding);
    rebuild_epoch = r.owner_epoch;
    owner.kill();
  }
  auto store = test::open_store(dir / "db");
  test::put_records(*store, "after", 3);
  auto rt = runtime::create({store}).value();
  auto index = make_index_at(dir / "by-value");
  rt->register_index(index_registration(index)).value();
  REQUIRE(wait_readiness(dir / "db", "by-value", [&](const dix::readiness& r) { return is_ready(r) && r.owner_epoch > rebuild_epoch; }));
  CHECK(rt->metrics("by-value")->owner);
  CHECK(rt->metrics("by-value")->rebuilt_records == 23);  // rebuilt from a scan, not resumed
  auto rows = index->range("", "\x7f", 1000, test::covering_now()).value().rows;
  std::set<std::string> ids;
  for (const auto& row : rows) ids.insert(row.record_id);
  CHECK(rows.size() == 23);
  CHECK(ids.size() == 23);
  CHECK(ids.count("k19") == 1);
  CHECK(ids.count("after2") == 1);
  REQUIRE(rt->stop().get());
}
