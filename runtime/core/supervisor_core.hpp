// supervisor_core: the supervision decisions for one registration (actors.md §3), as a pure
// machine. The supervisor actor keeps one per registration and carries out the effects it
// returns (spawn, tell the runner, delayed respawns, requests to the proxy and the tailer,
// publications, unlock, answers); the simulation drives the same core.
//
// It keeps the registration's restart history per child kind (restart_policy), which children
// are up, and — for a dead runner — the release steps the supervisor performs as the lock holder:
// quiesce the backend through the proxy (a release_sequence: flush(shutdown), shutdown of the held
// epoch unless the record says it was quiesced already), write the marker through the tailer, publish needs-rebuild/runner-failed (unavailable
// when escalated), unlock, then respawn the runner and wake it — it reacquires and rebuilds, or
// stays parked when the backend cannot reset — or restart nothing (escalated). A
// rejected shutdown keeps the lock (unavailable/shutdown-failed, protocol.md §9.7).
//
// It decides from the registration's OWNERSHIP RECORD, not from the runner's snapshot: the record
// is kept by the supervisor and lent to the runner, which updates it when it takes a grant, mints
// an epoch and lets the lock-table entry go (actors/id_wiring.hpp: `ownership`), so it says
// exactly whether the registration holds the entry and under which epoch.
//
// PHASES
//
//   supervising ──runner down, owning an epoch──► quiescing ──quiesced or abandoned──► marking
//     ▲  │  ▲                                        │ rejected            (no tailer: skipped)
//     │  │  │                                        ▼                              │ marker answered
//     │  │  │                                       held (lock kept; unsupervise fails)
//     │  │  └──────────── publish, unlock, respawn the runner later (or escalated) ◄──┘
//     │  │                                                        unsupervised meanwhile ──► gone
//     │  └──unsupervise, runner up──► stopping ──stopped──► gone
//     └────────────────────────────────── stop failed ◄──┘ (the runner holds a rejected release)
//   supervising ──unsupervise, no runner──► gone
//
//   supervising  children supervised; left by a runner crash (→ quiescing, marking or, when not
//                owning, at once back after the unlock) or unsupervise (→ stopping or gone).
//   quiescing    the dead runner's epoch is being shut down (release_sequence); left for marking
//                when quiesced (or abandoned: the proxy escalated), for held on a rejection.
//   marking      condemned/<id> is being written through the tailer; left when it answers (or
//                dies): written or not, the index is published and unlocked (§10.3).
//   held         terminal but for the registration's end: the backend never proved quiescence.
//   stopping     unsupervise asked the runner to stop; left by its answer.
//   gone         the registration is no longer supervised: its children are retired.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <dix/options.hpp>
#include <dix/readiness.hpp>
#include <dix/result.hpp>

#include "core/release_sequence.hpp"
#include "core/restart_policy.hpp"

namespace dix {

// The registration's entry in the process lock table as its holder knows it (actors.md §3).
struct ownership_record {
  std::uint64_t token = 0;  // the registration's requester in the lock table
  epoch_t epoch = 0;        // minted under the current ownership; 0: none yet
  bool owner = false;       // the token holds the lock-table entry
  // The last epoch a shutdown(epoch) succeeded for, by either holder's release; 0: none. An epoch
  // is shut down successfully at most once (protocol.md §9.6): a release of it skips the shutdown.
  epoch_t quiesced = 0;
};

namespace sfx {
struct spawn { child_kind kind; std::optional<readiness_reason> start_condemned; };  // runner: starts parked
struct respawn_after { child_kind kind; std::chrono::milliseconds delay; };
struct tell_down { child_kind kind; bool escalated; };  // child_down to the runner
struct tell_up { child_kind kind; };                    // child_up to the runner, with the new handle
struct wake_runner {};                                  // as a non-system commit (protocol.md §2.2)
struct flush { std::uint64_t round; };                  // flush(shutdown) through the proxy
struct shutdown { std::uint64_t round; epoch_t epoch; };
struct write_marker {};                                 // condemned/<id> through the tailer
struct publish { readiness_state state; readiness_reason reason; };  // through the publisher
struct unlock {};   // release the entry — carried out once every publication before it landed
struct stop_runner {};
struct answer { result<void> outcome; };  // to every unsupervise waiting
struct forget {};                         // retire the children: the registration is gone
}  // namespace sfx

using supervision_effect = std::variant<sfx::spawn, sfx::respawn_after, sfx::tell_down, sfx::tell_up, sfx::wake_runner,
                                        sfx::flush, sfx::shutdown, sfx::write_marker, sfx::publish, sfx::unlock,
                                        sfx::stop_runner, sfx::answer, sfx::forget>;
using supervision_effects = std::vector<supervision_effect>;

class supervisor_core {
 public:
  enum class phase : std::uint8_t { supervising, quiescing, marking, held, stopping, gone };

  struct config {
    std::string id;          // for the answers' messages
    runner_options options;  // max_rebuild_attempts, rebuild_backoff, max_rebuild_backoff
  };
  explicit supervisor_core(config c);

  using steady_time = std::chrono::steady_clock::time_point;

  // Spawns tailer and proxy, then the runner, and wakes it.
  supervision_effects start();
  // A child died. `record`: the registration's ownership record as the dead runner left it (read
  // only for a runner).
  supervision_effects on_down(child_kind kind, const ownership_record& record, steady_time now);
  // A restart delay ran out.
  supervision_effects on_respawn(child_kind kind);
  // A rebuild was requested (actors.md §3, escalate): an escalated registration forgets its
  // restart history and gets its missing children back — the runner last, woken, so it acquires
  // and consumes the request. Nothing otherwise.
  supervision_effects on_rebuild_request();
  // Answers of the proxy and the tailer to the dead runner's release steps; `round` is the one the
  // request carried (answers of an earlier round, a dead proxy's, are ignored).
  supervision_effects on_flush_done(std::uint64_t round, const result<void>& outcome);
  supervision_effects on_shutdown_done(std::uint64_t round, const result<void>& outcome);
  supervision_effects on_marker_written(const result<void>& outcome);
  // The runtime releases the registration (protocol.md §2.4). Answered now or later by
  // sfx::answer; the registration is gone when the answer is a success.
  supervision_effects on_unsupervise();
  supervision_effects on_runner_stopped(const result<void>& outcome);

  phase current() const noexcept { return phase_; }
  bool up(child_kind kind) const noexcept { return up_[index(kind)]; }
  bool escalated() const noexcept { return escalated_; }
  // The marker write of a dead runner's release is in flight (the tailer's answer belongs to it).
  bool awaits_marker() const noexcept { return phase_ == phase::marking; }

 private:
  static std::size_t index(child_kind k) noexcept { return static_cast<std::size_t>(k); }
  void to(phase next) noexcept;
  void spawn_runner(supervision_effects& out);
  void recover(const ownership_record& record, const restart_decision& d, supervision_effects& out);
  void carry(release_sequence::step step, supervision_effects& out);
  void after_quiescence(supervision_effects& out);
  void finish(supervision_effects& out);

  config config_;
  phase phase_ = phase::supervising;
  std::array<bool, 3> up_{};                   // by child_kind
  std::array<restart_history, 3> history_{};   // by child_kind
  bool escalated_ = false;                     // nothing of this registration is restarted
  bool waiting_ = false;                       // an unsupervise waits for the recovery
  std::optional<readiness_reason> start_condemned_;  // the next runner starts parked with it
  // The dead runner's release: whether it owned, the restart decision taken at its down.
  bool owned_ = false;
  restart_decision recovery_;
  release_sequence release_;
  std::uint64_t round_ = 0;  // of the flush/shutdown requests of the release
};

}  // namespace dix
