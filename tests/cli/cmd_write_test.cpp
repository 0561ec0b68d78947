// `dix write` (runtime/cli/cmd_write.cpp) as a user runs it.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include "adapters/test_support.hpp"
#include "cli/dix_cli.hpp"

using dix::test::temp_dir;

TEST_CASE("dix write: an existing RocksDB database that is not a dix store is refused (store_format_mismatch, exit 1) and left byte for byte unchanged", "[system][cli]") {
  temp_dir dir;
  const auto db = dir / "db";
  dix::test::check_refuses_foreign_store(dir, db, {"write", "--db", db.string(), "--records", "10"});
}

TEST_CASE("dix write: a path component longer than NAME_MAX or a symlink loop is one line of io_error and exit 1, not an abort", "[system][cli]") {
  temp_dir dir;
  dix::test::check_refuses_hostile_paths(dir, "write", [](const std::string& path) { return std::vector<std::string>{"--db", path, "--records", "5"}; });
}

TEST_CASE("dix write: a directory the user may not search is one line of io_error and exit 1 (skipped as root)", "[system][cli]") {
  if (::geteuid() == 0) {
    WARN("skipped: root may search every directory, so EACCES cannot be provoked");
    return;
  }
  temp_dir dir;
  std::filesystem::create_directories(dir / "locked");
  std::filesystem::permissions(dir / "locked", std::filesystem::perms::owner_read);
  auto r = dix::test::dix_cli(dir, {"write", "--db", (dir / "locked" / "db").string(), "--records", "5"});
  std::filesystem::permissions(dir / "locked", std::filesystem::perms::owner_all);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::StartsWith("dix write: io_error: ") && Catch::Contains("Permission denied"));
  CHECK(dix::test::line_count(r.err) == 1);
}
