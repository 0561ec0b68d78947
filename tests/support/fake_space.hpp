// A free-space reading a test sets (decision 0013): what the probe hook of the primary store or
// of rocksdb_index_backend reads instead of statvfs. Thread-safe; counts its reads so a test can
// wait until the reader looked again.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>

#include "core/free_space.hpp"

namespace dix::test {

class fake_space {
 public:
  explicit fake_space(std::uint64_t capacity_bytes = 1ull << 30) : capacity_(capacity_bytes), available_(capacity_bytes) {}

  void set_available(std::uint64_t bytes) {
    std::lock_guard lock(mutex_);
    available_ = bytes;
  }
  std::uint64_t reads() const {
    std::lock_guard lock(mutex_);
    return reads_;
  }
  // Waits (bounded, generous) until the probe was read `n` times in total.
  bool wait_reads(std::uint64_t n) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return reads_ >= n; });
  }
  // The probe; the fake_space must outlive whoever holds it.
  space_probe probe() {
    return [this](const std::filesystem::path&) -> result<space_reading> {
      std::lock_guard lock(mutex_);
      ++reads_;
      cv_.notify_all();
      return space_reading{available_, capacity_};
    };
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::uint64_t capacity_;
  std::uint64_t available_;
  std::uint64_t reads_ = 0;
};

}  // namespace dix::test
