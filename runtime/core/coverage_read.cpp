#include "core/coverage_read.hpp"

#include <algorithm>
#include <string>

namespace dix {

coverage_reading judge_loads(const coverage_loads& l, bool& settled) noexcept {
  coverage_reading r;
  r.state = l.state2;
  r.epoch = l.epoch2;
  settled = l.state1 == l.state2 && l.epoch1 == l.epoch2;
  if (settled && l.state2 == readiness_state::ready && l.coverage_time != 0) r.coverage_time = l.coverage_time;
  return r;
}

coverage time_path(const coverage_reading& r, std::uint64_t wall_now_ns, std::chrono::milliseconds tolerance) noexcept {
  coverage c;
  c.tolerance = tolerance;
  if (r.state != readiness_state::ready || !r.coverage_time) return c;
  const std::uint64_t t = *r.coverage_time;
  const std::uint64_t age_ns = wall_now_ns > t ? wall_now_ns - t : 0;  // a wall clock stepped back: 0
  const std::uint64_t age_ms = age_ns / 1'000'000 + (age_ns % 1'000'000 != 0 ? 1 : 0);
  c.lag_upper_bound = std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(age_ms));
  if (tolerance.count() > 0 && *c.lag_upper_bound <= tolerance) c.state = coverage_state::bounded;
  return c;
}

bool proves_current(const coverage_proof& proof, const std::map<std::string, std::uint64_t>& latest,
                    const coverage_reading& first, const coverage_reading& second) noexcept {
  if (first.state != readiness_state::ready || second.state != readiness_state::ready) return false;
  if (proof.epoch == 0 || proof.epoch != first.epoch || second.epoch != first.epoch) return false;
  for (const auto& [log, sequence] : latest) {
    if (sequence == 0) continue;
    auto it = proof.durable_end.find(log);
    if (it == proof.durable_end.end() || it->second < sequence) return false;
  }
  return true;
}

waiter_verdict judge_waiter(bool cancelled, const coverage_reading& r, index_time_t since, steady_point deadline,
                            steady_point now, bool rebuilds) noexcept {
  if (cancelled) return waiter_verdict::cancelled;
  if (r.state == readiness_state::ready && r.coverage_time && *r.coverage_time >= since) return waiter_verdict::covered;
  if (r.state == readiness_state::unavailable) return waiter_verdict::unavailable;
  const bool building = r.state == readiness_state::rebuilding || r.state == readiness_state::needs_rebuild;
  if (r.state == readiness_state::needs_rebuild && !rebuilds) return waiter_verdict::unavailable;
  if (now >= deadline) return building ? waiter_verdict::building : waiter_verdict::lagging;
  return waiter_verdict::waiting;
}

result<void> waiter_outcome(waiter_verdict v, const std::string& id, index_time_t since) {
  const std::string what = "wait_for_coverage(" + id + ", since " + std::to_string(since) + "): ";
  switch (v) {
    case waiter_verdict::covered: return {};
    case waiter_verdict::cancelled: return error{errc::cancelled, what + "cancelled"};
    case waiter_verdict::unavailable:
      return error{errc::unavailable, what + "the index is unavailable or needs a rebuild nothing will start: "
                                             "request one (dix rebuild)"};
    case waiter_verdict::building:
      return error{errc::rebuilding, what + "the index was still being built at the deadline (retry later)"};
    case waiter_verdict::lagging: return error{errc::index_lagging, what + "not covered by the deadline"};
    case waiter_verdict::waiting: break;
  }
  return error{errc::invalid_argument, what + "still waiting"};  // not an outcome; callers never ask
}

std::chrono::milliseconds sleep_bound(const std::vector<steady_point>& deadlines, steady_point now,
                                      std::chrono::milliseconds cap) noexcept {
  auto bound = cap;
  for (auto d : deadlines) {
    if (d <= now) return std::chrono::milliseconds(0);
    // Rounded up: a thread woken before its deadline would look once more for nothing.
    auto left = std::chrono::ceil<std::chrono::milliseconds>(d - now);
    bound = std::min(bound, left);
  }
  return std::max(bound, std::chrono::milliseconds(0));
}

result<void> check_wait_arguments(const char* who, index_time_t since, std::chrono::milliseconds timeout,
                                  std::chrono::milliseconds max_timeout) {
  if (since == 0) return error{errc::invalid_argument, std::string(who) + ": since must be an index time ≥ 1, not 0"};
  if (timeout.count() < 0 || timeout > max_timeout) {
    return error{errc::invalid_argument, std::string(who) + ": timeout " + std::to_string(timeout.count()) +
                                             " ms outside 0…" + std::to_string(max_timeout.count()) + " ms"};
  }
  return {};
}

std::optional<error> admission_refusal(const coverage& c, coverage_kind kind) {
  if (c.state == coverage_state::current) return std::nullopt;
  if (kind == coverage_kind::strict) {
    return error{errc::index_lagging, "strict query: the index is not proven current"};
  }
  if (c.state == coverage_state::bounded) return std::nullopt;
  std::string bound = c.lag_upper_bound ? std::to_string(c.lag_upper_bound->count()) + " ms" : "unknown";
  return error{errc::index_lagging, "bounded query: lag upper bound " + bound + " beyond the tolerance of " +
                                        std::to_string(c.tolerance.count()) + " ms"};
}

}  // namespace dix
