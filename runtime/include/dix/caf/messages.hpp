// The messages of the runtime actor (<dix/caf.hpp>): requests a CAF application sends it, their
// replies, and the events a subscriber receives. Commands are imperative, replies and events past
// tense. Every reply echoes the id it answers. A failed request answers with a caf::error of the
// "dix" category (<dix/caf/error.hpp>: to_errc, error_text).
//
// All of them but register_index serialize (inspect() below), so a runtime actor published over
// the CAF middleman answers status, metrics, readiness, rebuild, subscription and stop requests
// from another process. register_index carries the backend object and the projections, which
// only exist in the runtime's process.
#pragma once

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

struct index_registered {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, index_registered& x) {
  return f(caf::meta::type_name("dix.index_registered"), x.id);
}

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

struct index_unregistered {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, index_unregistered& x) {
  return f(caf::meta::type_name("dix.index_unregistered"), x.id);
}

// -- status, metrics, readiness (protocol.md §14, api.md §6–§7) ------------------------------

struct query_status {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, query_status& x) {
  return f(caf::meta::type_name("dix.query_status"), x.id);
}

// `status` is absent when `id` is not registered in this runtime.
struct status_report {
  std::string id;
  std::optional<runner_status> status;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, status_report& x) {
  return f(caf::meta::type_name("dix.status_report"), x.id, wire::opt(x.status));
}

struct query_metrics {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, query_metrics& x) {
  return f(caf::meta::type_name("dix.query_metrics"), x.id);
}

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

// The slot of any id in the home store's segment, registered here or not. Errors:
// not_registered (no slot for the id), invalid_argument (id outside the name rules).
struct query_readiness {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, query_readiness& x) {
  return f(caf::meta::type_name("dix.query_readiness"), x.id);
}

struct readiness_report {
  std::string id;
  dix::readiness value;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, readiness_report& x) {
  return f(caf::meta::type_name("dix.readiness_report"), x.id, x.value);
}

// -- rebuild (protocol.md §11.2) --------------------------------------------------------------

// As runtime::request_rebuild(id): `accepted` is the §11.2 table's answer.
struct rebuild_index {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rebuild_index& x) {
  return f(caf::meta::type_name("dix.rebuild_index"), x.id);
}

struct rebuild_requested {
  std::string id;
  bool accepted = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rebuild_requested& x) {
  return f(caf::meta::type_name("dix.rebuild_requested"), x.id, x.accepted);
}

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

struct subscribed {
  std::string id;
  dix::readiness readiness;
  std::optional<runner_status> status;  // absent: not registered in this runtime
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, subscribed& x) {
  return f(caf::meta::type_name("dix.subscribed"), x.id, x.readiness, wire::opt(x.status));
}

// Ends the sender's subscription to `id` (none: nothing to do). → unsubscribed
struct unsubscribe {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, unsubscribe& x) {
  return f(caf::meta::type_name("dix.unsubscribe"), x.id);
}

struct unsubscribed {
  std::string id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, unsubscribed& x) {
  return f(caf::meta::type_name("dix.unsubscribed"), x.id);
}

// Event: the id's slot changed.
struct readiness_changed {
  std::string id;
  dix::readiness readiness;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, readiness_changed& x) {
  return f(caf::meta::type_name("dix.readiness_changed"), x.id, x.readiness);
}

// Event: the id's runner in this runtime changed state, reason or epoch.
struct runner_state_changed {
  std::string id;
  runner_status status;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, runner_state_changed& x) {
  return f(caf::meta::type_name("dix.runner_state_changed"), x.id, x.status);
}

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

struct runtime_stopped {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, runtime_stopped&) {
  return f(caf::meta::type_name("dix.runtime_stopped"));
}

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

struct coverage_reached {
  std::string id;
  index_time_t since = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, coverage_reached& x) {
  return f(caf::meta::type_name("dix.coverage_reached"), x.id, x.since);
}

}  // namespace dix

// The registration holds the backend object and the projections: it never leaves its process.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::register_index)
