// Reading the readiness segment of a database (formats.md §4) from any process, without a
// runtime: the readiness of every backend id that has a slot, and a wait for the next change.
// For tools and monitors (`dix status`, `dix serve`); read_readiness (free_functions.hpp) reads
// one id.
//
// A segment_reader maps `<home_db>/dix/readiness.seg` (and `metrics.seg` once it exists) read-only. It never attaches, takes no lock
// and writes nothing, so it is safe beside running owners. It keeps the file it mapped: a segment
// deleted and created anew is seen by a new reader only.
//
// Thread safety: every member may be called from any thread. Blocking: wait_change only.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <dix/activity.hpp>
#include <dix/readiness.hpp>
#include <dix/result.hpp>
#include <dix/status.hpp>

namespace dix {

struct readiness_entry {
  std::string id;  // the backend id that claimed the slot
  dix::readiness readiness;
  backend_hold hold = backend_hold::none;  // why its backend holds deliveries back; none unless attached
  // The owner's rebuild progress from the metrics segment (docs/formats-metrics.md), only while a
  // runtime is attached and only figures written under the owner epoch the slot holds now;
  // absent otherwise (no scan ran under this epoch, no metrics segment, a writer at work).
  std::optional<rebuild_progress> progress;
  std::uint64_t progress_written_ns = 0;  // wall clock when the owner wrote them
  // The owner's lag figures (decision 0021), on the same terms as `progress`: attached, of the
  // slot's current owner epoch. As taken: lag_figures::aged_at brings the ages to a reader's now.
  std::optional<lag_figures> lag = std::nullopt;
  // The slot's rebuild_request: a rebuild was asked for (dix rebuild, request_rebuild) and no
  // owner has consumed the request yet. Shown whether or not a runtime is attached: the flag
  // survives until the next owner takes it.
  bool rebuild_requested = false;
};

struct readiness_table {
  bool attached = false;                 // some runtime of the database is attached
  std::vector<readiness_entry> entries;  // every claimed slot, in slot order, each id once
  // What a damaged segment shows, one sentence each (ids escaped as escape_bytes does): a slot
  // whose id length is not valid (not listed in `entries`), a slot repeating an id another slot
  // claimed first (listed once, from the first).
  std::vector<std::string> problems;
  // The home store's free-space reserve in bytes, as the last attached runtime stored it; 0
  // when none has (decision 0013).
  std::uint64_t store_reserve_bytes = 0;
};

// What attaching a runtime to the database at `home_db` would refuse in its `dix/` directory
// (decision 0011: `dix/`, `dix/runner/`, the lock files, the segments, each runner lock file —
// any that exists — owned by this process's user, no group or other permission), checked
// without opening, creating or locking anything. A program that opens the store read-write and
// then attaches calls it first, so that a refusal leaves the store as it was (issue 34: as root
// the open left root-owned files and two system transactions in another user's store). Fails
// io_error naming the file and the remedy, as attach would.
result<void> check_attachable(const std::filesystem::path& home_db);

class segment_reader {
 public:
  // Maps the segment of the database whose home store is `home_db`. nullptr when there is none
  // (`home_db`, `dix/` or the file missing, or a segment still being created). Fails
  // segment_layout_mismatch (a segment or metrics segment of another layout, or a metrics segment
  // whose block count is not the slot count; the message names the remedy), io_error.
  static result<std::unique_ptr<segment_reader>> open(const std::filesystem::path& home_db);
  // Whether a runtime holds the database's attach lock (`dix/attach.lock` read-locked), looked at
  // without the segment: when open() finds no segment while this is true, the file was removed
  // under a running runtime (issue 34), which a reader must not call "no runtime attached".
  // false when there is no lock file. Fails io_error.
  static result<bool> runtime_attached(const std::filesystem::path& home_db);
  ~segment_reader();
  segment_reader(const segment_reader&) = delete;
  segment_reader& operator=(const segment_reader&) = delete;

  // Every claimed slot with its readiness, read as read_readiness reads one: the attach state
  // first, then the slots, so a state read while a runtime is attached was published by one;
  // while none is attached every entry reads `unknown` with its stored epoch and no progress.
  // A metrics segment created after open() is mapped here. Fails io_error (the lock test on
  // attach.lock), and as open() for a metrics segment found here.
  result<readiness_table> read() const;

  // The segment's change counter (formats.md §4.4): it moves whenever any slot changes (also
  // for fields read() does not show), not when a runtime attaches or detaches. Load it before
  // read(): a change after the load ends the next wait_change at once.
  std::uint64_t change_counter() const noexcept;
  // Blocks until the change counter differs from `seen` or `timeout` passed (a futex wait, no
  // polling) and returns the counter: `seen` after a timeout. A signal does not end it early.
  std::uint64_t wait_change(std::uint64_t seen, std::chrono::milliseconds timeout) const;

  struct impl;

 private:
  explicit segment_reader(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace dix
