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
