// The runtime: keeps registered indexes in step with the attached primary stores (api.md §6).
// One runner per backend id works at a time; its actors tail the stores' WALs, deliver bounded
// batches and advance the backend's cursor only when the backend made the work durable.
//
// Thread safety: every member is thread-safe. Blocking: create, register_index (briefly), and
// the destructor (until stop settles). Everything else returns at once.
//
// Built so far (see docs/architecture.md): registration, draining, delivery, flushes, faults,
// supervision, ownership across the runtimes of a process (lock table + flock guard, epochs,
// the shared readiness segment of the home store, condemnation marker, fingerprint),
// status/metrics, stop. Rebuild, coverage and the writer gate arrive with later issues; until
// then a condemned index parks in `needs-rebuild` with its reason.
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dix/backend.hpp>
#include <dix/options.hpp>
#include <dix/primary_store.hpp>
#include <dix/projection.hpp>
#include <dix/readiness.hpp>
#include <dix/result.hpp>

namespace dix {

struct registration {
  std::shared_ptr<dix::backend> backend;        // qualified: the member reuses the type's name
  std::map<table_ref, projection> projections;  // ≥ 1
  std::string projection_version;               // ≤ 256 bytes. Default: ""
  std::optional<runner_options> options;        // replaces runtime_options::runner whole
};

class runtime;

class registration_handle {  // destruction does not unregister
 public:
  const std::string& id() const noexcept { return id_; }
  // Releases the id (flush(shutdown), shutdown(epoch), unlock). Same future every call.
  shared_future<void> unregister();

 private:
  friend class runtime;
  registration_handle(std::weak_ptr<void> owner, std::string id) : owner_(std::move(owner)), id_(std::move(id)) {}
  std::weak_ptr<void> owner_;
  std::string id_;
};


struct runner_status {
  std::string state;  // "dormant", "running", "idle", "deferred", "waiting-durable", "needs-rebuild", …
  readiness_reason reason = readiness_reason::none;
  epoch_t epoch = 0;
  std::string message;  // local text, may quote the backend
};

struct log_metrics {
  std::string log;
  std::uint64_t read_sequence = 0, durable_sequence = 0, latest_sequence = 0, sequence_lag = 0;
};

struct runner_metrics {  // protocol.md §14.2 (rebuilt_records arrives with rebuild)
  dix::readiness readiness;
  bool owner = false;
  epoch_t epoch = 0;
  std::uint64_t accepted_batches = 0, accepted_bytes = 0, accepted_mutations = 0, deferred_bytes = 0;
  std::uint64_t oldest_accepted_age_ms = 0, stalled_ms = 0;
  std::uint64_t cursor_lag_ms = 0, unread_age_ms = 0, lag_ms = 0;  // §13.1; lag_ms the largest
  std::uint32_t lag_gate = 0;             // the slot's stored gate (0 until the writer gate is built)
  std::uint32_t rebuild_attempts = 0;     // the slot's
  std::uint64_t quiescence_age_ms = 0;    // how long the current shutdown has been pending
  index_time_t coverage_time = 0;         // 0 until coverage is built
  std::uint64_t coverage_age_ms = 0;
  std::uint64_t delivered_batches = 0, delivered_records = 0;
  std::array<std::uint64_t, 4> flushes{};  // indexed by flush_reason
  std::uint64_t wal_syncs = 0, unindexable_records = 0, log_reopens = 0;
  std::uint32_t transient_faults = 0;
  readiness_reason last_fault = readiness_reason::none;
  std::vector<log_metrics> logs;
};

class runtime {
 public:
  // 1…32 stores with distinct log names; the first is the home store. Stores outlive the runtime.
  static result<std::unique_ptr<runtime>> create(std::vector<std::shared_ptr<primary_store>> stores,
                                                 runtime_options options = {});
  ~runtime();  // stop() and wait

  // protocol.md §2.1 checks, in order; no side effects on failure.
  result<registration_handle> register_index(registration r);
  void wake();  // wakes every runner as by a non-system commit
  std::optional<runner_status> status(std::string_view id) const;
  result<dix::readiness> readiness(std::string_view id) const;
  std::optional<runner_metrics> metrics(std::string_view id) const;
  // protocol.md §11.2: false when `id` is not registered here, the runtime is stopped or the
  // backend cannot reset; else stores rebuild_request in the id's slot, notifies, wakes the local
  // runner and returns true. The owner — in this or another runtime — consumes the request at its
  // next wake or acquisition. Until rebuild exists, a consumed request condemns the index with
  // `rebuild-requested` and it parks in `needs-rebuild` (the marker keeps the request); an index
  // already parked keeps the flag for the next acquisition. On a stopped runtime or an
  // unregistered id whose rejected shutdown keeps the lock, retries only that release (§9.7).
  bool request_rebuild(std::string_view id);
  // Releases every id; succeeds only if every backend shutdown succeeded. Same future every call.
  shared_future<void> stop();

  struct impl;

 private:
  explicit runtime(std::shared_ptr<impl> p);
  std::shared_ptr<impl> impl_;
};

}  // namespace dix
