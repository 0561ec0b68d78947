#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>

#include "cli/dix_cli.hpp"

using namespace dix;
using dix::test::temp_dir;

using dix::test::dix_cli;

TEST_CASE("dix wal: prints the store and its transactions without writing to it", "[system][cli]") {
  temp_dir dir;
  auto db = (dir / "db").string();
  REQUIRE(dix_cli(dir, {"write", "--db", db, "--records", "30", "--per-txn", "10"}).exit_code == 0);
  auto before = test::wal_files(dir / "db", false);
  REQUIRE(before.size() == 1);
  auto size_before = std::filesystem::file_size(before[0]);
  auto r = dix_cli(dir, {"wal", "--db", db});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("log main"));
  CHECK_THAT(r.out, Catch::Contains("latest_sequence "));
  CHECK_THAT(r.out, Catch::Contains("wal_oldest_sequence 1"));
  CHECK_THAT(r.out, Catch::Contains("sequence 1 "));
  CHECK_THAT(r.out, Catch::Contains("put table 1 \"p00000001\""));
  auto json = dix_cli(dir, {"wal", "--db", db, "--from", "3", "--limit", "1", "--json"});
  CHECK(json.exit_code == 0);
  CHECK_THAT(json.out, Catch::StartsWith("{\"log\":\"main\""));
  CHECK_THAT(json.out, Catch::Contains("\"transactions\":[{\"sequence\":3,"));
  CHECK_THAT(json.out, Catch::Contains("\"printed\":1}"));
  auto after = test::wal_files(dir / "db", false);
  REQUIRE(after.size() == 1);
  CHECK(after[0] == before[0]);
  CHECK(std::filesystem::file_size(after[0]) == size_before);
}

TEST_CASE("dix wal: a purged anchor is log-retention with exit status 3", "[system][cli][retention]") {
  temp_dir dir;
  commit_info anchor;
  {
    auto s = test::open_store(dir / "db");
    anchor = test::put_records(*s, "old", 3);
    test::switch_wal(*s);
    test::put_records(*s, "new", 3);
    REQUIRE(s->close());
  }
  for (auto& f : test::wal_files(dir / "db", true)) std::filesystem::remove(f);
  auto r = dix_cli(dir, {"wal", "--db", (dir / "db").string(), "--from", std::to_string(anchor.sequence)});
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.err, Catch::Contains("log-retention"));
  CHECK_THAT(r.err, Catch::Contains("sequence " + std::to_string(anchor.sequence)));
  CHECK_THAT(r.err, Catch::Contains("oldest retained sequence "));
  // The default, sequence 1, is gone too.
  CHECK(dix_cli(dir, {"wal", "--db", (dir / "db").string()}).exit_code == 3);
}

TEST_CASE("dix wal: an anchor with the wrong time or identity is refused with exit status 3", "[system][cli]") {
  temp_dir dir;
  commit_info anchor;
  {
    auto s = test::open_store(dir / "db");
    anchor = test::put_records(*s, "k", 2);
    REQUIRE(s->close());
  }
  auto db = (dir / "db").string();
  auto seq = std::to_string(anchor.sequence);
  CHECK(dix_cli(dir, {"wal", "--db", db, "--from", seq, "--time", std::to_string(anchor.time)}).exit_code == 0);
  auto wrong_time = dix_cli(dir, {"wal", "--db", db, "--from", seq, "--time", std::to_string(anchor.time + 1)});
  CHECK(wrong_time.exit_code == 3);
  CHECK_THAT(wrong_time.err, Catch::Contains("log-retention"));
  auto wrong_identity = dix_cli(dir, {"wal", "--db", db, "--identity", "someone-else"});
  CHECK(wrong_identity.exit_code == 3);
  CHECK_THAT(wrong_identity.err, Catch::Contains("log-missing"));
}

TEST_CASE("dix wal: a WAL corrupted in its middle is log-corrupt with exit status 3, not a shorter log, and the store is unchanged", "[system][cli][recovery]") {
  temp_dir dir;
  const auto db = dir / "db";
  test::check_refuses_corrupt_wal(dir, db, {"wal", "--db", db.string()}, 3, "dix wal: log-corrupt: ");
}

TEST_CASE("dix wal: bad arguments exit 2, a missing store exits 1", "[system][cli]") {
  temp_dir dir;
  CHECK(dix_cli(dir, {"wal"}).exit_code == 2);
  CHECK(dix_cli(dir, {"wal", "--db"}).exit_code == 2);
  CHECK(dix_cli(dir, {"wal", "--db", "x", "--from", "abc"}).exit_code == 2);
  CHECK(dix_cli(dir, {"wal", "--db", "x", "--from", "0"}).exit_code == 2);
  CHECK(dix_cli(dir, {"wal", "--db", "x", "--bogus"}).exit_code == 2);
  CHECK(dix_cli(dir, {"wal", "--db", "x", "--log", "Bad"}).exit_code == 2);
  CHECK(dix_cli(dir, {"frobnicate"}).exit_code == 2);
  auto missing = dix_cli(dir, {"wal", "--db", (dir / "nothing").string()});
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.err, Catch::Contains("io_error"));
}

TEST_CASE("dix wal: a flipped byte in a retained WAL file at the anchor is log-corrupt, not a purge", "[system][cli]") {
  temp_dir dir;
  auto anchor = test::make_damaged_anchor(dir / "db");
  auto r = dix_cli(dir, {"wal", "--db", (dir / "db").string(), "--from", std::to_string(anchor.sequence)});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.err, Catch::StartsWith("dix wal: log-corrupt: cannot read the transaction at sequence " +
                                      std::to_string(anchor.sequence)));
  CHECK_THAT(r.err, Catch::Contains("not purged: the WAL is damaged there"));
  CHECK_THAT(r.out, Catch::Contains("wal_oldest_sequence 1\n"));
}

TEST_CASE("dix wal: a path component longer than NAME_MAX, a symlink loop or a directory it may not search is one line of io_error and exit 1, not an abort", "[system][cli]") {
  temp_dir dir;
  dix::test::check_refuses_hostile_paths(dir, "wal", [](const std::string& path) { return std::vector<std::string>{"--db", path}; });
}

TEST_CASE("dix wal: --from a sequence inside a transaction is log-retention naming the transaction found, not damage", "[system][cli]") {
  temp_dir dir;
  commit_info three;
  {
    auto s = test::open_store(dir / "db");
    three = test::put_records(*s, "k", 3);  // one transaction of three sequences
    REQUIRE(s->close());
  }
  auto r = dix_cli(dir, {"wal", "--db", (dir / "db").string(), "--from", std::to_string(three.sequence + 1)});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.err, Catch::Contains("log-retention") && Catch::Contains("the log holds sequence " + std::to_string(three.sequence)));
  CHECK_THAT(r.err, !Catch::Contains("damaged"));
}
