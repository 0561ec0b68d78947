// runner ↔ backend proxy (actors.md §2, protocol.md §5–§7, §9.6). The proxy owns the backend
// object and answers each command as a CAF response. A backend completion or callback that
// arrives on another thread is first sent to the proxy itself and only then forwarded, so it
// reaches the runner behind the reply of the call that caused it (protocol.md §5.1). Replies
// echo `gen`; shutdown answers are matched by epoch instead (§1.3). The rebuild's reset and the
// coverage hook add their messages with those features.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>

#include <dix/backend.hpp>
#include <dix/cursor.hpp>
#include <dix/result.hpp>

#include "messages/values.hpp"

namespace dix {

// -- deliver ----------------------------------------------------------------------------------

// Command: backend::deliver(batch) with the shared batch as is (no copy). → delivery_result_msg
struct deliver {
  std::uint64_t gen = 0;
  batch_msg batch;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, deliver& x) {
  return f(caf::meta::type_name("dix.deliver"), x.gen, x.batch);
}

inline bool operator==(const deliver& a, const deliver& b) {
  return a.gen == b.gen && a.batch == b.batch;
}
inline bool operator!=(const deliver& a, const deliver& b) { return !(a == b); }

// Reply: accepted, deferred or failed; failed also when deliver threw (the text says what).
// Named _msg: dix::delivery_result is the backend API's enum.
struct delivery_result_msg {
  std::uint64_t gen = 0;
  delivery_result result = delivery_result::failed;
  std::string error_text;  // local diagnostics for failed; empty otherwise
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, delivery_result_msg& x) {
  return f(caf::meta::type_name("dix.delivery_result_msg"), x.gen, x.result, x.error_text,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.delivery_result.result", x.result,
                                     delivery_result::failed, delivery_result::accepted);
           }));
}

inline bool operator==(const delivery_result_msg& a, const delivery_result_msg& b) {
  return a.gen == b.gen && a.result == b.result && a.error_text == b.error_text;
}
inline bool operator!=(const delivery_result_msg& a, const delivery_result_msg& b) { return !(a == b); }

// -- durable cursor ---------------------------------------------------------------------------

// Command: backend::durable_cursor() (reconciliation, protocol.md §5.4). → durable
struct durable_query {
  std::uint64_t gen = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, durable_query& x) {
  return f(caf::meta::type_name("dix.durable_query"), x.gen);
}

inline bool operator==(const durable_query& a, const durable_query& b) {
  return a.gen == b.gen;
}
inline bool operator!=(const durable_query& a, const durable_query& b) { return !(a == b); }

// Reply: the durable cursor, absent (no cursor and no error), or the error (a transient fault).
struct durable {
  std::uint64_t gen = 0;
  std::optional<dix::cursor> cursor;
  caf::error error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, durable& x) {
  return f(caf::meta::type_name("dix.durable"), x.gen, wire::opt(x.cursor), wire::err("dix.durable.error", x.error));
}

inline bool operator==(const durable& a, const durable& b) {
  return a.gen == b.gen && a.cursor == b.cursor && a.error == b.error;
}
inline bool operator!=(const durable& a, const durable& b) { return !(a == b); }

// -- flush ------------------------------------------------------------------------------------

// Command: backend::flush(reason, done) (protocol.md §6). → flush_done when `done` runs.
struct flush_request {
  std::uint64_t gen = 0;
  flush_reason reason = flush_reason::age;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, flush_request& x) {
  return f(caf::meta::type_name("dix.flush_request"), x.gen, x.reason,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.flush_request.reason", x.reason, flush_reason::age,
                                     flush_reason::coverage);
           }));
}

inline bool operator==(const flush_request& a, const flush_request& b) {
  return a.gen == b.gen && a.reason == b.reason;
}
inline bool operator!=(const flush_request& a, const flush_request& b) { return !(a == b); }

// Reply: the barrier's outcome (none = success); a throw is backend_failed.
struct flush_done {
  std::uint64_t gen = 0;
  caf::error error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, flush_done& x) {
  return f(caf::meta::type_name("dix.flush_done"), x.gen, wire::err("dix.flush_done.error", x.error));
}

inline bool operator==(const flush_done& a, const flush_done& b) {
  return a.gen == b.gen && a.error == b.error;
}
inline bool operator!=(const flush_done& a, const flush_done& b) { return !(a == b); }

// -- state changes (protocol.md §7) -----------------------------------------------------------

// Event, proxy → runner, after passing the proxy's own mailbox. Named _msg: dix::state_change
// is the backend API's value type; to_state_change() converts.
struct state_change_msg {
  state_change_kind kind = state_change_kind::changed;
  epoch_t epoch = 0;  // the work concerned; 0 = none in particular

  dix::state_change to_state_change() const noexcept { return {kind, epoch}; }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, state_change_msg& x) {
  return f(caf::meta::type_name("dix.state_change_msg"), x.kind, x.epoch,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.state_change.kind", x.kind, state_change_kind::changed,
                                     state_change_kind::failed);
           }));
}

inline bool operator==(const state_change_msg& a, const state_change_msg& b) {
  return a.kind == b.kind && a.epoch == b.epoch;
}
inline bool operator!=(const state_change_msg& a, const state_change_msg& b) { return !(a == b); }

// -- shutdown ----------------------------------------------------------------------------------

// Command (runner, or the supervisor as lock holder): backend::shutdown(epoch, done) (§9.6).
struct shutdown_request {
  epoch_t epoch = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shutdown_request& x) {
  return f(caf::meta::type_name("dix.shutdown_request"), x.epoch);
}

inline bool operator==(const shutdown_request& a, const shutdown_request& b) {
  return a.epoch == b.epoch;
}
inline bool operator!=(const shutdown_request& a, const shutdown_request& b) { return !(a == b); }

// Reply: none = quiescent; an error = rejected (protocol.md §9.7). Echoes the epoch: shutdown
// completions are matched by epoch (§1.3).
struct quiescence {
  epoch_t epoch = 0;
  caf::error error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, quiescence& x) {
  return f(caf::meta::type_name("dix.quiescence"), x.epoch, wire::err("dix.quiescence.error", x.error));
}

inline bool operator==(const quiescence& a, const quiescence& b) {
  return a.epoch == b.epoch && a.error == b.error;
}
inline bool operator!=(const quiescence& a, const quiescence& b) { return !(a == b); }

// -- reset (protocol.md §11.4 step 3) -----------------------------------------------------------

// Command (runner): backend::reset(epoch, done) under the rebuild's new epoch.
struct reset_request {
  std::uint64_t gen = 0;
  epoch_t epoch = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, reset_request& x) {
  return f(caf::meta::type_name("dix.reset_request"), x.gen, x.epoch);
}

inline bool operator==(const reset_request& a, const reset_request& b) {
  return a.gen == b.gen && a.epoch == b.epoch;
}
inline bool operator!=(const reset_request& a, const reset_request& b) { return !(a == b); }

// Reply: none = the index is empty and its cursor durably absent; an error = the attempt fails.
// Echoes gen and epoch (internally, on the proxy's own mailbox, gen is the completion's token).
struct reset_done {
  std::uint64_t gen = 0;
  epoch_t epoch = 0;
  caf::error error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, reset_done& x) {
  return f(caf::meta::type_name("dix.reset_done"), x.gen, x.epoch, wire::err("dix.reset_done.error", x.error));
}

inline bool operator==(const reset_done& a, const reset_done& b) {
  return a.gen == b.gen && a.epoch == b.epoch && a.error == b.error;
}
inline bool operator!=(const reset_done& a, const reset_done& b) { return !(a == b); }

// -- coverage hook (protocol.md §12.3, api.md §5) -----------------------------------------------

// Command (runner): backend::publish_coverage(positions, coverage_time, epoch), once the entry
// covering that coverage_time is durable. Best effort: no reply, its outcome is never read.
struct coverage_publish {
  epoch_t epoch = 0;
  index_time_t coverage_time = 0;
  dix::positions positions;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, coverage_publish& x) {
  return f(caf::meta::type_name("dix.coverage_publish"), x.epoch, x.coverage_time, x.positions);
}

inline bool operator==(const coverage_publish& a, const coverage_publish& b) {
  return a.epoch == b.epoch && a.coverage_time == b.coverage_time && a.positions == b.positions;
}
inline bool operator!=(const coverage_publish& a, const coverage_publish& b) { return !(a == b); }

}  // namespace dix
