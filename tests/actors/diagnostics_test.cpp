// [actor] dix's diagnostics hook (actors/diagnostics.cpp, decision 0045): with CAF's logger on,
// a report is an event of component "dix" that the logger filters and writes; with it off (the
// default of Debian's libcaf) an error or a warning goes to std::cerr. The logger runs with
// inline-output, which writes in the reporting thread: no logger thread, nothing to wait for.
// Its console output goes to std::clog, which the tests capture, as they capture std::cerr.
#include <catch2/catch.hpp>

#include <iostream>
#include <sstream>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>

#include <dix/caf.hpp>

#include "actors/diagnostics.hpp"

using namespace dix;

namespace {

// Captures what is written to `stream` while it lives.
struct capture {
  explicit capture(std::ostream& stream) : stream_(stream), previous_(stream.rdbuf(text_.rdbuf())) {}
  ~capture() { stream_.rdbuf(previous_); }
  capture(const capture&) = delete;
  capture& operator=(const capture&) = delete;
  std::string text() const { return text_.str(); }

 private:
  std::ostream& stream_;
  std::ostringstream text_;
  std::streambuf* previous_;
};

struct test_config : caf::actor_system_config {
  test_config() {
    dix::configure(*this);
    set("scheduler.policy", caf::atom("testing"));
  }
};

// A config whose logger writes warnings and errors to the console as "<component> <priority>
// <message>", in the reporting thread.
struct logging_config : test_config {
  logging_config() {
    set("logger.inline-output", true);
    set("logger.console", caf::atom("uncolored"));
    set("logger.console-verbosity", caf::atom("warning"));
    set("logger.console-format", "%c %p %m");
    set("logger.file-verbosity", caf::atom("quiet"));
  }
};

}  // namespace

TEST_CASE("diagnostics: with CAF's logger on, a report is an event of component dix that the logger filters by level", "[actor][diagnostics]") {
  capture errors{std::cerr};
  capture console{std::clog};
  {
    logging_config cfg;
    caf::actor_system sys{cfg};
    report(sys, diagnostic_level::error, "the supervisor ended");
    report(sys, diagnostic_level::warning, "a publication failed");
    report(sys, diagnostic_level::debug, "below the verbosity");
  }
  INFO(console.text());
  CHECK_THAT(console.text(), Catch::Contains("dix ERROR the supervisor ended"));
  CHECK_THAT(console.text(), Catch::Contains("dix WARN a publication failed"));
  CHECK_THAT(console.text(), !Catch::Contains("below the verbosity"));
  CHECK(errors.text().empty());
}

TEST_CASE("diagnostics: dix in CAF's component blacklist silences it", "[actor][diagnostics]") {
  capture errors{std::cerr};
  capture console{std::clog};
  {
    logging_config cfg;
    cfg.set("logger.component-blacklist", std::vector<caf::atom_value>{caf::atom("dix")});
    caf::actor_system sys{cfg};
    report(sys, diagnostic_level::error, "the supervisor ended");
  }
  CHECK_THAT(console.text(), !Catch::Contains("the supervisor ended"));
  CHECK(errors.text().empty());
}

TEST_CASE("diagnostics: with CAF's logger off, errors and warnings go to stderr as dix lines, info and debug nowhere", "[actor][diagnostics]") {
  capture errors{std::cerr};
  capture console{std::clog};
  {
    test_config cfg;
    caf::actor_system sys{cfg};
    REQUIRE(sys.logger().verbosity() == CAF_LOG_LEVEL_QUIET);
    report(sys, diagnostic_level::error, "the supervisor ended");
    report(sys, diagnostic_level::warning, "a publication failed");
    report(sys, diagnostic_level::info, "informative");
  }
  CHECK(errors.text() == "dix: the supervisor ended\ndix: a publication failed\n");
  CHECK(console.text().empty());
}
