// How dix's public status values travel in CAF 0.17 messages: inspect() overloads (found by ADL)
// for readiness, runner_status, log_metrics and runner_metrics, and the small helpers every dix
// message's inspect() uses. Loads validate: an enum outside its declared values fails with
// errc::message_invalid, never a value the receiver cannot name.
//
// Printing (caf::deep_to_string, to_string of a caf::message, CAF's test DSL): a dix enum prints
// the name its to_string() gives, `ready` rather than `1`; the wire format is untouched (below).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>

#include <dix/cursor.hpp>
#include <dix/readiness.hpp>
#include <dix/status.hpp>

namespace dix {
namespace wire {

// A view of an optional field for inspect(): f(wire::opt(x.field)) writes a presence flag, then
// the value.
template <class T>
struct optional_field {
  std::optional<T>* value;
};

template <class T>
optional_field<T> opt(std::optional<T>& x) noexcept {
  return {&x};
}

// message_invalid "<field> = <value>: must be in [<min>, <max>]" unless min ≤ value ≤ max.
caf::error check_range(const char* field, long long value, long long min, long long max);

// message_invalid "<field> = <value>: bits outside <mask>" unless value only uses mask's bits.
caf::error check_bits(const char* field, unsigned value, unsigned mask);

// For enums loaded as integers: the range of the enum's declared values.
template <class Enum>
caf::error check_enum(const char* field, Enum value, Enum min, Enum max) {
  using underlying = std::underlying_type_t<Enum>;
  return check_range(field, static_cast<long long>(static_cast<underlying>(value)),
                     static_cast<long long>(static_cast<underlying>(min)),
                     static_cast<long long>(static_cast<underlying>(max)));
}

template <class Inspector, class T>
typename Inspector::result_type inspect(Inspector& f, optional_field<T>& x) {
  if constexpr (Inspector::reads_state) {
    bool present = x.value->has_value();
    if (!present) return f(present);
    return f(present, **x.value);
  } else {
    static_assert(std::is_same<typename Inspector::result_type, caf::error>::value,
                  "loading inspectors report errors");
    bool present = false;
    if (auto err = f(present)) return err;
    if (!present) {
      x.value->reset();
      return caf::error{};
    }
    T loaded{};
    if (auto err = f(loaded)) return err;
    *x.value = std::move(loaded);
    return caf::error{};
  }
}

// message_invalid naming the cursor rule that failed.
caf::error cursor_load_error(const dix::error& decode_error);

template <class Inspector>
constexpr bool is_printer = std::is_void<typename Inspector::result_type>::value;

// Optional cursors: the encoding when saving, the JSON rendering when printing, a decode when
// loading (cursor has no default state, so it never loads in place).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, optional_field<cursor>& x) {
  if constexpr (Inspector::reads_state) {
    bool present = x.value->has_value();
    if (!present) return f(present);
    std::string text = is_printer<Inspector> ? (*x.value)->to_json() : (*x.value)->encode();
    return f(present, text);
  } else {
    bool present = false;
    if (auto err = f(present)) return err;
    if (!present) {
      x.value->reset();
      return caf::error{};
    }
    std::string bytes;
    if (auto err = f(bytes)) return err;
    auto decoded = cursor::decode(bytes);
    if (!decoded) return cursor_load_error(decoded.error());
    *x.value = std::move(*decoded);
    return caf::error{};
  }
}

// An enum's name as a printing inspector writes it: unquoted. CAF 0.17's stringification
// inspector prints a value through a to_string() that returns std::string as is, and quotes plain
// strings; dix's to_string() return std::string_view, which it does not pick up.
struct enum_name {
  std::string_view text;
};

inline std::string to_string(const enum_name& x) { return std::string{x.text}; }

// Whether the enum has a to_string(Enum) → std::string_view (found by ADL), as every dix enum
// that has spellings does (readiness_state, readiness_reason, runner_state, errc, …).
template <class Enum, class = void>
struct has_enum_name : std::false_type {};

template <class Enum>
struct has_enum_name<Enum, std::void_t<decltype(std::string_view{to_string(std::declval<Enum>())})>>
    : std::true_type {};

}  // namespace wire

// Printing inspectors only (result_type void: CAF 0.17's stringification inspector): a dix enum
// prints its name, or its number when it has no to_string(). Saving and loading inspectors
// (result_type caf::error) never select this overload, so enums keep travelling as their
// underlying integers (CAF's default, actors.md §2): the wire format does not change.
template <class Inspector, class Enum>
std::enable_if_t<std::is_void<typename Inspector::result_type>::value && std::is_enum<Enum>::value>
inspect(Inspector& f, Enum& x) {
  if constexpr (wire::has_enum_name<Enum>::value) {
    f(wire::enum_name{to_string(x)});
  } else {
    f(static_cast<std::underlying_type_t<Enum>>(x));
  }
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, readiness& x) {
  return f(caf::meta::type_name("dix.readiness"), x.state, x.reason, x.rebuild_attempts,
           x.owner_epoch, caf::meta::load_callback([&x]() -> caf::error {
             if (auto err = wire::check_enum("dix.readiness.state", x.state,
                                             readiness_state::unknown,
                                             readiness_state::unavailable))
               return err;
             return wire::check_enum("dix.readiness.reason", x.reason, readiness_reason::none,
                                     last_readiness_reason);
           }));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, runner_status& x) {
  return f(caf::meta::type_name("dix.runner_status"), x.state, x.reason, x.epoch, x.message,
           caf::meta::load_callback([&x]() -> caf::error {
             if (auto err = wire::check_enum("dix.runner_status.state", x.state,
                                             runner_state::dormant, runner_state::stopped))
               return err;
             return wire::check_enum("dix.runner_status.reason", x.reason,
                                     readiness_reason::none,
                                     last_readiness_reason);
           }));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_metrics& x) {
  return f(caf::meta::type_name("dix.log_metrics"), x.log, x.read_sequence, x.durable_sequence,
           x.latest_sequence, x.sequence_lag, x.wal_retained_bytes, x.wal_oldest_sequence,
           x.retention_headroom_ms, x.retention_headroom_bytes, x.verified_sequence);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, runner_metrics& x) {
  return f(caf::meta::type_name("dix.runner_metrics"), x.readiness, x.owner, x.epoch,
           x.accepted_batches, x.accepted_bytes, x.accepted_mutations, x.deferred_bytes,
           x.oldest_accepted_age_ms, x.cursor_lag_ms, x.stalled_ms, x.unread_age_ms, x.lag_ms,
           x.lag_gate, x.rebuild_attempts, x.quiescence_age_ms, x.coverage_time, x.coverage_age_ms,
           x.delivered_batches, x.delivered_records, x.flushes, x.wal_syncs,
           x.unindexable_records, x.log_reopens, x.transient_faults, x.last_fault,
           x.rebuilt_records, x.estimated_records, x.scan_records_per_s, x.rebuild_eta_ms, x.logs,
           x.verifying, x.verified, x.verified_records, x.verified_age_ms, x.verify_failures,
           x.verify_read_entries, x.verify_expected_entries, x.verify_eta_ms,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.runner_metrics.last_fault", x.last_fault,
                                     readiness_reason::none,
                                     last_readiness_reason);
           }));
}

}  // namespace dix
