// A runner's commit bell: the coalescing of commit wakes (protocol.md §8.2) done where they are
// made. Every commit of an attached store wakes every runner of the runtime; sent one message
// each, a runner at 50 000 commits/s handled 50 000 wakes a second, each a trip through its
// mailbox and a snapshot of its state, to run the one turn the first of them had already asked
// for (docs/benchmarks.md, "the commit bell"). Instead the committing thread rings the bell and
// sends a wake only when the bell was silent; the runner takes what rang with every wake it
// handles, so many commits before it runs cause one wake message and one turn: at most one is
// outstanding. While a pull of the log is on its way the runner leaves the bell ringing (a commit
// could only ask for the turn after it) and takes it just before the pull's answer, so the
// commits of a whole pull send one wake message.
//
// Nothing is lost: a commit rings after its transaction is in the WAL, and the runner takes the
// bell before it reads the log (acquire-release on the bell), so either the runner's take sees
// the ring and its turn reads the transaction, or the ring finds the bell silent and sends a new
// wake. One bell per runner incarnation: a wake sent to a runner that died goes with its bell,
// and its replacement starts with a silent one.
//
// A non-system commit outranks system commits (an idle owner ignores system commits, §8.3, but
// not a non-system one rung beside them). Pure; std only; any thread.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/runner_core.hpp"

namespace dix {

class commit_bell {
 public:
  // A commit happened (`system`: a system transaction). True when the bell was silent: the
  // caller then sends the runner a wake, whose handling takes the bell.
  bool ring(bool system) noexcept {
    return bits_.fetch_or(system ? system_bit : commit_bit, std::memory_order_acq_rel) == 0;
  }
  // Whether anything rang since the last take (a look, no take).
  bool rung() const noexcept { return bits_.load(std::memory_order_acquire) != 0; }
  // The wake flags of what rang since the last take, and silence: wake_flag::commit when any
  // non-system commit rang, commit | system when only system commits did, 0 when nothing did.
  std::uint8_t take() noexcept {
    const auto rang = bits_.exchange(0, std::memory_order_acq_rel);
    if ((rang & commit_bit) != 0) return wake_flag::commit;
    if ((rang & system_bit) != 0) return wake_flag::commit | wake_flag::system;
    return 0;
  }

 private:
  static constexpr std::uint8_t commit_bit = 1, system_bit = 2;
  std::atomic<std::uint8_t> bits_{0};
};

}  // namespace dix
