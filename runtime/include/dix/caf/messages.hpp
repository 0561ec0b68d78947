// The messages of the runtime actor (<dix/caf.hpp>): requests a CAF application sends it, their
// replies, and the events a subscriber receives. Commands are imperative, replies and events past
// tense. Every reply echoes the id it answers. A failed request answers with a caf::error of the
// "dix" category (<dix/caf/error.hpp>: to_errc, error_text).
//
// All of them but register_index serialize (inspect() below), so a runtime actor published over
// the CAF middleman answers status, metrics, readiness, rebuild, subscription and stop requests
// from another process. register_index carries the backend object and the projections, which
// only exist in the runtime's process.
//
// Every message compares member-wise (operator== and !=, next to its inspect()), as CAF's test DSL
// needs for expect(...).with(...); register_index says below what it compares.
#pragma once

#include <algorithm>
#include <optional>
#include <string>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/meta/type_name.hpp>

#include <dix/caf/inspect.hpp>
#include <dix/readiness.hpp>
#include <dix/runtime.hpp>
#include <dix/status.hpp>

namespace dix {

// -- registration (protocol.md §2) ------------------------------------------------------------

// Registers `value` (protocol.md §2.1 checks, all-or-nothing, §2.2). → index_registered.
// Errors: stopped, invalid_argument (the message names the field), already_registered,
// segment_full, backend_failed (attach or on_state_change threw or failed), io_error.
struct register_index {
  registration value;
};

// Equal when they register the same backend object (identity) with the same projected tables,
// projection_version and options. The projection functions themselves are not compared
// (std::function has no ==): a test that needs them calls them.
inline bool operator==(const register_index& a, const register_index& b) {
  if (a.value.backend != b.value.backend || a.value.projection_version != b.value.projection_version
      || a.value.options != b.value.options || a.value.projections.size() != b.value.projections.size())
    return false;
  return std::equal(a.value.projections.begin(), a.value.projections.end(), b.value.projections.begin(),
                    [](const auto& x, const auto& y) { return x.first == y.first; });
}
inline bool operator!=(const register_index& a, const register_index& b) { return !(a == b); }

struct index_registered {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, index_registered& x) {
  return f(caf::meta::type_name("dix.index_registered"), x.id);
}

inline bool operator==(const index_registered& a, const index_registered& b) {
  return a.id == b.id;
}
inline bool operator!=(const index_registered& a, const index_registered& b) { return !(a == b); }

// Unregisters `id` (protocol.md §2.4): the id leaves the runtime at once (a replacement may
// register while the release runs and waits for the lock), then its runner releases. Replies
// when the release settled. Errors: not_registered, backend_failed (the shutdown was rejected:
// the lock stays held, rebuild_index retries the release).
struct unregister_index {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, unregister_index& x) {
  return f(caf::meta::type_name("dix.unregister_index"), x.id);
}

inline bool operator==(const unregister_index& a, const unregister_index& b) {
  return a.id == b.id;
}
inline bool operator!=(const unregister_index& a, const unregister_index& b) { return !(a == b); }

struct index_unregistered {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, index_unregistered& x) {
  return f(caf::meta::type_name("dix.index_unregistered"), x.id);
}

inline bool operator==(const index_unregistered& a, const index_unregistered& b) {
  return a.id == b.id;
}
inline bool operator!=(const index_unregistered& a, const index_unregistered& b) { return !(a == b); }

// -- status, metrics, readiness (protocol.md §14, api.md §6–§7) ------------------------------

struct query_status {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, query_status& x) {
  return f(caf::meta::type_name("dix.query_status"), x.id);
}

inline bool operator==(const query_status& a, const query_status& b) {
  return a.id == b.id;
}
inline bool operator!=(const query_status& a, const query_status& b) { return !(a == b); }

// `status` is absent when `id` is not registered in this runtime.
struct status_report {
  std::string id;
  std::optional<runner_status> status;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, status_report& x) {
  return f(caf::meta::type_name("dix.status_report"), x.id, wire::opt(x.status));
}

inline bool operator==(const status_report& a, const status_report& b) {
  return a.id == b.id && a.status == b.status;
}
inline bool operator!=(const status_report& a, const status_report& b) { return !(a == b); }

struct query_metrics {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, query_metrics& x) {
  return f(caf::meta::type_name("dix.query_metrics"), x.id);
}

inline bool operator==(const query_metrics& a, const query_metrics& b) {
  return a.id == b.id;
}
inline bool operator!=(const query_metrics& a, const query_metrics& b) { return !(a == b); }

// `metrics` is absent when `id` is not registered in this runtime. Ages are those at the time
// the request was served.
struct metrics_report {
  std::string id;
  std::optional<runner_metrics> metrics;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, metrics_report& x) {
  return f(caf::meta::type_name("dix.metrics_report"), x.id, wire::opt(x.metrics));
}

inline bool operator==(const metrics_report& a, const metrics_report& b) {
  return a.id == b.id && a.metrics == b.metrics;
}
inline bool operator!=(const metrics_report& a, const metrics_report& b) { return !(a == b); }

// The slot of any id in the home store's segment, registered here or not. Errors:
// not_registered (no slot for the id), invalid_argument (id outside the name rules).
struct query_readiness {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, query_readiness& x) {
  return f(caf::meta::type_name("dix.query_readiness"), x.id);
}

inline bool operator==(const query_readiness& a, const query_readiness& b) {
  return a.id == b.id;
}
inline bool operator!=(const query_readiness& a, const query_readiness& b) { return !(a == b); }

struct readiness_report {
  std::string id;
  dix::readiness value;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, readiness_report& x) {
  return f(caf::meta::type_name("dix.readiness_report"), x.id, x.value);
}

inline bool operator==(const readiness_report& a, const readiness_report& b) {
  return a.id == b.id && a.value == b.value;
}
inline bool operator!=(const readiness_report& a, const readiness_report& b) { return !(a == b); }

// -- rebuild (protocol.md §11.2) --------------------------------------------------------------

// As runtime::request_rebuild(id): `accepted` is the §11.2 table's answer.
struct rebuild_index {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rebuild_index& x) {
  return f(caf::meta::type_name("dix.rebuild_index"), x.id);
}

inline bool operator==(const rebuild_index& a, const rebuild_index& b) {
  return a.id == b.id;
}
inline bool operator!=(const rebuild_index& a, const rebuild_index& b) { return !(a == b); }

struct rebuild_requested {
  std::string id;
  bool accepted = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rebuild_requested& x) {
  return f(caf::meta::type_name("dix.rebuild_requested"), x.id, x.accepted);
}

inline bool operator==(const rebuild_requested& a, const rebuild_requested& b) {
  return a.id == b.id && a.accepted == b.accepted;
}
inline bool operator!=(const rebuild_requested& a, const rebuild_requested& b) { return !(a == b); }

// -- subscriptions ----------------------------------------------------------------------------

// The sender of `subscribe` receives readiness_changed whenever the id's slot changes (any
// process's publication) and runner_state_changed whenever a runner of this runtime for the id
// changes state, reason or epoch, until it unsubscribes or terminates (the runtime monitors it).
// Events are level-triggered: each carries the value now, and changes in quick succession may
// arrive as one event of the last value; within one id they never go back to an older value.
// Subscribing twice is one subscription. → subscribed, with the values now. Errors:
// not_registered (no slot for the id), invalid_argument.
struct subscribe {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, subscribe& x) {
  return f(caf::meta::type_name("dix.subscribe"), x.id);
}

inline bool operator==(const subscribe& a, const subscribe& b) {
  return a.id == b.id;
}
inline bool operator!=(const subscribe& a, const subscribe& b) { return !(a == b); }

struct subscribed {
  std::string id;
  dix::readiness readiness;
  std::optional<runner_status> status;  // absent: not registered in this runtime
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, subscribed& x) {
  return f(caf::meta::type_name("dix.subscribed"), x.id, x.readiness, wire::opt(x.status));
}

inline bool operator==(const subscribed& a, const subscribed& b) {
  return a.id == b.id && a.readiness == b.readiness && a.status == b.status;
}
inline bool operator!=(const subscribed& a, const subscribed& b) { return !(a == b); }

// Ends the sender's subscription to `id` (none: nothing to do). → unsubscribed
struct unsubscribe {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, unsubscribe& x) {
  return f(caf::meta::type_name("dix.unsubscribe"), x.id);
}

inline bool operator==(const unsubscribe& a, const unsubscribe& b) {
  return a.id == b.id;
}
inline bool operator!=(const unsubscribe& a, const unsubscribe& b) { return !(a == b); }

struct unsubscribed {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, unsubscribed& x) {
  return f(caf::meta::type_name("dix.unsubscribed"), x.id);
}

inline bool operator==(const unsubscribed& a, const unsubscribed& b) {
  return a.id == b.id;
}
inline bool operator!=(const unsubscribed& a, const unsubscribed& b) { return !(a == b); }

// Event: the id's slot changed.
struct readiness_changed {
  std::string id;
  dix::readiness readiness;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, readiness_changed& x) {
  return f(caf::meta::type_name("dix.readiness_changed"), x.id, x.readiness);
}

inline bool operator==(const readiness_changed& a, const readiness_changed& b) {
  return a.id == b.id && a.readiness == b.readiness;
}
inline bool operator!=(const readiness_changed& a, const readiness_changed& b) { return !(a == b); }

// Event: the id's runner in this runtime changed state, reason or epoch.
struct runner_state_changed {
  std::string id;
  runner_status status;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, runner_state_changed& x) {
  return f(caf::meta::type_name("dix.runner_state_changed"), x.id, x.status);
}

inline bool operator==(const runner_state_changed& a, const runner_state_changed& b) {
  return a.id == b.id && a.status == b.status;
}
inline bool operator!=(const runner_state_changed& a, const runner_state_changed& b) { return !(a == b); }

// -- stop (protocol.md §15) -------------------------------------------------------------------

// Stops the runtime: unregisters every id and replies when every release settled. Errors:
// backend_failed naming the ids whose shutdown was rejected (their locks stay held while the
// runtime actor lives). Every stop_runtime gets the same answer. The actor stays up afterwards
// (status, metrics, readiness and rebuild_index keep working, as protocol.md §15 says); an exit
// message ends it.
struct stop_runtime {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stop_runtime&) {
  return f(caf::meta::type_name("dix.stop_runtime"));
}

inline bool operator==(const stop_runtime&, const stop_runtime&) noexcept { return true; }
inline bool operator!=(const stop_runtime&, const stop_runtime&) noexcept { return false; }

struct runtime_stopped {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, runtime_stopped&) {
  return f(caf::meta::type_name("dix.runtime_stopped"));
}

inline bool operator==(const runtime_stopped&, const runtime_stopped&) noexcept { return true; }
inline bool operator!=(const runtime_stopped&, const runtime_stopped&) noexcept { return false; }

// -- coverage (protocol.md §12.6) -------------------------------------------------------------

// As runtime::wait_for_coverage(id, since, timeout) without a cancel token: answered
// coverage_reached once `id` covers index time `since` (fixed at the request). Errors: stopped,
// not_registered, invalid_argument (since 0, timeout above max_coverage_wait), rebuilding,
// unavailable, index_lagging (the timeout passed; retryable). A request timeout the application
// sets shorter than `timeout_ms` leaves the waiter to end at its own deadline.
struct wait_coverage {
  std::string id;
  index_time_t since = 0;
  std::uint64_t timeout_ms = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wait_coverage& x) {
  return f(caf::meta::type_name("dix.wait_coverage"), x.id, x.since, x.timeout_ms);
}

inline bool operator==(const wait_coverage& a, const wait_coverage& b) {
  return a.id == b.id && a.since == b.since && a.timeout_ms == b.timeout_ms;
}
inline bool operator!=(const wait_coverage& a, const wait_coverage& b) { return !(a == b); }

struct coverage_reached {
  std::string id;
  index_time_t since = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, coverage_reached& x) {
  return f(caf::meta::type_name("dix.coverage_reached"), x.id, x.since);
}

inline bool operator==(const coverage_reached& a, const coverage_reached& b) {
  return a.id == b.id && a.since == b.since;
}
inline bool operator!=(const coverage_reached& a, const coverage_reached& b) { return !(a == b); }

}  // namespace dix

// The registration holds the backend object and the projections: it never leaves its process.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::register_index)
