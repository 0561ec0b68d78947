// The composition root's internal entry points (actors/runtime_root.cpp), for the blocking facade
// and the actor tests: prepare_runtime does what spawn_runtime checks and attaches before it
// spawns the runtime actor (spawn_runtime_actor, runtime_actor.hpp) over the result.
#pragma once

#include <memory>
#include <vector>

#include <dix/options.hpp>
#include <dix/primary_store.hpp>
#include <dix/result.hpp>

#include "actors/runtime_actor.hpp"

namespace dix {

// 1…32 stores with distinct log names, valid options, a home not on NFS; attaches the home's
// readiness segment (with options.slot_count when it creates it) and takes the process's lock
// table. Production settings: detached actors, a watcher thread, the system clock.
result<std::shared_ptr<runtime_context>> prepare_runtime(std::vector<std::shared_ptr<primary_store>> stores,
                                                         runtime_options options);

}  // namespace dix
