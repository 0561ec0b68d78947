// `dix bench` (runtime/cli/cmd_bench.cpp, bench/) as a user runs it: where its report goes.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/dix_cli.hpp"

using dix::test::dix_cli;
using dix::test::temp_dir;

TEST_CASE("dix bench: a --json file that cannot be created exits 2 before the run, and a writable one gets the report",
          "[system][cli][bench]") {
  temp_dir dir;
  auto scratch = (dir / "scratch").string();
  std::filesystem::create_directories(scratch);
  auto missing = (dir / "nonexistent" / "x.json").string();
  auto refused = dix_cli(dir, {"bench", "wal", "--records", "2000", "--rounds", "1", "--dir", scratch, "--json", missing});
  INFO(refused.out << refused.err);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::Contains("--json " + missing + ": cannot create the file"));
  CHECK(refused.out.empty());  // refused before the run: no report anywhere
  CHECK_FALSE(std::filesystem::exists(missing));

  auto report = (dir / "wal.json").string();
  auto ran = dix_cli(dir, {"bench", "wal", "--records", "2000", "--rounds", "1", "--dir", scratch, "--json", report});
  INFO(ran.out << ran.err);
  REQUIRE(ran.exit_code == 0);
  std::ifstream in(report);
  std::stringstream written;
  written << in.rdbuf();
  CHECK_THAT(written.str(), Catch::StartsWith("{\"bench\":\"wal\""));
  CHECK(written.str() == ran.out);
}

TEST_CASE("dix bench: a --dir the system refuses is one line of io_error and exit 1, not an abort", "[system][cli][bench]") {
  temp_dir dir;
  dix::test::check_refuses_hostile_paths(dir, "bench", [](const std::string& path) {
    return std::vector<std::string>{"catchup", "--records", "100", "--dir", path};
  }, "dix bench catchup: ");
}
