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

// A run that must be refused: exit 2, exactly one line on stderr, containing `named`.
void check_refused(const temp_dir& dir, const std::vector<std::string>& args, const std::string& named) {
  std::string shown;
  for (const auto& a : args) shown += " '" + a + "'";
  INFO("dix" << shown);
  auto r = dix_cli(dir, args);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains(named));
  CHECK(r.err.find('\n') + 1 == r.err.size());
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
  // --help wins over the arguments that come before it, even required ones missing.
  auto late = dix_cli(dir, {"wal", "--limit", "3", "--help"});
  CHECK(late.exit_code == 0);
  CHECK_THAT(late.out, Catch::StartsWith("usage: dix wal --db PATH"));
}
