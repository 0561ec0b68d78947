// For actor tests: a backend_host over a readiness slot (a real segment's) whose owner epoch and
// readiness are the slot's, as the runtime's host reads them from the segment.
#pragma once

#include <memory>

#include <dix/backend.hpp>

#include "ports/ownership.hpp"

namespace dix::test {

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
