#include <catch2/catch.hpp>

#include "core/coverage_read.hpp"

using namespace dix;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t ms = 1'000'000;  // ns
constexpr index_time_t t0 = 1'700'000'000'000'000'000ull;

coverage_reading ready_at(index_time_t t, epoch_t e = 7) { return coverage_reading{readiness_state::ready, e, t}; }

}  // namespace

TEST_CASE("coverage double read: an attempt settles only when both pairs agree, and only ready with a time gives one", "[core][coverage]") {
  bool settled = false;
  auto r = judge_loads({readiness_state::ready, 3, t0, readiness_state::ready, 3}, settled);
  CHECK(settled);
  CHECK(r.coverage_time == t0);
  r = judge_loads({readiness_state::ready, 3, t0, readiness_state::rebuilding, 3}, settled);
  CHECK_FALSE(settled);
  CHECK_FALSE(r.coverage_time);
  CHECK(r.state == readiness_state::rebuilding);
  r = judge_loads({readiness_state::ready, 3, t0, readiness_state::ready, 4}, settled);
  CHECK_FALSE(settled);
  CHECK_FALSE(r.coverage_time);
  r = judge_loads({readiness_state::ready, 3, 0, readiness_state::ready, 3}, settled);
  CHECK(settled);
  CHECK_FALSE(r.coverage_time);  // 0 = none
  r = judge_loads({readiness_state::unavailable, 3, t0, readiness_state::unavailable, 3}, settled);
  CHECK(settled);
  CHECK_FALSE(r.coverage_time);
}

TEST_CASE("read_coverage time path: unknown when not ready, bounded within a positive tolerance, the age as lag bound", "[core][coverage]") {
  auto c = time_path(coverage_reading{readiness_state::rebuilding, 2, std::nullopt}, t0, 3000ms);
  CHECK(c.state == coverage_state::unknown);
  CHECK_FALSE(c.lag_upper_bound);
  CHECK(c.tolerance == 3000ms);
  c = time_path(ready_at(t0), t0 + 100 * ms, 3000ms);
  CHECK(c.state == coverage_state::bounded);
  CHECK(c.lag_upper_bound == 100ms);
  c = time_path(ready_at(t0), t0 + 100 * ms + 1, 100ms);  // rounded up: 101 ms > 100 ms
  CHECK(c.state == coverage_state::unknown);
  CHECK(c.lag_upper_bound == 101ms);
  c = time_path(ready_at(t0), t0 + 100 * ms, 100ms);
  CHECK(c.state == coverage_state::bounded);
  c = time_path(ready_at(t0), t0, 0ms);  // tolerance 0 (strict) is never bounded
  CHECK(c.state == coverage_state::unknown);
  CHECK(c.lag_upper_bound == 0ms);
  c = time_path(coverage_reading{readiness_state::ready, 2, std::nullopt}, t0, 3000ms);
  CHECK(c.state == coverage_state::unknown);
  CHECK_FALSE(c.lag_upper_bound);
}

TEST_CASE("read_coverage time path: a wall clock stepped back clamps the age to 0", "[core][coverage]") {
  auto c = time_path(ready_at(t0), t0 - 5000 * ms, 1ms);
  CHECK(c.state == coverage_state::bounded);
  CHECK(c.lag_upper_bound == 0ms);
}

TEST_CASE("read_coverage current: every log's durable end at or past its latest sequence under one unchanged epoch", "[core][coverage]") {
  coverage_proof p{7, {{"main", 40}, {"side", 9}}};
  auto r = ready_at(t0, 7);
  CHECK(proves_current(p, {{"main", 40}, {"side", 9}}, r, r));
  CHECK(proves_current(p, {{"main", 12}, {"side", 0}}, r, r));
  CHECK_FALSE(proves_current(p, {{"main", 41}, {"side", 9}}, r, r));   // a commit not yet durable
  CHECK_FALSE(proves_current(p, {{"other", 1}}, r, r));                // a log the proof lacks
  CHECK(proves_current(coverage_proof{7, {}}, {{"other", 0}}, r, r));  // no writes: nothing to cover
  CHECK_FALSE(proves_current(coverage_proof{6, p.durable_end}, {{"main", 1}}, r, r));  // another owner's
  CHECK_FALSE(proves_current(p, {{"main", 1}}, r, ready_at(t0, 8)));   // the epoch moved between the reads
  CHECK_FALSE(proves_current(p, {{"main", 1}}, r, coverage_reading{readiness_state::rebuilding, 7, std::nullopt}));
  CHECK_FALSE(proves_current(coverage_proof{0, {}}, {}, ready_at(t0, 0), ready_at(t0, 0)));
}

TEST_CASE("coverage waiter: protocol.md §12.6's order, so a proof present at the deadline succeeds", "[core][coverage]") {
  const steady_point now{std::chrono::seconds(100)};
  const auto later = now + 1s;
  const index_time_t since = t0;
  CHECK(judge_waiter(true, ready_at(since), since, later, now) == waiter_verdict::cancelled);
  CHECK(judge_waiter(false, ready_at(since), since, now, now) == waiter_verdict::covered);
  CHECK(judge_waiter(false, ready_at(since + 1), since, later, now) == waiter_verdict::covered);
  CHECK(judge_waiter(false, ready_at(since - 1), since, later, now) == waiter_verdict::waiting);
  CHECK(judge_waiter(false, ready_at(since - 1), since, now, now) == waiter_verdict::lagging);
  CHECK(judge_waiter(false, {readiness_state::rebuilding, 1, std::nullopt}, since, now, now) == waiter_verdict::rebuilding);
  CHECK(judge_waiter(false, {readiness_state::needs_rebuild, 1, std::nullopt}, since, later, now) == waiter_verdict::unavailable);
  CHECK(judge_waiter(false, {readiness_state::unavailable, 1, std::nullopt}, since, later, now) == waiter_verdict::unavailable);
  CHECK(judge_waiter(false, {readiness_state::unknown, 0, std::nullopt}, since, later, now) == waiter_verdict::waiting);
  CHECK(judge_waiter(false, {readiness_state::unknown, 0, std::nullopt}, since, now, now) == waiter_verdict::lagging);
  CHECK(waiter_outcome(waiter_verdict::covered, "idx", since));
  CHECK(waiter_outcome(waiter_verdict::lagging, "idx", since).error().value() == errc::index_lagging);
  CHECK(is_retryable(errc::index_lagging));
  CHECK(waiter_outcome(waiter_verdict::rebuilding, "idx", since).error().value() == errc::rebuilding);
  CHECK(waiter_outcome(waiter_verdict::unavailable, "idx", since).error().value() == errc::unavailable);
  CHECK(waiter_outcome(waiter_verdict::cancelled, "idx", since).error().value() == errc::cancelled);
}

TEST_CASE("coverage waiter: the sleep lasts until the nearest deadline, capped", "[core][coverage]") {
  const steady_point now{std::chrono::seconds(100)};
  CHECK(sleep_bound({}, now, 1000ms) == 1000ms);
  CHECK(sleep_bound({now + 250ms, now + 40ms}, now, 1000ms) == 40ms);
  CHECK(sleep_bound({now + 5s}, now, 1000ms) == 1000ms);
  CHECK(sleep_bound({now + std::chrono::microseconds(1500)}, now, 1000ms) == 2ms);  // rounded up
  CHECK(sleep_bound({now - 1ms}, now, 1000ms) == 0ms);
}

TEST_CASE("wait_for_coverage arguments: since 0 and a timeout above the limit are invalid_argument naming the field", "[core][coverage]") {
  CHECK(check_wait_arguments("w", 1, 0ms, 30000ms));
  CHECK(check_wait_arguments("w", 1, 30000ms, 30000ms));
  auto e = check_wait_arguments("w", 0, 10ms, 30000ms);
  REQUIRE_FALSE(e);
  CHECK(e.error().value() == errc::invalid_argument);
  CHECK_THAT(e.error().message(), Catch::Contains("since"));
  e = check_wait_arguments("w", 1, 30001ms, 30000ms);
  REQUIRE_FALSE(e);
  CHECK_THAT(e.error().message(), Catch::Contains("timeout 30001 ms outside 0…30000 ms"));
  CHECK_FALSE(check_wait_arguments("w", 1, -1ms, 30000ms));
  CHECK_FALSE(check_wait_arguments("w", 1, free_wait_max_timeout + 1ms, free_wait_max_timeout));
}

TEST_CASE("query admission: strict needs current, bounded current or bounded, else retryable index_lagging", "[core][coverage]") {
  coverage current{coverage_state::current, 3000ms, 0ms};
  coverage bounded{coverage_state::bounded, 3000ms, 20ms};
  coverage unknown{coverage_state::unknown, 3000ms, 4000ms};
  CHECK_FALSE(admission_refusal(current, coverage_kind::strict));
  CHECK_FALSE(admission_refusal(current, coverage_kind::bounded));
  CHECK_FALSE(admission_refusal(bounded, coverage_kind::bounded));
  auto refused = admission_refusal(bounded, coverage_kind::strict);
  REQUIRE(refused);
  CHECK(refused->value() == errc::index_lagging);
  refused = admission_refusal(unknown, coverage_kind::bounded);
  REQUIRE(refused);
  CHECK(refused->value() == errc::index_lagging);
  CHECK_THAT(refused->message(), Catch::Contains("4000 ms") && Catch::Contains("3000 ms"));
}
