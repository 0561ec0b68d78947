// The backend_host a registration hands its backend (api.md §5): owner-epoch fencing and
// readiness from the id's slot, the backend's own unindexable count, rebuild requests. It
// outlives its registration: a backend may keep the reference and call it from any thread at any
// later time (an applier draining after a handoff), so the runtime keeps every host until it is
// destroyed itself; once the registration has ended, is_owner_epoch answers false for every
// epoch, readiness() the value at the end, admit_query not_registered, and the other calls do
// nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include <dix/backend.hpp>

#include "ports/ownership.hpp"

namespace dix {

// What admit_query reads and waits with (the runtime's coverage readers, actors/coverage_waiters.hpp).
struct coverage_services {
  std::function<coverage(milliseconds tolerance)> read;  // runtime::read_coverage(id, tolerance)
  // runtime::wait_for_coverage(id, since, timeout, cancel), blocking until it resolves.
  std::function<result<void>(index_time_t since, milliseconds timeout, cancel_token cancel)> wait;
  // Whether strict and bounded refuse what the read does not prove (api.md §7). False only while
  // no owner publishes coverage_time (decision 0019): the answer then carries the read, admitted.
  bool enforce = true;
};

class backend_host_impl final : public backend_host {
 public:
  // `rebuild` is what request_rebuild() does while the registration lasts (the runtime posts
  // itself a rebuild request for the id, api.md §5: as runtime::request_rebuild, result ignored).
  backend_host_impl(std::shared_ptr<readiness_slot> slot, std::function<void()> rebuild);

  bool is_owner_epoch(epoch_t e) const noexcept override;
  dix::readiness readiness() const noexcept override;
  void note_unindexable(std::string_view reason) noexcept override;
  void request_rebuild() noexcept override;
  // Stores the hold in the slot while `epoch` is the owner's (decision 0013).
  void note_hold(epoch_t epoch, backend_hold hold) noexcept override;
  void note_link(epoch_t epoch, const link_figures& link) noexcept override;
  // The owner's backend's last link report (remote backends only), for the lag publication.
  std::optional<link_figures> link() const;
  // api.md §5, §7: ended → not_registered; readiness rebuilding → rebuilding; needs-rebuild,
  // unavailable or unknown → unavailable; ready: `wait` runs wait_for_coverage(since, timeout)
  // first (its failure is the answer), then every mode reads the coverage with the mode's
  // tolerance; `strict` needs current, `bounded` current or bounded, else index_lagging (a
  // refusal never condemns). The admitted answer is that read, which the query carries.
  // Without coverage services (set_coverage) the read is unknown and `wait` refuses unavailable.
  result<coverage> admit_query(const coverage_mode& mode, cancel_token cancel = {}) override;
  // The runtime's coverage readers for this registration. Set once, before attach.
  void set_coverage(coverage_services services);

  // The registration ended (unregistered, or its runtime stopped): from now on the host answers
  // as the file comment says. Idempotent.
  void end() noexcept;
  bool ended() const noexcept { return ended_.load(std::memory_order_acquire); }
  std::uint64_t unindexable() const noexcept { return unindexable_.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<readiness_slot> slot_;
  std::function<void()> rebuild_;
  coverage_services coverage_;
  std::atomic<bool> ended_{false};
  std::atomic<std::uint64_t> unindexable_{0};
  mutable std::mutex final_mutex_;
  mutable std::mutex link_mutex_;
  std::optional<link_figures> link_;
  dix::readiness final_{};  // the slot when the registration ended
};

}  // namespace dix
