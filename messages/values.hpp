// How dix's public value types travel in CAF messages (CAF 0.17 inspect(), actors.md §2).
//
// * Batches travel as batch_msg{shared_ptr<const batch>}: in process a message copy shares the
//   one immutable batch, which reaches backend::deliver as is. inspect() writes the whole batch
//   (epoch, transactions with mutations, records with states, through, rebuild, bytes) and a
//   load builds a new one, so the remote transport can reuse it.
// * Cursors travel as their canonical encoding (formats.md §3) and are decoded on load; bytes
//   that do not decode fail the load with message_invalid, never a crash and never a repaired
//   cursor. Loads also reject enum values outside their enums and mutations naming a record the
//   batch does not hold.
// * Enums travel as their underlying integers (CAF 0.17's default for enums).
// * std::optional fields go through wire::opt(x): a presence flag, then the value.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>

#include <dix/backend.hpp>
#include <dix/batch.hpp>
#include <dix/cursor.hpp>
#include <dix/readiness.hpp>

#include <dix/caf/inspect.hpp>

#include "messages/errors.hpp"

namespace dix {

namespace wire {

// Every mutation names a record of the batch (protocol.md §4.6).
caf::error check_batch(const batch& b);

// Whether CAF 0.17.6 can save x: its serializer (detail::pack754) never returns on a float or
// double infinity (decision 0043), and its deserializer makes one from the bits a peer sends. A
// probe walks x as CAF's serializer would (every announced type, nested messages and errors
// included) and stops at the first float or double that is not finite; false too when the walk
// fails otherwise. `context` as the serializer's (the actor handles in x need one).
bool saves_finitely(const caf::message& x, caf::execution_unit* context);
bool saves_finitely(const caf::error& x, caf::execution_unit* context);

// An exit reason that does not save finitely, from a peer's exit message, becomes dix's
// `stopped`: an actor that quits with it has CAF send it to every monitor and link, remote ones
// too, and the middleman's thread would never finish saving it.
caf::error sendable_reason(caf::error reason, caf::execution_unit* context);

// A caf::error field (error_field, through err()): travels as CAF's error does; a load whose
// context does not save finitely fails with message_invalid naming the field, so dix never holds
// an error from a peer that would hang the actor passing it on.
struct error_field {
  const char* name;
  caf::error* value;
};

inline error_field err(const char* name, caf::error& x) noexcept { return {name, &x}; }

caf::error check_error(const char* name, const caf::error& x, caf::execution_unit* context);

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, error_field& x) {
  if constexpr (Inspector::reads_state) {
    return f(*x.value);
  } else {
    if (auto loaded = f(*x.value)) return loaded;
    return check_error(x.name, *x.value, f.context());
  }
}

}  // namespace wire

// -- inspect() for the public value types (found by ADL) -------------------------------------

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, record_state& x) {
  return f(caf::meta::type_name("dix.record_state"), x.kind, x.version, x.projection, x.reason,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.record_state.kind", x.kind, state_kind::record,
                                     state_kind::unindexable);
           }));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, record_entry& x) {
  return f(caf::meta::type_name("dix.record_entry"), x.log, x.table, x.record_id, x.log_version,
           x.state);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, mutation& x) {
  return f(caf::meta::type_name("dix.mutation"), x.record, x.log_version);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_transaction& x) {
  return f(caf::meta::type_name("dix.log_transaction"), x.log, x.sequence, x.time, x.mutations);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch& x) {
  return f(caf::meta::type_name("dix.batch"), x.epoch, x.transactions, x.records,
           wire::opt(x.through), x.rebuild, x.bytes,
           caf::meta::load_callback([&x] { return wire::check_batch(x); }));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, state_change& x) {
  return f(caf::meta::type_name("dix.state_change"), x.kind, x.epoch,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.state_change.kind", x.kind, state_change_kind::changed,
                                     state_change_kind::failed);
           }));
}

// -- the batch carrier -----------------------------------------------------------------------

// One immutable batch, shared by every in-process copy of the message that carries it.
struct batch_msg {
  std::shared_ptr<const batch> value;  // null: no batch (e.g. a turn with nothing to deliver)

  explicit operator bool() const noexcept { return value != nullptr; }
  const batch& operator*() const noexcept { return *value; }
  const batch* operator->() const noexcept { return value.get(); }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_msg& x) {
  if constexpr (Inspector::reads_state) {
    bool present = x.value != nullptr;
    if (!present) return f(caf::meta::type_name("dix.batch_msg"), present);
    // CAF 0.17 inspectors take mutable references even when they only read; a saving or
    // printing inspector never writes through it, so the shared batch stays untouched.
    auto& shared = const_cast<batch&>(*x.value);
    return f(caf::meta::type_name("dix.batch_msg"), present, shared);
  } else {
    static_assert(std::is_same<typename Inspector::result_type, caf::error>::value,
                  "loading inspectors report errors");
    bool present = false;
    if (auto err = f(present)) return err;
    if (!present) {
      x.value.reset();
      return caf::error{};
    }
    auto loaded = std::make_shared<batch>();
    if (auto err = f(*loaded)) return err;
    x.value = std::move(loaded);
    return caf::error{};
  }
}

// By value (same_batch, <dix/batch.hpp>): a message carrying an equal batch is an equal message,
// whether it shares the sender's batch (in process) or holds a loaded copy (off the wire).
inline bool operator==(const batch_msg& a, const batch_msg& b) { return same_batch(a.value, b.value); }
inline bool operator!=(const batch_msg& a, const batch_msg& b) { return !(a == b); }

}  // namespace dix
