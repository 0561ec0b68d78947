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
// or, from main(), with a guard that does that stop when it goes out of scope:
//
//   caf::actor_system sys{cfg};                               // first: destroyed last
//   dix::runtime_guard guard{dix::spawn_runtime(sys, {store}, {}).value()};
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
                                       caf::replies_to<verify_index>::with<index_verified>,
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
// type-ID block, which serialization and the middleman need), the renderer of the "dix" error
// category, and the runtime's options as the option groups `dix` and `dix.runner` (below), with
// their defaults in the config's content where it holds none yet. Sets no scheduler, thread or
// logger option: those are the application's. Calling it again on the same config is harmless.
// Call it before cfg.parse(…), so that the ini file and the command line can set the options.
void configure(caf::actor_system_config& cfg);

// The runtime options the config holds (api.md §6.14). dix::configure declares one option per
// field of runtime_options, named as the field with dashes: `dix.max-coverage-wait`,
// `dix.max-write-delay`, `dix.slot-count` and the runner defaults `dix.runner.max-flush-age`,
// `dix.runner.max-lag`, … . Durations are CAF timespans (`250ms`, `5s`, `2min`; a whole number of
// milliseconds), counts integers. They are listed by --long-help and, with their values, by
// --dump-config, and set in caf-application.ini (`[dix]` / `[dix.runner]`) or on the command line
// (`--dix.runner.max-flush-age=250ms`), the command line winning. A field the config does not
// hold keeps its default. Fails invalid_argument naming the option, the value and the range:
//   "dix.runner.max-flush-age = 0ms: must be in [1, 600000] ms (runner_options.max_flush_age)"
// spawn_runtime never reads the config: an application passes what this returns, or options of
// its own, which then are the only ones used.
caf::expected<runtime_options> runtime_options_from(const caf::actor_system_config& cfg);

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

// Stops a runtime actor when it goes out of scope, so that an application that forgets the stop
// does not hang in ~actor_system, which waits for every actor — and a runtime lives until it is
// told to stop (api.md §6.13). Declare it after the actor_system (destroyed before it) and after
// the stores (the runtime uses them until it has stopped):
//
//   caf::actor_system sys{cfg};
//   dix::runtime_guard guard{dix::spawn_runtime(sys, {store}, {}).value()};
//   … guard.get() is the runtime_actor to talk to …
//
// stop() — and the destructor, which calls it — sends stop_runtime and waits for its answer (every
// id released, however long the backends' shutdowns take), then sends an exit message
// (user_shutdown) and waits until the runtime actor has ended. Blocking: call it from main() or
// another thread of the application, never from an actor of the runtime's system. Idempotent: a
// second stop() returns at once, and a runtime already stopped by an explicit stop_runtime, or
// already ended, counts as stopped. Not thread-safe: one owner.
class runtime_guard {
 public:
  runtime_guard() noexcept = default;
  explicit runtime_guard(runtime_actor runtime) noexcept;
  runtime_guard(runtime_guard&& other) noexcept;
  runtime_guard& operator=(runtime_guard&& other) noexcept;  // stops the runtime it held first
  runtime_guard(const runtime_guard&) = delete;
  runtime_guard& operator=(const runtime_guard&) = delete;
  ~runtime_guard();

  // The guarded runtime; invalid after stop() or release().
  const runtime_actor& get() const noexcept { return runtime_; }
  explicit operator bool() const noexcept { return static_cast<bool>(runtime_); }

  // Stops the runtime as above. The empty error when the stop succeeded, the runtime had stopped
  // or ended already, or there is none; otherwise stop_runtime's error (backend_failed naming the
  // ids whose shutdown was rejected: the runtime still ends). Afterwards the guard is empty.
  caf::error stop();

  // Gives the runtime up without stopping it: the caller stops it.
  runtime_actor release() noexcept;

 private:
  runtime_actor runtime_;
};

// What to publish with the middleman for another process's tools (status, metrics, readiness,
// rebuild, subscriptions, coverage waits, stop): a gate with the runtime's interface that asks
// `runtime` every request and answers it itself (no answer carries the runtime's own handle; events
// are sent anonymously) and ignores exit messages (but `kill`, which CAF delivers
// whatever the handler: it ends the gate only), errors and down messages; it ends when the runtime
// actor ends. It refuses commit_transaction and query_index (not_supported): the gate serves
// tools with the runtime's state, never the data — a peer of the middleman must not write to the
// stores or read the indexes through it. The runtime actor refuses both from another node, or
// with no sender, as well (decision 0066). Never publish the runtime actor itself. A plain
// loopback port trusts every local user; give the middleman mutual TLS (libcaf-openssl) for
// anything else.
runtime_actor spawn_runtime_gate(caf::actor_system& sys, runtime_actor runtime);

}  // namespace dix
