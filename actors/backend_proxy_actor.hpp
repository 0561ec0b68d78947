// backend_proxy_actor: the only caller of one backend object (actors.md §1). Every call to the
// backend runs here (detached in production: backends may block); the backend's callbacks and
// completions, which may run on any thread or inside the causing call, are first sent to the
// proxy itself and only then forwarded, so they keep mailbox order behind the reply of the call
// that caused them (protocol.md §5.1). State changes reach it through the registration's
// state_change_relay (actors/state_change_relay.hpp): the subscription belongs to the registration, which
// outlives any one proxy. Exceptions from backend code become failures, never a crash of the
// runtime.
#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include <dix/backend.hpp>

#include "messages/interfaces.hpp"

namespace dix {

backend_proxy_actor spawn_backend_proxy(caf::actor_system& sys, std::shared_ptr<backend> b, bool detached);

}  // namespace dix
