// runner_interpreter: the order in which a runner's effects are carried out, once for the runner
// actor and the simulation (decision 0052). runner_core decides *what* to do; this decides what
// waits behind what, and the ports (below) do it: the actor with CAF messages
// (actors/runner_actor.cpp), the simulation with its mailbox (tests/support/sim_pipeline.hpp).
//
// What it orders:
//   * Every event samples the writer gate (protocol.md §13.3) and stores the runner's snapshot
//     before any of its effects: whoever sees a publication finds the snapshot at least as new.
//   * Publications go through a publication_fence (decision 0008): each counts as in flight until
//     the publisher's answer lands (landed()). The unlock, the stop's answer and a gate store wait
//     until every publication before them landed; the epoch mint too (decision 0032); whatever
//     follows a waiting effect waits behind it, so the effects keep the core's order. A
//     publication certifying a coverage time under an epoch the slot no longer holds is dropped
//     whole (§12.3).
//   * The figures for the metrics segment (rebuild progress, lag) are publications of their own:
//     behind the event's other effects, but never behind its unlock.
//   * The commit bell (core/commit_bell.hpp): a wake takes what rang; the bell's own wake during
//     a pull leaves it ringing ("held") and it is taken just before the pull's answer, or once
//     the pull ended without one — so the commits rung during a pull send one wake message and
//     none is left without a wake.
//
// Single-threaded: one runner's, on its own actor (or the simulation's one thread). The core and
// the ports outlive it. Pure; std only.
#pragma once

#include <cstdint>
#include <optional>

#include <dix/activity.hpp>
#include <dix/readiness.hpp>
#include <dix/status.hpp>

#include "core/commit_bell.hpp"
#include "core/publication_fence.hpp"
#include "core/runner_core.hpp"

namespace dix {

// The world a runner's effects act on. Every call comes from the interpreter, on its thread.
class runner_ports {
 public:
  virtual ~runner_ports() = default;
  virtual steady_time now() = 0;
  // Once per event, before any of its effects: store the snapshot status() and metrics() read;
  // returns the rebuild progress this event publishes (the progress pacer's decision).
  virtual std::optional<rebuild_progress> store_snapshot() = 0;
  // The lag figures due for the metrics segment (the lag pacer's decision, kept until taken), taken
  // when they are published: after the event's effects, or before its unlock.
  virtual std::optional<lag_figures> take_lag() = 0;
  // Every effect but fx::publish and fx::mint_epoch, when its turn comes: a request or message
  // (its answer comes back as an event), a timer, the stop's answer, the unlock, a gate store.
  virtual void carry_out(effect& e) = 0;
  // Mints the slot's next epoch (at once visible in the segment) and returns what the core
  // answers (runner_core::on_epoch_minted).
  virtual effects mint_epoch() = 0;
  // Sends a publication to the publisher. Its answer, or its failure (it will not land later),
  // must call runner_interpreter::landed() once; synchronously is fine.
  virtual void publish(const fx::publish& p) = 0;
  virtual void publish_progress(const rebuild_progress& progress) = 0;  // landed() likewise
  virtual void publish_lag(const lag_figures& lag) = 0;                 // landed() likewise
  // The slot and the lock as they are now.
  virtual epoch_t owner_epoch() = 0;             // the slot's owner epoch
  virtual bool owns_lock() = 0;                  // this process holds the id's runner lock
  virtual bool consume_rebuild_request() = 0;    // exchange(0) on the slot's rebuild request
  virtual index_time_t coverage_demand() = 0;    // the slot's coverage demand (§12.4)
  virtual std::uint32_t lag_gate() = 0;          // the slot's lag gate, inherited at a grant
  virtual dix::readiness read_slot() = 0;        // the slot's readiness
  // The core took a grant of the lock: the registration's ownership record says so.
  virtual void acquired() = 0;
};

class runner_interpreter {
 public:
  // `bell`: the runner's commit bell, or null (commit wakes then come as messages of their own).
  runner_interpreter(runner_core& core, runner_ports& ports, commit_bell* bell = nullptr)
    : core_(core), ports_(ports), bell_(bell) {}
  runner_interpreter(const runner_interpreter&) = delete;
  runner_interpreter& operator=(const runner_interpreter&) = delete;

  // The effects of one event of the core, in the core's order (see the file comment).
  void apply(effects out);

  // A wake message (protocol.md §8.2). `flags` 0: the bell's own wake. Merges what rang; hands a
  // rebuild wake to the core as the lock allows (§11.2); reads the slot's coverage demand for a
  // coverage wake (§12.4).
  void on_wake(std::uint8_t flags);
  // Just before the answer of a pull (a log chunk, a scan chunk, a log fault): the commits rung
  // during the pull count as wakes that came before it.
  void before_pull_answer();
  // The lock was granted for `gen` (runner_core::on_lock_acquired with the slot's gate).
  void on_lock_granted(std::uint64_t gen);
  // The metadata read for `gen` answered; the slot's rebuild request is consumed only by the
  // acquisition that takes this answer (§9.2 step 3), and the slot is read after that.
  void on_meta_state(std::uint64_t gen, const result<meta_records>& records);
  // A publication's (or a figure publication's) answer came back.
  void landed() { fence_.landed(); }
  // Lag figures due outside an event (the lag pacer's timer): in the fence's order.
  void publish_lag_due();

  // Test accessors.
  bool test_bell_held() const noexcept { return bell_held_; }
  std::size_t test_in_flight() const noexcept { return fence_.in_flight(); }

 private:
  void carry_out(effect& e);
  void publish_progress(const rebuild_progress& progress);
  void publish_lag(const lag_figures& lag);
  void take_held_bell();

  runner_core& core_;
  runner_ports& ports_;
  commit_bell* bell_;
  publication_fence fence_;
  // The bell's own wake came while a pull was on its way and left the bell ringing: taken just
  // before the event that answers the pull, or after whatever else ended it.
  bool bell_held_ = false;
};

}  // namespace dix
