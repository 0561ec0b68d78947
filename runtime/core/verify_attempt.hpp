// verify_attempt: where the current `dix verify` of an index stands (issue 31, decisions 0056 and
// 0057), a machine of runner_core beside the rebuild attempt. It makes the index durable exactly
// at a fence of the tailer (an index at a cursor equal to the primary store at a snapshot), opens
// the backend's digest view there, lifts the fence and hands the view and the snapshots to the
// proxy's scan; the drain goes on during the scan.
//
//   none ──request (owner, ready)──► fencing ──fence taken──► to_fence ──chunk: fence_reached──►
//     at_fence ──its delivery accepted (or it had none)──► barrier ──durable == target──►
//     opening ──view.through == target──► lifting ──snapshots handed over──► scanning
//     ──the scan's result──► none
//   every phase ──discard of progress (a fault, lost work, a condemnation, stop), the deadline
//   (fencing … lifting), a refused fence or digest──► none
//
//   fencing    the tailer takes its snapshots (fx::fence); pulls go on.
//   to_fence   pulls go on until a chunk says fence_reached (tailer_chunk::fence_reached).
//   at_fence   no more pulls; the fence chunk's delivery is on its way (or deferred).
//   barrier    no more pulls; a flush, until the durable cursor is `target` (the last offered).
//   opening    the proxy opens the digest view (fx::open_digest); its cursor must be `target`.
//   lifting    the tailer lifts its fence and hands the snapshots over (fx::lift_fence).
//   scanning   the proxy merges the view with the projection of the snapshots at its rate.
//
// Pulls stop from at_fence to lifting: the tailer would hold anything beyond the fence anyway,
// and the barrier's target must stay the last offered entry. Writers are never blocked: the
// tailer reads the WAL, they commit to it. Pure; std only.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <dix/cursor.hpp>
#include <dix/digest.hpp>
#include <dix/errc.hpp>
#include <dix/verify.hpp>

namespace dix {

// What one verify request asks (runtime::verify, `dix verify`).
struct verify_request {
  bool report_only = false;                   // differences do not condemn the index
  std::uint64_t entries_per_s = verify_rate_measured;  // the scan's rate, both sides' entries (verify_options')
  std::uint32_t limit = 100;                  // differing records named, at most
  std::chrono::milliseconds deadline{60000};  // fencing … lifting, at most
};

// How a verify ended, as the runner's core knows it (the proxy's scan adds the named records).
struct verify_outcome {
  enum class kind : std::uint8_t {
    verified,     // the index equals the projection of the primary store at `through`
    drift,        // `differences` records differ (condemned unless report-only)
    failed,       // the verify could not be carried out (`code`, `message`): nothing is known
    refused,      // not started: not the owner, not ready, rebuilding, busy (`code`, `message`)
    interrupted,  // a fault, lost work, a condemnation or a stop ended it: nothing is known
  };
  kind what = kind::failed;
  std::optional<cursor> through;  // the fence: what the index was compared at
  std::uint64_t records = 0;      // the index's entries (verified) or both sides' entries read
  // Whether the digest the index stores is the sum of the entries the scan read (both given).
  bool digest_agrees = true;
  index_digest stored_digest, entries_digest;
  std::uint64_t differences = 0;
  bool condemned = false;  // a drift that condemned the index (needs-rebuild, verify-failed)
  errc code = errc::none;
  std::string message;
};

class verify_attempt {
 public:
  enum class phase : std::uint8_t { none, fencing, to_fence, at_fence, barrier, opening, lifting, scanning };

  static bool legal(phase from, phase to) noexcept;
  // Aborts on an illegal step, in every build.
  void to(phase next) noexcept;
  phase current() const noexcept { return phase_; }
  bool running() const noexcept { return phase_ != phase::none; }
  // The tailer holds (or is taking) a fence: it must be lifted when the verify ends early.
  bool fenced() const noexcept { return phase_ != phase::none && phase_ != phase::scanning; }
  // The drain takes no turn while the index is brought to the fence and its view opened.
  bool holds_pulls() const noexcept {
    return phase_ == phase::at_fence || phase_ == phase::barrier || phase_ == phase::opening || phase_ == phase::lifting;
  }
  // The deadline bounds the way to a durable fence (fencing … barrier): opening the view and
  // lifting the fence are the backend's and the tailer's own work, bounded by them.
  bool before_scan() const noexcept {
    return phase_ == phase::fencing || phase_ == phase::to_fence || phase_ == phase::at_fence || phase_ == phase::barrier;
  }

  verify_request request;
  std::optional<cursor> target;  // at_fence on: the last offered entry, which must become durable
  // Each verify's number: its deadline timer carries it, so an earlier verify's timer is ignored.
  std::uint64_t number = 0;
  // How long the index's unread backlog was forecast to take to read when the verify began
  // (core/backlog_forecast; 0: none, or no rate known): named when the deadline passes.
  std::uint64_t backlog_ms = 0;

 private:
  phase phase_ = phase::none;
};

}  // namespace dix
