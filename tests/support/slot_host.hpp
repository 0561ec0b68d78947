// A backend_host over an in-process readiness slot, for actor tests: the owner epoch and the
// readiness are the slot's, as the runtime's host reads them from the shared segment.
#pragma once

#include <memory>

#include <dix/backend.hpp>

#include "adapters/in_process_ownership.hpp"

namespace dix::test {

class slot_host final : public backend_host {
 public:
  explicit slot_host(std::shared_ptr<in_process_slot> s) : slot_(std::move(s)) {}
  bool is_owner_epoch(epoch_t e) const noexcept override { return slot_->owner_epoch() == e; }
  dix::readiness readiness() const noexcept override { return slot_->read(); }
  void note_unindexable(std::string_view) noexcept override {}
  void request_rebuild() noexcept override {}
  result<coverage> admit_query(const coverage_mode&, cancel_token) override { return coverage{}; }

 private:
  std::shared_ptr<in_process_slot> slot_;
};

}  // namespace dix::test
