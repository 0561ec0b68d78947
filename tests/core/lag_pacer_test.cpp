// core/lag_pacer: when the owner's lag figures go to the metrics segment, with plain snapshots
// and times (decision 0021).
#include <catch2/catch.hpp>

#include "core/lag_pacer.hpp"

using namespace dix;
using std::chrono::milliseconds;

namespace {

const steady_time t0 = steady_time{} + std::chrono::hours(1);
constexpr std::uint64_t wall0 = 1'000'000'000'000;

// The runner's options: the default cap, a flush interval of 3 s (the figures carry both).
const runner_options options = [] {
  runner_options o;
  o.max_flush_age = milliseconds(3000);
  return o;
}();

// An owner of epoch 2 with one log read up to `read` of `latest`, nothing durable past 0.
runner_snapshot owner(std::uint64_t read, std::uint64_t latest, runner_state state = runner_state::running) {
  runner_snapshot s;
  s.owner = true;
  s.epoch = 2;
  s.state = state;
  s.logs = {log_progress{"main", read, latest}};
  return s;
}

}  // namespace

TEST_CASE("lag pacer: nothing for a runner that does not own its id", "[core][lag]") {
  lag_pacer pacer;
  runner_snapshot s;
  auto d = pacer.next(s, options, t0, wall0);
  CHECK_FALSE(d.publish);
  CHECK_FALSE(d.due_in);
}

TEST_CASE("lag pacer: the first figures at once, with the components, the cap, the flush age, the ages growing and the wall time", "[core][lag]") {
  lag_pacer pacer;
  auto s = owner(10, 50, runner_state::deferred);
  s.stalled_since = t0 - milliseconds(300);
  s.accepted_batches = 5;
  auto d = pacer.next(s, options, t0, wall0);
  REQUIRE(d.publish);
  const auto& l = *d.publish;
  CHECK(l.epoch == 2);
  CHECK(l.taken_wall_ns == wall0);
  CHECK(l.state == runner_state::deferred);
  CHECK(l.stalled_ms == 300);
  CHECK(l.lag_ms == 300);
  CHECK(l.stalled_growing);
  CHECK_FALSE(l.unread_growing);
  CHECK(l.accepted_batches == 5);
  CHECK(l.max_accepted_batches_ahead == 64);
  CHECK(l.max_flush_age_ms == 3000);
  REQUIRE(l.logs.size() == 1);
  CHECK(l.logs[0].sequence_lag == 50);
  CHECK(l.logs[0].read_per_s == 0);  // the first figures of an epoch know no rate
  CHECK(l.logs[0].retention_headroom_ms == -1);
  // Parked: the ages grow but nothing else changes, so nothing more is written.
  CHECK_FALSE(pacer.next(s, options, t0 + milliseconds(5000), wall0 + 5'000'000'000).publish);
}

TEST_CASE("lag pacer: changes at most every 250 ms, a held-back one due at the interval's end, with the read rate", "[core][lag]") {
  lag_pacer pacer;
  REQUIRE(pacer.next(owner(0, 1000), options, t0, wall0).publish);
  auto early = pacer.next(owner(100, 1000), options, t0 + milliseconds(100), wall0);
  CHECK_FALSE(early.publish);
  REQUIRE(early.due_in);
  CHECK(*early.due_in == milliseconds(150));
  // The last change, then nothing: the due call publishes it (once).
  auto due = pacer.next(owner(500, 1000), options, t0 + milliseconds(250), wall0);
  REQUIRE(due.publish);
  CHECK(due.publish->logs[0].read_per_s == 2000);  // 500 sequences in 250 ms
  CHECK_FALSE(pacer.next(owner(500, 1000), options, t0 + milliseconds(900), wall0).publish);
}

TEST_CASE("lag pacer: a verify's start, its proof (records, age, each log's sequence) and a failure are each told, and the proof's age then grows without a write (issue 31)", "[core][lag][verify]") {
  lag_pacer pacer;
  auto s = owner(100, 100);
  REQUIRE(pacer.next(s, options, t0, wall0).publish);
  CHECK_FALSE(pacer.next(s, options, t0 + milliseconds(300), wall0).publish);
  s.verifying = true;
  auto started = pacer.next(s, options, t0 + milliseconds(600), wall0);
  REQUIRE(started.publish);
  CHECK(started.publish->verifying);
  CHECK_FALSE(started.publish->verified);
  s.verifying = false;
  s.verified = cursor::make({log_position{"main", "identity-1", 90, 1000}}).value();
  s.verified_at = t0 + milliseconds(900);
  s.verified_records = 1234;
  auto proven = pacer.next(s, options, t0 + milliseconds(1000), wall0 + 400'000'000);
  REQUIRE(proven.publish);
  const auto& l = *proven.publish;
  CHECK_FALSE(l.verifying);
  CHECK(l.verified);
  CHECK(l.verified_records == 1234);
  CHECK(l.verified_age_ms == 100);
  REQUIRE(l.logs.size() == 1);
  CHECK(l.logs[0].verified_sequence == 90);
  CHECK(l.aged_at(wall0 + 2'400'000'000).verified_age_ms == 2100);  // a reader ages it
  CHECK_FALSE(pacer.next(s, options, t0 + milliseconds(5000), wall0 + 4'400'000'000).publish);
  s.verify_failures = 1;
  auto failed = pacer.next(s, options, t0 + milliseconds(6000), wall0);
  REQUIRE(failed.publish);
  CHECK(failed.publish->verify_failures == 1);
  CHECK(failed.publish->verified);  // the last proof stays
}

TEST_CASE("lag pacer: a new epoch is told at once, whatever the interval", "[core][lag]") {
  lag_pacer pacer;
  REQUIRE(pacer.next(owner(0, 10), options, t0, wall0).publish);
  auto s = owner(0, 10);
  s.epoch = 3;
  auto d = pacer.next(s, options, t0 + milliseconds(1), wall0);
  REQUIRE(d.publish);
  CHECK(d.publish->epoch == 3);
}

TEST_CASE("lag pacer: at most lag_log_slots logs, the count of all of them, each with its name in attach order", "[core][lag]") {
  lag_pacer pacer;
  auto s = owner(0, 10);
  s.logs.push_back(log_progress{"b", 0, 20});
  s.logs.push_back(log_progress{"c", 0, 30});
  auto d = pacer.next(s, options, t0, wall0);
  REQUIRE(d.publish);
  CHECK(d.publish->log_count == 3);
  CHECK(d.publish->logs.size() == lag_log_slots);
  CHECK(d.publish->logs[1].sequence_lag == 20);
  CHECK(d.publish->logs[0].log == "main");
  CHECK(d.publish->logs[1].log == "b");
}

TEST_CASE("lag pacer: the read rate is measured over the last two seconds, so reads that come in bursts read as the steady rate they make (issue 34 item 13)", "[core][lag]") {
  // A steady 1000 sequences/s read in bursts of 500 every 500 ms, figures told every 250 ms:
  // measured between two publications alone, the rate read 2000 and 0 in turn (and an index
  // following a steady writer flipped to catching up whenever it read low).
  lag_pacer pacer;
  std::uint64_t read = 0;
  std::vector<std::uint64_t> rates;
  for (int tick = 0; tick <= 40; ++tick) {
    if (tick % 2 == 0 && tick > 0) read += 500;
    auto d = pacer.next(owner(read, 1000 + static_cast<std::uint64_t>(tick)), options, t0 + milliseconds(250 * tick), wall0);
    REQUIRE(d.publish);
    if (tick >= 8) rates.push_back(d.publish->logs[0].read_per_s);  // the window filled
  }
  for (auto r : rates) {
    CHECK(r >= 875);
    CHECK(r <= 1125);
  }
}

TEST_CASE("lag pacer: a rebuild's start and end are told at once, whatever the interval, so a reader never sees ready beside a "
          "stall for the rebuild (a new user's trial)",
          "[core][lag]") {
  lag_pacer pacer;
  REQUIRE(pacer.next(owner(0, 10), options, t0, wall0).publish);
  auto began = pacer.next(owner(0, 10, runner_state::rebuilding), options, t0 + milliseconds(1), wall0);
  REQUIRE(began.publish);
  CHECK(began.publish->state == runner_state::rebuilding);
  // A change within the rebuild waits for the interval, as any other.
  CHECK_FALSE(pacer.next(owner(5, 10, runner_state::rebuilding), options, t0 + milliseconds(2), wall0).publish);
  auto ended = pacer.next(owner(10, 10, runner_state::running), options, t0 + milliseconds(3), wall0);
  REQUIRE(ended.publish);
  CHECK(ended.publish->state == runner_state::running);
}
