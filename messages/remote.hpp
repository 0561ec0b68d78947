// Remote backends, protocol v1 (issue 28; backends.md §4, decision 0043): what an owner's
// remote_backend and an index node's remote_backend_host send each other over CAF's middleman.
//
// Every message names the session (a random number the owner picks for each connection) and, owner
// to host, the owner epoch. Owner → host messages go to the host's published gate; the host
// answers with anonymous sends to the actor that sent `rb_hello`, so no host actor's handle ever
// crosses the wire. Deliveries are one-way and numbered; acknowledgements are cumulative (CAF 0.17
// fails no request in flight when a peer dies, so nothing here is a request).
//
// Loads check only what a type cannot represent (an enum out of range, a cursor that does not
// decode, a mutation naming a record its batch lacks): CAF 0.17.6 drops such a frame silently and
// keeps the connection. Every other rule (session, epoch, sequence, sizes) is the handler's, which
// answers `rb_refused` naming it. Bytes travel as std::string, never vector<char>/<uint8_t>.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>

#include <dix/backend.hpp>
#include <dix/cursor.hpp>
#include <dix/readiness.hpp>
#include <dix/caf/messages.hpp>

#include "messages/values.hpp"

namespace dix {

// -- owner → host -------------------------------------------------------------------------------

// The first message of a session: who the owner is and which backend it expects. Answered by
// rb_welcome, or rb_refused (message_invalid: another version, backend or kind; stopped: a
// superseded epoch).
struct rb_hello {
  std::uint32_t version = 0;
  std::string backend_id;
  std::string kind;
  std::string fingerprint;  // the registration's, for the host's status; not checked
  epoch_t epoch = 0;
  std::uint64_t session = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rb_hello& x) {
  return f(caf::meta::type_name("dix.rb_hello"), x.version, x.backend_id, x.kind, x.fingerprint, x.epoch,
           x.session);
}

inline bool operator==(const rb_hello& a, const rb_hello& b) {
  return a.version == b.version && a.backend_id == b.backend_id && a.kind == b.kind
         && a.fingerprint == b.fingerprint && a.epoch == b.epoch && a.session == b.session;
}
inline bool operator!=(const rb_hello& a, const rb_hello& b) { return !(a == b); }

// One batch, numbered from 1 per session. Answered by rb_ack once the wrapped backend took it.
struct rb_deliver {
  std::uint64_t session = 0;
  epoch_t epoch = 0;
  std::uint64_t seq = 0;
  batch_msg batch;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rb_deliver& x) {
  return f(caf::meta::type_name("dix.rb_deliver"), x.session, x.epoch, x.seq, x.batch);
}

inline bool operator==(const rb_deliver& a, const rb_deliver& b) {
  return a.session == b.session && a.epoch == b.epoch && a.seq == b.seq && a.batch == b.batch;
}
inline bool operator!=(const rb_deliver& a, const rb_deliver& b) { return !(a == b); }

// The commands besides delivery; `id` numbers them per session and the answer echoes it.
enum class rb_op_kind : std::uint8_t {
  flush,          // a barrier → rb_durable (push), then rb_reply
  durable_query,  // → rb_durable with this id
  shutdown,       // wrapped.shutdown(epoch) → rb_reply
  reset,          // wrapped.reset(epoch) → rb_reply
  ping,           // → rb_reply at once (the round-trip time)
};

struct rb_op {
  std::uint64_t session = 0;
  epoch_t epoch = 0;
  std::uint64_t id = 0;
  rb_op_kind op = rb_op_kind::ping;
  flush_reason reason = flush_reason::age;  // flush only
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rb_op& x) {
  return f(caf::meta::type_name("dix.rb_op"), x.session, x.epoch, x.id, x.op, x.reason,
           caf::meta::load_callback([&x]() -> caf::error {
             if (auto err = wire::check_enum("dix.rb_op.op", x.op, rb_op_kind::flush, rb_op_kind::ping)) return err;
             return wire::check_enum("dix.rb_op.reason", x.reason, flush_reason::age, flush_reason::coverage);
           }));
}

inline bool operator==(const rb_op& a, const rb_op& b) {
  return a.session == b.session && a.epoch == b.epoch && a.id == b.id && a.op == b.op && a.reason == b.reason;
}
inline bool operator!=(const rb_op& a, const rb_op& b) { return !(a == b); }

// Coverage the owner's runtime published (backend::publish_coverage): the index covers every
// commit through `coverage_time`. `age_ns` is the owner's now minus coverage_time when it was sent,
// so the index node bounds the lag with its own steady clock, not with a wall clock of another
// machine. The node admits its readers' queries by it. Not queued behind deliveries: it names
// durable work, which the host reported before the owner could publish it.
struct rb_coverage {
  std::uint64_t session = 0;
  epoch_t epoch = 0;
  dix::positions positions;
  index_time_t coverage_time = 0;
  std::int64_t age_ns = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rb_coverage& x) {
  return f(caf::meta::type_name("dix.rb_coverage"), x.session, x.epoch, x.positions, x.coverage_time, x.age_ns);
}

inline bool operator==(const rb_coverage& a, const rb_coverage& b) {
  return a.session == b.session && a.epoch == b.epoch && a.positions == b.positions
         && a.coverage_time == b.coverage_time && a.age_ns == b.age_ns;
}
inline bool operator!=(const rb_coverage& a, const rb_coverage& b) { return !(a == b); }

// -- reader → host ------------------------------------------------------------------------------

// A reader's query of the wrapped backend (any peer that reached the port: on a non-loopback
// address only through mutual TLS). Answered by rb_rows with the same id. `vector` holds knn's
// floats in this machine's byte order (4 bytes each). The host checks every field's range.
enum class rb_query_kind : std::uint8_t { lookup, range, search, knn };

struct rb_query {
  std::uint64_t id = 0;
  std::string backend_id;
  rb_query_kind kind = rb_query_kind::lookup;
  std::string text;  // lookup: the key; range: begin; search: the query string
  std::string end;   // range: end
  std::string vector;
  std::uint64_t limit = 10;  // knn: k
  std::uint64_t offset = 0;  // search
  std::uint64_t ef = 64;     // knn
  coverage_kind mode = coverage_kind::bounded;
  std::int64_t tolerance_ms = 3000;
  index_time_t since = 0;
  std::int64_t timeout_ms = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rb_query& x) {
  return f(caf::meta::type_name("dix.rb_query"), x.id, x.backend_id, x.kind, x.text, x.end, x.vector, x.limit,
           x.offset, x.ef, x.mode, x.tolerance_ms, x.since, x.timeout_ms,
           caf::meta::load_callback([&x]() -> caf::error {
             if (auto err = wire::check_enum("dix.rb_query.kind", x.kind, rb_query_kind::lookup, rb_query_kind::knn)) {
               return err;
             }
             return wire::check_enum("dix.rb_query.mode", x.mode, coverage_kind::strict, coverage_kind::wait);
           }));
}

inline bool operator==(const rb_query& a, const rb_query& b) {
  return a.id == b.id && a.backend_id == b.backend_id && a.kind == b.kind && a.text == b.text
         && a.end == b.end && a.vector == b.vector && a.limit == b.limit && a.offset == b.offset
         && a.ef == b.ef && a.mode == b.mode && a.tolerance_ms == b.tolerance_ms && a.since == b.since
         && a.timeout_ms == b.timeout_ms;
}
inline bool operator!=(const rb_query& a, const rb_query& b) { return !(a == b); }

// The score travels as the IEEE 754 bits of its double (score_bits_of and score_of, in
// <dix/caf/messages.hpp>): CAF 0.17.6's serializer loops for ever on a NaN or an infinity.
struct rb_row {
  std::string log;
  std::uint32_t table = 0;
  std::string record_id;
  std::uint64_t version = 0;
  std::uint64_t score_bits = 0;
};

inline bool operator==(const rb_row& a, const rb_row& b) {
  return a.log == b.log && a.table == b.table && a.record_id == b.record_id && a.version == b.version
         && a.score_bits == b.score_bits;
}
inline bool operator!=(const rb_row& a, const rb_row& b) { return !(a == b); }

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rb_row& x) {
  return f(caf::meta::type_name("dix.rb_row"), x.log, x.table, x.record_id, x.version, x.score_bits);
}

// -- host → owner -------------------------------------------------------------------------------

// The host took the session: its process instance (a new value is a restarted host), its durable
// cursor as of now (the fence acted first: no older epoch's work lands after it), and what the
// wrapped backend offers.
struct rb_welcome {
  std::uint64_t session = 0;
  std::uint64_t host_instance = 0;
  epoch_t epoch = 0;
  std::optional<dix::cursor> durable;
  std::uint8_t durable_code = 0;  // errc: the wrapped durable_cursor() failed (then no cursor)
  std::string durable_text;
  bool supports_reset = false;
  std::int64_t min_barrier_ms = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rb_welcome& x) {
  return f(caf::meta::type_name("dix.rb_welcome"), x.session, x.host_instance, x.epoch, wire::opt(x.durable),
           x.durable_code, x.durable_text, x.supports_reset, x.min_barrier_ms);
}

inline bool operator==(const rb_welcome& a, const rb_welcome& b) {
  return a.session == b.session && a.host_instance == b.host_instance && a.epoch == b.epoch
         && a.durable == b.durable && a.durable_code == b.durable_code && a.durable_text == b.durable_text
         && a.supports_reset == b.supports_reset && a.min_barrier_ms == b.min_barrier_ms;
}
inline bool operator!=(const rb_welcome& a, const rb_welcome& b) { return !(a == b); }

// Every batch through `seq` was taken by the wrapped backend (cumulative).
struct rb_ack {
  std::uint64_t session = 0;
  std::uint64_t seq = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rb_ack& x) {
  return f(caf::meta::type_name("dix.rb_ack"), x.session, x.seq);
}

inline bool operator==(const rb_ack& a, const rb_ack& b) {
  return a.session == b.session && a.seq == b.seq;
}
inline bool operator!=(const rb_ack& a, const rb_ack& b) { return !(a == b); }

// The outcome of an rb_op (code 0: success, else an errc and its text).
struct rb_reply {
  std::uint64_t session = 0;
  std::uint64_t id = 0;
  rb_op_kind op = rb_op_kind::ping;
  std::uint8_t code = 0;
  std::string text;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rb_reply& x) {
  return f(caf::meta::type_name("dix.rb_reply"), x.session, x.id, x.op, x.code, x.text,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.rb_reply.op", x.op, rb_op_kind::flush, rb_op_kind::ping);
           }));
}

inline bool operator==(const rb_reply& a, const rb_reply& b) {
  return a.session == b.session && a.id == b.id && a.op == b.op && a.code == b.code && a.text == b.text;
}
inline bool operator!=(const rb_reply& a, const rb_reply& b) { return !(a == b); }

// The wrapped backend's durable cursor: pushed after each barrier (id 0) and the answer to a
// durable query (its id). `through` is the last batch of the session the cursor covers.
struct rb_durable {
  std::uint64_t session = 0;
  std::uint64_t id = 0;
  epoch_t epoch = 0;
  std::optional<dix::cursor> cursor;
  std::uint64_t through = 0;
  std::uint8_t code = 0;
  std::string text;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rb_durable& x) {
  return f(caf::meta::type_name("dix.rb_durable"), x.session, x.id, x.epoch, wire::opt(x.cursor), x.through,
           x.code, x.text);
}

inline bool operator==(const rb_durable& a, const rb_durable& b) {
  return a.session == b.session && a.id == b.id && a.epoch == b.epoch && a.cursor == b.cursor
         && a.through == b.through && a.code == b.code && a.text == b.text;
}
inline bool operator!=(const rb_durable& a, const rb_durable& b) { return !(a == b); }

// What the wrapped backend told its host, forwarded to the owner's.
enum class rb_event_kind : std::uint8_t {
  accepted_work_lost,  // a state change of `epoch`
  failed,              // a state change of `epoch`
  unindexable,         // note_unindexable(text)
  rebuild,             // request_rebuild()
  hold,                // note_hold(epoch, value)
};

struct rb_event {
  std::uint64_t session = 0;
  epoch_t epoch = 0;
  rb_event_kind kind = rb_event_kind::accepted_work_lost;
  std::uint8_t value = 0;
  std::string text;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rb_event& x) {
  return f(caf::meta::type_name("dix.rb_event"), x.session, x.epoch, x.kind, x.value, x.text,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.rb_event.kind", x.kind, rb_event_kind::accepted_work_lost,
                                     rb_event_kind::hold);
           }));
}

inline bool operator==(const rb_event& a, const rb_event& b) {
  return a.session == b.session && a.epoch == b.epoch && a.kind == b.kind && a.value == b.value
         && a.text == b.text;
}
inline bool operator!=(const rb_event& a, const rb_event& b) { return !(a == b); }

// A query's answer (code 0: rows and the admission's coverage; else an errc and its text).
struct rb_rows {
  std::uint64_t id = 0;
  std::uint8_t code = 0;
  std::string text;
  std::vector<rb_row> rows;
  coverage_state coverage = coverage_state::unknown;
  std::int64_t tolerance_ms = 0;
  std::int64_t lag_ms = -1;  // -1: no upper bound
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rb_rows& x) {
  return f(caf::meta::type_name("dix.rb_rows"), x.id, x.code, x.text, x.rows, x.coverage, x.tolerance_ms, x.lag_ms,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.rb_rows.coverage", x.coverage, coverage_state::unknown,
                                     coverage_state::current);
           }));
}

inline bool operator==(const rb_rows& a, const rb_rows& b) {
  return a.id == b.id && a.code == b.code && a.text == b.text && a.rows == b.rows && a.coverage == b.coverage
         && a.tolerance_ms == b.tolerance_ms && a.lag_ms == b.lag_ms;
}
inline bool operator!=(const rb_rows& a, const rb_rows& b) { return !(a == b); }

// A message the host would not act on: message_invalid naming the rule it broke, or stopped (its
// epoch was superseded). The session is the message's, as sent.
struct rb_refused {
  std::uint64_t session = 0;
  std::uint8_t code = 0;
  std::string text;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rb_refused& x) {
  return f(caf::meta::type_name("dix.rb_refused"), x.session, x.code, x.text);
}

inline bool operator==(const rb_refused& a, const rb_refused& b) {
  return a.session == b.session && a.code == b.code && a.text == b.text;
}
inline bool operator!=(const rb_refused& a, const rb_refused& b) { return !(a == b); }

// -- dix verify of a remote index (issue 31, backends.md §4.6) ----------------------------------

// Owner → host: one step on a digest view of the wrapped backend (backend::open_digest), which
// the owner names by a number of its choice and may use only in the session that opened it.
// Every step is answered by an rb_digest_reply of the same view and op, and a view's steps are
// answered in the order sent. A view ends with `close` (no answer), the session, or the host.
enum class rb_digest_op : std::uint8_t {
  open,     // open the view → its cursor, stored digest and preparation rows
  prepare,  // digest_view::prepare(amount) → the rows read
  read,     // up to `amount` entries of digest_view::next() → them, and whether the view ended
  skips,    // backend::skips of each of `records` → one byte each in `left_out`
  close,    // the view is no longer needed (not answered)
};

struct rb_digest {
  std::uint64_t session = 0;
  epoch_t epoch = 0;
  std::uint64_t view = 0;
  rb_digest_op op = rb_digest_op::open;
  std::uint64_t amount = 0;
  std::vector<record_entry> records;  // skips
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rb_digest& x) {
  return f(caf::meta::type_name("dix.rb_digest"), x.session, x.epoch, x.view, x.op, x.amount, x.records,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.rb_digest.op", x.op, rb_digest_op::open, rb_digest_op::close);
           }));
}

inline bool operator==(const rb_digest& a, const rb_digest& b) {
  return a.session == b.session && a.epoch == b.epoch && a.view == b.view && a.op == b.op && a.amount == b.amount
         && a.records == b.records;
}
inline bool operator!=(const rb_digest& a, const rb_digest& b) { return !(a == b); }

// One entry of a digest view, as digest_entry.
struct rb_digest_row {
  std::string log;
  std::uint32_t table = 0;
  std::string record_id;
  std::uint64_t version = 0;
  std::uint64_t hash_lo = 0;
  std::uint64_t hash_hi = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rb_digest_row& x) {
  return f(caf::meta::type_name("dix.rb_digest_row"), x.log, x.table, x.record_id, x.version, x.hash_lo, x.hash_hi);
}

inline bool operator==(const rb_digest_row& a, const rb_digest_row& b) {
  return a.log == b.log && a.table == b.table && a.record_id == b.record_id && a.version == b.version
         && a.hash_lo == b.hash_lo && a.hash_hi == b.hash_hi;
}
inline bool operator!=(const rb_digest_row& a, const rb_digest_row& b) { return !(a == b); }

// Host → owner: the answer to an rb_digest (code 0: success, else an errc and its text; a failed
// open leaves no view). open: `through`, the stored digest (`sum_lo`, `sum_hi`, `records`) and
// `amount`, the preparation's rows; prepare: `amount`, the rows read; read: `entries`, and `end`
// after the last; skips: `left_out`, one byte per record asked (1: left out).
struct rb_digest_reply {
  std::uint64_t session = 0;
  std::uint64_t view = 0;
  rb_digest_op op = rb_digest_op::open;
  std::uint8_t code = 0;
  std::string text;
  std::optional<dix::cursor> through;
  std::uint64_t sum_lo = 0;
  std::uint64_t sum_hi = 0;
  std::uint64_t records = 0;
  std::uint64_t amount = 0;
  std::vector<rb_digest_row> entries;
  bool end = false;
  std::string left_out;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rb_digest_reply& x) {
  return f(caf::meta::type_name("dix.rb_digest_reply"), x.session, x.view, x.op, x.code, x.text, wire::opt(x.through),
           x.sum_lo, x.sum_hi, x.records, x.amount, x.entries, x.end, x.left_out,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.rb_digest_reply.op", x.op, rb_digest_op::open, rb_digest_op::close);
           }));
}

inline bool operator==(const rb_digest_reply& a, const rb_digest_reply& b) {
  return a.session == b.session && a.view == b.view && a.op == b.op && a.code == b.code && a.text == b.text
         && a.through == b.through && a.sum_lo == b.sum_lo && a.sum_hi == b.sum_hi && a.records == b.records
         && a.amount == b.amount && a.entries == b.entries && a.end == b.end && a.left_out == b.left_out;
}
inline bool operator!=(const rb_digest_reply& a, const rb_digest_reply& b) { return !(a == b); }

}  // namespace dix
