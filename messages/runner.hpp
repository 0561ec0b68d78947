// Messages that steer a runner from outside its conversations with tailer and proxy: wakes
// (protocol.md §8), lock-table results (§9.1), its own timers, coverage demand (§12), rebuild
// requests (§11.2) and stop (§15). The runner's core decides what each one means in the
// runner's current situation (§8.3).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <caf/actor_control_block.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>

#include <dix/caf/inspect.hpp>
#include <dix/result.hpp>
#include <dix/status.hpp>

#include "core/runner_types.hpp"  // wake_flag, timer_kind, child_kind
#include "messages/values.hpp"

namespace dix {

struct supervised_spec;  // actors/supervisor_actor.hpp

// -- wakes ------------------------------------------------------------------------------------

// The wake bits are runner_core's (dix::wake_flag::commit, system, backend, timer, coverage,
// rebuild), so the actor hands `flags` to runner_core::on_wake as is. Several wakes before a turn
// coalesce into one (protocol.md §8.2). wake_flag::all is every defined bit: a load accepts
// exactly those.
inline constexpr std::uint8_t wake_flags_mask = wake_flag::all;

// Sent by the store listener, an admission refusal, the runtime and the runner itself.
struct wake {
  std::uint8_t flags = 0;  // wake_flag bits
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wake& x) {
  return f(caf::meta::type_name("dix.wake"), x.flags, caf::meta::load_callback([&x] {
             return wire::check_bits("dix.wake.flags", x.flags, wake_flags_mask);
           }));
}

inline bool operator==(const wake& a, const wake& b) {
  return a.flags == b.flags;
}
inline bool operator!=(const wake& a, const wake& b) { return !(a == b); }

// -- lock table (protocol.md §9.1) ------------------------------------------------------------

// lock table → runner: the entry is this runner's now (free, or handed over by a release) — or,
// with `error`, it could not be taken: another process holds the crash guard (`contended`, §9.1)
// or the lock file cannot be used (a transient fault, §10.5).
struct lock_acquired {
  std::uint64_t gen = 0;  // the runner's generation at its request (fx::request_lock), echoed; another is dropped
  caf::error error;
  bool contended = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lock_acquired& x) {
  return f(caf::meta::type_name("dix.lock_acquired"), x.gen, wire::err("dix.lock_acquired.error", x.error),
           x.contended);
}

inline bool operator==(const lock_acquired& a, const lock_acquired& b) {
  return a.gen == b.gen && a.error == b.error && a.contended == b.contended;
}
inline bool operator!=(const lock_acquired& a, const lock_acquired& b) { return !(a == b); }

// -- timers -----------------------------------------------------------------------------------

// runner → itself, as a delayed message on the actor clock (fake time in tests). The kind is
// runner_core's timer_kind (actors.md §2 lists flush age, cursor flush, backoff, transient
// retry, lag tick, coverage refresh, deferral retry), handed to runner_core::on_timer as is.
// A timer never leaves its process, so a load does not range-check the kind.
struct timer {
  timer_kind kind = timer_kind::flush_age;
  std::uint64_t gen = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, timer& x) {
  return f(caf::meta::type_name("dix.timer"), x.kind, x.gen);
}

inline bool operator==(const timer& a, const timer& b) {
  return a.kind == b.kind && a.gen == b.gen;
}
inline bool operator!=(const timer& a, const timer& b) { return !(a == b); }

// -- stop (protocol.md §15) -------------------------------------------------------------------

// supervisor → runner: release (§9.6) and stop; the supervisor sends it when the runtime actor
// unsupervises the registration (§2.4). → stopped
struct stop {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stop&) {
  return f(caf::meta::type_name("dix.stop"));
}

inline bool operator==(const stop&, const stop&) noexcept { return true; }
inline bool operator!=(const stop&, const stop&) noexcept { return false; }

// Reply to stop and unsupervise: none, or backend_failed when the shutdown was rejected (the lock
// kept, §9.7).
struct stopped {
  caf::error error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stopped& x) {
  return f(caf::meta::type_name("dix.stopped"), wire::err("dix.stopped.error", x.error));
}

inline bool operator==(const stopped& a, const stopped& b) {
  return a.error == b.error;
}
inline bool operator!=(const stopped& a, const stopped& b) { return !(a == b); }

// -- rebuild requests (protocol.md §11.2) -----------------------------------------------------

enum class rebuild_source : std::uint8_t {
  local_call,   // runtime::request_rebuild(id) in this runtime
  shared_flag,  // the watcher saw rebuild_request = 1 in the slot
  backend,      // backend_host::request_rebuild()
};

// → bool: the result of runtime::request_rebuild (protocol.md §11.2 table).
struct rebuild_request {
  rebuild_source source = rebuild_source::local_call;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rebuild_request& x) {
  return f(caf::meta::type_name("dix.rebuild_request"), x.source,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.rebuild_request.source", x.source,
                                     rebuild_source::local_call, rebuild_source::backend);
           }));
}

inline bool operator==(const rebuild_request& a, const rebuild_request& b) {
  return a.source == b.source;
}
inline bool operator!=(const rebuild_request& a, const rebuild_request& b) { return !(a == b); }

// -- runner → runtime ---------------------------------------------------------------------------

// The runner of registration `token` changed status (state, reason or epoch); `version` is its
// snapshot's, so the runtime never reports an older status after a newer one.
struct runner_status_observed {
  std::string id;
  std::uint64_t token = 0;
  std::uint64_t version = 0;
  runner_status status;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, runner_status_observed& x) {
  return f(caf::meta::type_name("dix.runner_status_observed"), x.id, x.token, x.version, x.status);
}

inline bool operator==(const runner_status_observed& a, const runner_status_observed& b) {
  return a.id == b.id && a.token == b.token && a.version == b.version && a.status == b.status;
}
inline bool operator!=(const runner_status_observed& a, const runner_status_observed& b) { return !(a == b); }

// watcher thread → runtime: the coverage waiter of wait_coverage request `key` resolved (an empty
// error: covered).
struct coverage_waited {
  std::uint64_t key = 0;
  caf::error outcome;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, coverage_waited& x) {
  return f(caf::meta::type_name("dix.coverage_waited"), x.key, wire::err("dix.coverage_waited.outcome", x.outcome));
}

inline bool operator==(const coverage_waited& a, const coverage_waited& b) {
  return a.key == b.key && a.outcome == b.outcome;
}
inline bool operator!=(const coverage_waited& a, const coverage_waited& b) { return !(a == b); }

// facade → runtime: the registration `token` of `id` was detached from the runtime's registry
// (protocol.md §2.4: status(id) is gone when unregister() returns); release it. →
// index_unregistered when the release settled, backend_failed when its shutdown was rejected.
struct unregister_registration {
  std::string id;
  std::uint64_t token = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, unregister_registration& x) {
  return f(caf::meta::type_name("dix.unregister_registration"), x.id, x.token);
}

inline bool operator==(const unregister_registration& a, const unregister_registration& b) {
  return a.id == b.id && a.token == b.token;
}
inline bool operator!=(const unregister_registration& a, const unregister_registration& b) { return !(a == b); }

// -- supervision (actors.md §3) ----------------------------------------------------------------

// supervisor → runner: the id's tailer or proxy died; `escalated`: it will not be restarted.
struct child_down {
  child_kind kind = child_kind::tailer;
  bool escalated = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, child_down& x) {
  return f(caf::meta::type_name("dix.child_down"), x.kind, x.escalated,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.child_down.kind", x.kind, child_kind::tailer, child_kind::runner);
           }));
}

inline bool operator==(const child_down& a, const child_down& b) {
  return a.kind == b.kind && a.escalated == b.escalated;
}
inline bool operator!=(const child_down& a, const child_down& b) { return !(a == b); }

// supervisor → runner: the replacement of a dead tailer or proxy; the runner talks to it from now.
struct child_up {
  child_kind kind = child_kind::tailer;
  caf::strong_actor_ptr handle;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, child_up& x) {
  return f(caf::meta::type_name("dix.child_up"), x.kind, x.handle,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.child_up.kind", x.kind, child_kind::tailer, child_kind::runner);
           }));
}

inline bool operator==(const child_up& a, const child_up& b) {
  return a.kind == b.kind && a.handle == b.handle;
}
inline bool operator!=(const child_up& a, const child_up& b) { return !(a == b); }

// runtime → supervisor: start supervising a registration; the spec holds what is no message
// (the backend, the ports, the factories of its actors: actors/supervisor_actor.hpp). It never
// leaves the process (not in the type-ID block; CAF_ALLOW_UNSAFE_MESSAGE_TYPE below).
struct supervise {
  std::shared_ptr<const supervised_spec> spec;
};

// By identity: the spec holds the backend object and the factories of the registration's actors
// (std::function, not comparable), so two supervise messages are equal when they carry the same
// spec.
inline bool operator==(const supervise& a, const supervise& b) { return a.spec == b.spec; }
inline bool operator!=(const supervise& a, const supervise& b) { return !(a == b); }

// runtime → supervisor: release the registration `token` (protocol.md §2.4) and stop its
// actors. → stopped
struct unsupervise {
  std::uint64_t token = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, unsupervise& x) {
  return f(caf::meta::type_name("dix.unsupervise"), x.token);
}

inline bool operator==(const unsupervise& a, const unsupervise& b) {
  return a.token == b.token;
}
inline bool operator!=(const unsupervise& a, const unsupervise& b) { return !(a == b); }

// runtime (its request_rebuild, its watcher seeing the slot's flag) → supervisor: a rebuild was
// requested for registration `token`. An escalated registration (actors.md §3) has its restart
// history cleared and its children respawned, so the new runner acquires and consumes the
// request; otherwise nothing happens.
struct revive {
  std::uint64_t token = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, revive& x) {
  return f(caf::meta::type_name("dix.revive"), x.token);
}

inline bool operator==(const revive& a, const revive& b) {
  return a.token == b.token;
}
inline bool operator!=(const revive& a, const revive& b) { return !(a == b); }

// supervisor → itself (delayed by the restart policy): respawn the registration's child of this
// kind.
struct respawn {
  std::uint64_t token = 0;
  child_kind kind = child_kind::tailer;
  std::uint64_t incarnation = 0;  // the supervision incarnation the respawn belongs to
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, respawn& x) {
  return f(caf::meta::type_name("dix.respawn"), x.token, x.kind, x.incarnation);
}

inline bool operator==(const respawn& a, const respawn& b) {
  return a.token == b.token && a.kind == b.kind && a.incarnation == b.incarnation;
}
inline bool operator!=(const respawn& a, const respawn& b) { return !(a == b); }

}  // namespace dix

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::supervise)
