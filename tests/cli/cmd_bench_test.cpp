// `dix bench` (runtime/cli/cmd_bench.cpp, bench/) as a user runs it: where its report goes.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/dix_cli.hpp"

using dix::test::dix_cli;
using dix::test::temp_dir;

namespace {

// The first key that appears twice in one object of the JSON text `json` ("" when none), for
// the reports dix-bench writes (well-formed: strings, numbers, objects, arrays, literals).
std::string first_duplicate_key(const std::string& json) {
  std::vector<std::set<std::string>> objects;  // the keys seen so far, per open object
  std::vector<char> open;                      // '{' or '[' per open container
  bool expect_key = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '"') {
      std::string text;
      for (++i; i < json.size() && json[i] != '"'; ++i) {
        if (json[i] == '\\') ++i;
        if (i < json.size()) text += json[i];
      }
      if (expect_key && !open.empty() && open.back() == '{') {
        if (!objects.back().insert(text).second) return text;
        expect_key = false;
      }
    } else if (c == '{') {
      open.push_back(c);
      objects.emplace_back();
      expect_key = true;
    } else if (c == '[') {
      open.push_back(c);
    } else if (c == '}' || c == ']') {
      if (c == '}') objects.pop_back();
      open.pop_back();
    } else if (c == ',') {
      expect_key = !open.empty() && open.back() == '{';
    }
  }
  return {};
}

}  // namespace

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
  // One name per field: the build's commit and the commit phase's figures are two keys.
  CHECK(first_duplicate_key(ran.out).empty());
  CHECK_THAT(ran.out, Catch::Contains(",\"commit_phase\":{\"dix_records_per_s\":"));
  CHECK_THAT(ran.out, Catch::Contains(",\"async_records_per_s\":"));  // issue 29: commits as messages
  CHECK_THAT(ran.out, Catch::Contains(",\"async_ratio\":"));
}

// dix bench wal removes the directories of each round's stores (dix-N, raw-N, async-N, writer-N)
// as it goes, and its scratch directory at the end: only inside the scratch directory it made
// itself under --dir, never a file of the caller's, even one named as the bench names its own.
TEST_CASE("dix bench wal: what it removes is only what it made: files planted in --dir, under the names of its own round directories, survive", "[system][cli][bench]") {
  temp_dir dir;
  const auto scratch = dir / "scratch";
  for (const char* name : {"dix-0", "raw-0", "async-0", "writer-0", "dix-1", "async-1"}) {
    std::filesystem::create_directories(scratch / name);
    std::ofstream(scratch / name / "mine.txt") << "not the bench's\n";
  }
  std::ofstream(scratch / "keep.txt") << "not the bench's either\n";
  const auto before = dix::test::snapshot_dir(scratch);
  auto ran = dix_cli(dir, {"bench", "wal", "--records", "2000", "--rounds", "2", "--dir", scratch.string()});
  INFO(ran.out << ran.err);
  REQUIRE(ran.exit_code == 0);
  const auto after = dix::test::snapshot_dir(scratch);
  INFO("changed: " << dix::test::changed_files(before, after));
  CHECK(after == before);  // every planted file as it was, and nothing of the bench's left behind
}

TEST_CASE("dix bench: a --dir that does not exist is a bad argument (exit 2) before the run, and nothing is created or left behind", "[system][cli][bench]") {
  temp_dir dir;
  const auto missing = (dir / "a" / "b").string();
  auto r = dix_cli(dir, {"bench", "wal", "--records", "2000", "--rounds", "1", "--dir", missing});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err == "dix bench wal: --dir " + missing + ": no such directory (the benchmark makes its scratch directory inside it) "
                 "(dix bench wal --help for usage)\n");
  CHECK(r.out.empty());
  CHECK_FALSE(std::filesystem::exists(dir / "a"));
  // An existing one gets its scratch directory, removed again after the run.
  std::filesystem::create_directories(dir / "base");
  auto ran = dix_cli(dir, {"bench", "wal", "--records", "2000", "--rounds", "1", "--dir", (dir / "base").string()});
  INFO(ran.out << ran.err);
  CHECK(ran.exit_code == 0);
  CHECK(std::filesystem::is_empty(dir / "base"));
}

TEST_CASE("dix bench: the tests' duplicate-key check finds a key given twice in one object, and only there", "[system][cli][bench]") {
  CHECK(first_duplicate_key(R"({"commit":"abc","a":1,"commit":{"x":1}})") == "commit");
  CHECK(first_duplicate_key(R"({"a":{"x":1,"x":2}})") == "x");
  CHECK(first_duplicate_key(R"({"a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":"x"}],"d":"a\"b","e":"a\"b"})").empty());
}

TEST_CASE("dix bench: a --dir the system refuses is one line of io_error and exit 1, not an abort", "[system][cli][bench]") {
  temp_dir dir;
  dix::test::check_refuses_hostile_paths(dir, "bench", [](const std::string& path) {
    return std::vector<std::string>{"catchup", "--records", "100", "--dir", path};
  }, "dix bench catchup: ");
}

TEST_CASE("dix bench catchup: reports dix beside both baselines, each measured in a child process, under the budget it was given", "[system][cli][bench]") {
  temp_dir dir;
  auto scratch = (dir / "scratch").string();
  std::filesystem::create_directories(scratch);
  auto tiny = dix_cli(dir, {"bench", "catchup", "--records", "1000", "--dir", scratch, "--memory-mb", "15"});
  CHECK(tiny.exit_code == 2);
  CHECK_THAT(tiny.err, Catch::Contains("--memory-mb"));
  auto ran = dix_cli(dir, {"bench", "catchup", "--records", "1000", "--dir", scratch, "--memory-mb", "64"});
  INFO(ran.out << ran.err);
  REQUIRE(ran.exit_code == 0);
  for (const std::string field : {"\"ratio\":", "\"baseline_records_per_s\":", "\"tuned_ratio\":",
                                  "\"tuned_baseline_records_per_s\":", "\"tuned_batch_records\":",
                                  "\"baseline_peak_rss_mb\":", "\"tuned_baseline_peak_rss_mb\":"}) {
    CHECK_THAT(ran.out, Catch::Contains(field));
  }
  CHECK_THAT(ran.out, Catch::Contains("\"memory_budget_mb\":64,"));
  // Each baseline's peak is its own process's (VmHWM), not inherited from the bench: a baseline
  // of 1000 records stays far below a bench process that already held a store and a runtime.
  auto number = [&](const std::string& name) { return std::stod(ran.out.substr(ran.out.find("\"" + name + "\":") + name.size() + 3)); };
  CHECK(number("baseline_peak_rss_mb") > 0);
  CHECK(number("tuned_baseline_peak_rss_mb") > 0);
  CHECK(number("baseline_peak_rss_mb") < number("peak_rss_mb"));
}

TEST_CASE("dix bench failover --indexes: the takeovers of the named indexes, each one's ready time of its own, "
          "and an unknown name exits 2 before anything runs",
          "[system][cli][bench][failover]") {
  temp_dir dir;
  auto scratch = (dir / "scratch").string();
  std::filesystem::create_directories(scratch);
  auto refused = dix_cli(dir, {"bench", "failover", "--kills", "1", "--dir", scratch, "--indexes", "by-brand,nope"});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::Contains("\"nope\" is not one of by-category, by-brand, fulltext, similar"));
  CHECK(std::filesystem::is_empty(scratch));
  auto ran = dix_cli(dir, {"bench", "failover", "--kills", "2", "--interval-ms", "100", "--rate", "200", "--dir",
                           scratch, "--indexes", "similar,by-brand"});
  INFO(ran.out << ran.err);
  REQUIRE(ran.exit_code == 0);
  CHECK(first_duplicate_key(ran.out).empty());
  CHECK_THAT(ran.out, Catch::Contains("\"kills\":2,") && Catch::Contains("\"indexes\":[\"by-brand\",\"similar\"],"));
  // Each served index timed on every takeover; no other index in the report.
  CHECK_THAT(ran.out, Catch::Contains("\"per_index\":{\"by-brand\":{\"ready_p50_ms\":"));
  CHECK_THAT(ran.out, Catch::Contains("\"similar\":{\"ready_p50_ms\":"));
  auto n_after = [&](const std::string& id) {
    auto at = ran.out.find("\"" + id + "\":{\"ready_p50_ms\":");
    REQUIRE(at != std::string::npos);
    return ran.out.substr(ran.out.find("\"n\":", at), 6);
  };
  CHECK(n_after("by-brand") == "\"n\":2}");
  CHECK(n_after("similar") == "\"n\":2}");
  CHECK_THAT(ran.out, !Catch::Contains("by-category") && !Catch::Contains("fulltext"));
}

TEST_CASE("dix bench verify: a verify of a RocksDB index beside a bare scan of its table, pair by pair, and the median ratio (issue 31)",
          "[system][cli][bench][verify]") {
  temp_dir dir;
  auto scratch = (dir / "scratch").string();
  std::filesystem::create_directories(scratch);
  auto ran = dix_cli(dir, {"bench", "verify", "--records", "2000", "--pairs", "2", "--dir", scratch});
  INFO(ran.out << ran.err);
  REQUIRE(ran.exit_code == 0);
  CHECK_THAT(ran.out, Catch::Contains("\"bench\":\"verify\"") && Catch::Contains("\"verified_records\":2000,") &&
                        Catch::Contains("\"pairs\":2,") && Catch::Contains("\"ratio\":"));
  CHECK(dix_cli(dir, {"bench", "verify", "--pairs", "0"}).exit_code == 2);
}

TEST_CASE("dix bench: every benchmark the unknown-name refusal lists has a usage of its own, and dix help lists the same names",
          "[system][cli][bench]") {
  temp_dir dir;
  auto unknown = dix_cli(dir, {"bench", "no-such-bench"});
  INFO(unknown.err);
  CHECK(unknown.exit_code == 2);
  const std::string known = "(known: ";
  const auto from = unknown.err.find(known);
  REQUIRE(from != std::string::npos);
  const auto list = unknown.err.substr(from + known.size(), unknown.err.find(')', from) - from - known.size());
  std::vector<std::string> names;
  std::stringstream words(list);
  for (std::string name; std::getline(words, name, ',');) names.push_back(name.substr(name.find_first_not_of(' ')));
  REQUIRE(names.size() >= 8);

  std::string synopsis;
  for (const auto& name : names) synopsis += (synopsis.empty() ? "" : "|") + name;
  auto help = dix_cli(dir, {"help"});
  CHECK_THAT(help.out, Catch::Contains("  bench  " + synopsis + " [options]\n"));

  auto all = dix_cli(dir, {"bench", "--help"});
  CHECK(all.exit_code == 0);
  // -h, and --help after a mistake, are the same list (a review: they were an unknown benchmark).
  for (const auto& asked : {std::vector<std::string>{"bench", "-h"}, {"bench", "--bogus", "--help"}}) {
    auto same = dix_cli(dir, asked);
    CHECK(same.exit_code == 0);
    CHECK(same.out == all.out);
  }
  CHECK_THAT(all.out, !Catch::Contains("R\"(") && !Catch::Contains(")\"}"));
  for (const auto& name : names) {
    INFO("dix bench " << name << " --help");
    CHECK_THAT(all.out, Catch::Contains("\n  " + name + " "));
    auto own = dix_cli(dir, {"bench", name, "--help"});
    CHECK(own.exit_code == 0);
    CHECK_THAT(own.out, Catch::StartsWith("usage: dix bench " + name + " ["));
    // Its own text alone: no source fragment, no other benchmark's entry.
    CHECK_THAT(own.out, !Catch::Contains("R\"(") && !Catch::Contains(")\"}") && !Catch::Contains("benchmarks:"));
  }
}

TEST_CASE("dix bench remote: reports the remote index beside the same index in process, with and without mutual TLS",
          "[system][cli][bench]") {
  temp_dir dir;
  auto scratch = (dir / "scratch").string();
  std::filesystem::create_directories(scratch);
  for (bool tls : {false, true}) {
    std::vector<std::string> args{"bench", "remote", "--records", "1000", "--dir", scratch};
    if (tls) args.push_back("--tls");
    auto ran = dix_cli(dir, args);
    INFO(ran.out << ran.err);
    REQUIRE(ran.exit_code == 0);
    CHECK_THAT(ran.out, Catch::Contains(tls ? "\"tls\":true" : "\"tls\":false"));
    for (const std::string field : {"\"in_process_rps\":", "\"remote_rps\":", "\"ratio\":", "\"rtt_p50_us\":",
                                    "\"rtt_p99_us\":", "\"host_peak_rss_mb\":", "\"owner_peak_rss_mb\":"}) {
      CHECK_THAT(ran.out, Catch::Contains(field));
    }
    auto number = [&](const std::string& name) { return std::stod(ran.out.substr(ran.out.find("\"" + name + "\":") + name.size() + 3)); };
    CHECK(number("remote_rps") > 0);
    CHECK(number("host_peak_rss_mb") > 0);  // the host's own process, read before it stopped
  }
  // Only the scratch directory's own subdirectory was made, and it is gone.
  CHECK(std::filesystem::is_empty(scratch));
}
