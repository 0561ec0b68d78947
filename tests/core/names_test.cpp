// <dix/names.hpp> (runtime/core/names.cpp): the name rules of formats.md §3 and §4.1.
#include <catch2/catch.hpp>

#include <string>

#include "core/names.hpp"

using namespace dix;

TEST_CASE("names: log names are 1…64 of [a-z0-9._-] starting with [a-z0-9]", "[core][names]") {
  CHECK(is_valid_log_name("main"));
  CHECK(is_valid_log_name("0.log_b-c"));
  CHECK(is_valid_log_name(std::string(64, 'a')));
  CHECK_FALSE(is_valid_log_name(""));
  CHECK_FALSE(is_valid_log_name(std::string(65, 'a')));
  CHECK_FALSE(is_valid_log_name("Main"));
  CHECK_FALSE(is_valid_log_name(".main"));
  CHECK_FALSE(is_valid_log_name("-main"));
  CHECK_FALSE(is_valid_log_name("ma/in"));
}

TEST_CASE("names: backend ids are 1…64 of [A-Za-z0-9._-] not starting with a dot", "[core][names]") {
  CHECK(is_valid_backend_id("by-category"));
  CHECK(is_valid_backend_id("Index_2.v1"));
  CHECK(is_valid_backend_id("-x"));
  CHECK(is_valid_backend_id(std::string(64, 'Z')));
  CHECK_FALSE(is_valid_backend_id(""));
  CHECK_FALSE(is_valid_backend_id(std::string(65, 'Z')));
  CHECK_FALSE(is_valid_backend_id(".hidden"));
  CHECK_FALSE(is_valid_backend_id("a/b"));
  CHECK_FALSE(is_valid_backend_id("a b"));
}

TEST_CASE("names: check_backend_id accepts a valid id and names a bad one, escaped, with the rule and its context", "[core][names]") {
  CHECK(check_backend_id("by-category"));
  auto bad = check_backend_id("a\nb", "read_readiness");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().value() == errc::invalid_argument);
  CHECK(bad.error().message() ==
        "read_readiness: backend id \"a\\x0ab\": must be 1…64 of [A-Za-z0-9._-], not starting with '.'");
  auto plain = check_backend_id(".hidden");
  REQUIRE_FALSE(plain);
  CHECK(plain.error().message().rfind("backend id \".hidden\": must be", 0) == 0);
}

TEST_CASE("names: escape_bytes keeps printable ASCII and writes every other byte as a hex escape (backslash, x, two digits)", "[core][names]") {
  CHECK(escape_bytes("plain text-1") == "plain text-1");
  CHECK(escape_bytes(std::string("a\0b", 3)) == "a\\x00b");
  CHECK(escape_bytes("q\"b\\") == "q\\x22b\\x5c");
  CHECK(escape_bytes("\n\x7f\xff") == "\\x0a\\x7f\\xff");
}
