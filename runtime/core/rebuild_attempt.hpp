// rebuild_attempt: where the current rebuild of an index stands (protocol.md §11.3–§11.8), a
// machine of runner_core. Each step needs the one before and is checked against the runner's
// generation; any fault of an attempt goes to backoff (or, the budget spent, to none:
// unavailable, released).
//
//   none ──condemned (rebuildable)──► backoff ──timer or request──► quiescing ──shutdown ok──►
//     minting ──epoch persisted──► resetting ──reset ok──► checking ──no durable cursor──►
//     capturing ──boundary──► scanning ──boundary chunk accepted──► boundary_pending
//     ──boundary (or a later entry) durable──► none (`ready`, §11.7)
//   (attempts = 0: no backoff; an epoch already shut down: no quiescing)
//   every phase ──fault, stop, new ownership──► none (then backoff, when the budget allows)
//
//   none              no attempt: draining, or condemned and parked.
//   backoff           the next attempt waits for the rebuild_backoff timer (or a request).
//   held              an attempt came due while the tailer or the proxy was down, or a failed
//                     attempt's reset still runs; it starts when they are back (not with a
//                     message to a dead child).
//   quiescing         shutdown(epoch) of the condemned epoch requested (step 1).
//   minting           a new epoch minted and being persisted (step 2).
//   resetting         reset(epoch) requested (step 3).
//   checking          the backend must report no durable cursor now (step 4).
//   capturing         the boundary is being committed and the snapshots taken (§11.5).
//   scanning          scan chunks are delivered (§11.6).
//   boundary_pending  the normal drain from the boundary, until the boundary (or a later
//                     offered entry) is durable; only then `ready` (§11.7).
//
// Beside the phase: the attempt count (the slot's rebuild_attempts, §11.3), what condemned the
// index, the reset in flight and a release waiting for it (§9.6), whether the current epoch was
// shut down already (§11.4 step 1), and the scan's progress (§11.6).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include <dix/readiness.hpp>

namespace dix {

class rebuild_attempt {
 public:
  enum class phase : std::uint8_t {
    none, backoff, held, quiescing, minting, resetting, checking, capturing, scanning, boundary_pending
  };

  static bool legal(phase from, phase to) noexcept;
  // Aborts on an illegal step, in every build.
  void to(phase next) noexcept;
  phase current() const noexcept { return phase_; }
  // An attempt is under way from its start until the boundary is durable: faults then fail the
  // attempt instead of condemning anew.
  bool running() const noexcept { return phase_ != phase::none && phase_ != phase::backoff && phase_ != phase::held; }
  bool boundary_pending() const noexcept { return phase_ == phase::boundary_pending; }
  // Waiting to start (backoff or held): it resets the backend anyway, so nothing is replayed.
  bool waiting() const noexcept { return phase_ == phase::backoff || phase_ == phase::held; }
  // Ends a boundary drain that a new attempt or ownership supersedes.
  void drop_boundary() noexcept {
    if (phase_ == phase::boundary_pending) to(phase::none);
  }

  std::uint32_t attempts = 0;                         // the slot's rebuild_attempts (§11.3)
  readiness_reason trigger = readiness_reason::none;  // what condemned the index
  // A reset on its way (§11.4 step 3): its generation, until it is answered or its proxy dies.
  // Nothing else is asked of the backend meanwhile: a release waits for it (release_after_reset,
  // §9.6: no flush(shutdown), shutdown or unlock while the backend destroys its index), and so
  // does a new attempt behind a failed one (held).
  std::optional<std::uint64_t> reset_in_flight;
  bool release_after_reset = false;
  // Step 1's shutdown on its way (§11.4): its epoch, until it is answered or its proxy dies. A
  // release waits for it (release_after_quiesce) and then begins over the epoch as the answer
  // left it — quiesced (no second shutdown, §9.6) or to be shut down again.
  std::optional<epoch_t> quiesce_in_flight;
  bool release_after_quiesce = false;
  // The scan (§11.6): its rate from the last completed scan (for the retention fit, §11.5), the
  // bytes and records of this one, the projected tables' estimated records, and when it ran.
  std::uint64_t scan_bytes_per_s = 64u << 20;
  std::uint64_t scanned_bytes = 0;
  std::uint64_t rebuilt_records = 0, estimated_records = 0;
  std::optional<std::chrono::steady_clock::time_point> scan_started_at, scan_ended_at;

 private:
  phase phase_ = phase::none;
};

}  // namespace dix
