// runner_core: the decisions of one backend id's runner (protocol.md §1.3–§1.5, §4.8 via the
// tailer, §5–§8, §9.2 steps that need no segment, §10.3 subset, §10.5, §14, §15), as a pure state
// machine. Each handler takes an event and `now` and returns the effects to carry out, in order:
// the runner actor sends the messages, arms the timers and publishes. The core never sends,
// sleeps, reads a clock or does I/O.
//
// STATES (runner_state)
//
//   dormant ──wake──► waiting_lock ──lock──► running: mint + persist epoch, read the durable
//      ▲                                      cursor, install it (exact resume), publish, drain
//      │                                          │
//      │          ┌──── deferred ◄─deferred───────┤ accepted ──► running … ──► idle (caught up)
//      │          │  (changed / retry timer)      ├──► waiting_durable (accepted-ahead cap)
//      │          └──────────────► running        │
//      │                                          ├─ suspect fault ──► needs_rebuild ──► rebuilding
//      │                                          │   (a backend that cannot reset: parked, released)
//      │                                          └─ transient fault ──► backoff ──► reinstall
//      └──────────── stop(): releasing ──flush(shutdown), shutdown(epoch)──► stopped
//                                        (rejected shutdown: unavailable, lock kept)
//
// runner_state (the public state above) changes only through set_state, which checks each step
// (core/runner_lifecycle.hpp). Beside it the core is a composition of machines, each an enum with
// one checked transition and its own diagram: the acquisition of an ownership (§9.2,
// core/acquisition.hpp), its release (core/release_sequence.hpp), the drain pipeline (offered, in
// flight, held, cut, flush timers, the durable query: core/drain_pipeline.hpp), the rebuild attempt
// (§11, core/rebuild_attempt.hpp), and coverage with the gate (§12, §13, core/coverage_gate.hpp);
// plus two small ones of the metadata records (the condemnation marker and the settle commit,
// below). The booleans left are facts no state implies: stopping_, parked_, the children's
// liveness and a retry waiting for them.
//
// An index without a durable cursor is never trusted (§9.2 step 8): it condemns with
// `cursor-missing` and, on a backend that can reset, is rebuilt (§11): shut the old epoch down,
// mint a new one, reset, capture the boundary, scan, deliver the boundary chunk, drain from the
// boundary, and publish `ready` once the boundary (or a later entry) is durable. The attempt
// count lives in the slot (published with every state); failed attempts back off, and
// `max_rebuild_attempts` of them end in `unavailable`/`rebuild-exhausted` (docs/decisions/0015).
#pragma once

#include <array>
#include <map>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <dix/backend.hpp>
#include <dix/batch.hpp>
#include <dix/options.hpp>
#include <dix/readiness.hpp>
#include <dix/status.hpp>

#include "core/acquisition.hpp"
#include "core/coverage_gate.hpp"
#include "core/drain_pipeline.hpp"
#include "core/rebuild_attempt.hpp"
#include "core/release_sequence.hpp"
#include "core/restart_policy.hpp"
#include "core/runner_types.hpp"  // wake_flag, timer_kind, child_kind
#include "core/tailer_core.hpp"
#include "core/verify_attempt.hpp"
#include "ports/meta_store.hpp"  // meta_records

namespace dix {

using steady_time = std::chrono::steady_clock::time_point;

// ---- effects --------------------------------------------------------------------------------
namespace fx {
struct request_lock { std::uint64_t gen; };  // the grant (or the failure) echoes it
// `gate_open_if_last`: the owner's unlock at the end of a stop's release. The stop kept the gate
// for a handoff when other registrations of the id were left (§13.4); they may have gone while
// the release ran. If none is left in the process when the unlock runs, no successor inherits the
// gate, so the shell stores it open first.
struct release_lock { bool gate_open_if_last = false; };
struct mint_epoch {};                      // answer with on_epoch_minted at once
struct persist_epoch { epoch_t epoch; std::uint64_t gen; };
struct query_durable { std::uint64_t gen; };
struct open_log { std::uint64_t gen; std::optional<cursor> from; };  // nullopt: from sequence 1
// `capture`: the tailer takes the coverage capture of every log before it reads (§12.1).
struct pull { std::uint64_t gen; epoch_t epoch; bool capture = false; };
struct deliver { std::uint64_t gen; std::shared_ptr<const batch> b; };
struct flush { std::uint64_t gen; flush_reason reason; };
struct shutdown { epoch_t epoch; };
// lag_gate: stored with the publication (before reason and state, §1.5); absent: unchanged.
// `coverage_time` set (state ready): store it too (§12.3). It is certified under `epoch`: the
// actor drops it unless the slot's owner_epoch still equals that epoch.
struct publish {
  readiness_state state;
  readiness_reason reason;
  std::uint32_t attempts;
  std::optional<std::uint32_t> lag_gate = std::nullopt;
  std::optional<index_time_t> coverage_time = std::nullopt;
  epoch_t epoch = 0;
};
// The gate alone (protocol.md §13.3): stored in the slot once every publication before it landed.
struct store_gate { std::uint32_t value; };
// The backend's optional hook (§12.3, api.md §5), through the proxy; best effort, never answered.
struct publish_coverage { epoch_t epoch; index_time_t coverage_time; dix::positions positions; };
// Read condemned/<id> and registration/<id> from the home store (§9.2 step 3); answer with
// on_meta_state, passing the slot's readiness as read now and, when the read succeeded, whether
// a rebuild request was consumed (exchange(0) on the slot).
struct read_meta { std::uint64_t gen; };
// Write condemned/<id> (sync) before the condemnation is published (§10.4); on_marker_written.
struct write_marker { std::uint64_t gen; };
// One commit: registration/<id> = fingerprint and delete condemned/<id> (§10.4); on_settled.
struct settle { std::uint64_t gen; std::uint64_t fingerprint; };
struct arm_timer { timer_kind kind; std::chrono::milliseconds delay; std::uint64_t gen; };
struct stopped { result<void> outcome; };
// The rebuild (§11.4–§11.6): reset the backend under the new epoch (on_reset_done); commit the
// boundary and take the snapshots (on_boundary; `scan_bytes_per_s` for the retention fit); one
// scan chunk (on_scan_chunk).
struct reset { std::uint64_t gen; epoch_t epoch; };
struct capture_boundary { std::uint64_t gen; epoch_t epoch; std::uint64_t scan_bytes_per_s; };
struct scan { std::uint64_t gen; epoch_t epoch; };
// The verify (issue 31, core/verify_attempt.hpp). The tailer takes its fence (on_fence_taken);
// the proxy opens the backend's digest view and keeps it (on_digest_opened, with the view's
// cursor); the tailer lifts its fence (`scan`: hands the snapshots to the verify, on_fence_lifted;
// otherwise drops them, unanswered — the verify ended); the proxy merges the view it keeps with
// the projection of the snapshots (on_verify_scanned). `verify_ended` answers every requester of
// the verify and drops what the proxy keeps for it (the view, the snapshots, the scan);
// `verify_refused` answers the one request that caused it.
struct fence { std::uint64_t gen; };
struct open_digest { std::uint64_t gen; };
struct lift_fence { std::uint64_t gen; bool scan = false; };
struct start_verify { std::uint64_t gen; verify_request request; cursor through; };
struct verify_ended { verify_outcome outcome; std::uint64_t number = 0; };  // the verify's number
struct verify_refused { verify_outcome outcome; };
}  // namespace fx

using effect = std::variant<fx::request_lock, fx::release_lock, fx::mint_epoch, fx::persist_epoch,
                            fx::query_durable, fx::open_log, fx::pull, fx::deliver, fx::flush, fx::shutdown,
                            fx::publish, fx::arm_timer, fx::stopped, fx::read_meta, fx::write_marker, fx::settle,
                            fx::reset, fx::capture_boundary, fx::scan, fx::store_gate, fx::publish_coverage,
                            fx::fence, fx::open_digest, fx::lift_fence, fx::start_verify, fx::verify_ended,
                            fx::verify_refused>;
using effects = std::vector<effect>;

// What status() and metrics() report (protocol.md §14), taken after every event. Ages are not
// frozen into it: it keeps the moments they count from, and metrics(now) computes them at the
// time of the call (protocol.md §13.1, §14.2).
struct runner_snapshot {
  runner_state state = runner_state::dormant;
  readiness_reason reason = readiness_reason::none;
  epoch_t epoch = 0;
  bool owner = false;
  std::string message;  // local text for the last fault
  std::optional<cursor> durable;
  dix::positions durable_ends;  // owner: per log, the durable entry's anchor end (§12.2, §12.5 step 3)
  std::uint64_t accepted_batches = 0, accepted_bytes = 0, accepted_mutations = 0, deferred_bytes = 0;
  std::uint64_t delivered_batches = 0, delivered_records = 0;
  std::array<std::uint64_t, 4> flushes{};
  std::uint64_t wal_syncs = 0, unindexable_records = 0, log_reopens = 0;
  std::uint32_t transient_faults = 0;
  readiness_reason last_fault = readiness_reason::none;
  // protocol.md §13.1: the cursor lag is a difference of header times (newest read − the
  // effective entry's anchor time), fixed until the next event; the other components are ages
  // of these moments (absent: the component is 0).
  std::uint64_t cursor_lag_ms = 0;
  std::optional<steady_time> oldest_accepted_at;  // oldest non-durable work, cursor-only aside
  std::optional<steady_time> stalled_since;       // parked in deferred / waiting-durable
  std::optional<steady_time> unread_since;        // a commit seen while caught up, not yet read
  std::optional<steady_time> quiescence_since;    // the current shutdown is pending
  std::vector<log_progress> logs;
  // Rebuild progress (§11.6): records delivered by the scan of the current (or last) attempt,
  // the projected tables' estimated records, and when the scan started (absent: no scan ran).
  std::uint64_t rebuilt_records = 0, estimated_records = 0;
  std::optional<steady_time> scan_started_at;
  std::optional<steady_time> scan_ended_at;  // the boundary chunk was accepted
  // The verify (issue 31): whether one runs, the cursor the last successful one proved, when it
  // ended, and the verifies that found a difference since the registration.
  bool verifying = false;
  std::uint64_t verify_read = 0, verify_expected = 0;  // the running verify's scan (0: not scanning)
  std::int64_t verify_eta_ms = -1;
  std::optional<cursor> verified;
  std::optional<steady_time> verified_at;
  std::uint64_t verified_records = 0;
  std::uint64_t verify_failures = 0;

  runner_status status() const;
  // The public metrics at `now`. The slot's fields (readiness, lag_gate, rebuild_attempts,
  // coverage_time) are left for the caller, who reads the slot; so is the backend's own count of
  // unindexable records (backend_host::note_unindexable).
  runner_metrics metrics(steady_time now) const;
};

// The snapshot of a registration whose runner died, once its supervisor released the ownership
// for it and is about to publish `published`/`reason` (actors.md §3): stored before that
// publication, so metrics and status never lag it. Not owner, the owner figures zero (protocol.md
// §14.2), state needs-rebuild or unavailable as published, last fault runner-failed; the epoch
// (the last one, as after a runner's own release) and the counters since registration are kept.
runner_snapshot released_for_dead_runner(runner_snapshot last, readiness_state published, readiness_reason reason);

class runner_core {
 public:
  struct config {
    runner_options options;
    std::chrono::milliseconds cursor_flush_age{600000};  // min(wal_ttl / 8, 10 min), protocol §16
    // First generation of this runner incarnation. Replies still in flight from an earlier
    // incarnation (a restarted runner actor) carry its generations; distinct bases keep them
    // from ever matching (the actor passes incarnation << 32).
    std::uint64_t generation_base = 0;
    // A runner respawned by the supervisor after a crash of its predecessor starts in
    // needs-rebuild with this reason (the supervisor published it, actors.md §3): woken, it
    // acquires and rebuilds; parked instead when the backend cannot reset.
    std::optional<readiness_reason> start_condemned;
    // This registration's fingerprint (formats.md §5). Set: acquisition compares it with the
    // stored one (§9.2 step 8) and the first durable advance of a build writes it (settle).
    // Unset (core and actor tests that model no metadata): neither happens.
    std::optional<std::uint64_t> fingerprint;
    // The backend implements reset (§11.1): every suspect fault, a condemned slot or marker, an
    // absent cursor and a consumed request start a rebuild. Otherwise the index is condemned,
    // released and parked.
    bool rebuildable = false;
    // The writer gate's sizing (protocol.md §13.3): max_lag and max_flush_age as in `options`,
    // the backend's min_barrier_interval and the runtime's max_write_delay.
    gate_policy gate;
  };
  explicit runner_core(config c);

  effects on_wake(std::uint8_t flags, steady_time now);
  // The lock table's answers to the request_lock of generation `gen`. An answer of another
  // generation is stale and dropped: the generation moves while a request is pending only where
  // the runner withdraws it (release_lock), which already let go of a granted entry — handing a
  // stale grant back would withdraw a newer request of the same requester.
  // `inherited_gate`: the slot's lag_gate as found (§13.3: an inherited gate survives handoff).
  effects on_lock_acquired(std::uint64_t gen, steady_time now, std::uint32_t inherited_gate = gate_open);
  // The lock table could not take the entry. `contended` (§9.1: another process holds the crash
  // guard): no fault; the acquisition is retried after rebuild_backoff. Otherwise the lock file
  // cannot be used (a directory or a symlink at its path, …): a transient fault (§10.5), counted
  // with the others, retried after the doubling backoff; the max_rebuild_attempts-th in a row
  // condemns locally (needs-rebuild/runner-failed in the status, parked): without the lock the
  // runner writes no marker and publishes nothing (§10.2).
  effects on_lock_failed(std::uint64_t gen, const error& e, bool contended, steady_time now);
  // The mint's outcome. A refused mint (the slot's epoch cannot be incremented: record_corrupt)
  // is handled as a failed persist: unlocked without any backend call, the message kept, the
  // acquisition retried after rebuild_backoff; no epoch is ever used that was not minted.
  effects on_epoch_minted(const result<epoch_t>& epoch, steady_time now);
  effects on_epoch_persisted(std::uint64_t gen, const result<void>& outcome, steady_time now);
 private:
  effects epoch_minted(const result<epoch_t>& epoch, steady_time now);
  effects epoch_persisted(std::uint64_t gen, const result<void>& outcome, steady_time now);
  bool minting_now() const noexcept;
  void resume_stop(effects& out, steady_time now);
 public:
  // §9.2 steps 3–7: the marker and fingerprint records, the slot's readiness as found, and
  // whether this acquisition consumed a rebuild request.
  effects on_meta_state(std::uint64_t gen, const result<meta_records>& records, const readiness& slot, steady_time now,
                        bool rebuild_requested = false);
  // The owner consumed the slot's rebuild request at a wake (§11.2). The actor consumes one only
  // when takes_rebuild_request(); otherwise the flag stays for the acquisition's step 3 or a
  // later wake (the watcher looks again at every segment change).
  effects on_rebuild_requested(steady_time now);
  bool takes_rebuild_request() const noexcept;
  // What a rebuild wake (the watcher saw the slot's flag) does: the owner consumes the flag (then
  // on_rebuild_requested); a dormant runner — or one respawned condemned, or released and parked
  // (rebuild-exhausted, a latched unavailable: §8.3 "parked terminal") — acquires while no runner
  // of this process owns the id (`owned_in_process`), so it never contends with an owner (§9.5);
  // its acquisition consumes the flag at step 3; anyone else leaves the flag alone.
  enum class rebuild_wake : std::uint8_t { consume, acquire, ignore };
  rebuild_wake on_rebuild_wake(bool owned_in_process) const noexcept;
  // Whether on_meta_state(gen, …) would be taken now: the actor consumes the slot's rebuild
  // request for the acquisition only then, so a stale reply never swallows one.
  bool awaits_meta(std::uint64_t gen) const noexcept;
  bool owner() const noexcept { return owner_now(); }
  // A pull or scan of the log is on its way (§4.1): a commit wake now could only ask for another
  // turn after it (more_), so the actor leaves the commit bell ringing until it is answered
  // (core/commit_bell.hpp). Bounded by the turn budgets.
  bool pulling() const noexcept { return drain_.current() == drain::pulling; }
  effects on_marker_written(std::uint64_t gen, const result<void>& outcome, steady_time now);
  effects on_settled(std::uint64_t gen, const result<void>& outcome, steady_time now);
  effects on_durable(std::uint64_t gen, const result<std::optional<cursor>>& durable, steady_time now);
  // The rebuild's steps (§11.4–§11.7); stale generations are dropped.
  effects on_reset_done(std::uint64_t gen, const result<void>& outcome, steady_time now);
  effects on_boundary(std::uint64_t gen, const boundary_outcome& outcome, steady_time now);
  effects on_scan_chunk(std::uint64_t gen, const scan_outcome& outcome, steady_time now);
  // `installed`: the cursor the tailer installed (the start cursor when opened from sequence 1).
  // `anchor_ends`: per log, the end sequence of the installed anchor (coverage association, §12.2).
  effects on_log_opened(std::uint64_t gen, const std::optional<tailer_fault>& fault,
                        const std::optional<cursor>& installed, steady_time now, const dix::positions& anchor_ends = {});
  // §12.4: the slot's coverage_demand as read at a coverage wake, before on_wake(coverage). The
  // demand stands in the core until a published coverage_time reaches it.
  void on_coverage_demand(index_time_t demand) noexcept { cover_.tracker.demand(demand); }
  // The coverage_time this owner last published (0: none, or cleared by a non-ready publication).
  index_time_t coverage_time() const noexcept { return cover_.tracker.published(); }
  effects on_chunk(std::uint64_t gen, const pull_outcome& outcome, steady_time now);
  // A fault from the tailer answering either an open or a pull (the core knows which it awaits).
  effects on_log_fault(std::uint64_t gen, const tailer_fault& fault, steady_time now);
  effects on_delivery(std::uint64_t gen, delivery_result r, steady_time now);
  effects on_flush_done(std::uint64_t gen, const result<void>& outcome, steady_time now);
  effects on_state_change(state_change change, steady_time now);
  effects on_timer(timer_kind kind, std::uint64_t gen, steady_time now);
  effects on_shutdown_done(epoch_t epoch, const result<void>& outcome, steady_time now);
  // `last_registration`: no other registration of the id remains in the process (the lock
  // table's count, §9.1): an owner then forces the gate open before it releases (§13.4).
  effects stop(steady_time now, bool last_registration = false);
  // A lag sample for the gate (§13.3): the actor calls it after every event (turns, idle passes
  // and flush ticks included); the lag tick calls it too. Stores only what changed; nothing
  // unless this owner's index is ready and not being released (a forced open holds until then).
  effects sample_gate(steady_time now);
  // The lag of §13.1 at `now` (ms): the largest of the four components; 0 on a non-owner.
  std::uint64_t lag_ms(steady_time now) const;
  std::uint32_t gate_stored() const noexcept { return cover_.gate.stored(); }
  // §9.7, §11.2 first row: a runner stopped or unregistered while its rejected shutdown keeps
  // the lock retries only its release (flush(shutdown) → shutdown(same epoch) → unlock); the
  // backend must accept the retried shutdown. Empty unless the lock is held that way.
  effects retry_release(steady_time now);
  bool holds_rejected_release() const noexcept { return release_.held() && stopping_; }
  // The slot's rebuild_attempts as this owner keeps it (§11.3).
  std::uint32_t attempts() const noexcept { return rebuild_.attempts; }
  // The verify (issue 31, core/verify_attempt.hpp). A request starts one (fx::fence), joins the
  // one running when it asks the same, or is refused (fx::verify_refused: not the owner, not
  // ready, rebuilding, stopping, reinstalling, or a running verify that asks otherwise). Every
  // verify ends with one fx::verify_ended. The answers below are dropped unless they are of the
  // current generation and the phase that awaits them.
  effects on_verify_request(const verify_request& request, steady_time now);
  effects on_fence_taken(std::uint64_t gen, const result<void>& taken, steady_time now);
  // The proxy opened the digest view (its cursor) and keeps it, or could not.
  effects on_digest_opened(std::uint64_t gen, const result<std::optional<cursor>>& through, steady_time now);
  effects on_fence_lifted(std::uint64_t gen, steady_time now);
  // The scan's result: the differences found and the entries read, or why it could not finish.
  effects on_verify_scanned(std::uint64_t gen, const result<verify_outcome>& scanned, steady_time now);
  // The scan's progress (both sides' entries read, expected; the time left, −1 unknown): kept
  // for the metrics while it scans.
  effects on_verify_progress(std::uint64_t gen, std::uint64_t read, std::uint64_t expected, std::int64_t eta_ms);
  verify_attempt::phase verify_phase() const noexcept { return verify_.current(); }
  // The running verify's number (what its fx::verify_ended carries); 0 when none runs.
  std::uint64_t verify_number() const noexcept { return verify_.running() ? verify_.number : 0; }

  // Supervision (actors.md §3): a tailer or proxy of this id died (`escalated`: it will not be
  // restarted), or its replacement is up. Idempotent: the runner may learn of a dead proxy from a
  // failed request before the supervisor tells it.
  effects on_child_down(child_kind kind, bool escalated, steady_time now);
  effects on_child_up(child_kind kind, steady_time now);

  runner_snapshot snapshot() const;
  runner_state state() const noexcept { return state_; }
  std::uint64_t generation() const noexcept { return gen_; }
  epoch_t epoch() const noexcept { return epoch_; }

 private:
  // The condemnation marker condemned/<id> as this ownership knows it (§10.4): unknown (not found
  // and not written), writing (a write in flight; the condemnation's publication waits for it),
  // present (found at step 3 or written; not written again).
  enum class marker : std::uint8_t { unknown, writing, present };

  // The registration record registration/<id> = fingerprint, with the marker's delete (§10.4):
  // done (nothing to write), wanted (to write at the next durable advance), writing (in flight),
  // writing_then_ready (in flight; `ready` is published when it is answered).
  enum class settle : std::uint8_t { done, wanted, writing, writing_then_ready };

  // The machines' phases, by their short names.
  using acq = acquisition::phase;
  using drain = drain_pipeline::phase;
  using dq = drain_pipeline::durable_query;
  using rebuild = rebuild_attempt::phase;
  using vphase = verify_attempt::phase;

  bool owner_now() const noexcept { return acq_.owner(); }
  bool current(std::uint64_t gen) const noexcept { return gen == gen_ && owner_now() && state_ != runner_state::stopped; }
  void to(marker next) noexcept;
  void to(settle next) noexcept;
  void set_state(runner_state next) noexcept;  // the one writer of state_ (core/runner_lifecycle.hpp)
  // Every discard of progress ends a verify as interrupted (it emits the verify's end).
  void discard_progress(effects& out);
  // The verify: the fence reached and its chunk delivered (the barrier's target set); its end.
  void reach_fence(effects& out, steady_time now);
  void end_verify(verify_outcome outcome, effects& out);
  // Ends a verify that cannot go on (failed): the fence lifted and dropped, the drain resumed.
  void abandon_verify(errc code, std::string message, effects& out, steady_time now);
  // Ends a running verify as interrupted, the fence lifted and dropped (a discard of progress).
  void interrupt_verify(effects& out);
  // Why `request` may not start (or join) a verify now (refused), or nothing; then begin_verify
  // starts it unless one runs (it joins that one).
  std::optional<verify_outcome> verify_refusal(const verify_request& request) const;
  void begin_verify(const verify_request& request, effects& out);
  verify_outcome verify_failed(errc code, std::string message) const;
  void next_turn(effects& out, steady_time now);
  // §12.3, §12.4 (core/coverage.hpp): publish the newest capture the certifying entry covers,
  // call the backend's hook when due, ask for flush(coverage) when a demand waits for a barrier.
  void publish_coverage(effects& out, steady_time now);
  void demand_flush(effects& out, steady_time now);
  void arm_refresh(effects& out, steady_time now);
  void request_flush(flush_reason reason, effects& out, steady_time now);
  void query_durable(effects& out);
  void reconcile(effects& out);
  void condemn(readiness_reason reason, std::string message, effects& out, steady_time now);
  // Minting or persisting the epoch failed (§9.3): unlock, no backend call, retry after backoff.
  void abandon_mint(const error& e, effects& out);
  void transient_fault(bool from_durable, std::string message, effects& out, steady_time now);
  void begin_release(effects& out);
  bool reset_ended(const result<void>& outcome, effects& out, steady_time now);
  void carry_release(release_sequence::step step, effects& out, steady_time now);
  void publish(readiness_state s, readiness_reason r, effects& out);
  void force_gate_open(effects& out);  // §13.4, outside a publication
  void gate_sample(effects& out, steady_time now);
  std::uint64_t cursor_lag_ms() const;
  bool non_durable_work() const noexcept;
  void arm_age_timer(effects& out, steady_time now, bool restart);
  void deliver_held(effects& out, steady_time now);
  void retry(effects& out);
  // The rebuild (§11.3, §11.4, §11.8). An attempt is under way from its start until the boundary
  // is durable; faults then fail the attempt instead of condemning anew.
  bool parked_terminal() const noexcept;
  bool attempt_running() const noexcept { return rebuild_.running(); }
  runner_state working_state() const noexcept { return attempt_running() ? runner_state::rebuilding : runner_state::running; }
  void schedule_rebuild(effects& out, steady_time now);
  void start_attempt(effects& out, steady_time now);
  void fail_attempt(readiness_reason reason, std::string message, effects& out, steady_time now);
  void exhaust(effects& out);
  // A shutdown rejected while the lock is kept (§9.7): request_rebuild revives the runner.
  bool revivable() const noexcept;
  void release_done(release_sequence::step unlock, effects& out, steady_time now);

  config config_;
  runner_state state_ = runner_state::dormant;  // written only by set_state
  readiness_state published_ = readiness_state::unknown;
  readiness_reason reason_ = readiness_reason::none;
  std::string message_;
  std::uint64_t gen_ = 0;
  epoch_t epoch_ = 0;
  // The last epoch a shutdown of this runner's quiesced (§9.6, §11.4 step 1): the same fact, in
  // the same form and set in the same handler, as ownership_record::quiesced, from which the
  // supervisor releases a dead runner's epoch. epoch_quiesced(): the current epoch was shut down.
  epoch_t quiesced_ = 0;
  bool epoch_quiesced() const noexcept { return epoch_ != 0 && quiesced_ == epoch_; }
  // The machines (each header draws its diagram; each aborts on an illegal step).
  acquisition acq_;           // core/acquisition.hpp: this ownership's steps (§9.2)
  release_sequence release_;  // core/release_sequence.hpp: its release; a new one at every grant
  drain_pipeline drain_;      // core/drain_pipeline.hpp: offered, in flight, held, cut, flush timers
  rebuild_attempt rebuild_;   // core/rebuild_attempt.hpp: the attempt, its count and its scan (§11)
  coverage_gate cover_;       // core/coverage_gate.hpp: coverage, the gate, their barrier asks (§12, §13)
  verify_attempt verify_;     // core/verify_attempt.hpp: the verify under way (issue 31)
  std::optional<cursor> verified_;
  std::optional<steady_time> verified_at_;
  std::uint64_t verified_records_ = 0;
  std::uint64_t verify_read_ = 0, verify_expected_ = 0;  // the running scan's progress
  std::int64_t verify_eta_ms_ = -1;
  std::uint64_t verify_failures_ = 0;
  std::uint64_t verify_numbers_ = 0;  // the last verify's number (verify_attempt::number)
  std::uint64_t verify_schedule_id_ = 0;  // the scheduled verify's chain of this ownership (0: none)
  marker marker_ = marker::unknown;
  settle settle_ = settle::done;
  bool stopping_ = false;  // stop() was called: the first outcome stands
  // Condemned or latched and released: stays in its state (needs_rebuild, or unavailable) after
  // its release instead of going dormant, until a rebuild. A condemnation whose marker could not
  // be written is not parked: the next wake acquires again and condemns anew (§10.3).
  bool parked_ = false;
  bool tailer_up_ = true, proxy_up_ = true;  // supervision: the children are alive
  bool pending_retry_ = false;               // a retry waits for a child to come back
  meta_records records_;
  readiness_reason condemn_reason_ = readiness_reason::none;

  std::optional<cursor> durable_;
  std::uint32_t transient_faults_ = 0;
  readiness_reason last_fault_ = readiness_reason::none;
  std::uint64_t delivered_batches_ = 0, delivered_records_ = 0, wal_syncs_ = 0, unindexable_ = 0;
  std::uint64_t log_reopens_ = 0, reopens_base_ = 0, reopens_seen_ = 0;
  std::array<std::uint64_t, 4> flushes_{};  // requests, per flush_reason
  std::uint64_t flush_requests() const noexcept;  // of every reason
  std::vector<log_progress> logs_;
  std::vector<unread_clock::log_seen> unread_seen_;  // on_chunk's reading for the unread clock, its buffer kept
  steady_time quiescence_since_{};
};

}  // namespace dix
