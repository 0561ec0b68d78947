// lag_gate: the owner's writer gate (protocol.md §13.3, §13.4; decisions 0027, 0060) as a pure
// state machine. The runner core feeds it the moments that matter — this ownership's acquisition
// (with the value it inherited in the slot), each durable advance, each time the tailer reached
// the end of the log, the samples (the lag of §13.1, the backlog's reading time, the newest
// reading of the logs, the time) — and stores what it answers in the slot's lag_gate (formats.md
// §4.3): an answer is given only when the stored value must change. Time comes in with the
// samples, so the machine is tested with plain calls.
//
// VALUES (the slot's lag_gate)
//
//   open (0) ──forecast ≥ H──► throttled (1 … D µs, paced) ──lag ≥ B──► exceeded (0xFFFFFFFF)
//      ▲                          │   ▲                                  │
//      │ forecast < H, nothing    │   └── a durable advance since the ───┘
//      │ unread, and the pace at  │       trip: the pace's delay (rule 3's
//      │ 1 µs or the writer gone  │       until a capacity is known)
//      └──────────────────────────┘
//      (proven catch-up; 1 µs until then, never open; a forced open stores 0 whatever the lag)
//
// B = max(max_lag, 2 × max_flush_age) + min_barrier_interval, H = B / 2, D = max_write_delay.
//
// THE PACE (decision 0060). §13.3 rule 3 made the delay a function of the lag: the lag of a busy
// index is a sawtooth of its flush cycle, so the delay swung between 1 µs and D within a cycle
// and the writer with it (a bang-bang). A throttled gate now keeps its delay and steers it, as
// RocksDB's write controller steers its delayed write rate:
//  * at each new reading of the logs, at least min(pace_spacing, lag tick) apart (one over a
//    second after the last starts again), it measures the log's growth (the commit rate, in
//    sequences) and the reader's rate over about a second;
//  * while a backlog of B/16 or more (and 64 entries or more) waits, the reader is saturated and
//    its rate is the index's capacity (a moving average); while the reader keeps up (no backlog,
//    none growing, the lag's peak under 5B/8) with a writer at 80 % of 0.9 × capacity or more,
//    the capacity rises by 1 % a step (the probe);
//  * target = capacity × k: k is 0.9 with no backlog and no lag, so the reader keeps up and its
//    batches stay small, and falls to 0.05 as the backlog's reading time reaches B/2 or the lag's
//    peak over the last B/4 … B/2 goes from 5B/8 to 7B/8 (a backlog drains at once); twice the
//    reader's rate while no capacity is known;
//  * the pace's delay is scaled by √(growth ÷ target) (half the correction, in the log, at most
//    fourfold a step): the lag answers a step late, through the flush cycle.
// Entering the throttle (from open, rule 4's 1 µs or an inherited delay), and reopening after a
// refusal, take the target's period (rule 3's proportional delay until a capacity is known).
// THE BUSY ENTRY (decision 0065): a reader busy over its last readings (backlog_forecast's busy
// run) with B/16 or more of reading time unread at its busy rate enters the throttle too, below
// H, and its busy rate is the capacity until the pace measures one: an unthrottled writer's burst
// is met within a slow index's first chunks, before it is a second of the index's work. A lag
// past 7B/8 holds the stored delay up to D at B (the pace keeps its own). Refusals (rule 1) and
// their reopening (rule 2) are unchanged. The throttle ends below H with nothing unread once the
// pace came down to 1 µs, or the writer is gone (a lag of 0 and a log that did not grow for a lag
// tick). The write gate sleeps delays under 1 ms a millisecond at a time (adapters/write_gate).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>

#include "core/backlog_forecast.hpp"

namespace dix {

inline constexpr std::uint32_t gate_open = 0;
inline constexpr std::uint32_t gate_exceeded = 0xFFFFFFFFu;
inline constexpr std::uint32_t max_gate_delay_us = 1'000'000;  // formats.md §4.3: 1 … 1 000 000

// What the gate of one registration is sized by (protocol.md §13.3, §16).
struct gate_policy {
  std::chrono::milliseconds max_lag{0};                // 0: no policy (the owner stores 0)
  std::chrono::milliseconds max_flush_age{1000};
  std::chrono::milliseconds min_barrier_interval{0};   // the backend's (api.md §5)
  std::chrono::milliseconds max_write_delay{100};      // runtime-wide
  bool on() const noexcept { return max_lag.count() > 0; }
  std::uint64_t budget_ms() const noexcept;    // B
  std::uint64_t lag_tick_ms() const noexcept;  // min(1000, max(1, B / 4))
};

// Rule 3's delay for a lag in [H, B): clamp(ceil(D × (lag − H) / (B − H)), 1, D) µs.
std::uint32_t throttle_delay_us(const gate_policy& p, std::uint64_t lag_ms) noexcept;

// Whether a value read in the slot refuses writes (formats.md §4.3: anything above 1 000 000 is
// read as exceeded).
constexpr bool gate_refuses(std::uint32_t g) noexcept { return g > max_gate_delay_us; }

// One sample of the gate (protocol.md §13.3, decisions 0027 and 0060).
struct gate_input {
  std::uint64_t lag_ms = 0;      // §13.1
  std::uint64_t backlog_ms = 0;  // how long the unread backlog takes to read (backlog_forecast::drain_ms)
  std::optional<log_reading> logs;  // the newest reading of the owner's logs; none: no pace
  std::uint64_t read_per_s = 0;      // the reader's rate over about a second (backlog_forecast::rate); 0: unknown
  std::chrono::steady_clock::time_point now{};
  std::uint64_t busy_per_s = 0;       // the reader's rate over its busy run (backlog_forecast::busy_rate); 0: none
  std::uint64_t busy_backlog_ms = 0;  // the unread backlog at that rate (backlog_forecast::busy_drain_ms)
};

class lag_gate {
 public:
  // The pace's steps are at least this far apart (at most the lag tick).
  static constexpr std::chrono::milliseconds pace_spacing{100};

  explicit lag_gate(gate_policy p = {}) : policy_(p) {}

  // A new ownership. `inherited` is the slot's value as found: with a policy it stays (a
  // successor proves catch-up itself before opening it); without one the owner stores 0.
  std::optional<std::uint32_t> on_acquired(std::uint32_t inherited) noexcept;
  // The durable cursor moved forward / the tailer reported the end of the log, this ownership.
  void on_durable_advance() noexcept;
  void on_end_of_log() noexcept;
  // A sample: rules 1–4 with the pace. Nothing without a policy. `backlog_ms` (decision 0027) is
  // how long the unread backlog will take to read at the recent rate: entering the throttle and
  // ending it judge the forecast lag + backlog_ms, so a writer outrunning the index is throttled
  // while its backlog is still small; rule 1 (refusal) judges the lag itself.
  std::optional<std::uint32_t> sample(const gate_input& in) noexcept;
  // A sample without readings of the logs: no pace step, and the writer counts as idle.
  std::optional<std::uint32_t> sample(std::uint64_t lag_ms, std::uint64_t backlog_ms = 0) noexcept {
    return sample(gate_input{lag_ms, backlog_ms, std::nullopt, 0, {}});
  }
  // §13.4: store 0 unless it is stored already.
  std::optional<std::uint32_t> force_open() noexcept;

  std::uint32_t stored() const noexcept { return stored_; }
  // The index's capacity the pace measured (log entries read per second while saturated); 0:
  // not known yet this ownership.
  double capacity() const noexcept { return capacity_; }
  bool caught_up() const noexcept { return advanced_ && reached_end_; }  // proven catch-up
  const gate_policy& policy() const noexcept { return policy_; }

 private:
  std::optional<std::uint32_t> store(std::uint32_t g) noexcept;
  std::optional<std::uint32_t> store_delay(double delay) noexcept;  // with rule 3's 10 % hysteresis
  std::uint64_t lag_peak() const noexcept;
  void pace_step(const gate_input& in) noexcept;
  double target_rate(std::uint64_t backlog_ms) const noexcept;  // 0: no target known
  std::uint32_t entry_delay(std::uint64_t forecast_ms, std::uint64_t backlog_ms) const noexcept;

  gate_policy policy_;
  std::uint32_t stored_ = gate_open;  // what this ownership believes the slot holds
  // Event stamps (a counter, not a clock): rule 2 compares the last durable advance with the
  // later of the trip and the acquisition.
  std::uint64_t clock_ = 0, acquired_at_ = 0, tripped_at_ = 0, advanced_at_ = 0;
  bool advanced_ = false, reached_end_ = false;  // since this acquisition
  // The pace (decision 0060), this ownership's: whether it paces (from entering the throttle, or
  // reopening after a refusal, to the throttle's end), whether the guard set the stored delay,
  // the reading of the last step, the index's capacity (sequences/s), the delay it steers (µs).
  bool pacing_ = false, guarded_ = false;
  std::optional<log_reading> stepped_;
  // The lag's peak in the previous and the current window of B/4, and when the current one began.
  std::array<std::uint64_t, 2> peaks_{};
  std::chrono::steady_clock::time_point peak_from_{};
  double capacity_ = 0, delay_ = 0;
  // Since when the log has not grown (the writer's last sign), and its length then.
  std::optional<std::chrono::steady_clock::time_point> quiet_since_;
  std::uint64_t seen_latest_ = 0;
};

}  // namespace dix
