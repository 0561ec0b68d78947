// The messages of the runtime actor (<dix/caf.hpp>): requests a CAF application sends it, their
// replies, and the events a subscriber receives. Commands are imperative, replies and events past
// tense. Every reply echoes the id it answers. A failed request answers with a caf::error of the
// "dix" category (<dix/caf/error.hpp>: to_errc, error_text).
//
// All of them but register_index serialize (inspect() below), so a runtime actor published over
// the CAF middleman answers status, metrics, readiness, rebuild, verify, subscription and stop requests
// from another process. register_index carries the backend object and the projections, which
// only exist in the runtime's process.
//
// Every message compares member-wise (operator== and !=, next to its inspect()), as CAF's test DSL
// needs for expect(...).with(...); register_index says below what it compares.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <algorithm>
#include <optional>
#include <type_traits>
#include <string>
#include <string_view>
#include <vector>

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/detail/type_list.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <caf/meta/type_name.hpp>

#include <dix/caf/inspect.hpp>
#include <dix/query.hpp>
#include <dix/readiness.hpp>
#include <dix/runtime.hpp>
#include <dix/status.hpp>
#include <dix/verify.hpp>
#include <dix/caf/error.hpp>

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

// -- verify (protocol.md §4.10, issue 31) ----------------------------------------------------

// As runtime::verify(id, options): the owner makes index `id` durable at a fence, compares it with
// the projection of the primary store there and answers once the verify ran to its end — equal
// (`result.equal`, through `result.through`) or the records that differ (condemned unless
// report-only). → index_verified. Errors: not_registered, unavailable (this runtime does not own
// the index, or it is not ready), rebuilding, stopped, invalid_argument, timeout (the fence was
// not durable within options.deadline), cancelled (interrupted), backend_failed, io_error. A
// verify may take long (its scan is paced): ask with a generous timeout, or caf::infinite.
struct verify_index {
  std::string id;
  verify_options options;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, verify_options& x) {
  auto deadline_ms = static_cast<std::int64_t>(x.deadline.count());
  return f(caf::meta::type_name("dix.verify_options"), x.report_only, x.entries_per_s, x.limit, deadline_ms,
           caf::meta::load_callback([&]() -> caf::error {
             x.deadline = std::chrono::milliseconds(deadline_ms);  // its range: the handler's (invalid_argument)
             return caf::none;
           }));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, drift& x) {
  return f(caf::meta::type_name("dix.drift"), x.kind, x.log, x.table, x.record_id, x.index_version, x.primary_version,
           caf::meta::load_callback([&x]() -> caf::error {
             return wire::check_enum("dix.drift.kind", x.kind, drift_kind::missing, drift_kind::wrong_projection);
           }));
}

// The fence's cursor travels as its encoding (formats.md §3) and is decoded on load.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, verify_result& x) {
  return f(caf::meta::type_name("dix.verify_result"), x.equal, wire::opt(x.through), x.records, x.differences, x.drifts,
           x.condemned);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, verify_index& x) {
  return f(caf::meta::type_name("dix.verify_index"), x.id, x.options);
}

inline bool operator==(const verify_index& a, const verify_index& b) {
  return a.id == b.id && a.options.report_only == b.options.report_only &&
         a.options.entries_per_s == b.options.entries_per_s && a.options.limit == b.options.limit &&
         a.options.deadline == b.options.deadline;
}
inline bool operator!=(const verify_index& a, const verify_index& b) { return !(a == b); }

struct index_verified {
  std::string id;
  verify_result result;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, index_verified& x) {
  return f(caf::meta::type_name("dix.index_verified"), x.id, x.result);
}

inline bool operator==(const index_verified& a, const index_verified& b) {
  const auto& x = a.result;
  const auto& y = b.result;
  if (a.id != b.id || x.equal != y.equal || x.through != y.through || x.records != y.records ||
      x.differences != y.differences || x.condemned != y.condemned || x.drifts.size() != y.drifts.size())
    return false;
  for (std::size_t i = 0; i < x.drifts.size(); ++i) {
    const auto& d = x.drifts[i];
    const auto& e = y.drifts[i];
    if (d.kind != e.kind || d.log != e.log || d.table != e.table || d.record_id != e.record_id ||
        d.index_version != e.index_version || d.primary_version != e.primary_version)
      return false;
  }
  return true;
}
inline bool operator!=(const index_verified& a, const index_verified& b) { return !(a == b); }

// -- subscriptions ----------------------------------------------------------------------------

// The sender of `subscribe` receives readiness_changed whenever the id's slot changes (any
// process's publication) and runner_state_changed whenever a runner of this runtime for the id
// changes state, reason or epoch, until it unsubscribes or terminates (the runtime monitors it).
// Events are level-triggered: each carries the value now, and changes in quick succession may
// arrive as one event of the last value; within one id they never go back to an older value.
// Subscribing twice is one subscription (the second's `events` replace the first's). → subscribed,
// with the values now. Errors: not_registered (no slot for the id), invalid_argument (no sender;
// `events` 0 or with bits outside subscribe_events_all).
//
// `events` chooses what the subscriber receives (subscribe_readiness, subscribe_runner_state),
// so a typed subscriber gets only the events its interface declares: subscription_for<Handle>
// sets them from the handle's type (readiness_subscriber, runner_state_subscriber,
// event_subscriber below; an untyped caf::actor gets both).
inline constexpr std::uint8_t subscribe_readiness = 1;     // readiness_changed
inline constexpr std::uint8_t subscribe_runner_state = 2;  // runner_state_changed
inline constexpr std::uint8_t subscribe_events_all = subscribe_readiness | subscribe_runner_state;

struct subscribe {
  std::string id;
  std::uint8_t events = subscribe_events_all;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, subscribe& x) {
  return f(caf::meta::type_name("dix.subscribe"), x.id, x.events, caf::meta::load_callback([&x] {
             return wire::check_bits("dix.subscribe.events", x.events, subscribe_events_all);
           }));
}

inline bool operator==(const subscribe& a, const subscribe& b) {
  return a.id == b.id && a.events == b.events;
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
// Subscribes the sender to every id registered in this runtime, now and later (issue 29): as a
// `subscribe` of each, the current values sent at once as events (readiness_changed,
// runner_state_changed, as `events` chooses), and each later registration's from its first
// change. An explicit subscribe of an id and this one add up; unsubscribe_all ends this one only.
// → subscribed_all, naming the ids registered now. Errors: invalid_argument (no sender; bad
// `events`), stopped.
struct subscribe_all {
  std::uint8_t events = subscribe_events_all;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, subscribe_all& x) {
  return f(caf::meta::type_name("dix.subscribe_all"), x.events, caf::meta::load_callback([&x] {
             return wire::check_bits("dix.subscribe_all.events", x.events, subscribe_events_all);
           }));
}

inline bool operator==(const subscribe_all& a, const subscribe_all& b) {
  return a.events == b.events;
}
inline bool operator!=(const subscribe_all& a, const subscribe_all& b) { return !(a == b); }

struct subscribed_all {
  std::vector<std::string> ids;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, subscribed_all& x) {
  return f(caf::meta::type_name("dix.subscribed_all"), x.ids);
}

inline bool operator==(const subscribed_all& a, const subscribed_all& b) {
  return a.ids == b.ids;
}
inline bool operator!=(const subscribed_all& a, const subscribed_all& b) { return !(a == b); }

// Ends the sender's subscribe_all (its explicit subscriptions stay). → unsubscribed_all
struct unsubscribe_all {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, unsubscribe_all&) {
  return f(caf::meta::type_name("dix.unsubscribe_all"));
}

inline bool operator==(const unsubscribe_all&, const unsubscribe_all&) noexcept { return true; }
inline bool operator!=(const unsubscribe_all&, const unsubscribe_all&) noexcept { return false; }

struct unsubscribed_all {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, unsubscribed_all&) {
  return f(caf::meta::type_name("dix.unsubscribed_all"));
}

inline bool operator==(const unsubscribed_all&, const unsubscribed_all&) noexcept { return true; }
inline bool operator!=(const unsubscribed_all&, const unsubscribed_all&) noexcept { return false; }

// The subscriber interfaces: what a typed subscriber declares, and so receives.
using readiness_subscriber = caf::typed_actor<caf::reacts_to<readiness_changed>>;
using runner_state_subscriber = caf::typed_actor<caf::reacts_to<runner_state_changed>>;
using event_subscriber = caf::typed_actor<caf::reacts_to<readiness_changed>, caf::reacts_to<runner_state_changed>>;

// The events a subscriber of type `Handle` handles: those its typed interface declares (its
// signatures contain caf::reacts_to<the event>); every event for an untyped actor.
template <class Handle>
constexpr std::uint8_t subscribed_events() noexcept {
  if constexpr (std::is_same<Handle, caf::actor>::value) {
    return subscribe_events_all;
  } else {
    using sigs = typename Handle::signatures;
    constexpr bool readiness = caf::detail::tl_contains<sigs, caf::reacts_to<readiness_changed>>::value;
    constexpr bool runner_state = caf::detail::tl_contains<sigs, caf::reacts_to<runner_state_changed>>::value;
    return static_cast<std::uint8_t>((readiness ? subscribe_readiness : 0) | (runner_state ? subscribe_runner_state : 0));
  }
}

// The subscribe request for a subscriber of type `Handle` (send it from that actor):
//   self->request(rt, caf::infinite, dix::subscription_for<my_readiness_handle>("by-brand"))
template <class Handle>
subscribe subscription_for(std::string id) {
  static_assert(subscribed_events<Handle>() != 0, "the handle reacts to no dix event");
  return subscribe{std::move(id), subscribed_events<Handle>()};
}

template <class Handle>
subscribe_all subscription_to_all() {
  static_assert(subscribed_events<Handle>() != 0, "the handle reacts to no dix event");
  return subscribe_all{subscribed_events<Handle>()};
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
// not_registered, invalid_argument (since 0, timeout above max_coverage_wait), unavailable; at
// the timeout rebuilding (the index still being built: it waits through a new index's first
// build) or index_lagging, both retryable. A request timeout the application
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
// -- commits and queries as messages (issue 29) -----------------------------------------------
// A CAF program commits and queries without blocking a thread of its own: the runtime actor hands
// each request to a worker on a thread of its own — one committer per store, one thread per
// running query — and the answer comes back as a message. Neither a commit (the commit mutex, the
// WAL write, an fsync, the writer gate's delay) nor a `wait`-mode query ever runs on a thread of
// the application's scheduler.

enum class write_kind : std::uint8_t { put, del };

// One write of a transaction: put `payload` under `id` of `table`, or delete `id`.
struct write_op {
  write_kind kind = write_kind::put;
  std::uint32_t table = 0;
  std::string id;
  std::string payload;  // put only
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, write_op& x) {
  return f(caf::meta::type_name("dix.write_op"), x.kind, x.table, x.id, x.payload,
           caf::meta::load_callback([&x] { return wire::check_enum("dix.write_op.kind", x.kind, write_kind::put, write_kind::del); }));
}

inline bool operator==(const write_op& a, const write_op& b) {
  return a.kind == b.kind && a.table == b.table && a.id == b.id && a.payload == b.payload;
}
inline bool operator!=(const write_op& a, const write_op& b) { return !(a == b); }

// Whether the commit syncs the WAL: the store's sync_commits, or this commit's own choice.
enum class commit_sync : std::uint8_t { store_default, sync, no_sync };

// Commits its writes as one transaction to the attached store whose log is `log` (empty: the home
// store), as primary_store::begin() … commit() does (api.md §3): validated, admitted by the writer
// gate (a throttled commit waits on the store's committer thread, never on the scheduler's), then
// written. → transaction_committed. Commits of one sender to one store are committed in the order
// sent; each store's commits run one after another on its committer. Errors: stopped (the runtime
// stopped), invalid_argument (no attached store has that log; an invalid operation, named),
// index_lagging (the gate refused: retry after a pause; nothing written), io_error (RocksDB, or the
// store below its free-space reserve). Never sent to another process: the published gate
// (spawn_runtime_gate) refuses it with not_supported.
//
// The writes live in one buffer (put() and del() append; for_each() and ops() read), so a message
// of a hundred writes is one allocation rather than two hundred, made and freed off the store's
// committer (decision 0044). Encoding, per write: kind (1 byte), table
// (u32), the id's length (u32) and bytes, and for a put the payload's length (u32) and bytes;
// little-endian. A message whose buffer does not decode as `count` writes is refused on load
// (message_invalid) and by the committer (invalid_argument).
struct commit_transaction {
  std::string log;
  commit_sync sync = commit_sync::store_default;
  std::string writes;       // encoded, see above
  std::uint64_t count = 0;  // the writes `writes` holds

  commit_transaction() = default;
  commit_transaction(std::string log_name, std::initializer_list<write_op> ops,
                     commit_sync s = commit_sync::store_default)
      : log(std::move(log_name)), sync(s) {
    for (const auto& op : ops) {
      if (op.kind == write_kind::put) put(op.table, op.id, op.payload);
      else del(op.table, op.id);
    }
  }

  void put(std::uint32_t table, std::string_view id, std::string_view payload) {
    append(write_kind::put, table, id);
    append_u32(static_cast<std::uint32_t>(payload.size()));
    writes.append(payload.data(), payload.size());
  }
  void del(std::uint32_t table, std::string_view id) { append(write_kind::del, table, id); }
  std::size_t size() const noexcept { return static_cast<std::size_t>(count); }
  bool empty() const noexcept { return count == 0; }

  // Calls fn(kind, table, id, payload) for each write in order (payload empty for a delete);
  // false, after the writes that decoded, when `writes` is not exactly `count` writes.
  template <class F>
  bool for_each(F&& fn) const {
    std::size_t at = 0;
    auto u32 = [&](std::uint32_t& out) {
      if (writes.size() - at < 4) return false;
      out = 0;
      for (int i = 3; i >= 0; --i) out = (out << 8) | static_cast<unsigned char>(writes[at + static_cast<std::size_t>(i)]);
      at += 4;
      return true;
    };
    auto bytes = [&](std::string_view& out) {
      std::uint32_t n = 0;
      if (!u32(n) || writes.size() - at < n) return false;
      out = std::string_view(writes).substr(at, n);
      at += n;
      return true;
    };
    for (std::uint64_t i = 0; i < count; ++i) {
      if (at >= writes.size()) return false;
      const auto kind = static_cast<unsigned char>(writes[at++]);
      if (kind > static_cast<unsigned char>(write_kind::del)) return false;
      std::uint32_t table = 0;
      std::string_view id, payload;
      if (!u32(table) || !bytes(id)) return false;
      if (kind == static_cast<unsigned char>(write_kind::put) && !bytes(payload)) return false;
      fn(static_cast<write_kind>(kind), table, id, payload);
    }
    return at == writes.size();
  }

  // The writes as values (for tests and fakes); empty when they do not decode.
  std::vector<write_op> ops() const {
    std::vector<write_op> out;
    const bool decoded = for_each([&](write_kind k, std::uint32_t table, std::string_view id, std::string_view payload) {
      out.push_back(write_op{k, table, std::string(id), std::string(payload)});
    });
    if (!decoded) out.clear();
    return out;
  }

 private:
  void append_u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) writes.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void append(write_kind k, std::uint32_t table, std::string_view id) {
    writes.push_back(static_cast<char>(k));
    append_u32(table);
    append_u32(static_cast<std::uint32_t>(id.size()));
    writes.append(id.data(), id.size());
    ++count;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, commit_transaction& x) {
  return f(caf::meta::type_name("dix.commit_transaction"), x.log, x.sync, x.writes, x.count,
           caf::meta::load_callback([&x]() -> caf::error {
             if (auto err = wire::check_enum("dix.commit_transaction.sync", x.sync, commit_sync::store_default,
                                             commit_sync::no_sync)) {
               return err;
             }
             const bool decodes = x.for_each([](write_kind, std::uint32_t, std::string_view, std::string_view) {});
             return wire::check_range("dix.commit_transaction.writes decode as count writes", decodes ? 1 : 0, 1, 1);
           }));
}

inline bool operator==(const commit_transaction& a, const commit_transaction& b) {
  return a.log == b.log && a.sync == b.sync && a.writes == b.writes && a.count == b.count;
}
inline bool operator!=(const commit_transaction& a, const commit_transaction& b) { return !(a == b); }

// The committed transaction: its store's log, first sequence and header time (a valid `since`
// for wait_coverage and `wait`-mode queries). sequence 0: an empty transaction, nothing written.
struct transaction_committed {
  std::string log;
  std::uint64_t sequence = 0;
  index_time_t time = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, transaction_committed& x) {
  return f(caf::meta::type_name("dix.transaction_committed"), x.log, x.sequence, x.time);
}

inline bool operator==(const transaction_committed& a, const transaction_committed& b) {
  return a.log == b.log && a.sequence == b.sequence && a.time == b.time;
}
inline bool operator!=(const transaction_committed& a, const transaction_committed& b) { return !(a == b); }

// A query of the index registered as `id` in this runtime, answered by its backend's
// backend::query (<dix/query.hpp>: lookup and range for rocksdb_index_backend, search for
// xapian_backend, knn for hnsw_backend) after the admission of its coverage mode — `wait` waits
// for `since` in the runtime first, holding no worker, up to `timeout_ms`. At most 8 queries of a runtime run at
// once; up to 256 more wait their turn in arrival order. → index_rows. Errors: stopped,
// not_registered, invalid_argument (limit outside 1…10 000, a bad vector or query string),
// not_supported (a kind the backend does not answer), timeout (256 queries already waiting:
// retry), and the admission's: index_lagging, rebuilding, unavailable. The knn vector travels as
// each component's IEEE 754 bits (to_query_index / to_index_query convert): CAF 0.17's serializer
// never returns on a NaN. Never sent to another process: the published gate refuses it.
struct query_index {
  std::string id;
  query_kind kind = query_kind::lookup;
  std::string text;  // lookup: the key; range: begin; search: the query string
  std::string end;   // range: end (exclusive)
  std::vector<std::uint32_t> vector_bits;  // knn
  std::uint64_t limit = 10;
  std::uint64_t offset = 0;  // search
  std::uint64_t ef = 64;     // knn
  coverage_kind mode = coverage_kind::bounded;
  std::int64_t tolerance_ms = 3000;
  index_time_t since = 0;
  std::int64_t timeout_ms = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, query_index& x) {
  return f(caf::meta::type_name("dix.query_index"), x.id, x.kind, x.text, x.end, x.vector_bits, x.limit, x.offset,
           x.ef, x.mode, x.tolerance_ms, x.since, x.timeout_ms, caf::meta::load_callback([&x]() -> caf::error {
             if (auto err = wire::check_enum("dix.query_index.kind", x.kind, query_kind::lookup, query_kind::knn)) return err;
             return wire::check_enum("dix.query_index.mode", x.mode, coverage_kind::strict, coverage_kind::wait);
           }));
}

inline bool operator==(const query_index& a, const query_index& b) {
  return a.id == b.id && a.kind == b.kind && a.text == b.text && a.end == b.end && a.vector_bits == b.vector_bits && a.limit == b.limit && a.offset == b.offset && a.ef == b.ef && a.mode == b.mode && a.tolerance_ms == b.tolerance_ms && a.since == b.since && a.timeout_ms == b.timeout_ms;
}
inline bool operator!=(const query_index& a, const query_index& b) { return !(a == b); }

// Floating-point values travel as their IEEE 754 bits, never as float or double: CAF 0.17.6's
// serializer loops for ever on a NaN or an infinity (detail::pack754, found by fuzz_messages;
// decision 0043). These four are the only conversions, for every message that carries a score or
// a knn vector (query_index, index_row, and the remote backends' rb_row).
namespace wire {
// The same bits as another type of the same size (std::bit_cast, which C++17 lacks).
template <class To, class From>
To same_bits(From from) noexcept {
  static_assert(sizeof(To) == sizeof(From), "IEEE 754 bits of the same width");
  To to{};
  std::memcpy(&to, &from, sizeof to);
  return to;
}
}  // namespace wire
inline std::uint64_t score_bits_of(double score) noexcept { return wire::same_bits<std::uint64_t>(score); }
inline double score_of(std::uint64_t bits) noexcept { return wire::same_bits<double>(bits); }
inline std::uint32_t component_bits_of(float component) noexcept { return wire::same_bits<std::uint32_t>(component); }
inline float component_of(std::uint32_t bits) noexcept { return wire::same_bits<float>(bits); }

// One row: the record as the index holds it, and its score (0 for lookup and range; Xapian's
// weight; knn's distance) as IEEE 754 bits — score() reads it.
struct index_row {
  std::string log;
  std::uint32_t table = 0;
  std::string record_id;
  std::uint64_t version = 0;
  std::uint64_t score_bits = 0;
  double score() const noexcept { return score_of(score_bits); }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, index_row& x) {
  return f(caf::meta::type_name("dix.index_row"), x.log, x.table, x.record_id, x.version, x.score_bits);
}

inline bool operator==(const index_row& a, const index_row& b) {
  return a.log == b.log && a.table == b.table && a.record_id == b.record_id && a.version == b.version && a.score_bits == b.score_bits;
}
inline bool operator!=(const index_row& a, const index_row& b) { return !(a == b); }

// The rows of a query_index, in the backend's order, and the coverage it was admitted under.
struct index_rows {
  std::string id;
  std::vector<index_row> rows;
  coverage_state coverage = coverage_state::unknown;
  std::int64_t tolerance_ms = 0;
  std::int64_t lag_ms = -1;  // the lag upper bound; -1: none
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, index_rows& x) {
  return f(caf::meta::type_name("dix.index_rows"), x.id, x.rows, x.coverage, x.tolerance_ms, x.lag_ms,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.index_rows.coverage", x.coverage, coverage_state::unknown, coverage_state::current);
           }));
}

inline bool operator==(const index_rows& a, const index_rows& b) {
  return a.id == b.id && a.rows == b.rows && a.coverage == b.coverage && a.tolerance_ms == b.tolerance_ms && a.lag_ms == b.lag_ms;
}
inline bool operator!=(const index_rows& a, const index_rows& b) { return !(a == b); }

// The message of a query (`id` is q.id), and back.
inline query_index to_query_index(const index_query& q) {
  query_index m;
  m.id = q.id;
  m.kind = q.kind;
  m.text = q.text;
  m.end = q.end;
  m.vector_bits.reserve(q.vector.size());
  for (float v : q.vector) m.vector_bits.push_back(component_bits_of(v));
  m.limit = q.limit;
  m.offset = q.offset;
  m.ef = q.ef;
  m.mode = q.mode.kind;
  m.tolerance_ms = q.mode.tolerance.count();
  m.since = q.mode.since;
  m.timeout_ms = q.mode.timeout.count();
  return m;
}

inline index_query to_index_query(const query_index& m) {
  index_query q;
  q.id = m.id;
  q.kind = m.kind;
  q.text = m.text;
  q.end = m.end;
  q.vector.reserve(m.vector_bits.size());
  for (auto bits : m.vector_bits) q.vector.push_back(component_of(bits));
  q.limit = static_cast<std::size_t>(m.limit);
  q.offset = static_cast<std::size_t>(m.offset);
  q.ef = static_cast<std::size_t>(m.ef);
  q.mode.kind = m.mode;
  q.mode.tolerance = std::chrono::milliseconds(m.tolerance_ms);
  q.mode.since = m.since;
  q.mode.timeout = std::chrono::milliseconds(m.timeout_ms);
  return q;
}

// The answer's rows as <dix/query.hpp> values.
inline query_rows to_query_rows(const index_rows& m) {
  query_rows out;
  out.rows.reserve(m.rows.size());
  for (const auto& r : m.rows) out.rows.push_back(scored_ref{record_ref{r.log, r.table, r.record_id, r.version}, r.score()});
  out.coverage.state = m.coverage;
  out.coverage.tolerance = std::chrono::milliseconds(m.tolerance_ms);
  if (m.lag_ms >= 0) out.coverage.lag_upper_bound = std::chrono::milliseconds(m.lag_ms);
  return out;
}

}  // namespace dix

// The registration holds the backend object and the projections: it never leaves its process.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::register_index)
