// What tests observe and inject inside an hnsw_backend (not public API): named test points in the
// barrier (the crash tests stop the process at one), the generation the files on disk carry, the
// batches applied and dropped, and a wake-up of the applier after a test moved its clock; inside
// an hnsw_reader: a test point between its cursor read and its load, the generation it holds.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>

#include <dix/backends/hnsw_backend.hpp>

#include "core/free_space.hpp"

namespace dix {

// The steps of an hnsw_backend barrier, in the order it takes them (backends.md §3).
enum class hnsw_step : std::uint8_t {
  apply,          // inside the apply of a batch, before its first record (a throw here is an apply error)
  held,           // a barrier waits for its spacing (called at each look at the clock, queue lock held)
  save_index,     // about to saveIndex to index.<g>.tmp; nothing of generation g written yet
  write_labels,   // index.<g>.tmp written, synced and checked; about to write labels.<g>.tmp
  rename_files,   // both .tmp files synced and checked; about to rename them to index.<g>, labels.<g>
  write_cursor,   // generation g in place (directory synced), `cursor` still names the previous one
  rename_cursor,  // cursor.tmp synced; about to rename it to `cursor` (the commit point)
  delete_old,     // `cursor` names generation g (directory synced); about to delete older generations
  finished,       // the barrier is complete, about to report success
};
inline constexpr std::array<hnsw_step, 7> hnsw_barrier_steps{
    hnsw_step::save_index,    hnsw_step::write_labels, hnsw_step::rename_files, hnsw_step::write_cursor,
    hnsw_step::rename_cursor, hnsw_step::delete_old,   hnsw_step::finished};
std::string_view to_string(hnsw_step step) noexcept;

struct hnsw_probe {
  // The free-space reading its deliveries are admitted against (decision 0013), and its age.
  static void set_space_probe(hnsw_backend& b, space_probe probe, std::chrono::milliseconds max_age);
  // Called on the applier thread at each step of every later barrier (a test point: off unless a
  // test sets one). It must not call the backend. Set it before the barrier is requested.
  static void on_step(hnsw_backend& b, std::function<void(hnsw_step)> hook);
  // Makes the applier look at the clock again (after a test moved an injected clock).
  static void wake(hnsw_backend& b);
  // The generation the last save wrote (or the open loaded); 0: none.
  static std::uint64_t saved_generation(const hnsw_backend& b);
  static std::uint64_t applied_batches(const hnsw_backend& b);
  // Batches never applied: another epoch's, dropped by a shutdown, reset or failure, or after one.
  static std::uint64_t dropped_batches(const hnsw_backend& b);
  // The open graph's capacity (hnswlib max_elements); 0 when closed.
  static std::size_t capacity(const hnsw_backend& b);

  // Called in a reader's load, with the generation the cursor it just read names, before that
  // generation's files are read (a test point: off unless a test sets one). The hook may write
  // the directory (drive an owner's barrier or reset); it must not call the reader.
  static void on_reader_load(hnsw_reader& r, std::function<void(std::uint64_t generation)> hook);
  // The generation the reader holds loaded; 0: none.
  static std::uint64_t loaded_generation(const hnsw_reader& r);
};

}  // namespace dix
