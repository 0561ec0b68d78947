// `dix write` (runtime/cli/cmd_write.cpp) as a user runs it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

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

TEST_CASE("dix write: a directory holding other files but no store is refused (store_format_mismatch, exit 1), nothing written (decision 0035)", "[system][cli]") {
  temp_dir dir;
  const auto fulltext = dir / "fulltext";
  std::filesystem::create_directories(fulltext);
  { std::ofstream(fulltext / "postlist.glass") << "a Xapian table"; }
  { std::ofstream(fulltext / "iamglass") << "x"; }
  const auto before = dix::test::snapshot_dir(fulltext);
  auto r = dix_cli(dir, {"write", "--db", fulltext.string(), "--records", "1"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::StartsWith("dix write: store_format_mismatch: " + fulltext.string() +
                                      " is a directory that holds files (") &&
                        Catch::Contains("but no RocksDB database (no CURRENT file): not a dix primary store"));
  CHECK(r.out.empty());
  CHECK(dix::test::snapshot_dir(fulltext) == before);
  // An empty directory and a new path still become stores.
  std::filesystem::create_directories(dir / "empty");
  CHECK(dix_cli(dir, {"write", "--db", (dir / "empty").string(), "--records", "1"}).exit_code == 0);
  CHECK(dix_cli(dir, {"write", "--db", (dir / "new").string(), "--records", "1"}).exit_code == 0);
}

TEST_CASE("dix write: a --db whose parent does not exist is a bad argument (exit 2) and creates nothing, and a file is not a directory", "[system][cli]") {
  temp_dir dir;
  const auto typo = dir / "a" / "b" / "db";
  auto r = dix_cli(dir, {"write", "--db", typo.string(), "--records", "1"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err == "dix write: --db " + typo.string() + ": " + (dir / "a" / "b").string() +
                     " does not exist (only the last component is created) (dix write --help for usage)\n");
  CHECK_FALSE(std::filesystem::exists(dir / "a"));
  { std::ofstream(dir / "file") << "x"; }
  auto file = dix_cli(dir, {"write", "--db", (dir / "file").string(), "--records", "1"});
  CHECK(file.exit_code == 2);
  CHECK_THAT(file.err, Catch::Contains(": not a directory"));
}

TEST_CASE("dix write: says where its last transaction starts, the sequence dix wal --from shows it at", "[system][cli]") {
  temp_dir dir;
  const auto db = (dir / "db").string();
  auto r = dix_cli(dir, {"write", "--db", db, "--records", "20", "--per-txn", "10"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::string said = "; the last transaction starts at sequence ";
  const auto at = r.out.find(said);
  REQUIRE(at != std::string::npos);
  const auto start = r.out.substr(at + said.size(), r.out.size() - at - said.size() - 1);
  auto wal = dix_cli(dir, {"wal", "--db", db, "--from", start, "--limit", "1"});
  INFO(wal.out << wal.err);
  CHECK(wal.exit_code == 0);
  CHECK_THAT(wal.out, Catch::Contains("\nsequence " + start + " ") && Catch::Contains("ops 10\n"));
}

TEST_CASE("dix write and dix demo: a store another process holds is named held by another process, as dix serve says", "[system][cli]") {
  temp_dir dir;
  std::filesystem::create_directories(dir / "layout");
  auto store = dix::test::open_store(dir / "layout" / "primary");
  for (const auto& args : {std::vector<std::string>{"write", "--db", (dir / "layout" / "primary").string(), "--records", "1"},
                           std::vector<std::string>{"demo", "--dir", (dir / "layout").string(), "--records", "10"}}) {
    auto r = dix_cli(dir, args);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::StartsWith("dix " + args[0] + ": io_error: primary store " + (dir / "layout" / "primary").string() +
                                        " is held by another process (IO error: While lock file"));
  }
}
