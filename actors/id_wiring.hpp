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
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include <dix/backend.hpp>
#include <dix/projection.hpp>
#include <dix/status.hpp>

#include "actors/ownership.hpp"
#include "actors/runner_actor.hpp"
#include "actors/state_change_relay.hpp"
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
