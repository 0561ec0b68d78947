// The `dix` option group (api.md §6.14): one table of the runtime_options fields an application
// configures the CAF way, what dix::configure declares from it, and runtime_options_from, which
// reads the values back, converts them to the fields and lets validate() judge them, naming the
// option in its refusal.
#include "actors/runtime_config.hpp"

#include <dix/caf.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include <caf/actor_system_config.hpp>
#include <caf/config_option_adder.hpp>
#include <caf/config_option_set.hpp>
#include <caf/config_value.hpp>
#include <caf/settings.hpp>
#include <caf/timespan.hpp>

namespace dix {
namespace {

// How an option is written: a count is a CAF integer (int64: any integer reaches validate(), which
// names the range, instead of being dropped by CAF as not fitting the field's type); a duration is
// a CAF timespan (`250ms`, `5s`, `2min`), a whole number of milliseconds.
enum class option_kind : std::uint8_t { count, duration };

struct option_spec {
  const char* group;        // the CAF option group: "dix" or "dix.runner"
  const char* name;         // the option's name in its group
  const char* field;        // the field as validate() names it
  const char* description;  // for --long-help
  option_kind kind;
  std::int64_t (*read)(const runtime_options&);   // the field; milliseconds for a duration
  void (*write)(runtime_options&, std::int64_t);  // into the field, clamped to its type
};

template <class T>
std::int64_t to_int(T value) {
  if constexpr (std::is_same_v<T, milliseconds>) return static_cast<std::int64_t>(value.count());
  else return static_cast<std::int64_t>(value);
}

// A value outside an unsigned field's type is clamped into it: 0 below, the type's maximum above.
// Both are outside the field's range (every unsigned field's range starts at 1 or more and ends
// below its type's maximum; the options test checks each), so validate() still refuses it and
// names the range.
template <class T>
T from_int(std::int64_t value) {
  if constexpr (std::is_same_v<T, milliseconds>) {
    return milliseconds{value};
  } else {
    static_assert(std::is_unsigned_v<T>);
    if (value < 0) return 0;
    if (static_cast<std::uint64_t>(value) > std::numeric_limits<T>::max()) return std::numeric_limits<T>::max();
    return static_cast<T>(value);
  }
}

template <auto Member>
std::int64_t read_runtime(const runtime_options& o) { return to_int(o.*Member); }
template <auto Member>
void write_runtime(runtime_options& o, std::int64_t v) { o.*Member = from_int<std::decay_t<decltype(o.*Member)>>(v); }
template <auto Member>
std::int64_t read_runner(const runtime_options& o) { return to_int(o.runner.*Member); }
template <auto Member>
void write_runner(runtime_options& o, std::int64_t v) {
  o.runner.*Member = from_int<std::decay_t<decltype(o.runner.*Member)>>(v);
}

#define DIX_RUNTIME_OPTION(name, member, kind, description)                                        \
  option_spec {                                                                                    \
    "dix", name, "runtime_options." #member, description, option_kind::kind,                      \
        &read_runtime<&runtime_options::member>, &write_runtime<&runtime_options::member>          \
  }
#define DIX_RUNNER_OPTION(name, member, kind, description)                                         \
  option_spec {                                                                                    \
    "dix.runner", name, "runner_options." #member, description, option_kind::kind,                \
        &read_runner<&runner_options::member>, &write_runner<&runner_options::member>              \
  }

// Every field of runtime_options (and of its runner defaults), named as the field with dashes.
// Ranges and defaults: <dix/options.hpp>.
const option_spec specs[] = {
  DIX_RUNTIME_OPTION("max-coverage-wait", max_coverage_wait, duration, "longest coverage wait, [0ms, 10min]"),
  DIX_RUNTIME_OPTION("max-write-delay", max_write_delay, duration, "longest writer-gate delay, [1ms, 1s]"),
  DIX_RUNTIME_OPTION("slot-count", slot_count, count, "readiness slots when creating the segment, [1, 4096]"),
  DIX_RUNNER_OPTION("max-transactions-per-turn", max_transactions_per_turn, count, "[1, 1000000]"),
  DIX_RUNNER_OPTION("max-bytes-per-turn", max_bytes_per_turn, count, "[1024, 2^30]"),
  DIX_RUNNER_OPTION("max-milliseconds-per-turn", max_milliseconds_per_turn, duration, "[1ms, 1s]"),
  DIX_RUNNER_OPTION("max-chunk-records", max_chunk_records, count, "[1, 2^20]"),
  DIX_RUNNER_OPTION("max-chunk-bytes", max_chunk_bytes, count, "[1024, 2^28]"),
  DIX_RUNNER_OPTION("max-accepted-batches-ahead", max_accepted_batches_ahead, count, "[1, 4096]"),
  DIX_RUNNER_OPTION("max-flush-age", max_flush_age, duration, "[1ms, 10min]"),
  DIX_RUNNER_OPTION("flush-after-mutations", flush_after_mutations, count, "[1, 2^24]"),
  DIX_RUNNER_OPTION("flush-after-bytes", flush_after_bytes, count, "[1024, 2^30]"),
  DIX_RUNNER_OPTION("rebuild-backoff", rebuild_backoff, duration, "[1ms, 1h]"),
  DIX_RUNNER_OPTION("max-rebuild-backoff", max_rebuild_backoff, duration, "[rebuild-backoff, 24h]"),
  DIX_RUNNER_OPTION("max-rebuild-attempts", max_rebuild_attempts, count, "[1, 1000]"),
  DIX_RUNNER_OPTION("max-lag", max_lag, duration, "writer gate, 0 = none, else [1ms, 24h]"),
  DIX_RUNNER_OPTION("verify-every", verify_every, duration, "scheduled verify, 0 = none, else [1s, 30d]"),
  DIX_RUNNER_OPTION("verify-entries-per-s", verify_entries_per_s, count, "the scheduled verify's pace, [1, 10^9]"),
};

#undef DIX_RUNTIME_OPTION
#undef DIX_RUNNER_OPTION

std::string full_name(const option_spec& s) { return std::string(s.group) + "." + s.name; }

// A value as the refusal shows it: as CAF writes it, but a zero duration as 0ms (CAF writes 0d).
std::string shown(const caf::config_value& value) {
  if (const auto* span = caf::get_if<caf::timespan>(&value); span != nullptr && span->count() == 0) return "0ms";
  return caf::to_string(value);
}

caf::config_value default_value(const option_spec& s) {
  const auto v = s.read(runtime_options{});
  if (s.kind == option_kind::duration) return caf::config_value{caf::timespan{milliseconds{v}}};
  return caf::config_value{v};
}

// actor_system_config keeps its option set protected, and CAF 0.17 offers a library no other way
// to declare options on a config it did not derive. A derived class may name the member; the
// pointer to it applies to any actor_system_config.
struct option_set_access : caf::actor_system_config {
  static caf::config_option_set& of(caf::actor_system_config& cfg) {
    return cfg.*(&option_set_access::custom_options_);
  }
};

caf::error refuse(std::string message) { return make_error(errc::invalid_argument, std::move(message)); }

}  // namespace

void add_dix_options(caf::actor_system_config& cfg) {
  auto& options = option_set_access::of(cfg);
  for (const auto& s : specs) {
    const auto name = full_name(s);
    // By group and name: the one-string lookup splits at the first dot, which misses "dix.runner".
    if (options.qualified_name_lookup(s.group, s.name) == nullptr) {
      caf::config_option_adder adder{options, s.group};
      if (s.kind == option_kind::duration) adder.add<caf::timespan>(s.name, s.description);
      else adder.add<std::int64_t>(s.name, s.description);
    }
    caf::put_missing(cfg.content, name, default_value(s));
  }
}

caf::expected<runtime_options> runtime_options_from(const caf::actor_system_config& cfg) {
  runtime_options out;
  const auto& content = caf::content(cfg);
  for (const auto& s : specs) {
    const auto name = full_name(s);
    const auto* value = caf::get_if(&content, name);
    if (value == nullptr) continue;  // not configured: the default
    if (s.kind == option_kind::duration) {
      const auto* span = caf::get_if<caf::timespan>(value);
      if (span == nullptr) {
        return refuse(name + " = " + caf::to_string(*value) + ": must be a duration (250ms, 5s, 2min)");
      }
      if (span->count() % 1'000'000 != 0) {
        return refuse(name + " = " + caf::to_string(*value) + ": must be a whole number of milliseconds");
      }
      s.write(out, static_cast<std::int64_t>(span->count() / 1'000'000));
    } else {
      const auto* count = caf::get_if<std::int64_t>(value);
      if (count == nullptr) return refuse(name + " = " + caf::to_string(*value) + ": must be an integer");
      s.write(out, *count);
    }
  }
  auto valid = validate(out);
  if (valid) return out;
  // validate() names the first field out of range: "runner_options.max_flush_age = 0: must be in
  // [1, 600000]". The refusal names the option and shows the value as configured.
  const auto& message = valid.error().message();
  for (const auto& s : specs) {
    const auto prefix = std::string(s.field) + " = ";
    if (message.compare(0, prefix.size(), prefix) != 0) continue;
    const auto verdict = message.find(": ");
    const auto name = full_name(s);
    const auto* value = caf::get_if(&content, name);
    const auto written = shown(value != nullptr ? *value : default_value(s));
    return refuse(name + " = " + written + message.substr(verdict) + (s.kind == option_kind::duration ? " ms" : "")
                  + " (" + s.field + ")");
  }
  return make_error(valid.error());
}

}  // namespace dix
