// [actor] The runtime's options the CAF way (actors/runtime_config.cpp, api.md §6.14):
// dix::configure declares the `dix` and `dix.runner` option groups; CAF's own parser reads them
// from an ini file and the command line; runtime_options_from converts and validates them,
// naming the option in a refusal. No actor system: only configs, parsed in memory or from a
// temporary caf-application.ini. CAF prints --long-help and --dump-config to std::cout, which the
// tests capture.
#include <catch2/catch.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

#include <caf/actor_system_config.hpp>

#include <dix/caf.hpp>

#include "support/temp_dir.hpp"

using namespace dix;
using namespace std::chrono_literals;

namespace {

// What CAF prints to std::cout while parsing `args` with `ini` as the config file's content.
struct parsed {
  caf::error error;
  std::string printed;
};

parsed parse(caf::actor_system_config& cfg, std::vector<std::string> args, const std::string& ini = "") {
  std::ostringstream out;
  auto* previous = std::cout.rdbuf(out.rdbuf());
  std::istringstream source{ini};
  auto err = cfg.parse(std::move(args), source);
  std::cout.rdbuf(previous);
  return {std::move(err), out.str()};
}

// The message of runtime_options_from's refusal, or "" when it accepted.
std::string refusal(const caf::actor_system_config& cfg) {
  auto options = runtime_options_from(cfg);
  if (options) return "";
  CHECK(to_errc(options.error()) == errc::invalid_argument);
  return error_text(options.error());
}

const char* const count_options[] = {
  "dix.slot-count",
  "dix.runner.max-transactions-per-turn",
  "dix.runner.max-bytes-per-turn",
  "dix.runner.max-chunk-records",
  "dix.runner.max-chunk-bytes",
  "dix.runner.max-accepted-batches-ahead",
  "dix.runner.flush-after-mutations",
  "dix.runner.flush-after-bytes",
  "dix.runner.max-rebuild-attempts",
  "dix.runner.verify-entries-per-s",
};
const char* const duration_options[] = {
  "dix.max-coverage-wait",
  "dix.max-write-delay",
  "dix.runner.max-milliseconds-per-turn",
  "dix.runner.max-flush-age",
  "dix.runner.rebuild-backoff",
  "dix.runner.max-rebuild-backoff",
  "dix.runner.max-lag",
  "dix.runner.verify-every",
};

bool same(const runtime_options& a, const runtime_options& b) {
  return a.runner == b.runner && a.max_coverage_wait == b.max_coverage_wait && a.max_write_delay == b.max_write_delay
         && a.slot_count == b.slot_count;
}

}  // namespace

TEST_CASE("runtime config: --long-help lists every dix option and --dump-config prints them with their defaults", "[actor][config]") {
  caf::actor_system_config cfg;
  dix::configure(cfg);
  auto help = parse(cfg, {"--long-help"});
  REQUIRE_FALSE(help.error);
  for (const auto* name : count_options) CHECK_THAT(help.printed, Catch::Contains(std::string("--") + name + "=<int64>"));
  for (const auto* name : duration_options) CHECK_THAT(help.printed, Catch::Contains(std::string("--") + name + "=<timespan>"));

  caf::actor_system_config fresh;
  dix::configure(fresh);
  auto dump = parse(fresh, {"--dump-config"});
  REQUIRE_FALSE(dump.error);
  CHECK(fresh.cli_helptext_printed);
  INFO(dump.printed);
  CHECK_THAT(dump.printed, Catch::Contains("dix {\n  max-coverage-wait = 30s\n  max-write-delay = 100ms\n"));
  CHECK_THAT(dump.printed, Catch::Contains("  runner {\n    flush-after-bytes = 8388608\n"));
  CHECK_THAT(dump.printed, Catch::Contains("    max-flush-age = 1s\n"));
  CHECK_THAT(dump.printed, Catch::Contains("    max-lag = 0d\n"));
  CHECK_THAT(dump.printed, Catch::Contains("  slot-count = 64\n"));
  // And what it lists reads back as the defaults.
  auto options = runtime_options_from(fresh);
  REQUIRE(options);
  CHECK(same(*options, runtime_options{}));
}

TEST_CASE("runtime config: caf-application.ini sets the dix options, the command line wins over it", "[actor][config]") {
  test::temp_dir dir;
  const auto ini = dir / "caf-application.ini";
  std::ofstream{ini} << "[dix]\nmax-coverage-wait=5s\nslot-count=128\n"
                        "[dix.runner]\nmax-flush-age=250ms\nmax-lag=2min\nmax-chunk-records=100\n";
  caf::actor_system_config cfg;
  dix::configure(cfg);
  REQUIRE_FALSE(cfg.parse({"--dix.runner.max-chunk-records=77", "--dix.max-write-delay=7ms"}, ini.c_str()));
  auto options = runtime_options_from(cfg);
  REQUIRE(options);
  CHECK(options->max_coverage_wait == 5000ms);
  CHECK(options->slot_count == 128);
  CHECK(options->max_write_delay == 7ms);
  CHECK(options->runner.max_flush_age == 250ms);
  CHECK(options->runner.max_lag == 120000ms);
  CHECK(options->runner.max_chunk_records == 77);
  // What it did not set keeps its default.
  CHECK(options->runner.max_rebuild_attempts == runner_options{}.max_rebuild_attempts);
}

TEST_CASE("runtime config: a value out of range is refused naming the option, its value and the range", "[actor][config]") {
  caf::actor_system_config cfg;
  dix::configure(cfg);
  SECTION("from the ini file") {
    REQUIRE_FALSE(parse(cfg, {}, "[dix]\nslot-count=0\n").error);
    CHECK(refusal(cfg) == "dix.slot-count = 0: must be in [1, 4096] (runtime_options.slot_count)");
  }
  SECTION("a duration, from the command line") {
    REQUIRE_FALSE(parse(cfg, {"--dix.runner.max-flush-age=0ms"}).error);
    CHECK(refusal(cfg) == "dix.runner.max-flush-age = 0ms: must be in [1, 600000] ms (runner_options.max_flush_age)");
  }
  SECTION("a duration too long") {
    REQUIRE_FALSE(parse(cfg, {"--dix.max-coverage-wait=11min"}).error);
    CHECK(refusal(cfg) == "dix.max-coverage-wait = 11min: must be in [0, 600000] ms (runtime_options.max_coverage_wait)");
  }
  SECTION("a range that depends on another option") {
    REQUIRE_FALSE(parse(cfg, {}, "[dix.runner]\nrebuild-backoff=10s\nmax-rebuild-backoff=5s\n").error);
    CHECK(refusal(cfg) == "dix.runner.max-rebuild-backoff = 5s: must be in [10000, 86400000] ms (runner_options.max_rebuild_backoff)");
  }
  SECTION("a duration that is not a whole number of milliseconds") {
    REQUIRE_FALSE(parse(cfg, {"--dix.max-write-delay=1500us"}).error);
    CHECK(refusal(cfg) == "dix.max-write-delay = 1500us: must be a whole number of milliseconds");
  }
  SECTION("a value of another type set by the program") {
    cfg.content["dix"].as_dictionary()["slot-count"] = caf::config_value{std::string("many")};
    CHECK(refusal(cfg) == "dix.slot-count = \"many\": must be an integer");
  }
}

TEST_CASE("runtime config: a count outside its field's type is refused with the field's range, not wrapped", "[actor][config]") {
  for (const auto* name : count_options) {
    for (const char* value : {"-1", "9223372036854775807"}) {
      caf::actor_system_config cfg;
      dix::configure(cfg);
      REQUIRE_FALSE(parse(cfg, {std::string("--") + name + "=" + value}).error);
      const auto message = refusal(cfg);
      INFO(name << " = " << value << ": " << message);
      CHECK_THAT(message, Catch::StartsWith(std::string(name) + " = " + value + ": must be in ["));
    }
  }
}

TEST_CASE("runtime config: configure twice declares nothing twice and keeps the values already set", "[actor][config]") {
  caf::actor_system_config once;
  dix::configure(once);
  const auto listed_once = parse(once, {"--long-help"}).printed;
  caf::actor_system_config twice;
  dix::configure(twice);
  REQUIRE_FALSE(parse(twice, {"--dix.slot-count=9"}).error);
  dix::configure(twice);
  CHECK(runtime_options_from(twice)->slot_count == 9);
  CHECK(parse(twice, {"--long-help"}).printed == listed_once);
}

TEST_CASE("runtime config: a config dix::configure never saw gives the defaults", "[actor][config]") {
  caf::actor_system_config cfg;
  auto options = runtime_options_from(cfg);
  REQUIRE(options);
  CHECK(same(*options, runtime_options{}));
}
