// readiness_publisher_actor: one per runtime (actors.md §1). It holds the runtime's readiness
// segment — the mapping and, through it, the attach lock — and performs the runtime's
// publications (protocol.md §1.5) one message at a time, in arrival order, so each id's slot
// sees them in the order its runner's core emitted them. A publication is atomics and a
// FUTEX_WAKE, never a wait, so the actor runs on the scheduler.
//
// Per publication:
//   1. find the slot of `id` (claimed by any runtime of the database; cached, slots are never
//      freed); none → reply the error not_registered, nothing written, nothing observed;
//   2. store coverage_time (0 unless the state is ready) and lag_gate as carried, then reason,
//      rebuild_attempts, then state (release), then notify (segment_slot::apply);
//   2b. a `ready` publication carrying coverage_time clears the slot's coverage_demand when that
//      time reaches it (compare-exchange: a waiter's concurrent raise wins), protocol.md §12.4;
//   3. reply `published{id, change_counter}`;
//   4. send `readiness_observed{id, change_counter, slot read back}` to the observer, if any.
//
// Per metrics_publication: the slot of `id` as above (none → not_registered); its block of the
// metrics segment written whole under the seqlock, stamped with the wall clock
// (metrics_segment::write); reply `metrics_published{id, metrics change_counter}`. Nothing is
// observed: the figures change no readiness. A metrics_publication replaces the block's rebuild
// progress and keeps its lag part; a lag_publication (decision 0021) the other way round.
#pragma once

#include <memory>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "core/clock.hpp"
#include "messages/interfaces.hpp"

namespace dix {

class readiness_segment;

// Spawns the publisher on the scheduler of `sys`. `segment` (required) stays mapped and
// attached while the actor lives. `observer` may be an invalid handle: no observer messages.
// `time` (the runtime's clock, outliving the actor) stamps the metrics blocks' wall time.
readiness_publisher_actor spawn_readiness_publisher(caf::actor_system& sys,
                                                    std::shared_ptr<readiness_segment> segment,
                                                    caf::actor observer, const clock& time = system_clock());

}  // namespace dix
