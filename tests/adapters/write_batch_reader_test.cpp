#include <catch2/catch.hpp>

#include <rocksdb/write_batch.h>

#include "adapters/rocksdb_log_source.hpp"
#include "adapters/test_support.hpp"
#include "adapters/write_batch_reader.hpp"
#include "core/bytes.hpp"
#include "core/txn_header.hpp"

using namespace dix;
using dix::test::temp_dir;

namespace {

const family_map families{{0, {family_kind::default_family, 0}},
                          {1, {family_kind::meta, 0}},
                          {2, {family_kind::table, 7}}};

std::string header(std::uint32_t op_count, std::uint8_t flags = 0) {
  return encode_header(txn_header{flags, 123456789, op_count});
}

// A WriteBatch built from raw rep bytes: 8-byte sequence, 4-byte count, then records.
std::string rep(std::uint32_t count, const std::string& records) {
  std::string out;
  put_le<std::uint64_t>(out, 0);
  put_le<std::uint32_t>(out, count);
  return out + records;
}

std::string varstring(const std::string& s) {
  return std::string(1, static_cast<char>(s.size())) + s;  // varint32 for sizes < 128
}

std::string log_data_record(std::uint32_t op_count, std::uint8_t flags = 0) {
  return std::string(1, '\x03') + varstring(header(op_count, flags));
}

result<wal_transaction> decode(const rocksdb::WriteBatch& batch) {
  raw_batch raw;
  if (auto ok = read_write_batch(batch, 10, raw); !ok) return ok.error();
  return decode_transaction(raw, families);
}

}  // namespace

TEST_CASE("write batch reader: a dix batch decodes into its operations", "[adapter][decode]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  REQUIRE(s->create_table(7));
  auto& p = primary_store_access::get(*s);
  rocksdb::WriteBatch b;
  REQUIRE(b.PutLogData(header(2)).ok());
  REQUIRE(b.Put(p.tables.at(7), "k1", "12345678v").ok());
  REQUIRE(b.Delete(p.tables.at(7), "k2").ok());
  raw_batch raw;
  REQUIRE(read_write_batch(b, 10, raw));
  CHECK(raw.count == 2);
  REQUIRE(raw.records.size() == 3);
  CHECK(raw.records[0].kind == raw_kind::log_data);
  auto txn = decode_transaction(raw, p.families()).value();
  CHECK(txn.sequence == 10);
  CHECK(txn.time == 123456789);
  REQUIRE(txn.ops.size() == 2);
  CHECK(txn.ops[0].kind == op_kind::put);
  CHECK(txn.ops[0].table == 7);
  CHECK(txn.ops[0].key == "k1");
  CHECK(txn.ops[0].value == "12345678v");
  CHECK(txn.ops[1].kind == op_kind::del);
}

TEST_CASE("write batch reader: Merge, SingleDelete and DeleteRange without reload are log-corrupt", "[adapter][decode]") {
  rocksdb::WriteBatch merge;
  REQUIRE(merge.PutLogData(header(1)).ok());
  REQUIRE(merge.Merge("k", "v").ok());
  CHECK(decode(merge).error().value() == errc::log_corrupt);
  CHECK_THAT(decode(merge).error().message(), Catch::Contains("merge"));

  rocksdb::WriteBatch single;
  REQUIRE(single.PutLogData(header(1)).ok());
  REQUIRE(single.SingleDelete("k").ok());
  CHECK_THAT(decode(single).error().message(), Catch::Contains("single_delete"));

  rocksdb::WriteBatch range;
  REQUIRE(range.PutLogData(header(1)).ok());
  REQUIRE(range.DeleteRange("a", "b").ok());
  CHECK_THAT(decode(range).error().message(), Catch::Contains("reload"));
}

TEST_CASE("write batch reader: two-phase-commit markers are log-corrupt", "[adapter][decode]") {
  struct marker {
    const char* name;
    std::string record;
  };
  std::vector<marker> markers{
      {"begin_prepare", std::string(1, '\x09')},
      {"end_prepare", std::string(1, '\x0A') + varstring("xid")},
      {"commit", std::string(1, '\x0B') + varstring("xid")},
      {"rollback", std::string(1, '\x0C') + varstring("xid")},
      {"noop", std::string(1, '\x0D')},
  };
  for (const auto& m : markers) {
    INFO(m.name);
    rocksdb::WriteBatch b(rep(1, log_data_record(1) + std::string(1, '\x01') + varstring("k") + varstring("v") + m.record));
    auto r = decode(b);
    REQUIRE_FALSE(r);
    CHECK(r.error().value() == errc::log_corrupt);
  }
}

TEST_CASE("write batch reader: unparseable batch bytes are log-corrupt", "[adapter][decode]") {
  rocksdb::WriteBatch truncated(rep(1, log_data_record(1) + std::string(1, '\x01') + "\x05" "ab"));
  raw_batch raw;
  auto r = read_write_batch(truncated, 3, raw);
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::log_corrupt);
}

TEST_CASE("write batch reader: a foreign record kind in the real WAL is log-corrupt for the tailer", "[adapter][decode][tailer]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto a = test::put_records(*s, "a", 1);
  rocksdb_log_source source(s);
  REQUIRE(source.open(a.sequence, a.time));
  auto& p = primary_store_access::get(*s);
  rocksdb::WriteBatch b;
  REQUIRE(b.PutLogData(header(1)).ok());
  REQUIRE(b.SingleDelete(p.tables.at(1), "a0").ok());
  REQUIRE(p.db->Write(rocksdb::WriteOptions{}, &b).ok());  // around primary_store: the fault
  auto r = source.next();
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::log_corrupt);
  CHECK_THAT(r.error().message(), Catch::Contains("single_delete"));
}

TEST_CASE("write batch reader: a header whose op_count disagrees with Count() is log-corrupt in the WAL", "[adapter][decode][tailer]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto a = test::put_records(*s, "a", 1);
  rocksdb_log_source source(s);
  REQUIRE(source.open(a.sequence, a.time));
  auto& p = primary_store_access::get(*s);
  rocksdb::WriteBatch b;
  REQUIRE(b.PutLogData(header(3)).ok());
  REQUIRE(b.Put(p.tables.at(1), "x", "12345678").ok());
  REQUIRE(p.db->Write(rocksdb::WriteOptions{}, &b).ok());
  auto r = source.next();
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::log_corrupt);
  CHECK_THAT(r.error().message(), Catch::Contains("op_count"));
}

TEST_CASE("write batch reader: a foreign record RocksDB asserts on is log-corrupt before RocksDB parses it", "[adapter][decode]") {
  // Found by fuzz_wal_batch (tests/fuzz/regressions/wal_batch/commit-with-empty-timestamp):
  // Debian's RocksDB aborts in WriteBatch::Iterate on a CommitWithTimestamp whose timestamp (its
  // first field) is empty.
  rocksdb::WriteBatch b(rep(1, log_data_record(1) + std::string("\x05\x02", 2) + varstring("k") + varstring("v") +
                               std::string(1, '\x15') + varstring("") + varstring("xid")));
  auto r = decode(b);
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::log_corrupt);
  CHECK_THAT(r.error().message(), Catch::Contains("commit_with_timestamp"));
}
