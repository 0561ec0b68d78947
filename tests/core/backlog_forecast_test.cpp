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
