#include <dix/options.hpp>

#include <string>

#include "core/names.hpp"

namespace dix {
namespace {

// Checks one field against [min, max]; the message format is api.md §2's.
template <class T>
result<void> in_range(const char* owner, const char* field, T value, T min, T max) {
  if (value >= min && value <= max) return {};
  return {errc::invalid_argument, std::string(owner) + "." + field + " = " +
                                      std::to_string(value) + ": must be in [" +
                                      std::to_string(min) + ", " + std::to_string(max) + "]"};
}

result<void> in_range(const char* owner, const char* field, milliseconds value, long long min,
                      long long max) {
  return in_range<long long>(owner, field, static_cast<long long>(value.count()), min, max);
}

}  // namespace

#define DIX_CHECK(expr)        \
  do {                         \
    auto checked_ = (expr);    \
    if (!checked_) return checked_; \
  } while (false)

result<void> validate(const store_options& o) {
  if (!is_valid_log_name(o.log_name)) {
    return {errc::invalid_argument, "store_options.log_name = \"" + escape_bytes(o.log_name) +
                                        "\": must match [a-z0-9][a-z0-9._-]{0,63}"};
  }
  if (o.wal_ttl_s == 0 && o.wal_size_limit_mb == 0) {
    return {errc::invalid_argument,
            "store_options.wal_ttl_s = 0 and store_options.wal_size_limit_mb = 0: at least one "
            "must be set (both 0 deletes WAL files at once, so no index could resume)"};
  }
  if (o.write_buffer_size != 0) {
    DIX_CHECK(in_range<std::uint64_t>("store_options", "write_buffer_size", o.write_buffer_size, 64u << 10, 64ull << 30));
  }
  if (o.max_total_wal_size != 0) {
    DIX_CHECK(in_range<std::uint64_t>("store_options", "max_total_wal_size", o.max_total_wal_size, 64u << 10, 1ull << 40));
  }
  if (o.free_space_reserve_bytes != 0) {
    DIX_CHECK(in_range<std::uint64_t>("store_options", "free_space_reserve_bytes", o.free_space_reserve_bytes, 1u << 20, 1ull << 40));
  }
  return {};
}

result<void> validate(const runner_options& o) {
  constexpr const char* s = "runner_options";
  DIX_CHECK(in_range<std::uint32_t>(s, "max_transactions_per_turn", o.max_transactions_per_turn, 1,
                                    1'000'000));
  DIX_CHECK(in_range<std::uint64_t>(s, "max_bytes_per_turn", o.max_bytes_per_turn, 1024,
                                    1ull << 30));
  DIX_CHECK(in_range(s, "max_milliseconds_per_turn", o.max_milliseconds_per_turn, 1, 1000));
  DIX_CHECK(in_range<std::uint32_t>(s, "max_chunk_records", o.max_chunk_records, 1, 1u << 20));
  DIX_CHECK(in_range<std::uint64_t>(s, "max_chunk_bytes", o.max_chunk_bytes, 1024, 256ull << 20));
  DIX_CHECK(in_range<std::uint32_t>(s, "max_accepted_batches_ahead", o.max_accepted_batches_ahead,
                                    1, 4096));
  DIX_CHECK(in_range(s, "max_flush_age", o.max_flush_age, 1, 600'000));
  DIX_CHECK(in_range<std::uint32_t>(s, "flush_after_mutations", o.flush_after_mutations, 1,
                                    1u << 24));
  DIX_CHECK(in_range<std::uint64_t>(s, "flush_after_bytes", o.flush_after_bytes, 1024,
                                    1ull << 30));
  DIX_CHECK(in_range(s, "rebuild_backoff", o.rebuild_backoff, 1, 3'600'000));
  DIX_CHECK(in_range(s, "max_rebuild_backoff", o.max_rebuild_backoff, o.rebuild_backoff.count(),
                     86'400'000));
  DIX_CHECK(in_range<std::uint32_t>(s, "max_rebuild_attempts", o.max_rebuild_attempts, 1, 1000));
  DIX_CHECK(in_range(s, "max_lag", o.max_lag, 0, 86'400'000));
  if (o.verify_every.count() != 0) DIX_CHECK(in_range(s, "verify_every", o.verify_every, 1000, 2'592'000'000));
  DIX_CHECK(in_range<std::uint64_t>(s, "verify_entries_per_s", o.verify_entries_per_s, 1, 1'000'000'000));
  return {};
}

result<void> validate(const runtime_options& o) {
  constexpr const char* s = "runtime_options";
  DIX_CHECK(validate(o.runner));
  DIX_CHECK(in_range(s, "max_coverage_wait", o.max_coverage_wait, 0, 600'000));
  DIX_CHECK(in_range(s, "max_write_delay", o.max_write_delay, 1, 1000));
  DIX_CHECK(in_range<std::uint32_t>(s, "slot_count", o.slot_count, 1, 4096));
  return {};
}

result<void> validate(const system_options& o) {
  constexpr const char* s = "system_options";
  DIX_CHECK(in_range<std::uint32_t>(s, "actor_threads", o.actor_threads, 0, 256));
  DIX_CHECK(in_range<std::uint32_t>(s, "scheduler", static_cast<std::uint32_t>(o.scheduler), 0, 1));
  return {};
}

#undef DIX_CHECK

}  // namespace dix
