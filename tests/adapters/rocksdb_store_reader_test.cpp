#include <catch2/catch.hpp>

#include <atomic>
#include <random>
#include <thread>

#include "adapters/rocksdb_log_source.hpp"
#include "adapters/rocksdb_store_reader.hpp"
#include "adapters/meta_records.hpp"
#include "adapters/test_support.hpp"
#include "core/bytes.hpp"
#include "core/tailer_core.hpp"
#include "support/fake_store.hpp"

using namespace dix;
using dix::test::temp_dir;

TEST_CASE("store reader: the tailer over real RocksDB syncs the WAL it read before delivering (behaviour 26)", "[adapter][tailer][sync]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");  // sync_commits = false
  auto anchor = test::put_records(*s, "a", 1);
  rocksdb_log_source source(s);
  rocksdb_store_reader reader(s);
  std::map<table_ref, projection> projections{
      {table_ref{"main", 1}, [](std::string_view p, const record_info&) -> projection_result { return std::string(p); }}};
  tailer_core core({{&source, &reader}}, projections, {{s->log_name(), s->identity()}});
  auto start = cursor::make({log_position{"main", s->identity(), anchor.sequence, anchor.time}}).value();
  REQUIRE_FALSE(core.install(start).fault);
  auto written = test::put_records(*s, "b", 3);
  REQUIRE(synced_sequence(*s) < written.sequence + 2);  // nothing forced it to disk yet
  auto syncs_before = primary_store_access::get(*s).wal_syncs.load();
  manual_clock time;
  auto r = core.pull(turn_budgets{}, 1, time);
  REQUIRE_FALSE(r.fault);
  REQUIRE(r.chunk.delivery);
  CHECK(r.chunk.delivery->records.size() == 3);
  CHECK(r.chunk.wal_syncs == 1);
  CHECK(primary_store_access::get(*s).wal_syncs.load() == syncs_before + 1);
  CHECK(synced_sequence(*s) >= written.sequence + 2);  // synced before the batch was handed out
  // A turn with nothing unsynced makes no sync.
  auto again = test::put_records(*s, "c", 1);
  REQUIRE(sync_wal(*s, 0));
  auto r2 = core.pull(turn_budgets{}, 1, time);
  REQUIRE(r2.chunk.delivery);
  CHECK(r2.chunk.wal_syncs == 0);
  CHECK(r2.chunk.log_reopens == 0);
  test::switch_wal(*s);  // a WAL switch: the next pull re-opens once, and reports it
  test::put_records(*s, "d", 1);
  auto r3 = core.pull(turn_budgets{}, 1, time);
  REQUIRE(r3.chunk.delivery);
  CHECK(r3.chunk.log_reopens == 1);
  (void)again;
}

TEST_CASE("store reader: reads stored values raw, alone or grouped, and reports a closed store as io_error", "[adapter][tailer]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  test::put_records(*s, "k", 1);
  rocksdb_store_reader reader(s);
  auto v = reader.read(1, "k0").value();
  REQUIRE(v);
  CHECK(v->size() == 8 + std::string("value-0").size());
  CHECK_FALSE(reader.read(1, "missing").value());
  CHECK_FALSE(reader.read(77, "k0").value());  // a table never created holds nothing
  auto many = reader.read_many(1, {"k0", "missing", "k0"}).value();
  REQUIRE(many.size() == 3);
  CHECK(many[0] == *v);
  CHECK_FALSE(many[1]);
  CHECK(many[2] == *v);
  CHECK_FALSE(reader.read_many(77, {"k0"}).value()[0]);
  REQUIRE(s->close());
  CHECK(reader.read(1, "k0").error().value() == errc::io_error);
  CHECK(reader.read_many(1, {"k0"}).error().value() == errc::io_error);
  CHECK(reader.latest_sequence().error().value() == errc::io_error);
}

// ---------------------------------------------------------------------------------------------
// The rebuild's reads (protocol.md §11.5, §11.6): snapshots, the boundary commit, estimates. The
// same scenario also runs against the fake store of the core tests and the simulation, so the
// fake's snapshot is held to what RocksDB does.

namespace {

// One record as a scan saw it: its id and its payload (the stored value less its version, which
// is the header time and so differs between the fake and RocksDB).
using scanned = std::vector<std::pair<std::string, std::string>>;

// Every record of `table` after `after`, in the order the snapshot yields them.
scanned scan_all(store_snapshot& snap, std::uint32_t table, std::string_view after = {}) {
  auto sought = snap.seek(table, after);
  REQUIRE(sought);
  scanned out;
  for (;;) {
    auto e = snap.next();
    REQUIRE(e);
    if (!*e) break;
    REQUIRE((*e)->value.size() >= 8);
    out.emplace_back(std::string((*e)->id), std::string((*e)->value.substr(8)));
  }
  auto again = snap.next();  // the end stays the end
  REQUIRE(again);
  CHECK_FALSE(*again);
  return out;
}

// One operation of the shared scenario: a put (payload) or a delete (nullopt).
struct scenario_op {
  std::uint32_t table;
  std::string id;
  std::optional<std::string> payload;
};

void commit_real(primary_store& s, const std::vector<scenario_op>& ops) {
  auto txn = s.begin();
  for (const auto& o : ops) {
    if (!s.has_table(o.table)) REQUIRE(s.create_table(o.table));
    if (o.payload) txn.put(o.table, o.id, *o.payload);
    else txn.del(o.table, o.id);
  }
  REQUIRE(txn.commit());
}

void commit_fake(test::fake_store& s, const std::vector<scenario_op>& ops) {
  std::vector<test::fake_op> fake;
  for (const auto& o : ops) fake.push_back(o.payload ? test::put(o.table, o.id, *o.payload) : test::del(o.table, o.id));
  s.commit(std::move(fake));
}

// Before the snapshot: ids out of order, an overwrite, a delete, a record put and deleted in one
// transaction's wake. After it: a put, an overwrite, a delete and a new table.
// The same transactions in the real store and in the fake one.
void commit_both(primary_store& real, test::fake_store& fake, const std::vector<std::vector<scenario_op>>& transactions) {
  for (const auto& t : transactions) {
    commit_real(real, t);
    commit_fake(fake, t);
  }
}

const std::vector<std::vector<scenario_op>> before_snapshot{
    {{1, "m", "m1"}, {1, "c", "c1"}, {1, "x", "x1"}, {1, "a", "a1"}},
    {{1, "c", "c2"}, {1, "q", "q1"}},
    {{1, "x", std::nullopt}, {1, "b", "b1"}},
    {{1, "b", std::nullopt}},
};
const std::vector<std::vector<scenario_op>> after_snapshot{
    {{1, "d", "d1"}, {1, "m", "m2"}, {1, "a", std::nullopt}},
    {{2, "n", "n1"}},
};
const scanned expected_table1{{"a", "a1"}, {"c", "c2"}, {"m", "m1"}, {"q", "q1"}};

// What the scenario's snapshot shows through one store_reader.
struct scenario_views {
  scanned table1, after_c, after_missing_id, after_last, table2, missing_table;
};

scenario_views views_of(store_snapshot& snap) {
  scenario_views v;
  v.table1 = scan_all(snap, 1);
  v.after_c = scan_all(snap, 1, "c");
  v.after_missing_id = scan_all(snap, 1, "d");  // "d" is not in the snapshot: starts at the next id
  v.after_last = scan_all(snap, 1, "q");
  v.table2 = scan_all(snap, 2);
  v.missing_table = scan_all(snap, 77);
  return v;
}

}  // namespace

TEST_CASE("store reader: a snapshot shows the tables as they were, ids ascending, without deleted records or later commits",
          "[adapter][rebuild][snapshot]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  rocksdb_store_reader reader(s);
  for (const auto& t : before_snapshot) commit_real(*s, t);
  auto snap = reader.snapshot();
  REQUIRE(snap);
  for (const auto& t : after_snapshot) commit_real(*s, t);
  REQUIRE(s->has_table(2));
  auto v = views_of(**snap);
  CHECK(v.table1 == expected_table1);
  CHECK(v.after_c == scanned{{"m", "m1"}, {"q", "q1"}});  // strictly after the id sought
  CHECK(v.after_missing_id == scanned{{"m", "m1"}, {"q", "q1"}});
  CHECK(v.after_last.empty());
  CHECK(v.table2.empty());  // a table created after the snapshot holds nothing in it
  CHECK(v.missing_table.empty());
  // A snapshot taken now sees the later commits.
  auto now = reader.snapshot();
  REQUIRE(now);
  CHECK(scan_all(**now, 1) == scanned{{"c", "c2"}, {"d", "d1"}, {"m", "m2"}, {"q", "q1"}});
  CHECK(scan_all(**now, 2) == scanned{{"n", "n1"}});
}

TEST_CASE("store reader: a scan's versions are the header times of the commits that wrote the values",
          "[adapter][rebuild][snapshot]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  rocksdb_store_reader reader(s);
  auto first = test::put_records(*s, "k", 2);
  auto second = test::put_records(*s, "k", 1);  // overwrites k0
  auto snap = reader.snapshot().value();
  REQUIRE(snap->seek(1, {}));
  std::vector<std::pair<std::string, std::uint64_t>> seen;
  while (auto e = snap->next().value()) seen.emplace_back(std::string(e->id), get_le<std::uint64_t>(e->value, 0));
  CHECK(seen == std::vector<std::pair<std::string, std::uint64_t>>{{"k0", second.time}, {"k1", first.time}});
}

TEST_CASE("store reader: the fake store's snapshot behaves like the RocksDB one over the same commits",
          "[adapter][rebuild][snapshot]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  rocksdb_store_reader real(s);
  test::fake_store fake_store("main", "fake-identity");
  test::fake_store::reader fake(fake_store);
  commit_both(*s, fake_store, before_snapshot);
  auto real_snap = real.snapshot().value();
  auto fake_snap = fake.snapshot().value();
  commit_both(*s, fake_store, after_snapshot);
  auto r = views_of(*real_snap);
  auto f = views_of(*fake_snap);
  CHECK(r.table1 == expected_table1);
  CHECK(f.table1 == r.table1);
  CHECK(f.after_c == r.after_c);
  CHECK(f.after_missing_id == r.after_missing_id);
  CHECK(f.after_last == r.after_last);
  CHECK(f.table2 == r.table2);
  CHECK(f.missing_table == r.missing_table);
  // Estimates: both count the live records of a table (RocksDB's after a flush, when they are
  // exact for a table without overwrites), both zeros for a table the store lacks.
  test::switch_wal(*s);
  CHECK(real.estimate(2).value().keys == 1);
  CHECK(fake.estimate(2).value().keys == 1);
  CHECK(fake.estimate(77).value().keys == 0);
  CHECK(real.estimate(77).value().keys == 0);
}

TEST_CASE("store reader: closing the store under a live snapshot makes its next call io_error, and it is destroyed safely",
          "[adapter][rebuild][snapshot]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  test::put_records(*s, "k", 5);
  rocksdb_store_reader reader(s);
  auto positioned = reader.snapshot().value();
  REQUIRE(positioned->seek(1, {}));
  auto first = positioned->next().value();
  REQUIRE(first);
  CHECK(first->id == "k0");
  auto idle = reader.snapshot().value();  // taken, never sought
  REQUIRE(s->close());
  auto next = positioned->next();
  REQUIRE_FALSE(next);
  CHECK(next.error().value() == errc::io_error);
  CHECK_THAT(next.error().message(), Catch::Contains("closed"));
  auto seek = positioned->seek(1, {});
  REQUIRE_FALSE(seek);
  CHECK(seek.error().value() == errc::io_error);
  CHECK(idle->next().error().value() == errc::io_error);
  CHECK(idle->seek(1, "k2").error().value() == errc::io_error);
  CHECK(reader.snapshot().error().value() == errc::io_error);
  CHECK(reader.estimate(1).error().value() == errc::io_error);
  CHECK(reader.commit_boundary("by-category", 3).error().value() == errc::io_error);
  positioned.reset();  // after the close: released without touching the closed database (ASan)
  idle.reset();
  CHECK(primary_store_access::get(*s).close_listeners.empty());  // each snapshot took its listener away
}

TEST_CASE("store reader: a snapshot destroyed while the store is open releases its listener and the store closes cleanly",
          "[adapter][rebuild][snapshot]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  test::put_records(*s, "k", 3);
  rocksdb_store_reader reader(s);
  const auto listeners = primary_store_access::get(*s).close_listeners.size();
  {
    auto snap = reader.snapshot().value();
    REQUIRE(snap->seek(1, "k0"));
    CHECK(snap->next().value()->id == "k1");
    CHECK(primary_store_access::get(*s).close_listeners.size() == listeners + 1);
  }
  CHECK(primary_store_access::get(*s).close_listeners.size() == listeners);
  std::string value;
  CHECK(test::raw_db(*s).GetProperty("rocksdb.num-snapshots", &value));
  CHECK(value == "0");  // the RocksDB snapshot was released
  REQUIRE(s->close());
}

TEST_CASE("store reader: the boundary commit is a synced system transaction of boundary/<id> = epoch, as the WAL shows it",
          "[adapter][rebuild][boundary]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");  // sync_commits = false
  auto unsynced = test::put_records(*s, "k", 2);
  REQUIRE(synced_sequence(*s) < unsynced.sequence);
  rocksdb_store_reader reader(s);
  const epoch_t epoch = 0x0102030405060708ull;
  auto b = reader.commit_boundary("by-category", epoch);
  REQUIRE(b);
  CHECK(b->sequence == unsynced.sequence + 2);  // the next sequence after the two puts
  CHECK(b->time > unsynced.time);
  CHECK(synced_sequence(*s) >= b->sequence);  // written with sync
  CHECK(s->index_time() > b->time);
  // dix.meta holds the epoch, 8 bytes little-endian.
  auto stored = read_meta(*s, "boundary/by-category").value();
  REQUIRE(stored);
  CHECK(*stored == std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
  // The WAL has it at that sequence with that header time: one system put on dix.meta.
  rocksdb_log_source source(s);
  auto t = source.open(b->sequence, b->time);
  REQUIRE(t);
  CHECK(t->sequence == b->sequence);
  CHECK(t->time == b->time);
  CHECK(t->flags == header_flag::system);
  REQUIRE(t->ops.size() == 1);
  CHECK(t->ops[0].kind == op_kind::put);
  CHECK(t->ops[0].meta);
  CHECK(t->ops[0].key == "boundary/by-category");
  CHECK(t->ops[0].value == *stored);
  CHECK_FALSE(source.next().value());  // nothing after it
  // A second boundary of another index is a transaction of its own.
  auto other = reader.commit_boundary("by-brand", 9).value();
  CHECK(other.sequence == b->sequence + 1);
  CHECK(other.time > b->time);
}

TEST_CASE("store reader: the fake store's boundary commit is the same synced system transaction", "[adapter][rebuild][boundary]") {
  test::fake_store store("main", "fake-identity");
  store.commit({test::put(1, "k0", "v")});
  test::fake_store::reader reader(store);
  auto b = reader.commit_boundary("by-category", 0x0102030405060708ull).value();
  CHECK(b.sequence == 2);
  CHECK(store.synced() >= b.sequence);
  const auto& t = store.transactions().back();
  CHECK(t.sequence == b.sequence);
  CHECK(t.time == b.time);
  CHECK(t.flags == header_flag::system);
  REQUIRE(t.ops.size() == 1);
  CHECK(t.ops[0].meta);
  CHECK(t.ops[0].key == "boundary/by-category");
  CHECK(t.ops[0].value == std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
}

TEST_CASE("store reader: estimates are zeros for a table the store lacks and count the records after a flush",
          "[adapter][rebuild][estimate]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  rocksdb_store_reader reader(s);
  auto empty = reader.estimate(1).value();
  CHECK(empty.keys == 0);
  CHECK(empty.live_bytes == 0);
  for (int t = 0; t < 10; ++t) test::put_records(*s, "t" + std::to_string(t) + "-", 100);
  test::switch_wal(*s);
  auto e = reader.estimate(1).value();
  CHECK(e.keys == 1000);  // exact: one flush, no overwrites
  CHECK(e.live_bytes > 1000 * 8);
  auto missing = reader.estimate(77).value();
  CHECK(missing.keys == 0);
  CHECK(missing.live_bytes == 0);
}

TEST_CASE("store reader: a snapshot names its sequence and reads values at it, as the fake store's does (issue 31's verify fence)",
          "[adapter][verify][snapshot]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  rocksdb_store_reader real(s);
  test::fake_store fake_store("main", "fake-identity");
  test::fake_store::reader fake(fake_store);
  commit_both(*s, fake_store, before_snapshot);
  auto real_snap = real.snapshot().value();
  auto fake_snap = fake.snapshot().value();
  CHECK(real_snap->sequence() == real.latest_sequence().value());
  CHECK(fake_snap->sequence() == fake.latest_sequence().value());
  const std::vector<std::string_view> ids{"c", "m", "q", "missing"};
  const auto real_before = real.read_many(1, ids).value();
  commit_both(*s, fake_store, after_snapshot);
  CHECK(real.read_many(1, ids).value() != real_before);  // the latest state moved on
  CHECK(real_snap->read_many(1, ids).value() == real_before);
  CHECK(real_snap->read_many(77, ids).value() == std::vector<std::optional<std::string>>(ids.size()));
  // The same presence and payloads in the fake (its version stamps are its own clock's).
  const auto fake_at = fake_snap->read_many(1, ids).value();
  REQUIRE(fake_at.size() == real_before.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    INFO("id " << ids[i]);
    REQUIRE(fake_at[i].has_value() == real_before[i].has_value());
    if (fake_at[i]) CHECK(fake_at[i]->substr(8) == real_before[i]->substr(8));
  }
  REQUIRE(s->close());
  CHECK(real_snap->read_many(1, ids).error().value() == errc::io_error);
}

TEST_CASE("store reader: the tailer fenced over real RocksDB under a concurrent writer stands, at each fence reached, exactly at the projection of the fence's snapshot",
          "[adapter][tailer][verify]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto anchor = test::put_records(*s, "seed", 1);
  rocksdb_log_source source(s);
  rocksdb_store_reader reader(s);
  std::map<table_ref, projection> projections{
      {table_ref{"main", 1}, [](std::string_view p, const record_info&) -> projection_result { return "P" + std::string(p); }}};
  tailer_core core({{&source, &reader}}, projections, {{s->log_name(), s->identity()}});
  REQUIRE_FALSE(core.install(cursor::make({log_position{"main", s->identity(), anchor.sequence, anchor.time}}).value()).fault);
  using entries = std::map<std::string, std::pair<std::uint64_t, std::string>>;
  entries index{{"seed0", {anchor.time, "Pvalue-0"}}};
  // The writer: small transactions of puts and deletes over 40 ids, until told to stop, at most
  // `allowed` of them (each round allows 200 more: the tailer, cutting small chunks, keeps up).
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> commits{0}, allowed{200};
  std::thread writer([&] {
    std::mt19937 rng(7);
    while (!stop.load()) {
      if (commits.load() >= allowed.load()) {
        std::this_thread::yield();
        continue;
      }
      auto txn = s->begin();
      for (int i = 0; i < 3; ++i) {
        const auto id = "r" + std::to_string(rng() % 40);
        if (rng() % 4 == 0) txn.del(1, id);
        else txn.put(1, id, "w" + std::to_string(commits.load()) + "-" + std::to_string(i));
      }
      if (!txn.commit()) return;
      commits.fetch_add(1);
    }
  });
  manual_clock time;
  turn_budgets small;
  small.max_chunk_records = 7;  // transactions cut, remainders carried across the fence
  auto pull = [&] {
    auto r = core.pull(small, 1, time);
    if (r.fault) FAIL("unexpected fault: " << r.fault->text);
    if (r.chunk.delivery) {
      for (const auto& rec : r.chunk.delivery->records) {
        if (rec.state.kind == state_kind::record) index[rec.record_id] = {rec.state.version, rec.state.projection};
        else index.erase(rec.record_id);
      }
    }
    return r.chunk;
  };
  int fences = 0;
  for (int round = 0; round < 20; ++round) {
    allowed.fetch_add(200);
    for (int i = 0; i < 3; ++i) pull();
    auto fenced = core.fence();
    if (!fenced) {  // the WAL showed a commit its snapshot lacked: a retryable refusal only
      CHECK(fenced.error().value() == errc::io_error);
      continue;
    }
    // Beyond the fence, whatever the writer did meanwhile: every id the writer touches changes
    // after the snapshot, so a key resolved at the latest state instead of the fence's shows.
    test::put_records(*s, "r", 40);
    bool reached = false;
    tailer_chunk last;
    for (int i = 0; i < 100000 && !reached; ++i) {
      last = pull();
      reached = last.fence_reached;
    }
    INFO("fence " << (*fenced)[0] << " through " << core.through()->find("main")->sequence << " read " << last.logs[0].read_sequence
                  << " latest " << last.logs[0].latest_sequence << " end_of_log " << last.end_of_log << " cut_open "
                  << last.cut_open << " txns " << last.transactions_read);
    REQUIRE(reached);
    CHECK(core.through()->find("main")->sequence <= (*fenced)[0]);
    auto snapshots = core.lift_fence();
    REQUIRE(snapshots.size() == 1);
    entries want;
    REQUIRE(snapshots[0]->seek(1, {}));
    for (;;) {
      auto e = snapshots[0]->next().value();
      if (!e) break;
      want[std::string(e->id)] = {get_le<std::uint64_t>(e->value, 0), "P" + std::string(e->value.substr(8))};
    }
    CHECK(index == want);
    ++fences;
  }
  stop = true;
  writer.join();
  CHECK(fences > 0);
  CHECK(commits.load() > 0);
}
