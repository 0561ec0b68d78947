// A backend_host for backend tests: a settable owner epoch, a readiness value, counted
// unindexable codes, recorded holds and an optional gate that holds the applier inside is_owner_epoch (so a test
// can fill a backend's queue deterministically).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <dix/backend.hpp>

namespace dix::test {

class fake_host final : public backend_host {
 public:
  std::atomic<epoch_t> epoch{1};

  bool is_owner_epoch(epoch_t e) const noexcept override {
    std::unique_lock lock(mutex_);
    ++calls_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !gate_closed_; });
    return epoch.load() == e;
  }
  dix::readiness readiness() const noexcept override { return {readiness_state::ready, readiness_reason::none, 0, epoch.load()}; }
  void note_unindexable(std::string_view reason) noexcept override {
    std::lock_guard lock(mutex_);
    unindexable_.emplace_back(reason);
  }
  void request_rebuild() noexcept override { ++rebuild_requests; }
  void note_hold(epoch_t e, backend_hold h) noexcept override {
    std::lock_guard lock(mutex_);
    holds_.emplace_back(e, h);
  }
  result<coverage> admit_query(const coverage_mode& mode, cancel_token) override {
    if (refuse) return error{errc::unavailable, "test host refuses"};
    return coverage{coverage_state::current, mode.tolerance, milliseconds{0}};
  }

  void close_gate() {
    std::lock_guard lock(mutex_);
    gate_closed_ = true;
  }
  void open_gate() {
    std::lock_guard lock(mutex_);
    gate_closed_ = false;
    cv_.notify_all();
  }
  // Waits (bounded, generous) until the applier has called is_owner_epoch `n` times in total.
  bool wait_calls(std::size_t n) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return calls_ >= n; });
  }
  std::vector<std::string> unindexable() const {
    std::lock_guard lock(mutex_);
    return unindexable_;
  }
  // Every note_hold, in order.
  std::vector<std::pair<epoch_t, backend_hold>> holds() const {
    std::lock_guard lock(mutex_);
    return holds_;
  }

  std::atomic<int> rebuild_requests{0};
  bool refuse = false;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  mutable std::size_t calls_ = 0;
  bool gate_closed_ = false;
  std::vector<std::string> unindexable_;
  std::vector<std::pair<epoch_t, backend_hold>> holds_;
};

// Collects state changes and lets a test wait for one (bounded, generous; never a sleep).
class change_log {
 public:
  std::function<void(state_change)> callback() {
    return [this](state_change c) {
      std::lock_guard lock(mutex_);
      changes_.push_back(c);
      cv_.notify_all();
    };
  }
  bool wait_for(state_change_kind kind, std::size_t count = 1) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return this->count(kind) >= count; });
  }
  std::size_t count(state_change_kind kind) const {
    std::size_t n = 0;
    for (auto& c : changes_) n += c.kind == kind ? 1 : 0;
    return n;
  }
  std::size_t count_locked(state_change_kind kind) {
    std::lock_guard lock(mutex_);
    return count(kind);
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<state_change> changes_;
};

// Calls done and lets a test wait for the outcome.
class waiter {
 public:
  completion make() {
    return completion([this](result<void> r) {
      std::lock_guard lock(mutex_);
      outcome_ = std::move(r);
      done_ = true;
      cv_.notify_all();
    });
  }
  result<void> wait() {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_for(lock, std::chrono::seconds(30), [&] { return done_; })) {
      return error{errc::timeout, "completion not called within 30 s"};
    }
    return outcome_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  result<void> outcome_;
};

}  // namespace dix::test
