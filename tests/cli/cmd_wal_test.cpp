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

TEST_CASE("dix wal: bad arguments exit 2, a missing path or a file as --db exit 2 as for dix status, a directory without a store exits 1", "[system][cli]") {
  temp_dir dir;
  CHECK(dix_cli(dir, {"wal"}).exit_code == 2);
  CHECK(dix_cli(dir, {"wal", "--db"}).exit_code == 2);
  CHECK(dix_cli(dir, {"wal", "--db", "x", "--from", "abc"}).exit_code == 2);
  CHECK(dix_cli(dir, {"wal", "--db", "x", "--from", "0"}).exit_code == 2);
  CHECK(dix_cli(dir, {"wal", "--db", "x", "--bogus"}).exit_code == 2);
  CHECK(dix_cli(dir, {"wal", "--db", "x", "--log", "Bad"}).exit_code == 2);
  CHECK(dix_cli(dir, {"frobnicate"}).exit_code == 2);
  // The synopsis nests --time under --from: a header time alone verifies nothing.
  auto time_alone = dix_cli(dir, {"wal", "--db", "x", "--time", "5"});
  CHECK(time_alone.exit_code == 2);
  CHECK(time_alone.err == "dix wal: --time needs --from (dix wal --help for usage)\n");
  const auto nothing = (dir / "nothing").string();
  auto missing = dix_cli(dir, {"wal", "--db", nothing});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err == "dix wal: --db " + nothing + ": no such directory (dix wal --help for usage)\n");
  REQUIRE(dix_cli(dir, {"write", "--db", (dir / "db").string(), "--records", "1"}).exit_code == 0);
  const auto current = (dir / "db" / "CURRENT").string();
  auto file = dix_cli(dir, {"wal", "--db", current});
  CHECK(file.exit_code == 2);
  CHECK(file.err == "dix wal: --db " + current + ": not a directory (dix wal --help for usage)\n");
  std::filesystem::create_directories(dir / "empty");
  auto empty = dix_cli(dir, {"wal", "--db", (dir / "empty").string()});
  CHECK(empty.exit_code == 1);
  CHECK_THAT(empty.err, Catch::Contains("io_error") && Catch::Contains("is not a RocksDB database (no CURRENT file)"));
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

TEST_CASE("dix wal: --from a sequence inside a transaction is a bad argument naming the transaction holding it, not retention or damage", "[system][cli]") {
  temp_dir dir;
  commit_info three;
  {
    auto s = test::open_store(dir / "db");
    three = test::put_records(*s, "k", 3);  // one transaction of three sequences
    REQUIRE(s->close());
  }
  const auto inside = std::to_string(three.sequence + 1);
  const auto start = std::to_string(three.sequence);
  for (const auto& args : {std::vector<std::string>{"wal", "--db", (dir / "db").string(), "--from", inside},
                           std::vector<std::string>{"wal", "--db", (dir / "db").string(), "--from", inside, "--time",
                                                    std::to_string(three.time)}}) {
    auto r = dix_cli(dir, args);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err == "dix wal: --from " + inside + ": not the start of a transaction (the transaction at sequence " + start +
                       " holds sequences " + start + " to " + std::to_string(three.sequence + 2) + "; the next starts at " +
                       std::to_string(three.sequence + 3) + ") (dix wal --help for usage)\n");
    CHECK(r.out.empty());
  }
}

TEST_CASE("dix wal: --from beyond the latest sequence is an empty range with exit 0, and with --time it is an anchor the log cannot serve yet, not a purge", "[system][cli]") {
  temp_dir dir;
  const auto db = (dir / "db").string();
  REQUIRE(dix_cli(dir, {"write", "--db", db, "--records", "20"}).exit_code == 0);
  auto header = dix_cli(dir, {"wal", "--db", db, "--limit", "1"});
  const auto at = header.out.find("latest_sequence ");
  REQUIRE(at != std::string::npos);
  const auto latest = std::stoull(header.out.substr(at + 16));
  const auto beyond = std::to_string(latest + 1);
  auto r = dix_cli(dir, {"wal", "--db", db, "--from", beyond});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::Contains("latest_sequence " + std::to_string(latest) + "\n") &&
                        Catch::EndsWith("\nprinted 0 transactions\n"));
  auto json = dix_cli(dir, {"wal", "--db", db, "--from", beyond, "--json"});
  CHECK(json.exit_code == 0);
  CHECK_THAT(json.out, Catch::EndsWith("\"transactions\":[],\"printed\":0}\n"));
  auto anchor = dix_cli(dir, {"wal", "--db", db, "--from", beyond, "--time", "5"});
  INFO(anchor.out << anchor.err);
  CHECK(anchor.exit_code == 3);
  CHECK_THAT(anchor.err, Catch::Contains("sequence " + beyond + " is beyond the latest sequence " + std::to_string(latest)));
  CHECK_THAT(anchor.err, !Catch::Contains("not in the log"));
}
