// <dix/wal.hpp> (runtime/adapters/wal_reader.cpp): a primary store's WAL read through the
// public reader — read-only, as the tailer reads it — and the public latest_sequence.
#include <catch2/catch.hpp>

#include <algorithm>

#include <rocksdb/db.h>

#include <dix/primary_store.hpp>
#include <dix/wal.hpp>

#include "adapters/test_support.hpp"

using namespace dix;
using dix::test::temp_dir;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<wal_reader> open_reader(const fs::path& path) {
  auto r = wal_reader::open(path, "main");
  if (!r) FAIL(r.error().to_string());
  return std::move(*r);
}

}  // namespace

TEST_CASE("wal_reader: reads every transaction from sequence 1 and writes nothing to the store", "[adapter][wal]") {
  temp_dir dir;
  std::string identity;
  std::uint64_t latest = 0;
  commit_info second{};
  {
    auto s = test::open_store(dir / "db");
    test::put_records(*s, "a", 3);
    second = test::put_records(*s, "b", 2);
    identity = s->identity();
    latest = latest_sequence(*s);
    CHECK(latest == second.sequence + 1);  // two operations: the last one is the latest sequence
    REQUIRE(s->close());
    CHECK(latest_sequence(*s) == 0);  // closed
  }
  auto wal_before = test::wal_files(dir / "db", false);
  REQUIRE(wal_before.size() == 1);
  auto size_before = fs::file_size(wal_before[0]);

  auto reader = open_reader(dir / "db");
  CHECK(reader->log_name() == "main");
  CHECK(reader->identity() == identity);
  CHECK(reader->latest_sequence().value() >= latest);  // `clock` written at close follows
  auto retention = reader->retention(1).value();
  CHECK(retention.wal_oldest_sequence == 1);
  CHECK(retention.wal_files >= 1);

  std::vector<wal_transaction> txns{reader->seek(1).value()};
  for (;;) {
    auto next = reader->next().value();
    if (!next) break;
    txns.push_back(std::move(*next));
  }
  REQUIRE(txns.size() >= 4);
  CHECK(txns[0].sequence == 1);
  CHECK(txns[0].has_flag(header_flag::system));
  CHECK(flags_to_string(txns[0].flags) == "system");
  REQUIRE(txns[0].ops.size() == 1);
  CHECK(txns[0].ops[0].key == "format");
  auto user = std::find_if(txns.begin(), txns.end(), [&](const wal_transaction& t) { return t.sequence == second.sequence; });
  REQUIRE(user != txns.end());
  CHECK(user->time == second.time);
  CHECK(user->flags == 0);
  REQUIRE(user->ops.size() == 2);
  CHECK(user->ops[0].kind == op_kind::put);
  CHECK(to_string(user->ops[0].kind) == "put");
  CHECK(user->ops[0].table == 1);
  CHECK(user->ops[0].key == "b0");

  // Seeking again re-reads from there; a wrong header time is a retention fault (exact resume).
  CHECK(reader->seek(second.sequence, second.time).value().ops[1].key == "b1");
  auto wrong = reader->seek(second.sequence, second.time + 1);
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().value() == errc::log_retention);

  reader.reset();
  auto wal_after = test::wal_files(dir / "db", false);
  REQUIRE(wal_after.size() == 1);
  CHECK(wal_after[0] == wal_before[0]);
  CHECK(fs::file_size(wal_after[0]) == size_before);
}

TEST_CASE("wal_reader: a bad log name, a missing store and a RocksDB that is not a dix store fail open", "[adapter][wal]") {
  temp_dir dir;
  auto bad_name = wal_reader::open(dir / "db", "Bad");
  REQUIRE_FALSE(bad_name);
  CHECK(bad_name.error().value() == errc::invalid_argument);

  auto missing = wal_reader::open(dir / "missing", "main");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().value() == errc::io_error);

  {
    rocksdb::Options options;
    options.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    REQUIRE(rocksdb::DB::Open(options, (dir / "plain").string(), &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    REQUIRE(db->Put(rocksdb::WriteOptions(), "k", "v").ok());
    REQUIRE(db->Close().ok());
  }
  auto plain = wal_reader::open(dir / "plain", "main");
  REQUIRE_FALSE(plain);
  CHECK(plain.error().value() == errc::store_format_mismatch);
}
