// runner_lifecycle: the legal steps of the public runner_state (protocol.md §14.1), the state
// status() reports. runner_core changes it only through runner_core::set_state, which checks a
// step against legal() and against the ownership it implies, and aborts on an illegal one in
// every build (core/assert.hpp).
//
//   dormant ──wake──► waiting_lock ──grant──► running ◄──► idle, deferred, waiting_durable
//      ▲  ▲                ▲  │                  │ ▲               (the drain, §5–§6)
//      │  │   lost mint,   │  │ lock faults      │ └── rebuilding ◄── needs_rebuild ◄── any owned
//      │  │   a retry      │  ▼ (local, parked)  │       (§11)          (condemned, §10)   state
//      │  │   unowned ─────┴─ needs_rebuild      │
//      │  └── released, not parked ◄─────────────┤
//      │                                         ├──► unavailable (latched, exhausted, escalated)
//      │                                         └──► releasing ──unlock──► stopped (terminal)
//      └── a parked needs_rebuild / unavailable, woken for a rebuild (waiting_lock)
//
// Which states need which ownership (checked by set_state, not by legal()):
//   dormant, waiting_lock                     not the owner
//   running, idle, deferred, waiting_durable,
//   rebuilding, releasing                     the owner
//   releasing, stopped                        only after stop()
// needs_rebuild and unavailable are held with or without the lock (parked after release, or
// condemned before it).
#pragma once

#include <dix/status.hpp>

namespace dix {

// Whether runner_state may go from `from` to `to`. A step to the same state is always legal (a
// repeated assignment); nothing leaves `stopped`.
bool runner_state_legal(runner_state from, runner_state to) noexcept;

// The ownership a state implies (above): `owned` must be true, false, or either.
enum class state_ownership : unsigned char { unowned, owned, either };
state_ownership ownership_of(runner_state s) noexcept;

// What runner_core::set_state checks before each step: legal(), the ownership the new state needs
// (`owner`: the runner holds the lock now), and that releasing and stopped come only after stop()
// (`stopping`). Aborts naming both states otherwise, in every build.
void check_runner_step(runner_state from, runner_state to, bool owner, bool stopping) noexcept;

}  // namespace dix
