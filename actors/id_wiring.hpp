// The wiring of one registration: how its log tailer, backend proxy and runner are made, first by
// the supervisor and again after a crash (actors.md §1, §3). The runtime actor builds an
// id_wiring from the registration's plan and the real adapters; the actor tests build one from
// fakes — both through wire_registration(), so tests and production spawn the same actors the same way.
//
//   backend state changes ─► state_change_relay ─► the current proxy's mailbox ─► the runner
//   (any thread)              (set by the proxy factory)   (protocol.md §5.1 order)
#pragma once

#include <cstdint>
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
#include "core/runner_core.hpp"
#include "messages/interfaces.hpp"
#include "ports/log_source.hpp"
#include "ports/meta_store.hpp"
#include "ports/ownership.hpp"
#include "ports/store_reader.hpp"

namespace dix {

class clock;

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
};

struct id_wiring {
  std::string id;
  std::uint64_t token = 0;  // this registration's requester in the lock table; never 0
  std::shared_ptr<dix::backend> backend;  // qualified: the member reuses the type's name
  std::map<table_ref, projection> projections;
  std::vector<wired_log> logs;     // the registration's logs, attach order
  std::vector<attached_log> attached;  // every store of the runtime (cursor checks, protocol.md §3.1)
  std::shared_ptr<meta_store> meta;  // the id's records in the home store; null: none modelled
  const clock* time = nullptr;       // the tailer's turn budgets
  runner_core::config runner;        // options, fingerprint, rebuildable, cursor_flush_age
  std::shared_ptr<readiness_slot> slot;
  readiness_publisher_actor publisher;  // the runtime's; the runner publishes through it
  runner_lock* lock = nullptr;
  std::shared_ptr<snapshot_box> snapshot;
  std::shared_ptr<state_change_relay> relay;
  // Called by the runner actor when its status changes (state, reason or epoch); optional.
  std::function<void(const runner_status&, std::uint64_t version)> on_status;
  // Told of every runner spawned for the registration (the runtime's wake list); optional.
  std::function<void(const runner_actor&)> runner_changed;
  bool detached = true;  // tailer and proxy on threads of their own; false in actor tests
};

// The supervisor's spec of the registration: factories for its three actors over `w`.
std::shared_ptr<supervised_spec> wire_registration(caf::actor_system& sys, id_wiring w);

}  // namespace dix
