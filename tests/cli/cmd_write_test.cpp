// `dix write` (runtime/cli/cmd_write.cpp) as a user runs it.
#include <catch2/catch.hpp>

#include "adapters/test_support.hpp"
#include "cli/dix_cli.hpp"

using dix::test::temp_dir;

TEST_CASE("dix write: an existing RocksDB database that is not a dix store is refused (store_format_mismatch, exit 1) and left byte for byte unchanged", "[system][cli]") {
  temp_dir dir;
  const auto db = dir / "db";
  dix::test::check_refuses_foreign_store(dir, db, {"write", "--db", db.string(), "--records", "10"});
}

TEST_CASE("dix write: a store whose WAL is corrupted in its middle is refused (log_corrupt, exit 1) and left byte for byte unchanged, no sequence reused", "[system][cli][recovery]") {
  temp_dir dir;
  const auto db = dir / "db";
  dix::test::check_refuses_corrupt_wal(dir, db, {"write", "--db", db.string(), "--records", "10"}, 1, "dix write: log_corrupt: ");
}

TEST_CASE("dix write: a path component longer than NAME_MAX, a symlink loop or a directory it may not search is one line of io_error and exit 1, not an abort", "[system][cli]") {
  temp_dir dir;
  dix::test::check_refuses_hostile_paths(dir, "write", [](const std::string& path) { return std::vector<std::string>{"--db", path, "--records", "5"}; });
}
