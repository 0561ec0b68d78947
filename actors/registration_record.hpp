// One registration of a backend id in a runtime (protocol.md §2), from register_index until its
// release settled for good: what it is made of, once (registration_settings, shared const by the
// record, its wiring and the deps of its tailer, runner and supervisor), and where it stands
// (registration_stage, the runtime actor's alone). The runtime actor keeps one map of records by
// token; the registry (actors/runtime_registry.hpp) lists the current ones for other threads.
//
// STAGES
//
//   registered ──release──► releasing ──settled──► released
//       │                    │    │
//       │                    │    └──rejected (§9.7)──► held ──retry (request_rebuild)──► retrying
//       │                    │                           ▲                                │  │
//       │                    │                           └────────────rejected────────────┘  │
//       │                    │                                   released ◄──settled─────────┘
//       └────────────────────┴── the runtime ended first ──► abandoned  (also from held, retrying)
//
//   registered  counted in the process lock table (§9.1) and gated in the stores' write gates
//               (§2.2, §13.5), supervised; current in the registry, or detached by the facade and
//               not yet taken. Left by release (unregister, stop) or abandon.
//   releasing   unsupervise sent: no longer counted (§2.4: a releasing owner that finds no
//               registration of its id left forces the gate open), gated until the release
//               settles. Left when it settles (→ released, or held on a rejected shutdown) or
//               by abandon.
//   held        the backend's shutdown was rejected: its lock stays held (§9.7), its gates are
//               gone. Left by retry (request_rebuild) or abandon.
//   retrying    a held registration's release tried again; holds neither count nor gates. Left
//               when it settles (→ released or held again) or by abandon.
//   released    terminal: every resource given back; the record leaves the runtime's map.
//   abandoned   terminal: the runtime ended before the release settled; its lock is given back
//               through its ownership record (the epoch a successor mints fences the backend).
//
// A stage holds resources — registered the count and the gates, releasing the gates — and a
// transition gives back, exactly once, what `from` holds and `to` does not: no stage regains a
// resource (registered is never entered), so none is given back twice. An illegal transition
// aborts (check_transition, every build).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <dix/backend.hpp>
#include <dix/projection.hpp>
#include <dix/readiness.hpp>
#include <dix/status.hpp>

#include "actors/runner_actor.hpp"  // snapshot_box
#include "core/clock.hpp"
#include "core/commit_bell.hpp"
#include "core/runner_core.hpp"
#include "core/tailer_core.hpp"  // attached_log
#include "messages/interfaces.hpp"
#include "ports/log_source.hpp"
#include "ports/meta_store.hpp"
#include "ports/ownership.hpp"
#include "ports/store_reader.hpp"

namespace dix {

class backend_host_impl;
class coverage_proof_box;  // actors/coverage_waiters.hpp
class ownership;           // actors/ownership.hpp
class primary_store;
class segment_slot;        // adapters/readiness_segment.hpp
class state_change_relay;  // actors/state_change_relay.hpp

// One log of the registration: its ports, kept alive by the settings.
struct wired_log {
  std::shared_ptr<log_source> source;
  std::shared_ptr<store_reader> reader;
  std::uint64_t wal_ttl_s = 0;  // the store's WAL TTL, for the rebuild's retention fit
};

// The registration's current runner and that runner's commit bell (none: commit wakes go as
// messages of their own). The wiring sets it as each runner is spawned (the supervisor respawns
// one after a crash); commit listeners read it from any thread.
class current_runner {
 public:
  void set(const runner_actor& r, std::shared_ptr<commit_bell> bell = nullptr);
  runner_actor get() const;
  std::shared_ptr<commit_bell> bell() const;  // null: none
  // A commit wake for the current runner (§8.2): rings its bell, and sends a wake only when the
  // bell was silent. Any thread, no lock.
  void commit_wake(bool system) const;

 private:
  struct runner_ref {
    runner_actor actor;
    std::shared_ptr<commit_bell> bell;
  };
  // Replaced whole (std::atomic_load/atomic_store): a commit reads it without a mutex of ours.
  std::shared_ptr<const runner_ref> ref_ = std::make_shared<const runner_ref>();
};

// What one registration is made of, fixed when it is registered: the runtime actor fills it from
// the registration's plan and the real adapters, the actor tests from fakes. Shared, const, by
// its record and by what wire_registration (actors/id_wiring.hpp) makes of it: the tailer's,
// runner's and supervisor's deps refer to it, none copies it.
struct registration_settings {
  std::string id;
  std::uint64_t token = 0;  // its requester in the lock table; unique in the process, never 0
  std::shared_ptr<dix::backend> backend;  // qualified: the member reuses the type's name
  std::map<table_ref, projection> projections;
  std::vector<wired_log> logs;         // the registration's logs, attach order
  std::vector<attached_log> attached;  // every store of the runtime (cursor checks, protocol.md §3.1)
  // The stores of the registration's logs (attach order), for the §13.2 WAL figures of
  // metrics(); empty where none is modelled.
  std::vector<std::shared_ptr<primary_store>> log_stores;
  std::shared_ptr<meta_store> meta;  // the id's records in the home store; null: none modelled
  const clock* time = &system_clock();  // the runtime's clock (never null): turn budgets, lag figures
  // options, fingerprint, rebuildable, cursor_flush_age, gate; each runner incarnation adds its
  // start and its generations (runner_deps).
  runner_core::config runner;
  std::shared_ptr<segment_slot> slot;   // the epoch mint, the rebuild request, publications' reads
  readiness_publisher_actor publisher;  // the runtime's: every publication of its runners goes through it
  // The ownership record is made over it (acquire, release); the runner asks it owned(id) and
  // the registration counts only.
  runner_lock* lock = nullptr;
  std::shared_ptr<snapshot_box> snapshot = std::make_shared<snapshot_box>();  // status()/metrics() read it
  // The owner's proof for `current` reads (protocol.md §12.5 step 3): the runner stores its epoch
  // and durable anchor ends there after every event while it owns, and clears it otherwise; the
  // registry publishes it process-wide by token. Optional (actor tests without a runtime).
  std::shared_ptr<coverage_proof_box> proof;
  std::shared_ptr<state_change_relay> relay;  // the backend's state changes to the current proxy
  std::shared_ptr<current_runner> runner_now = std::make_shared<current_runner>();
  // Called after the snapshot is stored whenever the status (state, reason, epoch) changed, with
  // the snapshot's version: by the runner, and by the supervisor for a dead one. Optional.
  std::function<void(const runner_status&, std::uint64_t version)> on_status;
  // A remote backend's last link report (backend_host_impl::link), published with the lag
  // figures. Optional.
  std::function<std::optional<link_figures>()> link;
  bool detached = true;  // tailer and proxy on threads of their own; false in actor tests

  // How often the WAL listing of log_stores is sampled for metrics(): the lag tick.
  std::chrono::milliseconds wal_sample_interval() const { return std::chrono::milliseconds(runner.gate.lag_tick_ms()); }
};

enum class registration_stage : std::uint8_t { registered, releasing, held, retrying, released, abandoned };

// What a transition gives back (each exactly once; the runtime actor carries it out).
struct registration_undo {
  bool uncount = false;  // count_registration(id, -1) in the process lock table
  bool ungate = false;   // the registration's admission entries leave every store's write gate
};

// Whether `from` → `to` is a step of the diagram above.
bool legal(registration_stage from, registration_stage to) noexcept;

class registration_record {
 public:
  // A record starts registered: counted, gated and handed to the supervisor.
  explicit registration_record(std::shared_ptr<const registration_settings> settings);

  const registration_settings& settings() const noexcept { return *settings_; }
  const std::shared_ptr<const registration_settings>& shared_settings() const noexcept { return settings_; }
  const std::string& id() const noexcept { return settings_->id; }
  std::uint64_t token() const noexcept { return settings_->token; }
  const std::shared_ptr<segment_slot>& slot() const noexcept { return settings_->slot; }
  const std::shared_ptr<snapshot_box>& snapshot() const noexcept { return settings_->snapshot; }

  // What the runtime actor made for it besides its settings.
  std::shared_ptr<backend_host_impl> host;  // outlives the registration (the runtime keeps it)
  std::shared_ptr<ownership> owner;  // its ownership record (every lock-table call), from its wiring
  subscription changes;  // the backend's state changes; the runtime actor's alone

  // The lifecycle: read and changed by the runtime actor only.
  registration_stage stage() const noexcept { return stage_; }
  // releasing or retrying: a release is pending.
  bool releasing() const noexcept;
  // Moves to `to` (aborting when illegal) and returns what `stage()` held that `to` does not.
  [[nodiscard]] registration_undo transition(registration_stage to) noexcept;

  // The current runner (settings().runner_now), for the readers of any thread.
  void set_runner(const runner_actor& r, std::shared_ptr<commit_bell> bell = nullptr);
  runner_actor runner() const;
  void commit_wake(bool system) const;

 private:
  std::shared_ptr<const registration_settings> settings_;
  registration_stage stage_ = registration_stage::registered;
};

}  // namespace dix
