// core/progress_pacer: when a rebuild's progress goes to the metrics segment, with plain
// snapshots and times.
#include <catch2/catch.hpp>

#include "core/progress_pacer.hpp"

using namespace dix;
using std::chrono::milliseconds;

namespace {

const steady_time t0 = steady_time{} + std::chrono::hours(1);

// A snapshot of a scan that started at `started` under `epoch`, `rebuilt` of `estimated` so far.
runner_snapshot scanning(steady_time started, std::uint64_t rebuilt, std::uint64_t estimated = 1000, epoch_t epoch = 3) {
  runner_snapshot s;
  s.state = runner_state::rebuilding;
  s.epoch = epoch;
  s.scan_started_at = started;
  s.rebuilt_records = rebuilt;
  s.estimated_records = estimated;
  return s;
}

}  // namespace

TEST_CASE("progress pacer: nothing before a scan starts, the start at once with the estimate", "[core][progress]") {
  progress_pacer pacer;
  runner_snapshot idle;
  CHECK_FALSE(pacer.next(idle, t0));
  auto start = pacer.next(scanning(t0, 0), t0);
  REQUIRE(start);
  CHECK(start->epoch == 3);
  CHECK(start->rebuilt_records == 0);
  CHECK(start->estimated_records == 1000);
  CHECK(start->scan_records_per_s == 0);  // no time has passed: no rate yet
  CHECK(start->rebuild_eta_ms == 0);
  CHECK_FALSE(start->scan_ended);
  CHECK_FALSE(pacer.next(scanning(t0, 0), t0 + milliseconds(900)));  // unchanged: never again
}

TEST_CASE("progress pacer: a change is told at most every 250 ms, with the rate and the time left of metrics()", "[core][progress]") {
  progress_pacer pacer;
  REQUIRE(pacer.next(scanning(t0, 0), t0));
  CHECK_FALSE(pacer.next(scanning(t0, 100), t0 + milliseconds(100)));
  CHECK_FALSE(pacer.next(scanning(t0, 200), t0 + milliseconds(249)));
  auto due = pacer.next(scanning(t0, 250), t0 + milliseconds(250));
  REQUIRE(due);
  CHECK(due->rebuilt_records == 250);
  CHECK(due->scan_records_per_s == 1000);  // 250 records in 250 ms
  CHECK(due->rebuild_eta_ms == 750);       // 750 left at 1000/s
  CHECK_FALSE(pacer.next(scanning(t0, 400), t0 + milliseconds(499)));  // 249 ms after the last
  CHECK(pacer.next(scanning(t0, 400), t0 + milliseconds(500))->rebuilt_records == 400);
}

TEST_CASE("progress pacer: the scan's end is told at once, and only once", "[core][progress]") {
  progress_pacer pacer;
  REQUIRE(pacer.next(scanning(t0, 0), t0));
  auto ended = scanning(t0, 1000);
  ended.scan_ended_at = t0 + milliseconds(10);
  auto end = pacer.next(ended, t0 + milliseconds(10));
  REQUIRE(end);
  CHECK(end->scan_ended);
  CHECK(end->rebuilt_records == 1000);
  CHECK(end->scan_records_per_s == 100000);  // over the scan's 10 ms
  CHECK(end->rebuild_eta_ms == 0);
  CHECK_FALSE(pacer.next(ended, t0 + milliseconds(5000)));
}

TEST_CASE("progress pacer: the next attempt's scan (a new start or a new epoch) is told at once", "[core][progress]") {
  progress_pacer pacer;
  REQUIRE(pacer.next(scanning(t0, 0), t0));
  auto again = pacer.next(scanning(t0 + milliseconds(1), 0), t0 + milliseconds(1));
  REQUIRE(again);
  CHECK(again->rebuilt_records == 0);
  auto other = pacer.next(scanning(t0 + milliseconds(1), 0, 1000, 4), t0 + milliseconds(2));
  REQUIRE(other);
  CHECK(other->epoch == 4);
}

TEST_CASE("progress pacer: a new attempt withdraws the scan told last, once, by figures of epoch 0 (a new user's trial: "
          "dix rebuild --wait showed the first build's scan as the new rebuild's), and its own scan is told as usual",
          "[core][progress]") {
  progress_pacer pacer;
  auto ended = scanning(t0, 40, 40);
  ended.scan_ended_at = t0 + milliseconds(5);
  REQUIRE(pacer.next(ended, t0 + milliseconds(5)));
  // Ready, the final figures kept: nothing more to tell.
  ended.state = runner_state::running;
  CHECK_FALSE(pacer.next(ended, t0 + milliseconds(9000)));
  // A rebuild asked for: `rebuilding` under the same epoch, no scan in this attempt yet.
  runner_snapshot attempt;
  attempt.state = runner_state::rebuilding;
  attempt.epoch = 3;
  auto withdrawn = pacer.next(attempt, t0 + milliseconds(9001));
  REQUIRE(withdrawn);
  CHECK(withdrawn->epoch == 0);  // no reader shows it: no owner's epoch is 0
  CHECK(withdrawn->rebuilt_records == 0);
  CHECK_FALSE(withdrawn->scan_ended);
  CHECK_FALSE(pacer.next(attempt, t0 + milliseconds(9002)));  // once
  // The attempt's own scan under its new epoch, at once.
  auto start = pacer.next(scanning(t0 + milliseconds(9100), 0, 5000, 4), t0 + milliseconds(9100));
  REQUIRE(start);
  CHECK(start->epoch == 4);
  CHECK(start->estimated_records == 5000);
}
