// Tests of wal_continuity (protocol.md §3.2, §3.4, §3.5): exact resume gives log_retention on
// any mismatch; within an iterator, gaps, overlaps and non-increasing times give log_corrupt.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "core/wal_continuity.hpp"

namespace {

using dix::errc;

void require_error(const dix::result<void>& r, errc code) {
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == code);
}

}  // namespace

TEST_CASE("wal_continuity: the exact anchor is accepted", "[core][wal_continuity]") {
  dix::wal_continuity c;
  CHECK_FALSE(c.expecting());
  c.expect_exact(10, 500);
  CHECK(c.expecting());
  REQUIRE(c.check(10, 3, 500));
  CHECK_FALSE(c.expecting());
  CHECK(c.last_end() == 12);
  CHECK(c.last_time() == 500);
}

TEST_CASE("wal_continuity: a later sequence than the anchor is log_retention",
          "[core][wal_continuity]") {
  dix::wal_continuity c;
  c.expect_exact(10, 500);
  auto r = c.check(11, 1, 500);
  require_error(r, errc::log_retention);
  CHECK_THAT(r.error().message(), Catch::Matchers::Contains("purged"));
  // Nothing was recorded; the expectation stays.
  CHECK(c.expecting());
  CHECK(c.last_end() == 0);
  require_error(c.check(200, 5, 900), errc::log_retention);
}

TEST_CASE("wal_continuity: an earlier sequence than the anchor is log_retention",
          "[core][wal_continuity]") {
  dix::wal_continuity c;
  c.expect_exact(10, 500);
  require_error(c.check(9, 1, 500), errc::log_retention);
  require_error(c.check(1, 20, 400), errc::log_retention);
  CHECK(c.expecting());
  CHECK(c.check(10, 1, 500));
}

TEST_CASE("wal_continuity: the anchor sequence with another time is log_retention",
          "[core][wal_continuity]") {
  dix::wal_continuity c;
  c.expect_exact(10, 500);
  auto r = c.check(10, 1, 501);
  require_error(r, errc::log_retention);
  CHECK_THAT(r.error().message(), Catch::Matchers::Contains("501"));
  require_error(c.check(10, 1, 499), errc::log_retention);
  CHECK(c.last_end() == 0);
  CHECK(c.check(10, 1, 500));
}

TEST_CASE("wal_continuity: time 0 in expect_exact accepts any time", "[core][wal_continuity]") {
  for (std::uint64_t time : {1ull, 500ull, ~0ull}) {
    CAPTURE(time);
    dix::wal_continuity c;
    c.expect_exact(1, 0);
    REQUIRE(c.check(1, 4, time));
    CHECK(c.last_end() == 4);
    CHECK(c.last_time() == time);
  }
  // The sequence still has to match.
  dix::wal_continuity c;
  c.expect_exact(1, 0);
  require_error(c.check(2, 1, 100), errc::log_retention);
}

TEST_CASE("wal_continuity: the next batch must start at last_end + 1", "[core][wal_continuity]") {
  dix::wal_continuity c;
  c.expect_exact(10, 500);
  REQUIRE(c.check(10, 3, 500));  // 10..12
  REQUIRE(c.check(13, 2, 600));  // 13..14
  CHECK(c.last_end() == 14);
  require_error(c.check(16, 1, 700), errc::log_corrupt);  // gap
  require_error(c.check(14, 1, 700), errc::log_corrupt);  // overlap
  require_error(c.check(13, 1, 700), errc::log_corrupt);  // repeat
  CHECK(c.last_end() == 14);
  CHECK(c.last_time() == 600);
  REQUIRE(c.check(15, 1, 700));
  CHECK(c.last_end() == 15);
}

TEST_CASE("wal_continuity: header time must strictly increase", "[core][wal_continuity]") {
  dix::wal_continuity c;
  c.expect_exact(10, 500);
  REQUIRE(c.check(10, 1, 500));
  auto same = c.check(11, 1, 500);
  require_error(same, errc::log_corrupt);
  CHECK_THAT(same.error().message(), Catch::Matchers::Contains("does not exceed 500"));
  require_error(c.check(11, 1, 499), errc::log_corrupt);
  CHECK(c.last_end() == 10);
  REQUIRE(c.check(11, 1, 501));
  CHECK(c.last_time() == 501);
}

TEST_CASE("wal_continuity: an empty batch is log_corrupt", "[core][wal_continuity]") {
  dix::wal_continuity c;
  c.expect_exact(10, 500);
  REQUIRE(c.check(10, 1, 500));
  require_error(c.check(11, 0, 600), errc::log_corrupt);
  CHECK(c.last_end() == 10);
}

TEST_CASE("wal_continuity: a re-open keeps the time-increase rule", "[core][wal_continuity]") {
  dix::wal_continuity c;
  c.expect_exact(10, 500);
  REQUIRE(c.check(10, 2, 500));  // 10..11
  REQUIRE(c.check(12, 1, 600));  // 12
  // WAL switch: re-open at last_end + 1 with any time.
  c.expect_exact(c.last_end() + 1, 0);
  CHECK(c.expecting());
  require_error(c.check(13, 1, 600), errc::log_corrupt);  // time equal to the previous
  require_error(c.check(13, 1, 550), errc::log_corrupt);  // time went back
  require_error(c.check(14, 1, 700), errc::log_retention);  // skipped a batch: purged
  CHECK(c.expecting());
  REQUIRE(c.check(13, 1, 601));
  CHECK_FALSE(c.expecting());
  CHECK(c.last_end() == 13);
  // Back to plain continuity.
  require_error(c.check(15, 1, 700), errc::log_corrupt);
  CHECK(c.check(14, 1, 700));
}

TEST_CASE("wal_continuity: check_expected_sequence judges the sequence alone",
          "[core][wal_continuity]") {
  dix::wal_continuity c;
  // No expectation: any sequence passes.
  CHECK(c.check_expected_sequence(1));
  CHECK(c.check_expected_sequence(12345));
  c.expect_exact(10, 500);
  CHECK(c.check_expected_sequence(10));
  require_error(c.check_expected_sequence(11), errc::log_retention);
  require_error(c.check_expected_sequence(9), errc::log_retention);
  // It does not consume the expectation.
  CHECK(c.expecting());
  CHECK(c.last_end() == 0);
  REQUIRE(c.check(10, 1, 500));
  CHECK(c.check_expected_sequence(99));
}
