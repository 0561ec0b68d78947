#include "actors/registration_record.hpp"

#include <atomic>
#include <utility>

#include <caf/send.hpp>

#include "core/assert.hpp"
#include "core/release_sequence.hpp"  // check_transition

namespace dix {

void current_runner::set(const runner_actor& r, std::shared_ptr<commit_bell> bell) {
  std::atomic_store(&ref_, std::make_shared<const runner_ref>(runner_ref{r, std::move(bell)}));
}

runner_actor current_runner::get() const { return std::atomic_load(&ref_)->actor; }

std::shared_ptr<commit_bell> current_runner::bell() const { return std::atomic_load(&ref_)->bell; }

void current_runner::commit_wake(bool system) const {
  auto current = std::atomic_load(&ref_);
  if (!current->actor) return;
  if (!current->bell) {
    caf::anon_send(current->actor, dix::wake{static_cast<std::uint8_t>(wake_flag::commit | (system ? wake_flag::system : 0))});
  } else if (current->bell->ring(system)) {
    caf::anon_send(current->actor, dix::wake{0});  // the runner takes the bell
  }
}

namespace {

using stage = registration_stage;

// What each stage holds; no stage regains what it gave back (registered is never entered).
bool holds_count(stage s) noexcept { return s == stage::registered; }
bool holds_gates(stage s) noexcept { return s == stage::registered || s == stage::releasing; }

}  // namespace

bool legal(registration_stage from, registration_stage to) noexcept {
  switch (to) {
    case stage::registered: return false;  // a record starts there
    case stage::releasing: return from == stage::registered;
    case stage::held: return from == stage::releasing || from == stage::retrying;
    case stage::retrying: return from == stage::held;
    case stage::released: return from == stage::releasing || from == stage::retrying;
    case stage::abandoned: return from != stage::released && from != stage::abandoned;
  }
  return false;
}

registration_record::registration_record(std::shared_ptr<const registration_settings> settings)
    : settings_(std::move(settings)) {
  DIX_ASSERT(settings_ != nullptr && settings_->runner_now != nullptr);
}

bool registration_record::releasing() const noexcept {
  return stage_ == stage::releasing || stage_ == stage::retrying;
}

registration_undo registration_record::transition(registration_stage to) noexcept {
  check_transition(legal(stage_, to), "registration", static_cast<int>(stage_), static_cast<int>(to));
  registration_undo undo;
  undo.uncount = holds_count(stage_) && !holds_count(to);
  undo.ungate = holds_gates(stage_) && !holds_gates(to);
  stage_ = to;
  return undo;
}

void registration_record::set_runner(const runner_actor& r, std::shared_ptr<commit_bell> bell) {
  settings_->runner_now->set(r, std::move(bell));
}

runner_actor registration_record::runner() const { return settings_->runner_now->get(); }

void registration_record::commit_wake(bool system) const { settings_->runner_now->commit_wake(system); }

}  // namespace dix
