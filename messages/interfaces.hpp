// The wiring diagram in code: every actor handle that crosses a file (actors.md §1–§3).
//
//            application ── register_index, unregister_index, query_*, rebuild_index,
//            (or the facade)   subscribe, unsubscribe, stop_runtime ──► runtime_actor
//                                   ◄── readiness_changed, runner_state_changed (subscribers)
//            watcher thread, publisher ── readiness_observed ──► runtime_actor
//            runners ── runner_status_observed ──► runtime_actor
//                                   │ supervise, unsupervise → stopped
//                                   │ (held release) rebuild_request → bool to the runner
//                                   ▼
//                          ┌── supervisor_actor ──┐  spawns, monitors and restarts the children
//                          │   (one per runtime)  │  below; lends each runner its ownership
//                          └──────────┬───────────┘
//            stop → stopped           │ spawns per registration: tailer, proxy, then runner
//            rebuild_request → bool   ▼
//  store listener, lock table,  ┌─────────────────┐  log_open, log_pull, meta_write,
//  watcher, runtime ──────────► │  runner_actor   │  meta_read ────────────────────►┌──────────────────┐
//  wake, lock_acquired          │  (one per       │ ◄─ log_opened, log_chunk,       │ log_tailer_actor │
//                               │   registration) │    log_fault, meta_written,     │ (detached)       │
//                               │  timer → self   │    meta_state ──────────────────│                  │
//                               │  (delayed)      │                                 └──────────────────┘
//                               │                 │  deliver → delivery_result_msg
//                               │                 │  durable_query → durable         ┌────────────────────┐
//                               │                 │  flush_request → flush_done      │ backend_proxy_actor│
//                               │                 │  shutdown_request → quiescence ─►│ (detached; owns    │
//                               │                 │ ◄─ state_change_msg ─────────────│  the backend)      │
//                               └────────┬────────┘                                  └────────────────────┘
//                                        │ publication → published
//                                        │ metrics_publication → metrics_published
//                                        │ lag_publication → metrics_published
//                                        ▼
//                          readiness_publisher_actor (one per runtime; segment atomics, futex)
//
// Request/response pairs are CAF responses (replies_to). The tailer conversation is
// asynchronous both ways (reacts_to on each side): an open or a pull answers with one of two
// event types (log_opened or log_fault, log_chunk or log_fault), which a typed response cannot
// express. The tailer therefore answers the sender of the command it handles
// (caf::actor_cast<runner_actor>(self->current_sender())). The proxy's state_change_msg is
// likewise a one-way send to the runner it serves. The supervisor sends shutdown_request to a
// proxy itself when a runner died (actors.md §3). Every answer echoes `gen` (or the epoch), and
// the runner drops answers of another generation (protocol.md §1.3).
//
// remote_host_actor (actors.md §2) belongs to the remote backend (backends.md §4); its session
// messages (hello, durable pushes) are not part of the runtime's table and are declared there.
#pragma once

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <dix/caf.hpp>

#include "messages/delivery.hpp"
#include "messages/lag_publication.hpp"
#include "messages/publication.hpp"
#include "messages/runner.hpp"
#include "messages/tailer.hpp"
#include "messages/verify.hpp"

namespace dix {

// The log tailer of one id: all primary-store I/O of that id (actors.md §1).
using log_tailer_actor = caf::typed_actor<caf::reacts_to<log_open>,
                                          caf::reacts_to<log_pull>,
                                          caf::reacts_to<boundary_capture>,
                                          caf::reacts_to<scan_pull>,
                                          caf::reacts_to<meta_write>,
                                          caf::reacts_to<meta_read>,
                                          caf::reacts_to<log_fence>,
                                          caf::reacts_to<log_lift>>;

// The backend proxy of one id: the only caller of the backend object. The last four entries
// are its own mailbox: a backend's state changes and completions (any thread) are sent to the proxy
// itself first, so they keep mailbox order behind the reply of the call that caused them
// (protocol.md §5.1); internally flush_done.gen carries the completion's token.
using backend_proxy_actor =
  caf::typed_actor<caf::replies_to<deliver>::with<delivery_result_msg>,
                   caf::replies_to<durable_query>::with<durable>,
                   caf::replies_to<flush_request>::with<flush_done>,
                   caf::replies_to<shutdown_request>::with<quiescence>,
                   caf::replies_to<reset_request>::with<reset_done>,
                   caf::replies_to<digest_open>::with<digest_opened>,
                   caf::reacts_to<verify_run>,
                   caf::reacts_to<verify_drop>,
                   caf::reacts_to<verify_tick>,
                   caf::reacts_to<coverage_publish>,
                   caf::reacts_to<state_change_msg>,
                   caf::reacts_to<flush_done>,
                   caf::reacts_to<quiescence>,
                   caf::reacts_to<reset_done>>;

// The runner of one registered id: runner_core's decisions, carried out.
using runner_actor = caf::typed_actor<caf::reacts_to<wake>,
                                      caf::reacts_to<timer>,
                                      caf::reacts_to<lag_due>,
                                      caf::reacts_to<lock_acquired>,
                                      caf::reacts_to<log_opened>,
                                      caf::reacts_to<log_chunk>,
                                      caf::reacts_to<log_fault>,
                                      caf::reacts_to<boundary_captured>,
                                      caf::reacts_to<scan_chunk>,
                                      caf::reacts_to<meta_written>,
                                      caf::reacts_to<meta_state>,
                                      caf::reacts_to<state_change_msg>,
                                      caf::replies_to<rebuild_request>::with<bool>,
                                      caf::replies_to<stop>::with<stopped>,
                                      caf::reacts_to<child_down>,
                                      caf::reacts_to<child_up>,
                                      caf::reacts_to<fence_taken>,
                                      caf::reacts_to<fence_lifted>,
                                      caf::reacts_to<verify_scanned>,
                                      caf::reacts_to<verify_progressed>,
                                      caf::replies_to<runner_verify>::with<verify_answer>>;

// The readiness publisher of one runtime: performs its runners' publications (it owns the
// segment mapping). Applies publications in arrival order, answers `published` (or the
// error not_registered for an id without a claimed slot), then sends `readiness_observed` to
// the observer it was spawned with, if any (an untyped handle: the runtime fans it out). Writes
// the runners' metrics_publications into the metrics segment's blocks (`metrics_published`).
using readiness_publisher_actor =
  caf::typed_actor<caf::replies_to<publication>::with<published>,
                   caf::replies_to<metrics_publication>::with<metrics_published>,
                   caf::replies_to<lag_publication>::with<metrics_published>>;

// The runtime actor as the runtime's own actors see it: the public interface (runtime_actor,
// <dix/caf.hpp>) plus what its watcher, publisher and runners tell it. spawn_runtime hands the
// application the public part only.
using runtime_actor_impl =
  runtime_actor::extend<caf::reacts_to<readiness_observed>, caf::reacts_to<runner_status_observed>,
                        caf::reacts_to<coverage_waited>, caf::reacts_to<verify_requested>,
                        caf::replies_to<unregister_registration>::with<index_unregistered>>;

// The supervisor of one runtime. Down messages of its children are system messages and need no
// signature. Its restart delays (actors.md §3) are `respawn` messages to itself.
using supervisor_actor = caf::typed_actor<caf::reacts_to<supervise>,
                                          caf::replies_to<unsupervise>::with<stopped>,
                                          caf::reacts_to<respawn>,
                                          caf::reacts_to<revive>,
                                          caf::reacts_to<meta_written>>;

}  // namespace dix
