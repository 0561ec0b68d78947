// core/lag_gate: the writer gate's rules (protocol.md §13.3, §13.4) with plain calls. Budget in
// these tests: max_lag 1000 ms, max_flush_age 100 ms, no barrier spacing → B = 1000, H = 500;
// max_write_delay 100 ms → D = 100 000 µs.
#include <catch2/catch.hpp>

#include "core/lag_gate.hpp"

using namespace dix;
using std::chrono::milliseconds;

namespace {

gate_policy policy(long long max_lag = 1000, long long flush = 100, long long spacing = 0, long long delay = 100) {
  return gate_policy{milliseconds{max_lag}, milliseconds{flush}, milliseconds{spacing}, milliseconds{delay}};
}

// An owner whose catch-up is proven (a durable advance and the end of the log since acquisition).
lag_gate caught_up_owner(std::uint32_t inherited = gate_open) {
  lag_gate g(policy());
  (void)g.on_acquired(inherited);
  g.on_durable_advance();
  g.on_end_of_log();
  return g;
}

}  // namespace

TEST_CASE("lag gate: B is max(max_lag, 2 x max_flush_age) plus the backend's barrier spacing, the tick B/4 within 1 ... 1000 ms",
          "[core][gate]") {
  CHECK(policy(1000, 100).budget_ms() == 1000);
  CHECK(policy(1000, 800).budget_ms() == 1600);       // 2 × max_flush_age wins
  CHECK(policy(1000, 100, 250).budget_ms() == 1250);  // + min_barrier_interval
  CHECK(policy(1000, 100).lag_tick_ms() == 250);
  CHECK(policy(60000, 100).lag_tick_ms() == 1000);  // capped
  CHECK(policy(1, 0).lag_tick_ms() == 1);           // at least 1 ms
  CHECK_FALSE(policy(0).on());
  CHECK(policy(1).on());
}

TEST_CASE("lag gate: the throttle delay rises from 1 us at H to max_write_delay at B, ceil and clamp", "[core][gate]") {
  const auto p = policy();
  CHECK(throttle_delay_us(p, 500) == 1);        // at H: clamped to 1
  CHECK(throttle_delay_us(p, 501) == 200);      // 100 000 × 2/1000
  CHECK(throttle_delay_us(p, 750) == 50'000);   // halfway
  CHECK(throttle_delay_us(p, 999) == 99'800);
  CHECK(throttle_delay_us(p, 1000) == 100'000);  // at B: D
  CHECK(throttle_delay_us(p, 5000) == 100'000);  // clamped
  // ceil: B = 3, H = 1.5, D = 1000 µs: lag 2 → 1000 × (4 − 3) / 3 = 333.3 → 334.
  CHECK(throttle_delay_us(policy(3, 1, 0, 1), 2) == 334);
}

TEST_CASE("lag gate: behaviour 23 - no delay below B/2 once catch-up is proven, 1 us until then, rising to max_write_delay at B, exceeded at B",
          "[core][gate][behaviour-23]") {
  lag_gate g(policy());
  CHECK_FALSE(g.on_acquired(gate_open));  // inherited open: nothing to store
  // Rule 4 on an open gate: stays open even before catch-up is proven.
  CHECK_FALSE(g.sample(100));
  CHECK(g.stored() == gate_open);
  // Rule 3: proportional.
  CHECK(g.sample(750) == std::optional<std::uint32_t>{50'000});
  CHECK(g.sample(999) == std::optional<std::uint32_t>{99'800});
  // Rule 1: at B exceeded.
  CHECK(g.sample(1000) == std::optional<std::uint32_t>{gate_exceeded});
  CHECK(gate_refuses(g.stored()));
  // Lag falls but no durable advance since the trip: stays exceeded (rule 2).
  CHECK_FALSE(g.sample(0));
  CHECK(g.stored() == gate_exceeded);
  // A durable advance: rule 4 without proven catch-up (no end of log yet) → 1 µs, not open.
  g.on_durable_advance();
  CHECK(g.sample(100) == std::optional<std::uint32_t>{1});
  // End of the log reached too: proven catch-up → open.
  g.on_end_of_log();
  CHECK(g.sample(100) == std::optional<std::uint32_t>{gate_open});
  CHECK_FALSE(g.sample(499));  // still below H: no delay
}

TEST_CASE("lag gate: a throttled delay is re-stored only when it moves by 10 % or more", "[core][gate]") {
  auto g = caught_up_owner();
  CHECK(g.sample(750) == std::optional<std::uint32_t>{50'000});
  CHECK_FALSE(g.sample(760));  // 54 000: +8 %
  CHECK(g.stored() == 50'000);
  CHECK(g.sample(775) == std::optional<std::uint32_t>{55'000});  // +10 %
  CHECK_FALSE(g.sample(752));                                    // 50 400: −8.4 %
  CHECK(g.sample(740) == std::optional<std::uint32_t>{48'000});  // −12.7 %
}

TEST_CASE("lag gate: behaviour 24 - an exceeded gate opens only after this owner advanced durably and reached the end of the log",
          "[core][gate][behaviour-24]") {
  SECTION("tripped by this owner: the advance must come after the trip") {
    lag_gate g(policy());
    (void)g.on_acquired(gate_open);
    g.on_durable_advance();
    g.on_end_of_log();  // catch-up proven before the trip
    REQUIRE(g.sample(1200) == std::optional<std::uint32_t>{gate_exceeded});
    CHECK_FALSE(g.sample(0));  // the earlier advance does not count
    g.on_durable_advance();
    CHECK(g.sample(0) == std::optional<std::uint32_t>{gate_open});  // catch-up still proven since acquisition
  }
  SECTION("inherited exceeded: the successor proves catch-up itself") {
    lag_gate g(policy());
    CHECK_FALSE(g.on_acquired(gate_exceeded));  // survives the handoff: nothing stored
    CHECK(g.stored() == gate_exceeded);
    g.on_end_of_log();
    CHECK_FALSE(g.sample(0));  // no durable advance since this acquisition
    g.on_durable_advance();
    CHECK(g.sample(0) == std::optional<std::uint32_t>{gate_open});
  }
  SECTION("an inherited throttle is not cleared before catch-up: 1 us") {
    lag_gate g(policy());
    CHECK_FALSE(g.on_acquired(40'000));
    CHECK(g.sample(0) == std::optional<std::uint32_t>{1});
    g.on_durable_advance();
    CHECK_FALSE(g.sample(0));  // end of log not reached yet
    g.on_end_of_log();
    CHECK(g.sample(0) == std::optional<std::uint32_t>{gate_open});
  }
  SECTION("a value above 1 000 000 is read as exceeded") {
    lag_gate g(policy());
    (void)g.on_acquired(2'000'000);
    CHECK(gate_refuses(g.stored()));
    CHECK_FALSE(g.sample(0));
  }
}

TEST_CASE("lag gate: proven catch-up belongs to one acquisition", "[core][gate]") {
  auto g = caught_up_owner();
  REQUIRE(g.caught_up());
  (void)g.on_acquired(40'000);  // a later ownership
  CHECK_FALSE(g.caught_up());
  CHECK(g.sample(0) == std::optional<std::uint32_t>{1});
}

TEST_CASE("lag gate: an owner without a policy stores 0 at acquisition and never samples", "[core][gate]") {
  lag_gate g(policy(0));
  CHECK(g.on_acquired(gate_exceeded) == std::optional<std::uint32_t>{gate_open});
  CHECK_FALSE(g.on_acquired(gate_open));  // already 0: nothing to store
  CHECK_FALSE(g.sample(1'000'000));
  CHECK(g.stored() == gate_open);
}

TEST_CASE("lag gate: a forced open stores 0 once, whatever the gate was", "[core][gate]") {
  lag_gate g(policy());
  (void)g.on_acquired(gate_exceeded);
  CHECK(g.force_open() == std::optional<std::uint32_t>{gate_open});
  CHECK_FALSE(g.force_open());
  // Open now, so a low lag keeps it open even without proven catch-up (rule 4).
  CHECK_FALSE(g.sample(10));
}

TEST_CASE("lag gate: the backlog's reading time throttles below H, up to max_write_delay, but never refuses (decision 0027)",
          "[core][gate][forecast]") {
  auto g = caught_up_owner();
  // A lag of 100 ms alone is open; with 450 ms of backlog to read, the forecast 550 ms is past H.
  CHECK_FALSE(g.sample(100, 0).has_value());
  CHECK(g.sample(100, 450) == throttle_delay_us(policy(), 550));
  // A forecast at or past B with the lag below it throttles at D: only the lag refuses.
  CHECK(g.sample(400, 5000) == 100'000u);
  CHECK(g.stored() == 100'000u);
  CHECK(g.sample(999, 5000) == std::nullopt);  // still D, not exceeded
  CHECK(g.sample(1000, 0) == gate_exceeded);
  // Once the backlog is read and the lag falls, the gate reopens as before (rule 2 first).
  g.on_durable_advance();
  CHECK(g.sample(100, 0) == gate_open);
}

TEST_CASE("lag gate: without a backlog the forecast is the lag, so section 13.3 holds unchanged", "[core][gate][forecast]") {
  auto a = caught_up_owner();
  auto b = caught_up_owner();
  for (std::uint64_t lag : {0u, 300u, 499u, 500u, 600u, 750u, 999u, 1000u, 1200u, 400u}) {
    CHECK(a.sample(lag) == b.sample(lag, 0));
    CHECK(a.stored() == b.stored());
  }
}
