#include "core/lag_gate.hpp"

#include <algorithm>

namespace dix {

std::uint64_t gate_policy::budget_ms() const noexcept {
  const auto lag = static_cast<std::uint64_t>(std::max<std::int64_t>(0, max_lag.count()));
  const auto flush = static_cast<std::uint64_t>(std::max<std::int64_t>(0, max_flush_age.count()));
  const auto spacing = static_cast<std::uint64_t>(std::max<std::int64_t>(0, min_barrier_interval.count()));
  return std::max(lag, 2 * flush) + spacing;
}

std::uint64_t gate_policy::lag_tick_ms() const noexcept {
  return std::min<std::uint64_t>(1000, std::max<std::uint64_t>(1, budget_ms() / 4));
}

std::uint32_t throttle_delay_us(const gate_policy& p, std::uint64_t lag_ms) noexcept {
  const std::uint64_t d = static_cast<std::uint64_t>(std::clamp<std::int64_t>(p.max_write_delay.count(), 1, 1000)) * 1000;
  const std::uint64_t b = p.budget_ms();
  // (lag − H) / (B − H) with H = B / 2 is (2·lag − B) / B: exact in integers.
  std::uint64_t delay = 1;
  if (b > 0 && 2 * lag_ms > b) {
    const std::uint64_t num = d * (2 * lag_ms - b);
    delay = (num + b - 1) / b;  // ceil
  }
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>(delay, 1, d));
}

std::optional<std::uint32_t> lag_gate::store(std::uint32_t g) noexcept {
  if (g == stored_) return std::nullopt;
  if (g == gate_exceeded) tripped_at_ = ++clock_;
  stored_ = g;
  return g;
}

std::optional<std::uint32_t> lag_gate::on_acquired(std::uint32_t inherited) noexcept {
  acquired_at_ = ++clock_;
  advanced_ = reached_end_ = false;
  // A value read as exceeded counts as one (formats.md §4.3); its trip is at the latest now.
  stored_ = gate_refuses(inherited) ? gate_exceeded : inherited;
  if (stored_ == gate_exceeded) tripped_at_ = acquired_at_;
  if (!policy_.on()) return store(gate_open);  // §13.3: an owner without a policy stores 0
  return std::nullopt;
}

void lag_gate::on_durable_advance() noexcept {
  advanced_at_ = ++clock_;
  advanced_ = true;
}

void lag_gate::on_end_of_log() noexcept { reached_end_ = true; }

std::optional<std::uint32_t> lag_gate::sample(std::uint64_t lag_ms, std::uint64_t backlog_ms) noexcept {
  if (!policy_.on()) return std::nullopt;
  const std::uint64_t b = policy_.budget_ms();
  // Rule 1: refusals judge the lag alone.
  if (lag_ms >= b) return store(gate_exceeded);
  // Rule 2: only a durable advance after the later of the trip and this acquisition reopens it.
  if (stored_ == gate_exceeded && advanced_at_ <= std::max(tripped_at_, acquired_at_)) return std::nullopt;
  // Rules 3 and 4 judge the forecast (decision 0027); at or past B it throttles at D (the delay's
  // clamp), since the lag itself is below B.
  const std::uint64_t forecast = lag_ms + std::min(backlog_ms, b);
  // Rule 3 (2·forecast ≥ B is forecast ≥ H exactly).
  if (2 * forecast >= b) {
    const auto delay = throttle_delay_us(policy_, forecast);
    const bool throttled = stored_ != gate_open && stored_ != gate_exceeded;
    if (throttled) {
      const auto diff = delay > stored_ ? delay - stored_ : stored_ - delay;
      if (10 * static_cast<std::uint64_t>(diff) < static_cast<std::uint64_t>(stored_)) return std::nullopt;
    }
    return store(delay);
  }
  // Rule 4.
  if (stored_ == gate_open || caught_up()) return store(gate_open);
  return store(1);
}

std::optional<std::uint32_t> lag_gate::force_open() noexcept { return store(gate_open); }

}  // namespace dix
