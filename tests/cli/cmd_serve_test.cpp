// `dix serve` (runtime/cli/cmd_serve.cpp) as a user runs it. A bad --scheduler is refused before
// anything is opened; `dix bench` makes the same check (tool/args), so the one test covers both.
#include <catch2/catch.hpp>

#include <filesystem>

#include "cli/dix_cli.hpp"
#include "support/dir_snapshot.hpp"

using namespace dix;
using dix::test::temp_dir;

using dix::test::dix_cli;

TEST_CASE("dix serve and dix bench: a --scheduler other than sharing or stealing exits 2 and names the choices", "[system][cli]") {
  temp_dir dir;
  auto serve = dix_cli(dir, {"serve", "--dir", (dir / "d").string(), "--scheduler", "fifo"});
  CHECK(serve.exit_code == 2);
  CHECK_THAT(serve.err, Catch::Contains("--scheduler = \"fifo\": must be one of sharing, stealing"));
  CHECK_FALSE(std::filesystem::exists(dir / "d" / "primary"));  // refused before anything is opened
  auto bench = dix_cli(dir, {"bench", "catchup", "--scheduler", ""});
  CHECK(bench.exit_code == 2);
  CHECK_THAT(bench.err, Catch::Contains("must be one of sharing, stealing"));
}

TEST_CASE("dix serve: an existing RocksDB database that is not a dix store is refused (store_format_mismatch, exit 1) and left byte for byte unchanged", "[system][cli]") {
  temp_dir dir;
  const auto db = dir / "d" / "primary";
  REQUIRE(dix::test::make_plain_rocksdb(db));
  const auto before = dix::test::snapshot_dir(db);
  auto r = dix::test::run({DIX_BINARY, "serve", "--dir", (dir / "d").string(), "--rate", "0"}, dir.path());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("store_format_mismatch"));
  const auto after = dix::test::snapshot_dir(db);
  INFO("changed: " << dix::test::changed_files(before, after));
  CHECK(after == before);
}
