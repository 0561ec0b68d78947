// supervisor_actor: one per runtime (actors.md §1, §3). A thin shell over one supervisor_core per
// registration (runtime/core/supervisor_core.hpp), as runner_actor is over runner_core: it spawns
// and monitors each registration's tailer, proxy and runner, hands every down message, respawn
// delay and answer to the core, and carries out the effects the core returns — spawns, child_down
// / child_up to the runner, delayed `respawn`s to itself, the dead runner's flush(shutdown) and
// shutdown through the proxy, its marker through the tailer, publications through the runtime's
// readiness publisher (each after storing the honest snapshot of the dead runner's registration:
// not owner, the published state), the unlock through the registration's ownership record (behind the
// publications, publication_fence), stop requests and unsupervise answers. For a dead runner it
// reads the registration's ownership record — lent to the runner, which keeps it current — to
// know whether the runner owned the lock-table entry and under which epoch.
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

struct registration_settings;  // actors/registration_record.hpp

// What the supervisor needs of one registration (actors/id_wiring.cpp makes it).
struct supervised_spec {
  // The registration's settings (shared, never copied): its id and token (the requester in the
  // lock table), its runner options (max_rebuild_attempts, rebuild_backoff, max_rebuild_backoff),
  // the runtime's readiness publisher (a dead runner's publications), its slot (a dead runner's
  // publication keeps its rebuild_attempts: a suspect fault keeps the count, protocol.md §10.3,
  // and the next owner continues it, §11.3), its snapshot box (before a publication for a dead
  // runner the supervisor stores there what it publishes, so status never lags the segment) and
  // on_status, told of that status as the runner's own changes are (optional).
  std::shared_ptr<const registration_settings> settings;
  std::function<log_tailer_actor()> spawn_tailer;
  std::function<backend_proxy_actor()> spawn_proxy;
  // start_condemned: a replacement after a runner crash starts in needs-rebuild with this reason
  // (and rebuilds once woken, or stays parked when the backend cannot reset).
  std::function<runner_actor(log_tailer_actor, backend_proxy_actor, std::optional<readiness_reason> start_condemned)>
    spawn_runner;
  std::shared_ptr<ownership> record;  // the registration's ownership record, lent to its runners
};

supervisor_actor spawn_supervisor(caf::actor_system& sys);

}  // namespace dix
