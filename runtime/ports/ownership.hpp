// Ports for ownership (actors.md §4): the runner lock and the readiness slot. Real adapters:
// runtime/adapters/process_lock_table (lock table + flock crash guard) and readiness_segment
// (segment_slot). Actor tests use both on a temporary directory (tests/support/wired_id.hpp); the
// simulation keeps its slot in memory (tests/support/sim_pipeline.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include <dix/readiness.hpp>
#include <dix/result.hpp>

namespace dix {

// One owner per backend id at a time. acquire() never blocks: `granted` runs (on the caller's or
// the releasing thread) when the requester becomes the owner — with an error instead when the
// entry could not be taken (io_error naming the lock file; the entry stays free and the requester
// is not queued). `contended` tells the two refusals apart: true when another process holds the
// flock crash guard (protocol.md §9.1: no fault, it passes by itself), false when the lock file
// cannot be used at all — a directory or a symlink at its path, a directory that cannot be made,
// a refused open or flock — which is a transient fault (§10.5), counted. A release hands the
// entry to the first waiter, FIFO.
class runner_lock {
 public:
  using grant = std::function<void(result<void> outcome, bool contended)>;
  virtual ~runner_lock() = default;
  virtual void acquire(const std::string& id, std::uint64_t requester, grant granted) = 0;
  // Releases ownership, or withdraws a pending request. Unknown requesters are ignored.
  virtual void release(const std::string& id, std::uint64_t requester) = 0;
  // Whether some requester of this process owns `id` now.
  virtual bool owned(const std::string& id) const = 0;
  // The number of registrations of `id` in the process (protocol.md §9.1, §2.2, §2.4): counted
  // at registration, uncounted when its release starts. 0 tells a releasing owner that it was
  // the last, so it forces the writer gate open (§13.4).
  virtual void count_registration(const std::string& id, int delta) = 0;
  virtual std::size_t registrations(const std::string& id) const = 0;
};

// A backend id's readiness slot (formats.md §4.3 fields the runner uses).
class readiness_slot {
 public:
  virtual ~readiness_slot() = default;
  // owner_epoch + 1; record_corrupt, nothing changed, when owner_epoch is 2^64-1 (never wraps).
  virtual result<epoch_t> mint_epoch() = 0;
  virtual epoch_t owner_epoch() const noexcept = 0;
  virtual void raise_epoch_floor(epoch_t floor) = 0;  // CAS-max (formats.md §4.6 step 4)
  // Stores reason and attempts, then state (release order, formats.md §4.4), then notifies.
  virtual void publish(readiness_state state, readiness_reason reason, std::uint32_t attempts) = 0;
  virtual dix::readiness read() const noexcept = 0;
  // rebuild_request (formats.md §4.3): anyone sets it; the owner consumes it with exchange(0)
  // (protocol.md §9.2 step 3, §11.2). Both notify when they change it.
  virtual bool rebuild_requested() const noexcept = 0;
  virtual bool consume_rebuild_request() = 0;
  // Why the owner's backend holds deliveries back (decision 0013), for readers in other
  // processes; stored and notified only when it changes.
  virtual void set_hold(backend_hold hold) = 0;
  // The writer gate (formats.md §4.3 lag_gate; protocol.md §13.3): the owner stores it, with a
  // notify; anyone reads it.
  virtual void set_lag_gate(std::uint32_t gate) = 0;
  virtual std::uint32_t lag_gate() const noexcept = 0;
  // coverage_demand (formats.md §4.3): the highest `since` a waiter wants covered; 0 = none.
  // Read by the owner at a coverage wake (protocol.md §12.4). Default: none (slots without one).
  virtual index_time_t coverage_demand() const noexcept { return 0; }
};

}  // namespace dix
