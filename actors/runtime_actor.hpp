// runtime_actor: the runtime of one list of attached stores, as an actor (<dix/caf.hpp>). It
// owns the runtime's supervisor, its watcher thread and the store commit listeners; it carries
// out registration (protocol.md §2), unregistration, rebuild requests (§11.2), subscriptions and
// stop (§15); status, metrics and readiness it reads from what its runners and the segment
// publish. The blocking facade (runtime_facade.cpp) talks to the same actor.
//
// What it needs is prepared, with the blocking checks and the segment attach, by
// prepare_runtime() (runtime_root.cpp) in the caller's thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/message.hpp>
#include <caf/message_id.hpp>

#include <dix/options.hpp>
#include <dix/primary_store.hpp>

#include "actors/runtime_registry.hpp"
#include "adapters/process_lock_table.hpp"
#include "adapters/readiness_segment.hpp"
#include "core/clock.hpp"
#include "core/registration_plan.hpp"
#include "messages/interfaces.hpp"

namespace dix {

class coverage_waiters;
class watcher;

// What spawn_runtime prepared; shared by the runtime actor and the blocking facade.
struct runtime_context {
  std::vector<std::shared_ptr<primary_store>> stores;  // attach order; [0] is the home store
  std::vector<attached_store> attached;                  // the same, as the registration checks see them
  runtime_options options;
  std::shared_ptr<readiness_segment> segment;  // the home store's, attached for the runtime's life
  std::shared_ptr<process_lock_table> locks;   // the process's lock table of that home
  std::shared_ptr<runtime_registry> registry = std::make_shared<runtime_registry>();
  // The runtime's one clock (protocol.md §1.1), never null: every part of the runtime reads time
  // here or from CAF's clock, which runs with it (the test coordinator's for the deterministic
  // runtime). system_clock() but in actor tests and dix::testing::deterministic_runtime.
  const clock* time = &system_clock();
  std::shared_ptr<const clock> owned_time;  // what `time` points to, when the context owns it
  // Production: the runtime actor and every tailer and proxy on threads of their own, and a
  // watcher thread. Actor tests (CAF's test coordinator, actors.md §5) turn both off and call
  // the watcher's scan() themselves.
  bool detached = true;
  bool watcher_thread = true;
  // Made by the runtime actor when it starts (its observer is the actor); actor tests call its
  // scan() here.
  std::shared_ptr<watcher> watch;
  // The runtime's coverage waiters (protocol.md §12.6), made by prepare_coverage.
  std::shared_ptr<coverage_waiters> waiters;
  // The runtime's supervisor and readiness publisher, set when the actor starts: the actor
  // monitors both and ends when either does (decision 0009). Weak: for inspection (an actor test
  // kills one), never keeping them alive.
  caf::actor_addr supervisor, publisher;
};

// Makes ctx.waiters (once; actors/coverage_waiters.cpp) and has the registry fail an id's waiters
// with `stopped` when its registration is detached, on ctx.time's clock. The facade and
// spawn_runtime call it before they spawn the actor (which calls it too, for actor tests).
void prepare_coverage(runtime_context& ctx);

// The published gate's subscription requests (subscribe, unsubscribe, subscribe_all,
// unsubscribe_all in `request`) on behalf of `requester`, which the runtime notifies (decision
// 0066). The runtime answers `requester` itself, under `answer_id` (the id of the requester's own
// request) and with `answer_as` (the gate) as the sender, so that the answer travels the way the
// events do and arrives before them, and no answer carries the runtime's handle; it answers the
// gate `true` then. An error it answers to the gate, which passes it on. Local only: not
// serializable, outside the runtime's typed interface (its default handler takes it).
struct gated_request {
  caf::actor requester;
  caf::message request;
  caf::message_id answer_id;
  caf::strong_actor_ptr answer_as;
};

// Spawns the runtime actor over `ctx` (detached when ctx->detached).
runtime_actor_impl spawn_runtime_actor(caf::actor_system& sys, std::shared_ptr<runtime_context> ctx);

}  // namespace dix

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::gated_request)
