// Time sources for the pure cores (protocol.md §1.1). Cores take `now` as a value; whoever
// drives them reads it from a clock: system_clock() in production, manual_clock in core tests.
// There is no public clock.
#pragma once

#include <chrono>
#include <cstdint>

namespace dix {

class clock {
 public:
  using steady_time = std::chrono::steady_clock::time_point;
  virtual ~clock() = default;
  // Monotonic time for timers and ages.
  virtual steady_time steady_now() const noexcept = 0;
  // Wall time, ns since the Unix epoch; compared with index times only.
  virtual std::uint64_t wall_now_ns() const noexcept = 0;
};

// The process's real clocks. Thread-safe.
clock& system_clock() noexcept;

// A clock that moves only when told to. Not thread-safe; for tests of the cores.
class manual_clock final : public clock {
 public:
  explicit manual_clock(std::uint64_t wall_ns = 1'000'000'000'000'000'000ull) : wall_ns_(wall_ns) {}
  steady_time steady_now() const noexcept override { return steady_; }
  std::uint64_t wall_now_ns() const noexcept override { return wall_ns_; }
  // Moves both clocks forward by d.
  void advance(std::chrono::nanoseconds d) noexcept {
    steady_ += d;
    wall_ns_ += static_cast<std::uint64_t>(d.count());
  }
  // Sets the wall clock alone (it may jump backwards, as a real one can).
  void set_wall_ns(std::uint64_t wall_ns) noexcept { wall_ns_ = wall_ns; }

 private:
  steady_time steady_{};
  std::uint64_t wall_ns_;
};

}  // namespace dix
