// In-process adapters of the ownership ports: a runner-lock table and readiness slots living in
// this process's memory. Correct for runtimes of one process; the shared segment and the flock
// crash guard replace them in the ownership issue.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>

#include "ports/ownership.hpp"

namespace dix {

class in_process_lock_table final : public runner_lock {
 public:
  void acquire(const std::string& id, std::uint64_t requester, grant granted) override;
  void release(const std::string& id, std::uint64_t requester) override;
  // The process-wide table.
  static in_process_lock_table& instance();

 private:
  struct entry {
    std::uint64_t owner = 0;  // 0: free
    std::deque<std::pair<std::uint64_t, grant>> waiters;
  };
  std::mutex mutex_;
  std::map<std::string, entry> entries_;
};

class in_process_slot final : public readiness_slot {
 public:
  epoch_t mint_epoch() override { return epoch_.fetch_add(1, std::memory_order_acq_rel) + 1; }
  epoch_t owner_epoch() const noexcept override { return epoch_.load(std::memory_order_acquire); }
  void raise_epoch_floor(epoch_t floor) override {
    auto e = epoch_.load(std::memory_order_relaxed);
    while (e < floor && !epoch_.compare_exchange_weak(e, floor, std::memory_order_acq_rel)) {
    }
  }
  void publish(readiness_state state, readiness_reason reason, std::uint32_t attempts) override {
    reason_.store(static_cast<std::uint32_t>(reason), std::memory_order_release);
    attempts_.store(attempts, std::memory_order_release);
    state_.store(static_cast<std::uint32_t>(state), std::memory_order_release);
  }
  dix::readiness read() const noexcept override {
    dix::readiness r;
    r.state = static_cast<readiness_state>(state_.load(std::memory_order_acquire));
    r.reason = static_cast<readiness_reason>(reason_.load(std::memory_order_acquire));
    r.rebuild_attempts = attempts_.load(std::memory_order_acquire);
    r.owner_epoch = epoch_.load(std::memory_order_acquire);
    return r;
  }

 private:
  std::atomic<epoch_t> epoch_{0};
  std::atomic<std::uint32_t> state_{0}, reason_{0}, attempts_{0};
};

}  // namespace dix
