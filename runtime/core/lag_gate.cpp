#include "core/lag_gate.hpp"

#include <algorithm>
#include <cmath>

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

namespace {

// The pace's constants (decision 0060). A backlog counts as saturating the reader from 64 entries
// (and B/16 of reading time). The target stands at 90 % of the capacity with no backlog and no
// lag, and falls to 5 % (a backlog drains at once); a reader that keeps up with a writer at 80 % of
// the target or more raises the capacity by 1 % a step (the probe); one step moves the period by
// at most 4 either way (half the correction, in the log); with no capacity known yet the target is
// twice the reader's rate, and a reader that read nothing while the log grew counts as 16 times
// too slow.
constexpr std::uint64_t min_backlog_entries = backlog_forecast::busy_entries;  // the busy run's threshold too
constexpr double headroom_k = 0.9, min_k = 0.05, keeps_up = 0.8, probe_raise = 1.01, max_ratio = 16, stalled_ratio = 16;

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

double max_delay_us(const gate_policy& p) { return throttle_delay_us(p, p.budget_ms()); }  // D

}  // namespace

std::optional<std::uint32_t> lag_gate::store(std::uint32_t g) noexcept {
  if (g == stored_) return std::nullopt;
  if (g == gate_exceeded) tripped_at_ = ++clock_;
  stored_ = g;
  return g;
}

std::optional<std::uint32_t> lag_gate::store_delay(double delay) noexcept {
  const auto d = static_cast<std::uint32_t>(std::ceil(delay));
  const bool throttled = stored_ != gate_open && stored_ != gate_exceeded;
  if (throttled) {
    // Rule 3's hysteresis: re-stored only on a change of 10 % or more.
    const auto diff = d > stored_ ? d - stored_ : stored_ - d;
    if (10 * static_cast<std::uint64_t>(diff) < static_cast<std::uint64_t>(stored_)) return std::nullopt;
  }
  return store(d);
}

std::optional<std::uint32_t> lag_gate::on_acquired(std::uint32_t inherited) noexcept {
  acquired_at_ = ++clock_;
  advanced_ = reached_end_ = false;
  stepped_.reset();
  quiet_since_.reset();
  peaks_ = {0, 0};
  pacing_ = guarded_ = false;
  capacity_ = 0;
  // A value read as exceeded counts as one (formats.md §4.3); its trip is at the latest now.
  stored_ = gate_refuses(inherited) ? gate_exceeded : inherited;
  if (stored_ == gate_exceeded) tripped_at_ = acquired_at_;
  delay_ = stored_ == gate_exceeded ? 0 : stored_;
  if (!policy_.on()) return store(gate_open);  // §13.3: an owner without a policy stores 0
  return std::nullopt;
}

void lag_gate::on_durable_advance() noexcept {
  advanced_at_ = ++clock_;
  advanced_ = true;
}

void lag_gate::on_end_of_log() noexcept { reached_end_ = true; }

std::uint64_t lag_gate::lag_peak() const noexcept { return std::max(peaks_[0], peaks_[1]); }

double lag_gate::target_rate(std::uint64_t backlog_ms) const noexcept {
  if (capacity_ <= 0) return 0;
  const double budget = std::max(static_cast<double>(policy_.budget_ms()), 1.0);
  // Below the capacity by `headroom`, so the reader keeps up and its chunks stay small; lower as
  // the backlog's reading time grows (to the floor at B/2), and as the lag's recent peak (the top
  // of its flush sawtooth) passes 5B/8 (to the floor at 7B/8): a backlog drains, and the lag the
  // backlog does not show (slow barriers) stays clear of the refusals at B.
  const double by_backlog = headroom_k - (headroom_k - min_k) * static_cast<double>(backlog_ms) / (budget / 2);
  const double by_lag = headroom_k - (headroom_k - min_k) * (static_cast<double>(lag_peak()) - 5 * budget / 8) / (budget / 4);
  return capacity_ * std::clamp(std::min(by_backlog, by_lag), min_k, headroom_k);
}

std::uint32_t lag_gate::entry_delay(std::uint64_t forecast_ms, std::uint64_t backlog_ms) const noexcept {
  // With a capacity known, the period that meets the target (one writer; the next step scales it
  // for more); else rule 3's proportional delay.
  const double w = target_rate(backlog_ms);
  if (w <= 0) return throttle_delay_us(policy_, forecast_ms);
  const double d = 1e6 / w;
  return static_cast<std::uint32_t>(std::clamp(std::ceil(d), 1.0, max_delay_us(policy_)));
}

void lag_gate::pace_step(const gate_input& in) noexcept {
  if (!in.logs) return;
  const auto& now = *in.logs;
  const auto spacing = std::min<std::chrono::milliseconds>(pace_spacing, std::chrono::milliseconds(policy_.lag_tick_ms()));
  if (stepped_ && (now.at < stepped_->at + spacing)) return;
  const auto before = stepped_;
  stepped_ = now;
  // The first reading, the logs installed again (positions going back) or a silence longer than a
  // second (a stall, a rebuild, a forced open): a new history.
  if (!before || now.read < before->read || now.latest() < before->latest() ||
      now.at > before->at + backlog_forecast::window) {
    return;
  }
  const double dt = seconds(now.at - before->at);
  const double growth = static_cast<double>(now.latest() - before->latest()) / dt;
  // The reader's rate over about a second (a step's own jumps with each chunk). The first
  // estimate takes the larger of the two: at a writer's start the second is diluted by idle time,
  // and an estimate too low would only be probed up by 1 % a step.
  const double step_read = static_cast<double>(now.read - before->read) / dt;
  const double window_read = static_cast<double>(in.read_per_s);
  const double read = capacity_ > 0 && window_read > 0 ? window_read : std::max(window_read, step_read);
  if (read > 0 && now.unread >= min_backlog_entries && 16 * in.backlog_ms >= policy_.budget_ms()) {
    // Saturated: a backlog of B/16 or more waited (and more than a few entries: at a trickle one
    // entry unread is a long reading time), so the reader read as fast as the index goes. A
    // moving average, at most doubling a step.
    capacity_ = capacity_ > 0 ? std::min((3 * capacity_ + read) / 4, 2 * capacity_) : read;
  } else if (capacity_ > 0 && in.backlog_ms == 0 && now.unread <= before->unread && 8 * lag_peak() < 5 * policy_.budget_ms() &&
             growth >= keeps_up * headroom_k * capacity_) {
    // The probe: the reader kept up (no backlog, none growing, a low lag) with a writer near the
    // target it has without a backlog: the index may go faster.
    capacity_ *= probe_raise;
  }
  if (!pacing_ || stored_ == gate_exceeded || growth <= 0) return;  // nothing to steer
  double ratio;
  if (const double w = target_rate(in.backlog_ms); w > 0) {
    ratio = growth / w;
  } else if (read > 0) {
    ratio = growth / (2 * read);  // no capacity yet: probe at twice the reader's rate
  } else {
    ratio = stalled_ratio;
  }
  // Half the correction (in the log) per step: the lag answers a step late, through the flush
  // cycle. The period scaled is the pace's own (the stored value lags it by up to 10 %, so scaling
  // that would stall small corrections), or the guard's when that held the writer.
  const double factor = std::sqrt(std::clamp(ratio, 1 / max_ratio, max_ratio));
  const double seen = guarded_ ? static_cast<double>(stored_) : delay_;
  delay_ = std::clamp(seen * factor, 1.0, max_delay_us(policy_));
}

std::optional<std::uint32_t> lag_gate::sample(const gate_input& in) noexcept {
  if (!policy_.on()) return std::nullopt;
  const std::uint64_t b = policy_.budget_ms();
  const double d_max = max_delay_us(policy_);
  // The lag's peak over the last B/4 … B/2.
  if (in.now >= peak_from_ + std::chrono::milliseconds(std::max<std::uint64_t>(1, b / 4))) {
    peaks_ = {peaks_[1], 0};
    peak_from_ = in.now;
  }
  peaks_[1] = std::max(peaks_[1], in.lag_ms);
  pace_step(in);
  if (in.logs && (!quiet_since_ || in.logs->latest() != seen_latest_)) {
    seen_latest_ = in.logs->latest();
    quiet_since_ = in.now;
  }
  // Rule 1: refusals judge the lag alone.
  if (in.lag_ms >= b) return store(gate_exceeded);
  const std::uint64_t forecast = in.lag_ms + std::min(in.backlog_ms, b);
  // Rule 2: only a durable advance after the later of the trip and this acquisition reopens it.
  if (stored_ == gate_exceeded) {
    if (advanced_at_ <= std::max(tripped_at_, acquired_at_)) return std::nullopt;
    // Reopened to the throttle at the pace's period (else rule 3's delay). The refused writers did
    // not stop: they get a lag tick to come back before the throttle may end as idle.
    delay_ = entry_delay(forecast, in.backlog_ms);
    quiet_since_ = in.now;
    pacing_ = true;
  }
  const bool below_h = 2 * forecast < b;
  if (!pacing_) {
    // Not paced by this ownership: open, rule 4's 1 µs, or a delay inherited from the last owner.
    // Below H rule 4 decides, unless the reader is busy and B/16 of reading time waits (decision
    // 0065); at H the throttle (and the pace) begins.
    const bool behind = in.busy_backlog_ms > 0 && 16 * in.busy_backlog_ms >= b;  // 0 outside a busy run
    if (below_h && !behind) return stored_ == gate_open ? std::nullopt : store(caught_up() ? gate_open : 1);
    if (capacity_ <= 0 && in.busy_per_s > 0) capacity_ = static_cast<double>(in.busy_per_s);
    delay_ = entry_delay(forecast, std::max(in.backlog_ms, in.busy_backlog_ms));
    pacing_ = true;
    guarded_ = false;
    return store_delay(delay_);
  }
  // Throttled (or reopened from exceeded). It ends below H with nothing unread, once the pace came
  // down to 1 µs or the writer is gone: a lag of 0 (everything written is durable, §13.1) and a
  // log that did not grow for a lag tick. Neither alone: right after a barrier a paced writer's
  // lag is 0 for a moment, and a reader stopped at the accepted-ahead cap reads nothing while the
  // writer goes on. Open with proven catch-up, else 1 µs (rule 4).
  const bool nothing_unread = !in.logs || in.logs->unread == 0;
  const bool idle = in.lag_ms == 0 && (!quiet_since_ || in.now >= *quiet_since_ + std::chrono::milliseconds(policy_.lag_tick_ms()));
  if (below_h && nothing_unread && (delay_ <= 1 || idle)) {
    delay_ = 0;
    pacing_ = false;
    return store(caught_up() ? gate_open : 1);
  }
  // The guard: past 7B/8 the lag forces the stored delay up, to D at B; the pace keeps its own.
  delay_ = std::max(delay_, 1.0);
  double floor = 0;
  if (8 * in.lag_ms > 7 * b) floor = std::min(d_max, d_max * static_cast<double>(8 * in.lag_ms - 7 * b) / static_cast<double>(b));
  guarded_ = floor > delay_;
  return store_delay(std::max(delay_, floor));
}

std::optional<std::uint32_t> lag_gate::force_open() noexcept {
  delay_ = 0;
  pacing_ = guarded_ = false;
  stepped_.reset();
  return store(gate_open);
}

}  // namespace dix
