// The index-time counter (formats.md §1.4): v = max(wall_ns, last + 1), stored back with
// compare-and-swap, so every value is strictly greater than every earlier one. One instance is
// process-wide (shared by all primary stores); tests make their own.
#pragma once

#include <atomic>
#include <cstdint>

namespace dix {

class index_time_source {
 public:
  // Draws the next index time. Thread-safe, lock-free.
  std::uint64_t next(std::uint64_t wall_ns) noexcept {
    auto last = last_.load(std::memory_order_relaxed);
    for (;;) {
      auto v = wall_ns > last ? wall_ns : last + 1;
      if (last_.compare_exchange_weak(last, v, std::memory_order_acq_rel)) return v;
    }
  }
  // Raises the floor so every later draw exceeds `at_least`.
  void raise_floor(std::uint64_t at_least) noexcept {
    auto last = last_.load(std::memory_order_relaxed);
    while (last < at_least &&
           !last_.compare_exchange_weak(last, at_least, std::memory_order_acq_rel)) {
    }
  }
  std::uint64_t last() const noexcept { return last_.load(std::memory_order_acquire); }
  // Test-only: forgets the floor, as a new process would.
  void test_reset(std::uint64_t value = 0) noexcept { last_.store(value, std::memory_order_release); }

 private:
  std::atomic<std::uint64_t> last_{0};
};

// The process-wide counter used by every primary_store.
index_time_source& process_index_time() noexcept;

}  // namespace dix
