// `dix write` (runtime/cli/cmd_write.cpp) as a user runs it.
#include <catch2/catch.hpp>

#include "adapters/test_support.hpp"
#include "support/dir_snapshot.hpp"

using dix::test::temp_dir;

TEST_CASE("dix write: an existing RocksDB database that is not a dix store is refused (store_format_mismatch, exit 1) and left byte for byte unchanged", "[system][cli]") {
  temp_dir dir;
  const auto db = dir / "db";
  REQUIRE(dix::test::make_plain_rocksdb(db));
  const auto before = dix::test::snapshot_dir(db);
  auto r = dix::test::run({DIX_BINARY, "write", "--db", db.string(), "--records", "10"}, dir.path());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("store_format_mismatch"));
  const auto after = dix::test::snapshot_dir(db);
  INFO("changed: " << dix::test::changed_files(before, after));
  CHECK(after == before);
}
