// For actor tests: a readiness slot in this process's memory (the readiness_slot port over
// atomics, as readiness_segment's segment_slot is over the shared mapping, with the same
// ordering: reason and attempts before state), and a backend_host over any readiness slot (the
// memory one, or a real segment's) whose owner epoch and readiness are the slot's, as the
// runtime's host reads them from the segment.
#pragma once

#include <atomic>
#include <memory>

#include <dix/backend.hpp>

#include "ports/ownership.hpp"

namespace dix::test {

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
  bool rebuild_requested() const noexcept override { return request_.load(std::memory_order_acquire); }
  bool consume_rebuild_request() override { return request_.exchange(false, std::memory_order_acq_rel); }
  void request_rebuild() { request_.store(true, std::memory_order_release); }
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
  std::atomic<bool> request_{false};
};


class slot_host final : public backend_host {
 public:
  explicit slot_host(std::shared_ptr<readiness_slot> s) : slot_(std::move(s)) {}
  bool is_owner_epoch(epoch_t e) const noexcept override { return slot_->owner_epoch() == e; }
  dix::readiness readiness() const noexcept override { return slot_->read(); }
  void note_unindexable(std::string_view) noexcept override {}
  void request_rebuild() noexcept override {}
  result<coverage> admit_query(const coverage_mode&, cancel_token) override { return coverage{}; }

 private:
  std::shared_ptr<readiness_slot> slot_;
};

}  // namespace dix::test
