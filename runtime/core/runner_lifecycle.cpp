#include "core/runner_lifecycle.hpp"

#include "core/release_sequence.hpp"  // check_transition

namespace dix {

namespace {

using rs = runner_state;

// The states of an owner draining or rebuilding (protocol.md §5–§7, §11).
bool working(rs s) noexcept {
  return s == rs::running || s == rs::idle || s == rs::deferred || s == rs::waiting_durable || s == rs::rebuilding;
}

}  // namespace

bool runner_state_legal(runner_state from, runner_state to) noexcept {
  if (from == to) return true;
  if (from == rs::stopped) return false;  // terminal
  switch (to) {
    case rs::dormant:
      // Released without being parked, or a stale state of a runner that never owned. A release
      // begun by stop() ends in stopped, never dormant.
      return from != rs::releasing;
    case rs::waiting_lock:
      // A wake of a dormant runner, a parked one woken for a rebuild (§8.3), or an owner that lost
      // its ownership before any backend call (a failed mint, §9.3) and tries again.
      return from == rs::dormant || from == rs::needs_rebuild || from == rs::unavailable || working(from);
    case rs::running:
      // The grant (§9.2), or the drain's own steps and a rebuild's end (§11.7).
      return from == rs::waiting_lock || working(from);
    case rs::idle:
      // An idle pass (§5.6) of a draining owner.
      return from == rs::running || from == rs::rebuilding;
    case rs::deferred:
    case rs::waiting_durable:
      // A delivery's answer (§5.5, §6.3): the drain was running (or rebuilding from its boundary).
      return from == rs::running || from == rs::rebuilding || from == rs::idle || from == rs::deferred ||
             from == rs::waiting_durable;
    case rs::rebuilding:
      // An attempt starts (§11.4) from a condemned or revived owner, or the scan's drain goes on.
      return working(from) || from == rs::needs_rebuild || from == rs::unavailable;
    case rs::needs_rebuild:
      // A condemnation (§10) of an owner, a failed attempt (§11.8), or the lock faults of a
      // runner waiting for the lock (local only, §10.5). Never during a stop's release.
      return working(from) || from == rs::waiting_lock || from == rs::unavailable;
    case rs::unavailable:
      // Latched, exhausted, escalated or a rejected shutdown (§9.7, §10.3): from any state.
      return true;
    case rs::releasing:
      // stop() of an owner (§2.4, §9.6).
      return working(from) || from == rs::needs_rebuild || from == rs::unavailable;
    case rs::stopped:
      // stop() settled: from any state.
      return true;
  }
  return false;
}

state_ownership ownership_of(runner_state s) noexcept {
  switch (s) {
    case rs::dormant:
    case rs::waiting_lock: return state_ownership::unowned;
    case rs::running:
    case rs::idle:
    case rs::deferred:
    case rs::waiting_durable:
    case rs::rebuilding:
    case rs::releasing: return state_ownership::owned;
    case rs::needs_rebuild:
    case rs::unavailable:
    case rs::stopped: return state_ownership::either;
  }
  return state_ownership::either;
}

void check_runner_step(runner_state from, runner_state to, bool owner, bool stopping) noexcept {
  const auto needs = ownership_of(to);
  const bool owned_ok = needs == state_ownership::either || (needs == state_ownership::owned) == owner;
  const bool stop_ok = (to != runner_state::stopped && to != runner_state::releasing) || stopping;
  check_transition(runner_state_legal(from, to) && owned_ok && stop_ok, "runner_state", static_cast<int>(from),
                   static_cast<int>(to));
}

}  // namespace dix
