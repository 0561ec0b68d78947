// supervisor_actor: one per runtime (actors.md §1, §3). It spawns each registered id's tailer and
// proxy, then its runner, monitors all three, and on a down message asks the restart policy:
//
//   tailer down   transient for the runner (child_down, then child_up with the replacement after
//                 the policy's delay): no marker, readiness unchanged, durable cursor reinstalled.
//   proxy down    suspect: the runner condemns with backend-failed; the replacement is spawned
//                 around the same backend object after the delay, and the runner releases
//                 through it.
//   runner down   the supervisor, as the lock holder, quiesces the backend itself —
//                 flush(shutdown), shutdown(the held epoch) through the proxy —, publishes
//                 needs-rebuild/runner-failed, releases the lock entry, and respawns the runner
//                 parked in needs-rebuild. A rejected shutdown keeps the lock
//                 (unavailable/shutdown-failed) and the id stops failing with backend_failed.
//   escalate      after max_rebuild_attempts consecutive failures of a child of one id: the id
//                 is released, published unavailable, and nothing of it is restarted.
//
// The supervisor never blocks: the backend calls go through the proxy as requests. It supervises
// registrations, not ids: while one registration of an id releases, a replacement of the same id
// may already be waiting for the lock (protocol.md §2.4). `supervise{spec}` carries what a
// registration needs to (re)spawn its children (the backend, the ports, factories).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <caf/fwd.hpp>

#include <dix/options.hpp>

#include "actors/runner_actor.hpp"
#include "messages/interfaces.hpp"
#include "ports/ownership.hpp"

namespace dix {

// What the supervisor needs of one registration (actors/id_wiring.cpp makes it).
struct supervised_spec {
  std::string id;
  std::uint64_t token = 0;  // the registration's requester in the lock table (its ownership record)
  runner_options options;   // max_rebuild_attempts, rebuild_backoff, max_rebuild_backoff
  std::function<log_tailer_actor()> spawn_tailer;
  std::function<backend_proxy_actor()> spawn_proxy;
  // start_condemned: a replacement after a runner crash starts parked with this reason.
  std::function<runner_actor(log_tailer_actor, backend_proxy_actor, std::optional<readiness_reason> start_condemned)>
    spawn_runner;
  std::shared_ptr<snapshot_box> snapshot;  // the runner's: whether it owned the lock, its epoch
  std::shared_ptr<readiness_slot> slot;
  readiness_publisher_actor publisher;  // the runtime's; unset: publish to the slot directly
  runner_lock* lock = nullptr;
  // Told about every runner spawned for the registration (the runtime's wake list). Optional.
  std::function<void(const runner_actor&)> runner_changed;
};

supervisor_actor spawn_supervisor(caf::actor_system& sys);

}  // namespace dix
