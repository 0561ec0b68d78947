// dix inside a CAF application (CAF 0.17): the runtime as an actor in the application's own actor
// system. The application configures its system with dix::configure, spawns the runtime with
// dix::spawn_runtime, and talks to it with the typed requests of <dix/caf/messages.hpp>:
//
//   caf::actor_system_config cfg;
//   dix::configure(cfg);
//   caf::actor_system sys{cfg};
//   auto rt = dix::spawn_runtime(sys, {store}, {}).value();
//   self->request(rt, caf::infinite, dix::register_index{std::move(reg)}).then(...);
//   self->request(rt, caf::infinite, dix::subscribe{"by-brand"}).then(...);
//   // … readiness_changed / runner_state_changed arrive at `self`
//   self->request(rt, caf::infinite, dix::stop_runtime{}).then([=](dix::runtime_stopped) {
//     self->send_exit(rt, caf::exit_reason::user_shutdown);
//   });
//
// The blocking dix::runtime (<dix/runtime.hpp>) is the same actor behind a facade that owns an
// actor system of its own.
#pragma once

#include <memory>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/expected.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <dix/caf/error.hpp>
#include <dix/caf/messages.hpp>
#include <dix/options.hpp>
#include <dix/primary_store.hpp>

namespace dix {

// The runtime of a list of attached stores (api.md §6). Each request is answered once; a
// failure answers with a caf::error of category "dix".
using runtime_actor = caf::typed_actor<caf::replies_to<register_index>::with<index_registered>,
                                       caf::replies_to<unregister_index>::with<index_unregistered>,
                                       caf::replies_to<query_status>::with<status_report>,
                                       caf::replies_to<query_metrics>::with<metrics_report>,
                                       caf::replies_to<query_readiness>::with<readiness_report>,
                                       caf::replies_to<rebuild_index>::with<rebuild_requested>,
                                       caf::replies_to<subscribe>::with<subscribed>,
                                       caf::replies_to<unsubscribe>::with<unsubscribed>,
                                       caf::replies_to<subscribe_all>::with<subscribed_all>,
                                       caf::replies_to<unsubscribe_all>::with<unsubscribed_all>,
                                       caf::replies_to<stop_runtime>::with<runtime_stopped>,
                                       caf::replies_to<wait_coverage>::with<coverage_reached>,
                                       caf::replies_to<commit_transaction>::with<transaction_committed>,
                                       caf::replies_to<query_index>::with<index_rows>>;

// A store's writer (issue 29): answers commit_transaction as the runtime actor does, for this one
// store (the request's `log` must be empty or the store's), on a thread of its own — the commit
// mutex, the WAL write, an fsync and the writer gate's delay never occupy a scheduler thread.
// Needs no runtime: the writer gate still applies whatever runtime registered indexes on the
// store. One writer's commits are committed in the order it receives them. Ends with an exit
// message, or when the actor system ends. The runtime actor's commit_transaction goes through one
// of these per store, one hop further.
using store_writer = caf::typed_actor<caf::replies_to<commit_transaction>::with<transaction_committed>>;
store_writer spawn_store_writer(caf::actor_system& sys, std::shared_ptr<primary_store> store);

// Everything an actor system that runs dix needs from its config: dix's message types (the "dix"
// type-ID block, which serialization and the middleman need) and the renderer of the "dix" error
// category. Sets no scheduler, thread or logger option: those are the application's. Calling it
// again on the same config is harmless.
void configure(caf::actor_system_config& cfg);

// Spawns a runtime over `stores` in `sys`, which must have been configured with dix::configure.
// 1…32 stores with distinct log names; the first is the home store, whose directory holds the
// shared readiness segment and the runner locks (formats.md §4). The stores outlive the runtime.
// Blocks briefly: attaches the readiness segment. Fails (api.md §6) with invalid_argument (the
// store list, options out of range, a home on NFS), segment_layout_mismatch, io_error.
//
// The runtime actor and the actors it spawns do their blocking work (RocksDB, backend calls,
// fsync) on threads of their own, never on the scheduler's. It lives until it receives an exit
// message: one with a reason other than `kill` first stops the runtime (every id released, as
// stop_runtime), then ends it; after a stop_runtime it ends at once. Held locks of rejected
// shutdowns are released in the process's lock table when it ends (protocol.md §15).
caf::expected<runtime_actor> spawn_runtime(caf::actor_system& sys,
                                           std::vector<std::shared_ptr<primary_store>> stores,
                                           runtime_options options = {});

// What to publish with the middleman for another process's tools (status, metrics, readiness,
// rebuild, subscriptions, coverage waits, stop): a gate with the runtime's interface that
// delegates every request to `runtime` and ignores exit messages (but `kill`, which CAF delivers
// whatever the handler: it ends the gate only), errors and down messages; it ends when the runtime
// actor ends. It refuses commit_transaction and query_index (not_supported): the gate serves
// tools with the runtime's state, never the data — a peer of the middleman must not write to the
// stores or read the indexes through it. Never publish the
// runtime actor itself: a peer's exit message would stop it. A plain loopback port trusts every
// local user; give the middleman mutual TLS (libcaf-openssl) for anything else.
runtime_actor spawn_runtime_gate(caf::actor_system& sys, runtime_actor runtime);

}  // namespace dix
