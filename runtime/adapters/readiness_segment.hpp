// The shared readiness segment (formats.md §4): `P/dix/readiness.seg`, a file mapped MAP_SHARED by
// every runtime of the database P, one 128-byte slot per backend id. The file is opened
// O_NOFOLLOW and validated through that descriptor, then mapped with Boost.Interprocess
// (file_mapping + mapped_region) only after the file Boost opened is shown to be the same one
// (st_dev, st_ino); the locks and futex calls are direct system calls (decision 0007). The readiness_slot port of
// runtime/ports/ownership.hpp over one slot, plus the slot fields the runner needs later (lag gate,
// coverage time and demand, rebuild request) and futex waits on the change counters.
//
// Linux, 64-bit little-endian only. Every field is accessed with `__atomic_*` builtins of its own
// width on the mapping (§4.4); no std::atomic is placed on it.
//
// Lifetimes: a readiness_segment holds an OFD read lock on `attach.lock` (§4.6) from attach() to
// its destruction; a segment_slot keeps its segment (mapping and lock) alive. A segment_view maps
// the segment without attaching, for the free functions (api.md §7).
//
// Thread safety: every method may be called from any thread. Only the owner of a slot's runner
// lock may call the owner-only mutators (formats.md §4.4); the adapter does not check it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/mapped_file.hpp"  // test_set_segment_map_hook
#include "core/coverage_read.hpp"
#include "ports/ownership.hpp"

namespace dix {

// formats.md §4.2, §4.3: offsets and sizes, as numbers the tests can check against formats.md.
namespace segment_layout {
inline constexpr std::uint32_t layout_version = 1;
inline constexpr std::uint32_t header_bytes = 128;
inline constexpr std::uint32_t slot_bytes = 128;
inline constexpr std::uint32_t default_slot_count = 64;
inline constexpr std::uint32_t max_slot_count = 65536;  // 8 MiB; formats.md §4.2
inline constexpr std::size_t max_id_bytes = 64;
}  // namespace segment_layout

class segment_mapping;  // the mapped file; defined in the .cpp

// The coverage double read (protocol.md §12.5, formats.md §4.4) of one slot: state, owner_epoch,
// coverage_time, state, owner_epoch, every load acquire; repeated while the two pairs differ, at
// most coverage_read_attempts times, then the time is absent. `between(attempt)`, if set, runs
// after an attempt's coverage_time load and before its second pair (tests drive a concurrent
// change through it deterministically).
using between_loads = std::function<void(int attempt)>;
class metrics_segment;  // adapters/metrics_segment.hpp

// One publication (protocol.md §1.5) as segment_slot::apply stores it.
struct slot_publication {
  readiness_state state = readiness_state::unknown;
  readiness_reason reason = readiness_reason::none;
  std::uint32_t attempts = 0;                 // rebuild_attempts
  std::optional<index_time_t> coverage_time;  // stored only with state ready; absent: unchanged
  std::optional<std::uint32_t> lag_gate;      // absent: unchanged
};

// One slot of a mapped segment. Implements the readiness_slot port; the owner-only mutators
// follow the §4.4 ordering and, after every write, bump the slot's and the header's change
// counters (release) and FUTEX_WAKE all waiters of both.
class segment_slot final : public readiness_slot {
 public:
  segment_slot(std::shared_ptr<const segment_mapping> mapping, std::uint32_t index);

  // readiness_slot
  // owner_epoch + 1 (a CAS, acq_rel); record_corrupt, nothing changed, when owner_epoch is
  // already 2^64-1: an epoch never wraps (the message names the slot and the remedy).
  result<epoch_t> mint_epoch() override;
  // record_corrupt (as mint_epoch would fail) when owner_epoch cannot be incremented.
  result<void> check_mintable() const;
  epoch_t owner_epoch() const noexcept override;      // acquire
  void raise_epoch_floor(epoch_t floor) override;     // CAS-max; never lowers
  void publish(readiness_state state, readiness_reason reason, std::uint32_t attempts) override;
  dix::readiness read() const noexcept override;      // unknown codes read unknown / none
  // The coverage double read (above).
  coverage_reading read_coverage(const between_loads& between = {}) const;
  // Bumps the slot's and the header's change counters and wakes their waiters without writing
  // a field: a cancelled waiter's thread re-checks (formats.md §4.4: waiters re-check their
  // condition at every change, so a change that changed nothing is harmless).
  void poke() noexcept;

  // Owner: one whole publication with a single notify (protocol.md §1.5): coverage_time = 0 for
  // any state but ready (a carried value is ignored), else the carried value if any; lag_gate if
  // carried; then reason, rebuild_attempts, then state (release, §4.4); then the counters and
  // wakes. Returns the slot's change counter as this publication's bump left it: a reader that
  // loads a counter at least this high (acquire) sees this publication or a later change.
  std::uint64_t apply(const slot_publication& p);

  // Owner: lag_gate (0 open, 1…1 000 000 µs per gated write, 0xFFFFFFFF exceeded).
  void set_lag_gate(std::uint32_t gate) override;
  std::uint32_t lag_gate() const noexcept override;
  // The owner's backend (through its host): why it holds deliveries back (the slot's `hold`,
  // docs/formats.md; decision 0013). Stored and notified only when it changes.
  void set_hold(backend_hold hold) override;
  backend_hold hold() const noexcept;
  // Owner: the index time certified covered; 0 = none.
  void set_coverage_time(index_time_t time);
  index_time_t coverage_time() const noexcept;
  // Anyone: stores rebuild_request = 1 (release).
  void request_rebuild();
  bool rebuild_requested() const noexcept override;  // acquire
  // Owner: exchange(0) (acq_rel); true if a request was pending.
  bool consume_rebuild_request() override;
  // Waiters raise (CAS max), the owner clears with the value it saw (CAS to 0; false if a
  // waiter raised it meanwhile).
  index_time_t coverage_demand() const noexcept override;
  void raise_coverage_demand(index_time_t since);
  bool clear_coverage_demand(index_time_t seen);
  // Publisher, after a coverage_time was stored (protocol.md §12.4): clears the demand with one
  // compare-exchange when it is at most `covered`; a waiter's concurrent raise wins (the CAS
  // fails and the raised demand stays). True when it cleared one.
  bool clear_covered_demand(index_time_t covered);

  std::uint64_t change_counter() const noexcept;  // acquire
  // Blocks until the slot's change counter differs from `seen` or `timeout` passed; returns the
  // counter (equal to `seen` on timeout). FUTEX_WAIT on its low 32 bits (shared futex).
  std::uint64_t wait_change(std::uint64_t seen, std::chrono::milliseconds timeout) const;

  std::uint32_t index() const noexcept { return index_; }
  std::string id() const;

 private:
  unsigned char* base() const noexcept;
  std::uint64_t changed() noexcept;  // counter bumps and wakes, §4.4; the slot counter after
  error exhausted() const;           // the record_corrupt of an epoch at 2^64-1

  std::shared_ptr<const segment_mapping> mapping_;
  std::uint32_t index_;
};

// An attached runtime's view of the segment (formats.md §4.6 steps 1–3).
class readiness_segment : public std::enable_shared_from_this<readiness_segment> {
 public:
  // Creates `realpath(home_db)/dix/` (0700, with `runner/`), the lock files, the segment and the
  // metrics segment (0600) as needed, attaches (OFD read lock on attach.lock) and, as the first attacher, resets stale
  // state. `slot_count` (1…max_slot_count) applies only when the segment is created.
  // Fails invalid_argument (slot_count), segment_layout_mismatch (an existing segment or metrics
  // segment of another layout: the message names the path, the versions and the remedy), io_error
  // (system calls; home_db missing).
  static result<std::shared_ptr<readiness_segment>> attach(
      const std::filesystem::path& home_db,
      std::uint32_t slot_count = segment_layout::default_slot_count);

  ~readiness_segment();
  readiness_segment(const readiness_segment&) = delete;
  readiness_segment& operator=(const readiness_segment&) = delete;

  // The slot of `id`, claimed if new (§4.6 step 3; slots are never freed). Fails
  // invalid_argument (id outside the name rules), segment_full, io_error (flock).
  result<std::shared_ptr<segment_slot>> claim(std::string_view id);
  // The slot some runtime of the database claimed for `id`; nullptr when there is none (an
  // invalid id has none). Never claims and takes no lock: a claimer stores id_len last
  // (release) and slots are never freed, so a slot found stays `id`'s.
  std::shared_ptr<segment_slot> find(std::string_view id);

  std::uint32_t slot_count() const noexcept;
  std::uint64_t reset_count() const noexcept;
  // The home store's free-space reserve in bytes, for `dix status` (header offset 40,
  // docs/formats.md; decision 0013). Every attaching runtime stores its own.
  void set_store_reserve(std::uint64_t bytes) noexcept;
  std::uint64_t segment_change_counter() const noexcept;  // acquire
  // As segment_slot::wait_change, on the header's segment_change_counter.
  std::uint64_t wait_change(std::uint64_t seen, std::chrono::milliseconds timeout) const;
  // Bumps segment_change_counter and wakes its waiters (a runtime's watcher leaving).
  void notify() noexcept;
  // `realpath(home_db)/dix`.
  const std::filesystem::path& directory() const noexcept { return directory_; }
  // `dix/metrics.seg`, created or validated by attach beside the segment (one block per slot,
  // docs/formats-metrics.md) and cleared by the first attacher with the stale reset.
  metrics_segment& metrics() const noexcept { return *metrics_; }

 private:
  readiness_segment(std::filesystem::path directory, int attach_fd, int lock_fd,
                    std::shared_ptr<segment_mapping> mapping, std::shared_ptr<metrics_segment> metrics);

  std::filesystem::path directory_;
  int attach_fd_;  // holds the OFD read lock
  int lock_fd_;    // readiness.lock, flock'ed around claims
  std::shared_ptr<segment_mapping> mapping_;
  std::shared_ptr<metrics_segment> metrics_;
  std::mutex claim_mutex_;  // flock on one descriptor does not exclude this process's threads
};

// The segment mapped without attaching (formats.md §4.6 step 5): never locks attach.lock.
// Whether `dix_dir`/attach.lock is read-locked by an attached runtime (formats.md §4.6); false
// when the file is missing. io_error when it cannot be tested.
result<bool> attach_lock_held(const std::filesystem::path& dix_dir);

class segment_view {
 public:
  enum class access { read_only, read_write };

  // nullptr when there is no segment: home_db, `dix/` or the file missing, or the magic zero.
  // Fails segment_layout_mismatch, io_error.
  //
  // A process keeps the views it opened (the last 8 (home_db as given, mode) pairs) and hands
  // one out again while `<home_db>/dix/readiness.seg` is still the file it maps (its device,
  // inode, size, mode and owner, by one lstat, and its header still valid): the free functions of another process then cost one system call
  // instead of resolving, opening, checking and mapping the file each time. A valid segment is
  // never truncated or rewritten in place — a new one is a new file — and the mapping holds its
  // inode, so the same pair means the same file. A file that changed or went away is opened
  // afresh (or answers nullptr) and replaces the kept view.
  static result<std::shared_ptr<segment_view>> open(const std::filesystem::path& home_db,
                                                    access mode = access::read_only);

  ~segment_view();
  segment_view(const segment_view&) = delete;
  segment_view& operator=(const segment_view&) = delete;

  std::optional<std::uint32_t> find(std::string_view id) const;
  dix::readiness read(std::uint32_t index) const;
  coverage_reading read_coverage(std::uint32_t index, const between_loads& between = {}) const;
  backend_hold hold(std::uint32_t index) const;
  // The slot's rebuild_request (acquire): set by a request no owner has consumed yet.
  bool rebuild_requested(std::uint32_t index) const noexcept;
  // The home store's free-space reserve an attached runtime stored; 0 = none stored yet.
  std::uint64_t store_reserve() const noexcept;
  std::uint32_t slot_count() const noexcept;
  // `realpath(home_db)/dix`.
  const std::filesystem::path& directory() const noexcept { return directory_; }
  // Every claimed slot as (index, backend id), in slot order.
  std::vector<std::pair<std::uint32_t, std::string>> claimed() const;
  // Every slot whose id length is neither 0 (free) nor a valid one (1…64): (index, length). A
  // damaged segment; claimed() leaves them out.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> damaged_ids() const;
  // The header's segment_change_counter (acquire) and a futex wait on it, as
  // readiness_segment::segment_change_counter and wait_change; FUTEX_WAIT works on a read-only
  // mapping (formats.md §4.4).
  std::uint64_t segment_change_counter() const noexcept;
  std::uint64_t wait_change(std::uint64_t seen, std::chrono::milliseconds timeout) const;
  // The slot, for the read-write free functions; nullptr on a read-only view.
  std::shared_ptr<segment_slot> slot(std::uint32_t index) const;
  // F_OFD_GETLK for an F_WRLCK on attach.lock: true while any runtime is attached. The view keeps
  // the lock file open (read-only; testing takes no lock); an unlocked answer is given only
  // while the path still names the file tested (an lstat), else it is opened and tested afresh.
  result<bool> runtime_attached() const;

 private:
  struct mapped_file {  // the file mapped, as its open's fstat saw it
    std::uint64_t device = 0, inode = 0, bytes = 0;
    bool operator==(const mapped_file& o) const noexcept {
      return device == o.device && inode == o.inode && bytes == o.bytes;
    }
  };
  segment_view(std::filesystem::path directory, std::shared_ptr<segment_mapping> mapping, access mode,
               mapped_file mapped);
  static result<std::shared_ptr<segment_view>> open_afresh(const std::filesystem::path& home_db, access mode);
  bool still_valid() const;  // the header checked again, as open checks it

  struct attach_file;

  std::filesystem::path directory_;
  std::filesystem::path file_;  // directory_/readiness.seg
  std::shared_ptr<segment_mapping> mapping_;
  access mode_;
  mapped_file mapped_;
  mutable std::shared_ptr<attach_file> attach_;  // std::atomic_load / atomic_store only
};

}  // namespace dix
