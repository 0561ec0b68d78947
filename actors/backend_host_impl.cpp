#include "actors/backend_host_impl.hpp"

#include <string>

#include "core/coverage_read.hpp"

namespace dix {

backend_host_impl::backend_host_impl(std::shared_ptr<readiness_slot> slot, std::function<void()> rebuild)
    : slot_(std::move(slot)), rebuild_(std::move(rebuild)) {}

bool backend_host_impl::is_owner_epoch(epoch_t e) const noexcept {
  // Ended first: a successor's epoch may equal nothing this backend knows, but an ended
  // registration must never apply work, whatever the slot says now.
  return !ended() && slot_->owner_epoch() == e;
}

dix::readiness backend_host_impl::readiness() const noexcept {
  if (ended()) {
    std::lock_guard g(final_mutex_);
    return final_;
  }
  return slot_->read();
}

void backend_host_impl::note_unindexable(std::string_view) noexcept {
  if (!ended()) unindexable_.fetch_add(1, std::memory_order_relaxed);
}

void backend_host_impl::request_rebuild() noexcept {
  if (ended() || !rebuild_) return;
  try {
    rebuild_();
  } catch (...) {
    // Best effort by contract (api.md §5: the result is ignored); posting a message cannot fail
    // for a reason the backend could act on.
  }
}

void backend_host_impl::note_hold(epoch_t epoch, backend_hold hold) noexcept {
  // Only the owner's backend speaks for the slot: a backend left behind by a handoff must not
  // clear what the current owner's says.
  if (!ended() && slot_->owner_epoch() == epoch) slot_->set_hold(hold);
}

void backend_host_impl::note_link(epoch_t epoch, const link_figures& link) noexcept {
  if (ended() || slot_->owner_epoch() != epoch) return;
  try {
    std::lock_guard g(link_mutex_);
    link_ = link;
  } catch (...) {
  }
}

std::optional<link_figures> backend_host_impl::link() const {
  std::lock_guard g(link_mutex_);
  return link_;
}

result<coverage> backend_host_impl::admit_query(const coverage_mode& mode, cancel_token cancel) {
  if (ended()) return error{errc::not_registered, "the registration of this backend has ended"};
  // `wait` runs the wait first (api.md §7): it waits through the index's way to `ready`
  // (`unknown`, `needs-rebuild`, `rebuilding`: a new index's first build) up to its timeout, and
  // fails on `unavailable` itself (judge_waiter).
  if (mode.kind == coverage_kind::wait) {
    if (!coverage_.wait) return error{errc::unavailable, "wait query: this host cannot wait for coverage"};
    if (auto waited = coverage_.wait(mode.since, mode.timeout, std::move(cancel)); !waited) return waited.error();
  }
  auto r = slot_->read();
  if (r.state == readiness_state::rebuilding) return error{errc::rebuilding, "the index is rebuilding"};
  if (r.state != readiness_state::ready) return error{errc::unavailable, "the index is " + std::string(to_string(r.state))};
  coverage c{coverage_state::unknown, mode.tolerance, std::nullopt};
  // strict needs `current` (§12.5 step 3): read with no tolerance, so a recent coverage_time
  // (`bounded` by the time path) never stops the read before the owner's proof is looked at.
  if (coverage_.read) c = coverage_.read(mode.kind == coverage_kind::strict ? milliseconds(0) : mode.tolerance);
  if (mode.kind != coverage_kind::wait && coverage_.enforce) {
    if (auto refused = admission_refusal(c, mode.kind)) return *refused;
  }
  return c;
}

void backend_host_impl::set_coverage(coverage_services services) { coverage_ = std::move(services); }

void backend_host_impl::end() noexcept {
  std::lock_guard g(final_mutex_);
  if (ended_.load(std::memory_order_relaxed)) return;
  final_ = slot_->read();
  ended_.store(true, std::memory_order_release);
}

}  // namespace dix
