// core/proof_latch: the runner stores its coverage proof only when it changed (review finding of
// issue 11), and always once at first.
#include <catch2/catch.hpp>

#include "core/proof_latch.hpp"

using namespace dix;

TEST_CASE("proof latch: the first proof or clear is always told, a repeat never, any change of epoch or durable end again", "[core][coverage]") {
  proof_latch latch;
  CHECK(latch.changed(std::nullopt));  // a box an earlier runner filled must be cleared
  CHECK_FALSE(latch.changed(std::nullopt));
  const coverage_proof first{4, {{"main", 10}}};
  CHECK(latch.changed(first));
  CHECK_FALSE(latch.changed(first));
  CHECK(latch.changed(coverage_proof{4, {{"main", 11}}}));         // a durable advance
  CHECK(latch.changed(coverage_proof{5, {{"main", 11}}}));         // a new epoch
  CHECK(latch.changed(coverage_proof{5, {{"main", 11}, {"b", 1}}}));  // another log
  CHECK(latch.changed(std::nullopt));                              // no longer owning
  CHECK_FALSE(latch.changed(std::nullopt));
  proof_latch fresh;
  CHECK(fresh.changed(first));
}
