// The verify's scan (core/verify_scan.*): the drift merge read at a rate on an injected clock,
// its steps, its wake-up times and its progress.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/verify_scan.hpp"
#include "support/vector_entry_source.hpp"

using namespace dix;
using namespace std::chrono_literals;

namespace {

using vector_source = test::vector_entry_source;

std::vector<digest_entry> entries(std::size_t n) {
  std::vector<digest_entry> out;
  for (std::size_t i = 0; i < n; ++i) {
    digest_entry e;
    e.log = "main";
    e.table = 1;
    e.record_id = "r" + std::to_string(100000 + i);
    e.version = 1;
    e.hash = entry_hash(e.log, e.table, e.record_id, e.version, "p");
    out.push_back(std::move(e));
  }
  return out;
}

primary_source_of primary(std::size_t n) {
  return [n](const std::string&) -> result<std::unique_ptr<entry_source>> {
    return std::unique_ptr<entry_source>(std::make_unique<vector_source>(entries(n)));
  };
}

}  // namespace

TEST_CASE("verify scan: at 1 000 entries/s it reads a burst at once, then keeps to the rate, waking when the next entry is allowed, and ends equal", "[core][verify]") {
  manual_clock time;
  const auto start = time.steady_now();
  vector_source index(entries(300));
  verify_scan scan(index, {"main"}, primary(300), 10, 600, 1000, start);
  auto first = scan.step(time.steady_now(), 1000).value();
  CHECK_FALSE(first.done);
  REQUIRE(first.resume_at);
  const auto burst = scan.progress(time.steady_now()).read;
  CHECK(burst >= 100);  // a tenth of a second's worth
  CHECK(burst <= 102);
  CHECK(*first.resume_at > start);
  // Early: nothing more is read.
  const auto early = scan.step(*first.resume_at - 1us, 1000).value();
  CHECK_FALSE(early.done);
  CHECK(scan.progress(time.steady_now()).read == burst);
  int wakes = 0;
  auto step = first;
  while (!step.done) {
    REQUIRE(step.resume_at);
    REQUIRE(*step.resume_at >= time.steady_now());
    time.advance(*step.resume_at - time.steady_now());
    const auto before = scan.progress(time.steady_now()).read;
    step = scan.step(time.steady_now(), 1000).value();
    CHECK((scan.progress(time.steady_now()).read > before || step.done));  // each wake reads or ends
    REQUIRE(++wakes < 2000);
    // Never ahead of the rate plus the burst (one pair may finish over it).
    const auto elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(time.steady_now() - start).count();
    CHECK(scan.progress(time.steady_now()).read <= static_cast<std::uint64_t>(elapsed_ms) + 100 + 2);
  }
  const auto took = time.steady_now() - start;
  CHECK(took >= 480ms);  // about (602 − 100) / 1 000 s
  CHECK(took <= 520ms);
  CHECK(scan.report().differences == 0);
  CHECK(scan.report().index == scan.report().primary);
  CHECK(scan.report().index.records == 300);
  const auto p = scan.progress(time.steady_now());
  CHECK(p.read == p.expected);
  CHECK(p.eta == 0ms);
}

TEST_CASE("verify scan: unbounded, it reads in turns of the given maximum and goes on at once, and its ETA follows the pace read so far", "[core][verify]") {
  manual_clock time;
  vector_source index(entries(250));
  verify_scan scan(index, {"main"}, primary(250), 10, 500, 0, time.steady_now());
  CHECK_FALSE(scan.progress(time.steady_now()).eta);  // no pace known yet
  time.advance(100ms);
  auto step = scan.step(time.steady_now(), 100).value();
  CHECK_FALSE(step.done);
  CHECK_FALSE(step.resume_at);
  const auto p = scan.progress(time.steady_now());
  CHECK(p.read >= 100);
  CHECK(p.read <= 101);
  CHECK(p.expected == 500);
  REQUIRE(p.eta);
  // 100 entries in 100 ms: the other ~400 in about 400 ms.
  CHECK(*p.eta >= 390ms);
  CHECK(*p.eta <= 400ms);
  int turns = 1;
  while (!step.done) {
    step = scan.step(time.steady_now(), 100).value();
    REQUIRE(++turns < 100);
  }
  CHECK(turns >= 5);
  CHECK(scan.done());
  CHECK(scan.report().differences == 0);
}

TEST_CASE("verify scan: a difference is reported as the merge names it, and the expected count grows when exceeded", "[core][verify]") {
  manual_clock time;
  auto index_entries = entries(10);
  index_entries.erase(index_entries.begin() + 3);
  vector_source index(index_entries);
  verify_scan scan(index, {"main"}, primary(10), 10, 4, 0, time.steady_now());
  while (!scan.step(time.steady_now(), 3).value().done) {
  }
  REQUIRE(scan.report().differences == 1);
  CHECK(scan.report().drifts[0].kind == drift_kind::missing);
  CHECK(scan.report().drifts[0].record_id == "r100003");
  CHECK(scan.progress(time.steady_now()).expected == scan.progress(time.steady_now()).read);
}

TEST_CASE("verify scan: after a stall it reads no more than its burst at once, then keeps to the rate again, and a finished scan stays done", "[core][verify]") {
  manual_clock time;
  vector_source index(entries(2000));
  verify_scan scan(index, {"main"}, primary(2000), 10, 4000, 1000, time.steady_now());
  REQUIRE_FALSE(scan.step(time.steady_now(), 100000).value().done);
  const auto burst = scan.progress(time.steady_now()).read;
  CHECK(burst <= 101);
  time.advance(10s);  // a paused worker
  auto step = scan.step(time.steady_now(), 100000).value();
  CHECK_FALSE(step.done);
  CHECK(scan.progress(time.steady_now()).read - burst <= 101);  // the burst, not ten seconds' worth
  REQUIRE(step.resume_at);
  CHECK(*step.resume_at - time.steady_now() <= 2ms);
  // A turn's maximum of 0 is taken as 1: it still moves.
  time.advance(*step.resume_at - time.steady_now());
  const auto before = scan.progress(time.steady_now()).read;
  REQUIRE_FALSE(scan.step(time.steady_now(), 0).value().done);
  CHECK(scan.progress(time.steady_now()).read > before);
  // Unbounded, a finished scan answers done at every later step.
  vector_source small(entries(3));
  verify_scan quick(small, {"main"}, primary(3), 10, 6, 0, time.steady_now());
  while (!quick.step(time.steady_now(), 2).value().done) {
  }
  const auto again = quick.step(time.steady_now(), 2).value();
  CHECK(again.done);
  CHECK_FALSE(again.resume_at);
}

TEST_CASE("verify scan: by default it reads its first 65 536 entries unpaced, then keeps to a quarter of the rate it measured over them", "[core][verify]") {
  manual_clock time;
  const auto start = time.steady_now();
  // 50 000 records a side: 100 000 entries, past the calibration.
  vector_source index(entries(50000));
  verify_scan scan(index, {"main"}, primary(50000), 10, 100000, verify_rate_measured, start);
  CHECK_FALSE(scan.pace());
  // Unpaced: each step reads its whole turn; the test's clock says each turn took 10 ms, so the
  // first 65 536 entries were read at 409 600 entries/s.
  std::uint64_t turns = 0;
  while (scan.progress(time.steady_now()).read < verify_calibration_entries) {
    auto step = scan.step(time.steady_now(), 4096).value();
    CHECK_FALSE(step.resume_at);
    time.advance(10ms);
    ++turns;
  }
  CHECK(turns == 16);
  CHECK_FALSE(scan.pace());  // measured at the next step, over what was read before it
  const auto calibrated_at = scan.progress(time.steady_now()).read;
  auto step = scan.step(time.steady_now(), 4096).value();
  REQUIRE(scan.pace());
  CHECK(*scan.pace() == 65536 * 100 / 16 / 4);  // 102 400 entries/s
  // Paced from here on: a burst of a tenth of a second's worth (a few turns at once), then a
  // wake-up.
  while (!step.resume_at && !step.done) step = scan.step(time.steady_now(), 4096).value();
  CHECK(scan.progress(time.steady_now()).read <= calibrated_at + 10240 + 2);
  REQUIRE(step.resume_at);
  const auto paced_from = time.steady_now();
  const auto read_at = scan.progress(time.steady_now()).read;
  while (!step.done) {
    REQUIRE(step.resume_at);
    time.advance(*step.resume_at - time.steady_now());
    step = scan.step(time.steady_now(), 4096).value();
  }
  const auto seconds = std::chrono::duration<double>(time.steady_now() - paced_from).count();
  CHECK(seconds == Approx(static_cast<double>(100000 - read_at) / 102400).epsilon(0.02));
  CHECK(scan.report().differences == 0);
}

TEST_CASE("verify scan: by default a scan shorter than the calibration, or one whose clock never moved, is never paced", "[core][verify]") {
  manual_clock time;
  const auto start = time.steady_now();
  vector_source small(entries(1000));
  verify_scan short_scan(small, {"main"}, primary(1000), 10, 2000, verify_rate_measured, start);
  auto step = short_scan.step(time.steady_now(), 100000).value();
  CHECK(step.done);
  CHECK_FALSE(short_scan.pace());

  vector_source large(entries(50000));
  verify_scan frozen(large, {"main"}, primary(50000), 10, 100000, verify_rate_measured, start);
  do {
    step = frozen.step(time.steady_now(), 4096).value();
    CHECK_FALSE(step.resume_at);
  } while (!step.done);
  REQUIRE(frozen.pace());
  CHECK(*frozen.pace() == 0);  // no time passed: nothing to measure, as fast as it goes
  CHECK(frozen.report().index.records == 50000);
}
