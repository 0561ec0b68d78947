// core/lag_gate: the writer gate's rules (protocol.md §13.3, §13.4) with plain calls. Budget in
// these tests: max_lag 1000 ms, max_flush_age 100 ms, no barrier spacing → B = 1000, H = 500;
// max_write_delay 100 ms → D = 100 000 µs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

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

TEST_CASE("lag gate: behaviour 23 as decision 0060 keeps it - open below B/2, rule 3's delay to enter, the guard up to max_write_delay at B, exceeded at B",
          "[core][gate][behaviour-23]") {
  lag_gate g(policy());
  CHECK_FALSE(g.on_acquired(gate_open));  // inherited open: nothing to store
  // Rule 4 on an open gate: stays open even before catch-up is proven.
  CHECK_FALSE(g.sample(100));
  CHECK(g.stored() == gate_open);
  // Rule 3: proportional.
  CHECK(g.sample(750) == std::optional<std::uint32_t>{50'000});  // entering: rule 3's delay (no capacity known)
  CHECK_FALSE(g.sample(800));  // throttled: the pace keeps the delay; no readings here, so no step
  // Past 7B/8 the lag forces the delay up, to D at B (decision 0060): 100 000 x (8 x 999 - 7 000) / 1000.
  CHECK(g.sample(999) == std::optional<std::uint32_t>{99'200});
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
  // The guard (lag past 7B/8) raises the delay it keeps: 100 000 x (8 x lag - 7 000) / 1000.
  CHECK_FALSE(g.sample(880));  // 4 000, below the 50 000 kept
  CHECK_FALSE(g.sample(938));  // 54 400: +8.8 %
  CHECK(g.stored() == 50'000);
  CHECK(g.sample(944) == std::optional<std::uint32_t>{55'200});  // +10.4 %
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

TEST_CASE("lag gate: the backlog's reading time throttles below H but never refuses (decision 0027)",
          "[core][gate][forecast]") {
  auto g = caught_up_owner();
  // A lag of 100 ms alone is open; with 450 ms of backlog to read, the forecast 550 ms is past H.
  CHECK_FALSE(g.sample(100, 0).has_value());
  CHECK(g.sample(100, 450) == throttle_delay_us(policy(), 550));
  // A forecast at or past B with the lag below it throttles; only the lag refuses.
  CHECK_FALSE(g.sample(400, 5000).has_value());
  CHECK_FALSE(gate_refuses(g.stored()));
  CHECK(g.sample(999, 5000) == 99'200u);  // the guard, not exceeded
  CHECK(g.sample(1000, 0) == gate_exceeded);
  // Once the backlog is read and the lag falls, the gate reopens as before (rule 2 first); with no
  // readings of the logs the writer counts as idle, so it opens at once.
  g.on_durable_advance();
  CHECK(g.sample(100, 0) == gate_open);
}

TEST_CASE("lag gate: a gate at rule 4's 1 us or inherited from the last owner enters the throttle at H like an open one",
          "[core][gate][pace]") {
  SECTION("1 us: a new owner that has not proven catch-up") {
    lag_gate g(policy());
    (void)g.on_acquired(gate_open);
    REQUIRE(g.sample(1000) == gate_exceeded);
    g.on_durable_advance();
    REQUIRE(g.sample(0) == std::optional<std::uint32_t>{1});  // reopened, no catch-up proven: rule 4
    CHECK(g.sample(750) == std::optional<std::uint32_t>{50'000});  // rule 3's delay, not 1 us
    CHECK_FALSE(g.sample(800, 400).has_value());                   // paced from there
    CHECK(g.stored() == 50'000);
  }
  SECTION("inherited") {
    lag_gate g(policy());
    CHECK_FALSE(g.on_acquired(40'000));
    CHECK(g.sample(750) == std::optional<std::uint32_t>{50'000});
  }
}

namespace {

using steady_time = std::chrono::steady_clock::time_point;

// A deterministic model of what the pace steers (decision 0060), stepped by 1 ms, shaped like the
// runner's pipeline: `writers` writers that each commit as fast as the gate's delay allows
// (writer_us of their own per commit); a reader that reads up to `chunk` entries and delivers them
// to a backend applying `capacity` entries/s, one delivery at a time; a barrier once the oldest
// accepted entry is `flush` old or `cap` deliveries wait to be made durable (the runner's
// accepted-ahead cap), taking `barrier_ms` and stopping deliveries meanwhile; the runner's
// readings, backlog forecast and lag (the age of the oldest entry not durable), sampled every
// millisecond as the runner samples every turn.
struct plant {
  plant(lag_gate& g, double cap_per_s, double writer_count = 1) : gate(g), capacity(cap_per_s), writers(writer_count) {
    (void)gate.on_acquired(gate_open);
    gate.on_durable_advance();
    gate.on_end_of_log();
  }

  void run(long ms) {
    for (long i = 0; i < ms; ++i) step();
  }

  void step() {
    now += milliseconds(1);
    const auto g = gate.stored();
    if (writing && gate_refuses(g)) ++refused_ms;
    if (writing && !gate_refuses(g)) {
      pending += writers * 1000.0 / (static_cast<double>(g) + writer_us);
      const auto made = static_cast<std::uint64_t>(pending);
      pending -= static_cast<double>(made);
      if (made > 0) {
        latest += made;
        ages.emplace_back(latest, now);
        bucket += made;
      }
    }
    if (now >= busy_until) {
      if (in_delivery > 0) {  // accepted
        accepted += in_delivery;
        in_delivery = 0;
        ++waiting;
        if (!accepted_since) accepted_since = now;
      }
      if (barrier) {  // done
        barrier = false;
        durable = accepted;
        waiting = 0;
        accepted_since.reset();
        gate.on_durable_advance();
        while (!ages.empty() && ages.front().first <= durable) ages.pop_front();
      }
      if (waiting > 0 && (waiting >= cap || now - *accepted_since >= flush)) {
        barrier = true;
        busy_until = now + milliseconds(barrier_ms);
      } else if (latest > read) {
        in_delivery = std::min<std::uint64_t>(chunk, latest - read);
        read += in_delivery;
        busy_until = now + std::chrono::microseconds(static_cast<long long>(static_cast<double>(in_delivery) * 1e6 / capacity));
        forecast.observe(now, read, latest - read);
        if (latest == read) gate.on_end_of_log();
      }
    }
    const std::uint64_t lag = ages.empty() ? 0 : static_cast<std::uint64_t>((now - ages.front().second) / milliseconds(1));
    if (counting) max_lag = std::max(max_lag, lag);
    (void)gate.sample(gate_input{lag, forecast.drain_ms(gate.policy().budget_ms()), forecast.last(), forecast.rate().value_or(0), now,
                                  forecast.busy_rate().value_or(0), forecast.busy_drain_ms(gate.policy().budget_ms())});
    if (++ticks % 100 == 0) {
      rates.push_back(static_cast<double>(bucket) * 10);
      bucket = 0;
    }
  }

  // Mean and coefficient of variation of the last `n` 100 ms rates.
  std::pair<double, double> last(std::size_t n) const {
    const auto from = rates.size() - std::min(n, rates.size());
    double sum = 0, squares = 0;
    for (auto i = from; i < rates.size(); ++i) {
      sum += rates[i];
      squares += rates[i] * rates[i];
    }
    const double count = static_cast<double>(rates.size() - from), mean = sum / count;
    return {mean, std::sqrt(std::max(0.0, squares / count - mean * mean)) / mean};
  }

  lag_gate& gate;
  double capacity, writers, writer_us = 5;
  std::uint64_t chunk = 1024, cap = 8, barrier_ms = 10;
  milliseconds flush{500};
  bool writing = true, counting = true;
  backlog_forecast forecast;
  steady_time now{}, busy_until{};
  std::optional<steady_time> accepted_since;  // the oldest accepted entry not durable: since when
  bool barrier = false;
  double pending = 0;
  std::uint64_t latest = 0, read = 0, in_delivery = 0, accepted = 0, waiting = 0, durable = 0, bucket = 0, ticks = 0,
                refused_ms = 0, max_lag = 0;
  std::deque<std::pair<std::uint64_t, steady_time>> ages;  // (last sequence of a commit batch, when)
  std::vector<double> rates;
};

}  // namespace

TEST_CASE("lag gate: the pace settles a writer that outruns the index near the index's rate, without refusals (decision 0060)",
          "[core][gate][pace]") {
  // B = 2000 ms, lag tick 500 ms. The writers alone: 50 000 commits/s, one of 20 us per commit or
  // four of 80 us (the pace scales one period; four writers make it off by four, corrected by the
  // next steps).
  const double writers = GENERATE(1.0, 4.0);
  CAPTURE(writers);
  lag_gate g(policy(2000, 100));
  plant p(g, 10'000, writers);
  p.writer_us = 20 * writers;
  // The first seconds: the writers ran free until the forecast knew a rate, a backlog of about 2 s
  // of the index's work, which the pace drains; counted from 3 s on.
  p.counting = false;
  p.run(3'000);
  p.counting = true;
  const auto refused_at_start = p.refused_ms;
  p.run(7'000);
  // The last 5 s: near the index's rate (the target stands 10 % below the capacity and probes up),
  // steady (the proportional rule swung between 1 us and D, a coefficient of variation above 1),
  // the lag well under B and no refusal.
  const auto [mean, cv] = p.last(50);
  CHECK(mean > 8'000);
  CHECK(mean < 11'500);
  CHECK(cv < 0.15);
  CHECK(p.refused_ms == refused_at_start);
  CHECK(p.max_lag < 1500);
  // The index becomes twice as fast: the probe finds it within seconds.
  p.capacity = 20'000;
  p.run(10'000);
  const auto [faster, faster_cv] = p.last(30);
  CHECK(faster > 17'000);
  CHECK(faster < 23'000);
  CHECK(faster_cv < 0.15);
  // And half as fast again: slowed, still no refusal.
  p.capacity = 10'000;
  p.run(10'000);
  const auto [slower, slower_cv] = p.last(30);
  CHECK(slower > 8'000);
  CHECK(slower < 11'500);
  CHECK(slower_cv < 0.15);
  CHECK(p.refused_ms == refused_at_start);
  CHECK(p.max_lag < 2000);
  // The writer stops: once everything is durable (a lag of 0) and the log did not grow for a lag
  // tick, the gate opens (caught up), and a writer slower than the index then runs free.
  p.writing = false;
  p.run(2'000);
  CHECK(g.stored() == gate_open);
  p.writing = true;
  p.writers = 0.1 * writers;  // 5 000 commits/s
  p.run(3'000);
  CHECK(g.stored() == gate_open);
}

TEST_CASE("lag gate: a writer a little faster than the index is paced near the index's rate, not held below it by the hysteresis",
          "[core][gate][pace]") {
  // The 10 % hysteresis of stored delays must not become a fixed point below the target: a writer
  // of 1.05 or 1.5 times the index's rate settles within 15 % of the index's rate.
  const double over = GENERATE(1.05, 1.5);
  CAPTURE(over);
  lag_gate g(policy(2000, 100));
  plant p(g, 10'000);
  p.writer_us = 1e6 / (10'000 * over);
  p.run(20'000);
  const auto [mean, cv] = p.last(50);
  CHECK(mean > 8'500);
  CHECK(mean < 11'000);
  CHECK(cv < 0.15);
}

TEST_CASE("lag gate: after a refusal the gate reopens at the pace, not open, and a new ownership measures again",
          "[core][gate][pace]") {
  lag_gate g(policy(2000, 100));
  plant p(g, 10'000);
  p.writer_us = 20;
  p.run(5'000);
  REQUIRE(g.capacity() > 9'000);
  // The lag reaches B: refused (rule 1); the durable advance after it reopens (rule 2) at the
  // pace's period, not at 0: with the lag's recent peak at B the target is the floor, 5 % of the
  // capacity, 1e6 / (0.05 x capacity) us per commit.
  const auto reading = p.forecast.last();
  REQUIRE(g.sample(gate_input{2000, 0, reading, 0, p.now}) == gate_exceeded);
  g.on_durable_advance();
  const auto reopened = g.sample(gate_input{100, 0, reading, 0, p.now});
  REQUIRE(reopened.has_value());
  CHECK(*reopened == static_cast<std::uint32_t>(std::ceil(1e6 / (0.05 * g.capacity()))));
  // The index reads the rest: still paced while anything is not durable (the writer may go on);
  // once all is durable (a lag of 0) the throttle ends: open, catch-up being proven.
  const log_reading all_read{p.now + milliseconds(100), reading->latest(), 0};
  (void)g.sample(gate_input{100, 0, all_read, 0, p.now + milliseconds(400)});
  CHECK(g.stored() != gate_open);
  CHECK_FALSE(gate_refuses(g.stored()));
  CHECK(g.sample(gate_input{0, 0, all_read, 0, p.now + milliseconds(500)}) == gate_open);
  // A new ownership knows nothing of the last one's pace.
  (void)g.on_acquired(g.stored());
  CHECK(g.capacity() == 0);
}

TEST_CASE("lag gate: a burst against an open gate is met within the slow index's first chunks, a fast index is not slowed (decision 0065)",
          "[core][gate][pace]") {
  // Phase (c) of dix bench sustained: B = 2000 ms (max_lag 1 s, max_flush_age 1 s), a turn of 256
  // transactions, the age barrier at 1 s; an unthrottled writer of 100 000 commits/s (or two at
  // 50 000 each) starts against an open gate with no history. With no rate known for the first
  // 100 ms the gate let a second of the index's work through and the lag reached 1.97 s, a
  // breath from the refusals at B.
  const double writers = GENERATE(1.0, 2.0);
  CAPTURE(writers);
  // The plant as (c) runs: 256 transactions a turn, the accepted-ahead cap of 64, the age barrier
  // at 1 s, `writers` sharing 100 000 commits/s.
  const auto as_phase_c = [writers](plant& q) {
    q.chunk = 256;
    q.cap = 64;
    q.flush = milliseconds(1000);
    q.writer_us = 10 * writers;
  };
  lag_gate g(policy(1000, 1000));
  plant p(g, 10'000, writers);
  as_phase_c(p);
  p.run(50);
  CHECK(g.stored() != gate_open);  // throttled within 50 ms: the busy entry
  CHECK(g.capacity() > 9'000);     // at the busy rate
  CHECK(g.capacity() < 11'000);
  p.run(100);
  CHECK(p.latest < 5'000);  // half a second of the index's work in 150 ms; without the busy entry 10 000 in 100 ms
  p.run(6'000);
  CHECK(p.refused_ms == 0);
  CHECK(p.max_lag < 1'300);
  const auto [mean, cv] = p.last(30);
  CHECK(mean > 8'000);
  CHECK(mean < 11'500);
  CHECK(cv < 0.15);

  // A fast index: it reads everything there is at each turn, a chunk of ~100 entries with next
  // to nothing left unread, so no busy run forms and the gate stays open. Also across a barrier
  // that stalls it for 150 ms (15 000 entries wait after it): the run begins after the stall, at
  // the rate the index reads when it has work, and that backlog is 60 ms of it. (Counting the
  // chunk in hand as waiting, the run spanned the stall, its rate was a quarter of the index's,
  // and the gate throttled the writer to 40 000 commits/s for seconds.)
  lag_gate fast_gate(policy(1000, 1000));
  plant fast(fast_gate, 1'000'000, writers);
  as_phase_c(fast);
  for (int i = 0; i < 30; ++i) {
    fast.barrier_ms = i == 10 ? 150 : 10;
    fast.run(100);
    CHECK(fast_gate.stored() == gate_open);
  }
  CHECK(fast.latest > 290'000);  // 100 000 commits/s throughout
}
