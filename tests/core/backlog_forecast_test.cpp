// core/backlog_forecast: the unread backlog's reading time at the recent read rate (decision
// 0027), with plain calls on a fixed time axis.
#include <catch2/catch.hpp>

#include "core/backlog_forecast.hpp"

using namespace dix;
using std::chrono::milliseconds;

namespace {

const backlog_forecast::steady_time t0{};

}  // namespace

TEST_CASE("backlog forecast: no rate before the readings span 100 ms, so no backlog is forecast", "[core][gate][forecast]") {
  backlog_forecast f;
  CHECK(f.drain_ms(2000) == 0);
  f.observe(t0, 1000, 5000);
  CHECK_FALSE(f.rate().has_value());
  f.observe(t0 + milliseconds(50), 1500, 5000);
  CHECK_FALSE(f.rate().has_value());
  CHECK(f.drain_ms(2000) == 0);
  f.observe(t0 + milliseconds(100), 2000, 5000);
  CHECK(f.rate() == 10'000u);  // 1000 sequences in 100 ms
  CHECK(f.drain_ms(2000) == 500);
}

TEST_CASE("backlog forecast: the rate covers about the last second, so it follows a reader that slows down",
          "[core][gate][forecast]") {
  backlog_forecast f;
  std::uint64_t read = 0;
  // 2 s at 20 000/s, then 2 s at 5 000/s, a reading every 20 ms.
  for (int ms = 0; ms <= 2000; ms += 20) f.observe(t0 + milliseconds(ms), read += (ms == 0 ? 0 : 400), 0);
  CHECK(f.rate() == 20'000u);
  for (int ms = 2020; ms <= 4000; ms += 20) f.observe(t0 + milliseconds(ms), read += 100, 10'000);
  CHECK(f.rate() == 5'000u);
  CHECK(f.drain_ms(60'000) == 2000);  // 10 000 unread at 5 000/s
  CHECK(f.drain_ms(1500) == 1500);    // capped
}

TEST_CASE("backlog forecast: nothing unread forecasts nothing, a reader that reads nothing forecasts the cap",
          "[core][gate][forecast]") {
  backlog_forecast f;
  f.observe(t0, 100, 0);
  f.observe(t0 + milliseconds(200), 300, 0);
  CHECK(f.drain_ms(2000) == 0);
  backlog_forecast stuck;
  stuck.observe(t0, 100, 50);
  stuck.observe(t0 + milliseconds(500), 100, 80);
  CHECK(stuck.rate() == 0u);
  CHECK(stuck.drain_ms(2000) == 2000);
}

TEST_CASE("backlog forecast: a read position going back, a silence longer than the window or a reset starts the history again",
          "[core][gate][forecast]") {
  backlog_forecast f;
  f.observe(t0, 10'000, 100);
  f.observe(t0 + milliseconds(200), 12'000, 100);
  CHECK(f.rate() == 10'000u);
  f.observe(t0 + milliseconds(300), 5, 100);  // logs installed again
  CHECK_FALSE(f.rate().has_value());
  f.observe(t0 + milliseconds(500), 2005, 100);
  CHECK(f.rate() == 10'000u);
  f.observe(t0 + milliseconds(1600), 2005, 100);  // 1.1 s of silence: a stall, not a rate of 0
  CHECK_FALSE(f.rate().has_value());
  CHECK(f.drain_ms(2000) == 0);
  f.observe(t0 + milliseconds(1800), 4005, 100);
  CHECK(f.rate() == 10'000u);
  f.reset();
  CHECK_FALSE(f.rate().has_value());
  CHECK(f.drain_ms(2000) == 0);
}

TEST_CASE("backlog forecast: close readings are merged, so the history stays small at any turn rate", "[core][gate][forecast]") {
  backlog_forecast f;
  std::uint64_t read = 0;
  for (int us = 0; us <= 1'000'000; us += 100) f.observe(t0 + std::chrono::microseconds(us), read += 2, 0);
  // 10 000 readings in a second; the rate is still exact.
  CHECK(f.rate() == 20'000u);
}

TEST_CASE("backlog forecast: a busy run counts the chunks delivered in it, whatever their sizes, from its second reading on (decision 0065)",
          "[core][gate][forecast]") {
  backlog_forecast f;
  // A serial reader: each reading's chunk is delivered before the next reading. A chunk of 10,
  // then chunks of 256, each 25.6 ms at 10 000/s, while a writer's backlog grows behind them.
  f.observe(t0, 10, 0);  // nothing waits: no run
  CHECK_FALSE(f.busy_rate().has_value());
  f.observe(t0 + milliseconds(1), 266, 100);  // 100 unread beyond the 256 in hand: the run begins
  CHECK_FALSE(f.busy_rate().has_value());
  CHECK(f.drain_ms(2000) == 0);  // no rate of any kind yet
  f.observe(t0 + std::chrono::microseconds(11'000), 266, 1'000);  // 10 ms in: under busy_min_span
  CHECK_FALSE(f.busy_rate().has_value());
  f.observe(t0 + std::chrono::microseconds(26'600), 522, 2'500);
  // The chunk of 256 read at 1 ms was delivered in 25.6 ms; the one read now is in hand. (The
  // read positions over the same span say 256 / 26.6 ms, and over 0 … 26.6 ms 512 / 26.6 ms:
  // 19 000/s, the chunk in hand counted as read.)
  CHECK(f.busy_rate() == 10'000u);
  CHECK_FALSE(f.rate().has_value());  // the second's rate is 73 ms away
  CHECK(f.drain_ms(2000) == 0);       // the pace's forecast waits for it (the gate's busy entry does not)
  f.observe(t0 + std::chrono::microseconds(52'200), 778, 5'000);
  CHECK(f.busy_rate() == 10'000u);
  // A reading that leaves fewer than 64 entries unread ends the run (the chunk in hand does not
  // count: a reader that keeps up reads a full chunk each turn and leaves nothing).
  f.observe(t0 + std::chrono::microseconds(77'800), 800, 40);
  CHECK_FALSE(f.busy_rate().has_value());
  // A reset ends it too.
  f.observe(t0 + milliseconds(80), 1'056, 500);
  f.observe(t0 + milliseconds(120), 1'312, 500);
  REQUIRE(f.busy_rate().has_value());
  f.reset();
  CHECK_FALSE(f.busy_rate().has_value());
}

TEST_CASE("backlog forecast: a long busy run's rate covers the last half second to second, so it follows a reader that slows down",
          "[core][gate][forecast]") {
  backlog_forecast f;
  std::uint64_t read = 0;
  // Busy throughout: 2 s at 20 000/s, then 2 s at 5 000/s, a chunk every 20 ms.
  for (int ms = 0; ms <= 2000; ms += 20) f.observe(t0 + milliseconds(ms), read += 400, 50'000);
  CHECK(f.busy_rate() == 20'000u);
  for (int ms = 2020; ms <= 4000; ms += 20) f.observe(t0 + milliseconds(ms), read += 100, 50'000);
  CHECK(f.busy_rate() == 5'000u);
  // A silence longer than the window ends the run with the history.
  f.observe(t0 + milliseconds(5100), read += 100, 50'000);
  CHECK_FALSE(f.busy_rate().has_value());
}
