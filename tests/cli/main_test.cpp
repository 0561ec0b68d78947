// The argument rules every `dix` command shares (runtime/cli/main.cpp, runtime/tool/args.cpp,
// docs/operations.md "Arguments"), checked on the real binary: each mistake exits 2 with one line
// on stderr that names the argument, and each command answers --help.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "cli/dix_cli.hpp"

using dix::test::dix_cli;
using dix::test::temp_dir;

namespace {

// A run that must be refused: exit 2, exactly one line on stderr, containing `named`, worded as
// every refusal is: "dix <command>: <what> (dix <command> --help for usage)", the command being
// `dix bench <name>` for a benchmark's own arguments.
void check_refused(const temp_dir& dir, const std::vector<std::string>& args, const std::string& named) {
  std::string shown;
  for (const auto& a : args) shown += " '" + a + "'";
  INFO("dix" << shown);
  auto r = dix_cli(dir, args);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains(named));
  CHECK(r.err.find('\n') + 1 == r.err.size());
  std::string command = "dix " + args.at(0);
  if (args.at(0) == "bench" && args.size() > 1 && r.err.rfind("dix bench: ", 0) != 0) command += " " + args[1];
  CHECK_THAT(r.err, Catch::StartsWith(command + ": ") && Catch::EndsWith(" (" + command + " --help for usage)\n"));
}

// Each command with arguments it would run with (quickly, were the mistake ignored), so only the
// mistake added to them can be the reason for a refusal, and an option it does not already have.
struct command {
  std::vector<std::string> valid;
  std::string option;  // an option of the command that takes a value
  std::string value;
};

}  // namespace

TEST_CASE("dix: every command refuses a single-dash option, a stray word, an empty value and a repeated option",
          "[system][cli]") {
  temp_dir dir;
  auto d = (dir / "d").string();
  const std::vector<command> commands{
      {{"demo", "--dir", d, "--records", "10", "--rate", "0"}, "--seed", "2"},
      {{"wal", "--db", d, "--limit", "1"}, "--from", "1"},
      {{"write", "--db", d, "--records", "10"}, "--seed", "2"},
      {{"status"}, "--db", dir.path().string()},
      {{"rebuild", "by-brand"}, "--db", d},
      {{"serve", "--dir", d, "--rate", "0"}, "--seed", "2"},
      {{"bench", "wal", "--records", "2000", "--rounds", "1", "--dir", d}, "--json", (dir / "r.json").string()},
      {{"bench", "catchup", "--records", "2000", "--dir", d}, "--timeout", "60"},
      {{"bench", "rebuild", "--records", "2000", "--dir", d}, "--writer-rate", "100"},
      {{"bench", "failover", "--kills", "1", "--interval-ms", "0", "--dir", d}, "--rate", "100"},
  };
  for (const auto& c : commands) {
    auto with = [&](std::vector<std::string> extra) {
      auto args = c.valid;
      args.insert(args.end(), extra.begin(), extra.end());
      return args;
    };
    auto single_dash = "-" + c.option.substr(2);
    check_refused(dir, with({single_dash, c.value}), "unknown option " + single_dash + " (options take two dashes: " + c.option + ")");
    check_refused(dir, with({"stray"}), "unexpected");
    check_refused(dir, with({"stray"}), "\"stray\"");
    check_refused(dir, with({c.option, ""}), c.option + " needs a value, not an empty string");
    check_refused(dir, with({c.option + "=", }), c.option + " needs a value, not an empty string");
    check_refused(dir, with({c.option, c.value, c.option, c.value}), c.option + " is given twice");
  }
  // Nothing ran: no store, no demo directory in the working directory.
  CHECK_FALSE(std::filesystem::exists(dir / "d" / "primary"));
  CHECK_FALSE(std::filesystem::exists(dir / "dix-demo"));
  CHECK_FALSE(std::filesystem::exists(dir / "primary"));
}

TEST_CASE("dix: bare dix prints the usage on stderr with exit 2, and --help prints it on stdout with exit 0", "[system][cli]") {
  temp_dir dir;
  auto bare = dix_cli(dir, {});
  CHECK(bare.exit_code == 2);
  CHECK(bare.out.empty());
  CHECK_THAT(bare.err, Catch::StartsWith("usage: dix <command>"));
  auto help = dix_cli(dir, {"--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.err.empty());
  CHECK(help.out == bare.err);
  const std::vector<std::vector<std::string>> commands{
      {"demo"}, {"wal"}, {"write"}, {"status"}, {"rebuild"}, {"serve"}, {"bench"},
      {"bench", "wal"}, {"bench", "catchup"}, {"bench", "rebuild"}, {"bench", "failover"}};
  for (auto args : commands) {
    std::string name = "dix";
    for (const auto& a : args) name += " " + a;
    INFO(name << " --help");
    args.push_back("--help");
    auto r = dix_cli(dir, args);
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    // A command's own usage, not the list of every command (bench lists its benchmarks).
    CHECK_THAT(r.out, Catch::StartsWith("usage: " + (args.size() == 2 && args[0] == "bench" ? std::string("dix bench <name>") : name)));
  }
  // --help wins over the arguments that come before it, even required ones missing, and over
  // an unknown option or a stray word before it (operations.md: wherever it comes).
  for (const auto& args : {std::vector<std::string>{"wal", "--limit", "3", "--help"}, {"wal", "--bogus", "--help"},
                           {"wal", "stray", "--help"}, {"wal", "-x", "--help"}}) {
    auto late = dix_cli(dir, args);
    INFO(args[1]);
    CHECK(late.exit_code == 0);
    CHECK_THAT(late.out, Catch::StartsWith("usage: dix wal --db PATH"));
  }
  // Not an option's value, nor after "--".
  CHECK(dix_cli(dir, {"wal", "--log", "--help"}).exit_code == 2);
  CHECK(dix_cli(dir, {"rebuild", "--db", dir.path().string(), "--", "--help"}).exit_code != 0);
}

TEST_CASE("dix: help takes a command's name and nothing else, a stray word is refused with exit 2 as every command refuses one (issue 34 item 11)", "[system][cli]") {
  temp_dir dir;
  for (const auto* help : {"help", "--help", "-h"}) {
    INFO(help);
    auto stray = dix_cli(dir, {help, "extra"});
    CHECK(stray.exit_code == 2);
    CHECK(stray.out.empty());
    CHECK(stray.err == std::string("dix ") + help + ": unknown command \"extra\" (dix --help lists them)\n");
    auto two = dix_cli(dir, {help, "status", "extra"});
    CHECK(two.exit_code == 2);
    CHECK_THAT(two.err, Catch::Contains("unexpected argument \"extra\""));
    auto of_status = dix_cli(dir, {help, "status"});
    CHECK(of_status.exit_code == 0);
    CHECK(of_status.out == dix_cli(dir, {"status", "--help"}).out);
    // Help on help is the list of every command (a new user's trial: it was a stray word).
    for (const auto* again : {"--help", "-h", "help"}) {
      auto twice = dix_cli(dir, {help, again});
      CHECK(twice.exit_code == 0);
      CHECK(twice.out == dix_cli(dir, {"help"}).out);
    }
  }
}

TEST_CASE("dix: a refusal after parsing (a missing or conflicting option, a value out of range) is worded as a parse error, with the --help pointer",
          "[system][cli]") {
  temp_dir dir;
  auto d = (dir / "d").string();
  auto home = dir.path().string();
  check_refused(dir, {"status"}, "--db PATH is required");
  check_refused(dir, {"status", "--db", home, "--json", "--prometheus"}, "--json and --prometheus exclude each other");
  check_refused(dir, {"status", "--db", home, "--updates", "2"}, "--updates needs --watch");
  check_refused(dir, {"status", "--db", home, "--watch", "--updates", "0"}, "--updates = \"0\": must be a whole number in [1, ");
  check_refused(dir, {"status", "--db", (dir / "missing").string()}, "no such directory");
  check_refused(dir, {"wal"}, "--db PATH is required");
  check_refused(dir, {"wal", "--db", d, "--limit", "x"}, "--limit = \"x\": must be a whole number");
  check_refused(dir, {"wal", "--db", d, "--log", "Bad"}, "--log \"Bad\": must match");
  check_refused(dir, {"write"}, "--db PATH is required");
  check_refused(dir, {"write", "--db", d, "--records", "-1"}, "--records = \"-1\": must be a whole number");
  check_refused(dir, {"demo", "--dir", d, "--indexes", "some"}, "--indexes = \"some\": must be one of all, secondary");
  check_refused(dir, {"rebuild", "--db", d, "by-brand", "--timeout", "5"}, "--timeout needs --wait");
  check_refused(dir, {"serve", "--dir", d, "--scheduler", "fifo"}, "--scheduler = \"fifo\": must be one of sharing, stealing");
  check_refused(dir, {"serve"}, "--dir DIR is required");
  check_refused(dir, {"bench", "wal", "--records", "x"}, "--records = \"x\"");
  check_refused(dir, {"bench", "no-such-bench"}, "unknown benchmark \"no-such-bench\"");
  CHECK_FALSE(std::filesystem::exists(dir / "d"));
}

TEST_CASE("dix: each command's synopsis in dix help is the first line of its --help", "[system][cli]") {
  temp_dir dir;
  auto help = dix_cli(dir, {"help"});
  REQUIRE(help.exit_code == 0);
  // bench's --help lists its benchmarks (cmd_bench_test.cpp checks its synopsis names them).
  for (const std::string command : {"demo", "wal", "write", "status", "rebuild", "serve"}) {
    INFO("dix " << command << " --help");
    auto own = dix_cli(dir, {command, "--help"});
    REQUIRE(own.exit_code == 0);
    const std::string prefix = "usage: dix " + command + " ";
    REQUIRE_THAT(own.out, Catch::StartsWith(prefix));
    const auto synopsis = own.out.substr(prefix.size(), own.out.find('\n') - prefix.size());
    const std::string name = command + std::string(command.size() < 7 ? 7 - command.size() : 1, ' ');
    CHECK_THAT(help.out, Catch::Contains("\n  " + name + synopsis + "\n"));
  }
}
