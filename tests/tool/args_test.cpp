// runtime/tool/args.cpp: the argument rules every `dix` command and `dix bench` driver shares.
#include <catch2/catch.hpp>

#include "tool/args.hpp"

using dix::tool::args;
using dix::tool::syntax;

namespace {

const syntax demo{{"dir", "records"}, {"json"}};

std::string refusal(const std::vector<std::string>& argv, const syntax& accepted = demo) {
  std::string error;
  auto parsed = args::parse(argv, accepted, error);
  CHECK_FALSE(parsed);
  return error;
}

}  // namespace

TEST_CASE("args: options by --name VALUE and --name=VALUE, flags by --name", "[core][cli]") {
  std::string error;
  auto a = args::parse({"--dir", "x", "--records=5", "--json"}, demo, error);
  REQUIRE(a);
  CHECK(a->get("dir") == "x");
  CHECK(a->get("records") == "5");
  CHECK(a->has("json"));
  CHECK_FALSE(a->help());
  // A value may start with a dash: it is the option's value, not an option.
  auto dash = args::parse({"--dir", "-x"}, demo, error);
  REQUIRE(dash);
  CHECK(dash->get("dir") == "-x");
}

TEST_CASE("args: each rule refuses with a message naming the argument", "[core][cli]") {
  CHECK(refusal({"-records", "5"}) == "unknown option -records (options take two dashes: --records)");
  CHECK(refusal({"-x"}) == "unknown option -x");
  CHECK(refusal({"--bogus"}) == "unknown option --bogus");
  CHECK(refusal({"stray"}) == "unexpected argument \"stray\"");
  CHECK(refusal({"--dir", ""}) == "--dir needs a value, not an empty string");
  CHECK(refusal({"--dir="}) == "--dir needs a value, not an empty string");
  CHECK(refusal({"--dir"}) == "--dir needs a value");
  CHECK(refusal({"--records", "5", "--records=6"}) == "--records is given twice");
  CHECK(refusal({"--json", "--json"}) == "--json is given twice");
  CHECK(refusal({"--json=1"}) == "--json takes no value");
}

TEST_CASE("args: positional arguments only as many as the command takes", "[core][cli]") {
  const syntax one{{"db"}, {}, 1, 1, "backend id"};
  CHECK(refusal({"--db", "x"}, one) == "missing backend id");
  CHECK(refusal({"a", "b"}, one) == "unexpected backend id \"b\"");
  std::string error;
  auto a = args::parse({"a", "--db", "x"}, one, error);
  REQUIRE(a);
  CHECK(a->positional() == std::vector<std::string>{"a"});
  // A lone dash is a word, not an option.
  auto dash = args::parse({"-"}, one, error);
  REQUIRE(dash);
  CHECK(dash->positional() == std::vector<std::string>{"-"});
  // A backend id may start with '-' (formats.md §4.1): after "--" every word is positional.
  CHECK(refusal({"--db", "x", "-idx"}, one) == "unknown option -idx");
  auto ended = args::parse({"--db", "x", "--", "-idx"}, one, error);
  REQUIRE(ended);
  CHECK(ended->positional() == std::vector<std::string>{"-idx"});
  CHECK(ended->get("db") == "x");
  auto late = args::parse({"--", "--db"}, one, error);
  REQUIRE(late);
  CHECK(late->positional() == std::vector<std::string>{"--db"});
  CHECK_FALSE(late->has("db"));
}

TEST_CASE("args: --help stops parsing wherever it comes, but is no option's value", "[core][cli]") {
  std::string error;
  auto a = args::parse({"--records", "5", "--help", "stray", "-x"}, demo, error);
  REQUIRE(a);
  CHECK(a->help());
  auto value = args::parse({"--dir", "--help"}, demo, error);
  REQUIRE(value);
  CHECK_FALSE(value->help());
  CHECK(value->get("dir") == "--help");
  // Before --help, a mistake is not judged: the usage is what was asked for (a new user's trial).
  for (const auto& before : {std::vector<std::string>{"-x", "--help"}, {"--bogus", "--help"}, {"--records", "x", "--help"},
                             {"-h"}, {"--bogus", "-h"}}) {
    auto first = args::parse(before, demo, error);
    REQUIRE(first);
    CHECK(first->help());
  }
  // After "--", --help is a word like any other.
  auto ended = args::parse({"--", "--help"}, demo, error);
  CHECK_FALSE((ended && ended->help()));
}

TEST_CASE("args: a subset is a comma-separated list of known items, each once, given back in the choices' order", "[core][cli]") {
  const syntax list{{"indexes"}, {}};
  const std::vector<std::string> four{"a", "b", "c", "d"};
  auto subset_of = [&](std::vector<std::string> argv, std::string& error) {
    auto a = args::parse(argv, list, error);
    REQUIRE(a);
    return a->subset("indexes", four, error);
  };
  std::string error;
  CHECK(subset_of({}, error) == four);  // absent: every choice
  CHECK(subset_of({"--indexes", "c,a"}, error) == std::vector<std::string>{"a", "c"});
  CHECK(subset_of({"--indexes", "d"}, error) == std::vector<std::string>{"d"});
  CHECK(error.empty());
  for (const auto& [given, refused] : std::vector<std::pair<std::string, std::string>>{
           {"a,x", "--indexes = \"a,x\": \"x\" is not one of a, b, c, d"},
           {"a,,b", "--indexes = \"a,,b\": an empty item is not one of a, b, c, d"},
           {"a,", "--indexes = \"a,\": an empty item is not one of a, b, c, d"},
           {",a", "--indexes = \",a\": an empty item is not one of a, b, c, d"},
           {"b,a,b", "--indexes = \"b,a,b\": \"b\" is given twice"},
           {"A", "--indexes = \"A\": \"A\" is not one of a, b, c, d"}}) {
    INFO(given);
    std::string problem;
    CHECK_FALSE(subset_of({"--indexes", given}, problem));
    CHECK(problem == refused);
  }
}
