// What tests observe inside a rocksdb_index_backend (not public API): the bytes queued for the
// applier now, the batches it applied and dropped (another epoch's, protocol.md §9.4), named
// test points inside reset, and the free-space reading (decision 0013).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>

#include <dix/backends/rocksdb_index_backend.hpp>

#include "core/free_space.hpp"

namespace dix {

// The steps of rocksdb_index_backend::reset, in the order it takes them (backends.md §1): the
// cursor is durably gone before anything is destroyed.
enum class reset_step : std::uint8_t {
  delete_cursor,   // about to Delete(cursor) with sync = true; nothing changed yet
  drop_entries,    // the cursor is durably gone; about to drop `entries`
  create_entries,  // `entries` dropped; about to create it again, empty
  drop_reverse,    // `entries` empty; about to drop `reverse`
  create_reverse,  // `reverse` dropped; about to create it again, empty
  finished,        // both families empty, about to report success
};
inline constexpr std::array<reset_step, 6> reset_steps{reset_step::delete_cursor,  reset_step::drop_entries,
                                                       reset_step::create_entries, reset_step::drop_reverse,
                                                       reset_step::create_reverse, reset_step::finished};
std::string_view to_string(reset_step step) noexcept;

struct rocksdb_index_probe {
  static std::uint64_t queued_bytes(const rocksdb_index_backend& b);
  static std::uint64_t applied_batches(const rocksdb_index_backend& b);
  static std::uint64_t dropped_batches(const rocksdb_index_backend& b);
  // Called on the applier thread before each step of every later reset; `true` makes that step
  // fail with io_error instead (a fault point: off unless a test sets a hook). Set it before the
  // reset is requested.
  static void on_reset_step(rocksdb_index_backend& b, std::function<bool(reset_step)> hook);
  // How many keys and refs a digest view's check keeps to name records whose entries and reverse
  // families disagree, before it names whole buckets instead (default 2^18; decision 0058).
  static void set_verify_name_cap(rocksdb_index_backend& b, std::size_t cap);
  // Replaces the reading of the index directory's filesystem (statvfs) and how long one serves.
  static void set_space_probe(rocksdb_index_backend& b, space_probe probe, std::chrono::milliseconds max_age);
};

}  // namespace dix
