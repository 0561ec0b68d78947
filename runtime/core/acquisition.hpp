// acquisition: how far one ownership of a backend id has come (protocol.md §9.2), a machine of
// runner_core. Each step needs the one before; the release of an ownership is a
// release_sequence (core/release_sequence.hpp, its own diagram).
//
//   unowned ──lock granted──► minting ──epoch persisted──► reading_meta ──records read──► verifying
//      ▲  ▲                      │                                                          │
//      │  └─epoch write failed───┘                                          cursor installed │
//      │                                                                                    ▼
//      └──── lock released (shutdown accepted, or abandoned) ◄──── any owned phase ◄──── acquired
//
//   unowned       not the holder of the lock-table entry; left by a grant (→ minting).
//   minting       owner; the epoch is not yet durable in epoch/<id> (§9.3), no backend call may
//                 use it; left when it is (→ reading_meta) or its write fails (→ unowned).
//   reading_meta  the marker, fingerprint and slot are being read (step 3); left for verifying.
//   verifying     the durable cursor is being read, checked and installed (step 8); left when a
//                 first cursor is installed (→ acquired).
//   acquired      the acquisition is over and the fingerprint was checked; reinstalls after lost
//                 work or a transient fault stay here.
//
// A stop that arrives while an epoch is being minted or persisted waits for its write (§9.2 step
// 2, §9.3: no backend call uses it, and no handoff happens, before it is durable): the machine
// keeps that stop, with the registration count it came with, until the runner resumes it.
#pragma once

#include <cstdint>
#include <optional>

namespace dix {

class acquisition {
 public:
  enum class phase : std::uint8_t { unowned, minting, reading_meta, verifying, acquired };

  static bool legal(phase from, phase to) noexcept;
  // Aborts on an illegal step, in every build.
  void to(phase next) noexcept;
  phase current() const noexcept { return phase_; }
  bool owner() const noexcept { return phase_ != phase::unowned; }

  // The stop waiting for an epoch's write: `last_registration` as stop() was given it.
  void defer_stop(bool last_registration) noexcept { deferred_stop_ = last_registration; }
  bool stop_deferred() const noexcept { return deferred_stop_.has_value(); }
  // Takes the deferred stop (its last_registration); nullopt when none waits.
  std::optional<bool> take_deferred_stop() noexcept {
    auto s = deferred_stop_;
    deferred_stop_.reset();
    return s;
  }

 private:
  phase phase_ = phase::unowned;
  std::optional<bool> deferred_stop_;
};

}  // namespace dix
