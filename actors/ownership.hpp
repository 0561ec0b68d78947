// ownership: a registration's record of what the process lock table holds for it (actors.md §3),
// shared by its supervisor and each of its runners.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "core/supervisor_core.hpp"  // ownership_record
#include "ports/ownership.hpp"       // runner_lock

namespace dix {

// The registration's ownership record (actors.md §3), kept by the supervisor and lent to each of
// its runners: the wiring makes one per registration and hands it to both. Every lock-table call
// of the registration goes through it, so the record says exactly what the table holds for the
// token: the runner marks it acquired when its core takes a grant, records the epoch it mints
// (inside the same handler, so a crash never falls between the two), and release() lets the entry
// go — the runner's at the end of its release, the supervisor's for a dead runner. A dead runner's
// supervisor decides from read() (owner, epoch), never from the runner's last snapshot, which the
// runner stores before it carries out its effects and which therefore may say "released" while
// the entry still waits for a publication to land. Both record the epoch a shutdown of theirs
// quiesced, so a runner that dies between its successful shutdown and its unlock is not shut down
// twice.
//
// Thread safety: every method may be called from any thread (the lock table posts grants from the
// releasing thread); the record's mutex is taken inside no other lock.
class ownership {
 public:
  ownership(std::string id, std::uint64_t token, runner_lock* lock);

  // lock->acquire(id, token, granted): the entry is not ours until the core takes the grant.
  void request(runner_lock::grant granted);
  // The runner's core took a grant: the token holds the entry, no epoch minted yet.
  void acquired();
  void minted(epoch_t epoch);
  // A shutdown(epoch) succeeded — the runner's release or the supervisor's: a later release of
  // the epoch skips its shutdown (protocol.md §9.6: at most one successful shutdown per epoch).
  void quiesced(epoch_t epoch);
  // Releases the entry (or withdraws a pending request): lock->release(id, token).
  void release();

  ownership_record read() const;
  const std::string& id() const noexcept { return id_; }
  runner_lock* lock() const noexcept { return lock_; }

 private:
  const std::string id_;
  runner_lock* const lock_;
  mutable std::mutex mutex_;
  ownership_record record_;
};

}  // namespace dix
