// `dix serve` (runtime/cli/cmd_serve.cpp) as a user runs it. A bad --scheduler is refused before
// anything is opened; `dix bench` makes the same check (tool/args), so the one test covers both.
#include <catch2/catch.hpp>


#include <filesystem>

#include "cli/dix_cli.hpp"

using namespace dix;
using dix::test::temp_dir;

using dix::test::dix_cli;

TEST_CASE("dix serve and dix bench: a --scheduler other than sharing or stealing exits 2 and names the choices", "[system][cli]") {
  temp_dir dir;
  auto serve = dix_cli(dir, {"serve", "--dir", (dir / "d").string(), "--scheduler", "fifo"});
  CHECK(serve.exit_code == 2);
  CHECK_THAT(serve.err, Catch::Contains("--scheduler = \"fifo\": must be one of sharing, stealing"));
  CHECK_FALSE(std::filesystem::exists(dir / "d" / "primary"));  // refused before anything is opened
  auto bench = dix_cli(dir, {"bench", "catchup", "--scheduler", "fifo"});
  CHECK(bench.exit_code == 2);
  CHECK_THAT(bench.err, Catch::Contains("must be one of sharing, stealing"));
}

TEST_CASE("dix serve: an existing RocksDB database that is not a dix store is refused (store_format_mismatch, exit 1) and left byte for byte unchanged", "[system][cli]") {
  temp_dir dir;
  const auto db = dir / "d" / "primary";
  dix::test::check_refuses_foreign_store(dir, db, {"serve", "--dir", (dir / "d").string(), "--rate", "0"});
}

TEST_CASE("dix serve: a path component longer than NAME_MAX, a symlink loop or a directory it may not search is one line of io_error and exit 1, not an abort", "[system][cli]") {
  temp_dir dir;
  dix::test::check_refuses_hostile_paths(dir, "serve", [](const std::string& path) { return std::vector<std::string>{"--dir", path, "--rate", "0"}; });
}
