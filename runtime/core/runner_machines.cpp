// The legal steps of runner_core's machines (core/acquisition.hpp, core/drain_pipeline.hpp,
// core/rebuild_attempt.hpp, core/coverage_gate.hpp, core/verify_attempt.hpp): each header draws its diagram, each legal()
// here is that diagram, and each to() aborts on a step outside it in every build.
#include "core/acquisition.hpp"
#include "core/coverage_gate.hpp"
#include "core/drain_pipeline.hpp"
#include "core/rebuild_attempt.hpp"
#include "core/release_sequence.hpp"  // check_transition
#include "core/verify_attempt.hpp"

namespace dix {

// ---- acquisition ----------------------------------------------------------------------------------

bool acquisition::legal(phase from, phase to) noexcept {
  using a = phase;
  return (from == a::unowned && to == a::minting) || (from == a::minting && to == a::reading_meta) ||
         (from == a::reading_meta && to == a::verifying) || (from == a::verifying && to == a::acquired) ||
         (from != a::unowned && to == a::unowned);
}

void acquisition::to(phase next) noexcept {
  check_transition(legal(phase_, next), "acquisition", static_cast<int>(phase_), static_cast<int>(next));
  phase_ = next;
}

// ---- drain_pipeline -------------------------------------------------------------------------------

bool drain_pipeline::legal(phase from, phase to) noexcept {
  using d = phase;
  return to == d::closed || (from == d::closed && to == d::open) || (from == d::open && to == d::pulling) ||
         (from == d::pulling && (to == d::open || to == d::delivering)) || (from == d::open && to == d::delivering) ||
         (from == d::delivering && to == d::open);
}

bool drain_pipeline::legal(durable_query from, durable_query to) noexcept {
  using q = durable_query;
  return to == q::none || (from == q::none && to == q::asked) || (from != q::none && to == q::asked_again);
}

void drain_pipeline::to(phase next) noexcept {
  check_transition(legal(phase_, next), "drain", static_cast<int>(phase_), static_cast<int>(next));
  phase_ = next;
}

void drain_pipeline::to(durable_query next) noexcept {
  check_transition(legal(query_, next), "durable query", static_cast<int>(query_), static_cast<int>(next));
  query_ = next;
}

void drain_pipeline::issue(std::shared_ptr<const batch> b, dix::positions ends) {
  in_flight = std::move(b);
  in_flight_ends = std::move(ends);
  to(phase::delivering);
  changed_at_issue_ = changed_count_;
}

std::shared_ptr<const batch> drain_pipeline::answered() {
  to(phase::open);
  auto b = std::move(in_flight);
  in_flight.reset();
  return b;
}

void drain_pipeline::discard() noexcept {
  unanchored_bytes = unanchored_mutations = 0;
  unflushed_bytes = unflushed_mutations = 0;
  held.reset();
  in_flight.reset();
  to(phase::closed);
  to(durable_query::none);
  age_timer_armed = cursor_timer_armed = false;
  age_deadline.reset();
  cut_open = end_of_log = false;
  more = true;
  stalled_since.reset();
  cut_delivered = false;
  rebuilt_while_opening = false;
}

std::size_t drain_pipeline::effective_entry() const noexcept {
  std::size_t effective = 0;
  while (effective + 1 < offered.size() && offered[effective + 1].cursor_only) ++effective;
  return effective;
}

std::optional<std::chrono::steady_clock::time_point> drain_pipeline::oldest_accepted_at() const {
  for (std::size_t i = 1; i < offered.size(); ++i) {
    if (!offered[i].cursor_only) return offered[i].accepted_at;
  }
  return std::nullopt;
}

bool drain_pipeline::non_durable_work() const noexcept {
  if (unanchored_bytes != 0 || unanchored_mutations != 0) return true;
  for (std::size_t i = 1; i < offered.size(); ++i) {
    if (!offered[i].cursor_only) return true;
  }
  return false;
}

// ---- rebuild_attempt ------------------------------------------------------------------------------

bool rebuild_attempt::legal(phase from, phase to) noexcept {
  using r = phase;
  const bool waiting = from == r::none || from == r::backoff || from == r::held;
  // An attempt starts from none, backoff or held (held → held: a request consumed while the
  // attempt waits for a respawned child, §11.2).
  const bool starts = waiting && (to == r::quiescing || to == r::minting || to == r::held);
  return to == r::none || to == r::backoff || starts || (from == r::quiescing && to == r::minting) ||
         (from == r::minting && to == r::resetting) || (from == r::resetting && to == r::checking) ||
         (from == r::checking && to == r::capturing) || (from == r::capturing && to == r::scanning) ||
         (from == r::scanning && to == r::boundary_pending);
}

void rebuild_attempt::to(phase next) noexcept {
  check_transition(legal(phase_, next), "rebuild attempt", static_cast<int>(phase_), static_cast<int>(next));
  phase_ = next;
}

// ---- verify_attempt -------------------------------------------------------------------------------

bool verify_attempt::legal(phase from, phase to) noexcept {
  using v = phase;
  return (to == v::none && from != v::none) || (from == v::none && to == v::fencing) ||
         (from == v::fencing && to == v::to_fence) || (from == v::to_fence && to == v::at_fence) ||
         (from == v::at_fence && to == v::barrier) || (from == v::barrier && to == v::opening) ||
         (from == v::opening && to == v::lifting) || (from == v::lifting && to == v::scanning);
}

void verify_attempt::to(phase next) noexcept {
  check_transition(legal(phase_, next), "verify attempt", static_cast<int>(phase_), static_cast<int>(next));
  phase_ = next;
}

// ---- coverage_gate --------------------------------------------------------------------------------

bool coverage_gate::legal(barrier from, barrier to) noexcept {
  constexpr barrier all = 1 | 2 | 4;
  if (to == none) return true;  // the durable advance, or a discard
  // One more reason, never one asked already, and nothing outside the three.
  const auto added = static_cast<barrier>(to & ~from);
  return (to & ~all) == 0 && (from & ~to) == 0 && added != 0 && (added & (added - 1)) == 0;
}

void coverage_gate::to(barrier next) noexcept {
  check_transition(legal(asks_, next), "barrier asks", static_cast<int>(asks_), static_cast<int>(next));
  asks_ = next;
}

}  // namespace dix
