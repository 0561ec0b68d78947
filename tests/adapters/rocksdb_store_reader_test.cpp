#include <catch2/catch.hpp>

#include "adapters/rocksdb_log_source.hpp"
#include "adapters/rocksdb_store_reader.hpp"
#include "adapters/test_support.hpp"
#include "core/tailer_core.hpp"

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
  REQUIRE(sync_wal(*s));
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
