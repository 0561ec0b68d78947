// The wiring of one registration: how its log tailer, backend proxy and runner are made, first by
// the supervisor and again after a crash (actors.md §1, §3). The runtime actor builds an
// id_wiring from the registration's plan and the real adapters; the actor tests build one from
// fakes — both through wire_registration(), so tests and production spawn the same actors the same way.
//
//   backend state changes ─► state_change_relay ─► the current proxy's mailbox ─► the runner
//   (any thread)              (set by the proxy factory)   (protocol.md §5.1 order)
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor_control_block.hpp>
#include <caf/fwd.hpp>

#include <dix/backend.hpp>
#include <dix/projection.hpp>
#include <dix/status.hpp>

#include "actors/runner_actor.hpp"
#include "actors/supervisor_actor.hpp"
#include "core/clock.hpp"
#include "core/runner_core.hpp"
#include "core/supervisor_core.hpp"  // ownership_record
#include "messages/interfaces.hpp"
#include "ports/log_source.hpp"
#include "ports/meta_store.hpp"
#include "ports/ownership.hpp"
#include "ports/store_reader.hpp"

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

// Keeps a lock holder's unlock behind its publications (decision 0008). A publication is a
// request to the runtime's readiness publisher and lands when `published` comes back; the lock
// table's release is immediate. The ordering obligation — every publication of an owner has
// landed before its lock-table entry is released or handed over, so an old owner's late
// publication never overwrites a new owner's (two runtimes of one process have two publishers) —
// is kept here: the shell runs each effect through then(), except the unlock, which goes through
// after_landed(); while that one waits for publications in flight, every later effect waits
// behind it, so the effects keep the order the core gave them.
class publication_fence {
 public:
  using step = std::function<void()>;
  // Runs `f` now, unless something waits: then after it, in order.
  void then(step f);
  // Runs `f` once no publication is in flight (and nothing before it waits).
  void after_landed(step f);
  void sent() noexcept { ++in_flight_; }  // a publication left
  void landed();                          // its answer came (an error counts: it will not land later)
  std::size_t in_flight() const noexcept { return in_flight_; }

 private:
  void drain();
  struct waiting {
    bool needs_landed;
    step f;
  };
  std::size_t in_flight_ = 0;
  bool draining_ = false;
  std::deque<waiting> waiting_;
};

// Routes a backend's state changes, which may come from any thread at any time, to the proxy that
// serves the registration now; the proxy forwards them in its mailbox order. Changes while no
// proxy is up (between a crash and the respawn) are dropped: the dead proxy already condemned,
// and a deferred runner retries on its timer.
class state_change_relay {
 public:
  void attach(const backend_proxy_actor& proxy);
  void post(state_change change) const;

 private:
  mutable std::mutex mutex_;
  caf::weak_actor_ptr proxy_;
};

// The registration's subscription to `b`'s state changes, through `relay` (protocol.md §2.2:
// part of the registration; it throws or fails as on_state_change does).
subscription subscribe_state_changes(backend& b, const std::shared_ptr<state_change_relay>& relay);

// One log of the registration: its ports, kept alive by the wiring.
struct wired_log {
  std::shared_ptr<log_source> source;
  std::shared_ptr<store_reader> reader;
  std::uint64_t wal_ttl_s = 0;  // the store's WAL TTL, for the rebuild's retention fit
};

struct id_wiring {
  std::string id;
  std::uint64_t token = 0;  // this registration's requester in the lock table; never 0
  std::shared_ptr<dix::backend> backend;  // qualified: the member reuses the type's name
  std::map<table_ref, projection> projections;
  std::vector<wired_log> logs;     // the registration's logs, attach order
  std::vector<attached_log> attached;  // every store of the runtime (cursor checks, protocol.md §3.1)
  std::shared_ptr<meta_store> meta;  // the id's records in the home store; null: none modelled
  const clock* time = &system_clock();  // the runtime's clock (never null): the tailer's turn budgets, the lag figures
  runner_core::config runner;        // options, fingerprint, rebuildable, cursor_flush_age
  std::shared_ptr<readiness_slot> slot;
  readiness_publisher_actor publisher;  // the runtime's; the runner publishes through it
  runner_lock* lock = nullptr;  // the registration's ownership record is made over it
  std::shared_ptr<snapshot_box> snapshot;
  std::shared_ptr<coverage_proof_box> proof;  // the owner's proof for `current` reads; optional
  std::shared_ptr<state_change_relay> relay;
  // Called by the runner actor when its status changes (state, reason or epoch); optional.
  std::function<void(const runner_status&, std::uint64_t version)> on_status;
  std::function<std::optional<link_figures>()> link;  // runner_deps::link; optional
  // Told of every runner spawned for the registration, with its commit bell (the runtime's wake
  // list), as soon as it is spawned; optional.
  std::function<void(const runner_actor&, std::shared_ptr<commit_bell>)> runner_changed;
  bool detached = true;  // tailer and proxy on threads of their own; false in actor tests
};

// The supervisor's spec of the registration: factories for its three actors over `w`.
std::shared_ptr<supervised_spec> wire_registration(caf::actor_system& sys, id_wiring w);

}  // namespace dix
