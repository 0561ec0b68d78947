// lag_gate: the owner's writer gate (protocol.md §13.3, §13.4) as a pure state machine. The
// runner core feeds it the moments that matter — this ownership's acquisition (with the value it
// inherited in the slot), each durable advance, each time the tailer reached the end of the log,
// the lag samples (§13.1) — and stores what it answers in the slot's lag_gate (formats.md §4.3):
// an answer is given only when the stored value must change. Time is not an input: the rules
// depend on the order of events only, so the machine is tested with plain calls.
//
// VALUES (the slot's lag_gate)
//
//   open (0) ──lag ≥ H──► throttled (1 … D µs) ──lag ≥ B──► exceeded (0xFFFFFFFF)
//      ▲                     │   ▲  (re-stored on ≥ 10 % change)      │
//      │ lag < H, catch-up   │   └── H ≤ lag < B, after a durable ────┘
//      └─ proven or open ────┘          advance since the trip
//
//   lag < H without proven catch-up: throttled at 1 µs (rule 4), never open; a forced open
//   (rebuild start, unavailable, …, §13.4) stores 0 whatever the lag.
//
// B = max(max_lag, 2 × max_flush_age) + min_barrier_interval, H = B / 2, D = max_write_delay.
// Rules 3 and 4 read the forecast lag + backlog (decision 0027) where §13.3 reads the lag: a
// forecast at or past B with the lag below it throttles at D.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

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

class lag_gate {
 public:
  explicit lag_gate(gate_policy p = {}) : policy_(p) {}

  // A new ownership. `inherited` is the slot's value as found: with a policy it stays (a
  // successor proves catch-up itself before opening it); without one the owner stores 0.
  std::optional<std::uint32_t> on_acquired(std::uint32_t inherited) noexcept;
  // The durable cursor moved forward / the tailer reported the end of the log, this ownership.
  void on_durable_advance() noexcept;
  void on_end_of_log() noexcept;
  // A lag sample (ms, protocol.md §13.1): rules 1–4. Nothing without a policy. `backlog_ms`
  // (decision 0027) is how long the unread backlog will take to read at the recent rate: rules 3
  // and 4 judge the forecast lag + backlog_ms, so a writer outrunning the index is throttled
  // while its backlog is still small; rule 1 (refusal) judges the lag itself.
  std::optional<std::uint32_t> sample(std::uint64_t lag_ms, std::uint64_t backlog_ms = 0) noexcept;
  // §13.4: store 0 unless it is stored already.
  std::optional<std::uint32_t> force_open() noexcept;

  std::uint32_t stored() const noexcept { return stored_; }
  bool caught_up() const noexcept { return advanced_ && reached_end_; }  // proven catch-up
  const gate_policy& policy() const noexcept { return policy_; }

 private:
  std::optional<std::uint32_t> store(std::uint32_t g) noexcept;

  gate_policy policy_;
  std::uint32_t stored_ = gate_open;  // what this ownership believes the slot holds
  // Event stamps (a counter, not a clock): rule 2 compares the last durable advance with the
  // later of the trip and the acquisition.
  std::uint64_t clock_ = 0, acquired_at_ = 0, tripped_at_ = 0, advanced_at_ = 0;
  bool advanced_ = false, reached_end_ = false;  // since this acquisition
};

}  // namespace dix
