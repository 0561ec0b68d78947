// release_sequence: the steps of one release of a backend id's lock (protocol.md §9.6–§9.7) as a
// small pure machine, shared by the two lock holders that release: the runner (runner_core, at
// unregister, stop and terminal states) and the supervisor acting for a dead runner
// (supervisor_core, actors.md §3). Each call returns the one step the holder carries out next;
// what the step means in messages is the holder's business (the runner tags its flush with its
// generation, the supervisor with a round of its own).
//
// PHASES
//
//   idle ──begin (proxy down)──► awaiting_proxy ──proxy up──┐
//     │                               ▲    ▲                ▼
//     └──begin (proxy up)─────────────┼────┼──────────► flushing ──flush done──► shutting_down
//                                     │    └──proxy down──┘  (an error is only logged)  │
//                                     └──────────────proxy down─────────────────────────┤
//                                                                      accepted ◄────────┤
//        released ◄──── unlock ─────────────────────────────────────────────┘  rejected  │
//                                                                                        ▼
//                      flushing / awaiting_proxy ◄────────────── retry ─────────────── held
//   any phase but released and abandoned ──abandon (no proxy will come back)──► abandoned
//   flushing ──flush done, begun over an epoch already quiesced──► released (unlock, no shutdown)
//
//   idle            nothing begun; left by begin().
//   awaiting_proxy  the backend's proxy is down and will be respawned; left by on_proxy_up()
//                   (→ flushing), or abandon().
//   flushing        flush(shutdown) requested; left by on_flush_done() (→ shutting_down, whatever
//                   the outcome; → released when begun over a quiesced epoch), on_proxy_down()
//                   (→ awaiting_proxy) or abandon().
//   shutting_down   shutdown(epoch) requested; left by on_shutdown_done() (→ released, or held
//                   on a rejection), on_proxy_down() or abandon().
//   held            the backend could not prove quiescence: the lock stays held, never handed
//                   on (§9.7); left only by retry() (request_rebuild after stop/unregister) or
//                   abandon().
//   released        the lock-table entry is to be released (the unlock step was returned);
//                   terminal — a new ownership starts a new sequence.
//   abandoned       released without a shutdown: no proxy will ever quiesce the backend (its
//                   proxy escalated); the epoch fences its late work (a successor mints a larger
//                   one). Terminal.
//
// Release publishes nothing itself (§9.6) but for the rejection: the holder publishes
// `unavailable`/`shutdown-failed` (step publish_rejected) and keeps the lock. An unlock step must
// be carried out only once every publication the holder made before it has landed (decision
// 0008): the shells keep it behind their publisher's answers.
#pragma once

#include <cstdint>

#include <dix/result.hpp>

namespace dix {

// Aborts with a message naming the machine and the states when `legal` is false: an illegal
// transition is a programmer error (style.md §8, §11), checked in every build type.
void check_transition(bool legal, const char* machine, int from, int to) noexcept;

class release_sequence {
 public:
  enum class phase : std::uint8_t { idle, awaiting_proxy, flushing, shutting_down, held, released, abandoned };

  // What the lock holder carries out next.
  enum class step : std::uint8_t {
    none,              // nothing (waiting, or the event was not for this phase)
    flush,             // flush(shutdown) through the proxy
    shutdown,          // shutdown(epoch()) through the proxy
    publish_rejected,  // publish unavailable/shutdown-failed; the lock stays held (§9.7)
    unlock,            // release the lock-table entry (behind the holder's publications)
  };

  // Starts the release of the ownership of `epoch`. `proxy_up`: a proxy can take the flush now;
  // otherwise the sequence waits for on_proxy_up(). `quiesced`: a shutdown(epoch) succeeded
  // already (the other holder's release, or the runner's own rebuild, got that far: the ownership
  // record's and runner_core's quiesced epoch): the flush still runs, then the unlock — no second
  // shutdown of the epoch (§9.6: at most one successful shutdown per epoch).
  step begin(epoch_t epoch, bool proxy_up, bool quiesced);
  step on_proxy_down();
  step on_proxy_up();
  // The answer to the flush(shutdown) request: whatever it says, the shutdown follows (an error
  // is only logged by the holder, §9.6). Ignored unless flushing.
  step on_flush_done(const result<void>& outcome);
  // The answer to shutdown(epoch): matched by epoch (protocol.md §1.3). Ignored unless shutting
  // down the same epoch.
  step on_shutdown_done(epoch_t epoch, const result<void>& outcome);
  // §9.7: a held lock's release is tried again (the same epoch; the backend must accept it).
  step retry(bool proxy_up);
  // No proxy will come back: give up quiescence. The holder unlocks at once.
  step abandon();

  phase current() const noexcept { return phase_; }
  epoch_t epoch() const noexcept { return epoch_; }
  // Begun and still holding the lock: awaiting_proxy, flushing, shutting_down or held.
  bool holding() const noexcept;
  bool held() const noexcept { return phase_ == phase::held; }
  bool quiescing() const noexcept { return phase_ == phase::shutting_down; }

 private:
  void transition(phase to) noexcept;
  step flush_when(bool proxy_up);  // flushing now, or awaiting the proxy

  phase phase_ = phase::idle;
  epoch_t epoch_ = 0;
  bool quiesced_ = false;  // begun over an epoch already shut down: no shutdown step
};

}  // namespace dix
