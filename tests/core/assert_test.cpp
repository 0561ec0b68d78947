// DIX_ASSERT (core/assert.hpp) and check_transition (core/release_sequence.hpp): a broken invariant
// ends the process with SIGABRT after one line on stderr naming it — in every build, Release
// included. Each case runs the failing call in a forked child and reads its stderr.
#include <catch2/catch.hpp>

#include <string>

#include "core/assert.hpp"
#include "core/release_sequence.hpp"
#include "support/run_in_child.hpp"

namespace dix {
namespace {

using test::run_in_child;

int volatile_two() {
  static volatile int two = 2;
  return two;
}

TEST_CASE("DIX_ASSERT: a condition that holds costs nothing but its evaluation", "[core][assert]") {
  int evaluated = 0;
  DIX_ASSERT(++evaluated == 1);
  CHECK(evaluated == 1);  // evaluated once, in every build
}

TEST_CASE("DIX_ASSERT: a broken invariant aborts with the condition, the file and the line", "[core][assert]") {
  auto d = run_in_child([] { DIX_ASSERT(volatile_two() == 3); });
  CHECK(d.aborted);
  CHECK(d.stderr_text.find("dix: assertion failed: volatile_two() == 3") != std::string::npos);
  CHECK(d.stderr_text.find("assert_test.cpp:") != std::string::npos);
}

TEST_CASE("check_transition: an illegal transition aborts, naming the machine and both states", "[core][assert]") {
  // What release_sequence::transition calls with its legal() verdict (idle → held would skip
  // the flush and the shutdown).
  auto d = run_in_child([] {
    check_transition(false, "release_sequence", static_cast<int>(release_sequence::phase::idle),
                     static_cast<int>(release_sequence::phase::held));
  });
  CHECK(d.aborted);
  CHECK(d.stderr_text.find("dix: illegal release_sequence transition 0 -> 4") != std::string::npos);
  CHECK_FALSE(run_in_child([] { check_transition(true, "release_sequence", 0, 1); }).aborted);
}

}  // namespace
}  // namespace dix
