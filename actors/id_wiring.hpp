// The wiring of one registration: how its log tailer, backend proxy and runner are made, first by
// the supervisor and again after a crash (actors.md §1, §3). The runtime actor fills the
// registration's settings (actors/registration_record.hpp) from its plan and the real adapters;
// the actor tests fill them from fakes — both wire them through wire_registration(), so tests and
// production spawn the same actors the same way.
//
//   backend state changes ─► state_change_relay ─► the current proxy's mailbox ─► the runner
//   (any thread)              (set by the proxy factory)   (protocol.md §5.1 order)
#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "actors/registration_record.hpp"
#include "actors/supervisor_actor.hpp"

namespace dix {

// The supervisor's spec of the registration: factories for its three actors and its ownership
// record, all over `settings` (shared, never copied). Each runner spawned is set as the
// registration's current runner (settings->runner_now), with its commit bell.
std::shared_ptr<supervised_spec> wire_registration(caf::actor_system& sys,
                                                   std::shared_ptr<const registration_settings> settings);

}  // namespace dix
