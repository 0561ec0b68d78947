// The runtime (api.md §6): keeps registered indexes in step with the attached primary stores.
// One runner per backend id works at a time across the runtimes and processes of a database; it
// tails the stores' WALs, delivers bounded batches and advances the backend's cursor only when the
// backend made the work durable.
//
// dix::runtime is the blocking facade: it owns a CAF actor system of its own and talks to the
// runtime actor that a CAF application would spawn in its own system (<dix/caf.hpp>). Both run
// the same actors.
//
// Thread safety: every member is thread-safe. Blocking: create, register_index (a round trip to
// the runtime actor, which attaches the backend), request_rebuild (a round trip), and the
// destructor (until stop settled). status, readiness, metrics and wake return at once; unregister
// and stop return futures.
#pragma once

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
#include <dix/status.hpp>
#include <dix/verify.hpp>

namespace dix {

struct registration {
  std::shared_ptr<dix::backend> backend;        // qualified: the member reuses the type's name
  std::map<table_ref, projection> projections;  // ≥ 1
  std::string projection_version;  // change with projection logic/encoding; ≤ 256 bytes. Default: ""
  std::optional<runner_options> options;  // replaces runtime_options::runner whole
};

class registration_handle {  // destruction does not unregister
 public:
  const std::string& id() const noexcept { return id_; }
  // Unregisters the id (protocol.md §2.4): status(id) is gone at once and a replacement may
  // register (it waits for the lock); the future resolves when the release (flush(shutdown),
  // shutdown(epoch), the lock handed on) settled. Same future every call. Fails backend_failed
  // when the shutdown was rejected (the lock stays held: request_rebuild(id) retries the
  // release), not_registered when the id is no longer this handle's registration, stopped when
  // the runtime is gone.
  shared_future<void> unregister();

 private:
  friend class runtime;
  struct facade;
  registration_handle(std::weak_ptr<facade> owner, std::string id, std::uint64_t token)
      : owner_(std::move(owner)), id_(std::move(id)), token_(token) {}
  std::weak_ptr<facade> owner_;
  std::string id_;
  std::uint64_t token_ = 0;  // which registration of the id this handle names
};

class runtime {
 public:
  // 1…32 stores with distinct log names; the first is the home store. The stores outlive the
  // runtime. `system` configures the facade's actor system. Fails invalid_argument (store list,
  // options, a home on NFS), segment_layout_mismatch, io_error.
  static result<std::unique_ptr<runtime>> create(std::vector<std::shared_ptr<primary_store>> stores,
                                                 runtime_options options = {}, system_options system = {});
  // stop() and wait; then releases in the process's lock table any lock a rejected shutdown kept.
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;
  runtime(runtime&&) = delete;
  runtime& operator=(runtime&&) = delete;

  // protocol.md §2.1 checks in order, failing without side effects (stopped, invalid_argument
  // naming the field, already_registered, segment_full); attach and the state-change subscription
  // are part of the registration: if either fails the error is returned and nothing remains.
  result<registration_handle> register_index(registration r);
  // Wakes every runner as a non-system commit does.
  void wake();
  // nullopt: `id` is not registered in this runtime (never was, or unregistered).
  std::optional<runner_status> status(std::string_view id) const;
  // The slot of any id in the home store's segment, registered in this runtime or not. Fails
  // not_registered (no slot), invalid_argument (id outside the name rules).
  result<dix::readiness> readiness(std::string_view id) const;
  // nullopt: `id` is not registered here. Ages are computed now.
  std::optional<runner_metrics> metrics(std::string_view id) const;
  // protocol.md §11.2: false when `id` is not registered here, the runtime is stopped or the
  // backend cannot reset; otherwise stores the slot's rebuild request, wakes the local runner and
  // returns true — the owner, in this runtime or another, consumes it at its next wake or
  // acquisition. For an id unregistered or stopped while a rejected shutdown keeps its lock, it
  // retries that release only and returns true.
  bool request_rebuild(std::string_view id);
  // Issue 31 (protocol.md §4.9): proves that index `id`, registered and owned here, equals the
  // projection of the primary store at a sequence, or names where it does not. Blocks until the
  // owner's verify ended: the index made durable at a fence of its log (writers go on), its
  // digest view compared with a scan of the store at that fence at `options.entries_per_s`. A
  // result with differences condemned the index (needs-rebuild, verify-failed) unless
  // report-only. Fails not_registered (not registered here), unavailable (not owned here, or not
  // ready), rebuilding, stopped, invalid_argument (another verify with other options runs),
  // not_supported (the backend keeps no digest), timeout (the fence was not durable within
  // options.deadline), cancelled (a fault or lost work interrupted it: retry), io_error.
  result<verify_result> verify(std::string_view id, const verify_options& options = {});
  // protocol.md §12.6: resolves once backend `id` covers index time `since` (fixed at the call;
  // later commits never move it). The runtime's watcher thread looks at every segment change:
  // the future holds success when the slot shows `ready` with coverage_time ≥ since. It waits
  // through `unknown`, `needs-rebuild` and `rebuilding` (a new index's first build, a rebuild)
  // up to `timeout`, then fails rebuilding if the index is still being built, index_lagging
  // otherwise (both retryable); unavailable at once when the index is `unavailable` or needs a
  // rebuild its backend cannot do (no reset); cancelled when the token is cancelled
  // (cancel() wakes the watcher at once). Raises the slot's coverage demand so the owner, in this
  // process or another, flushes instead of waiting for its age timer. Fails at once stopped (the
  // runtime stopping or stopped), not_registered (`id` not registered here), invalid_argument
  // (since 0, timeout outside 0…max_coverage_wait). Unregistering the id or stop() fails its
  // waiters with stopped; cancelling one waiter leaves the others waiting. Returns at once.
  future<void> wait_for_coverage(std::string_view id, index_time_t since, milliseconds timeout,
                                 cancel_token cancel = {});
  // protocol.md §12.5: `bounded` when the slot's usable coverage_time is at most `tolerance` old
  // (a positive tolerance; the age is the lag upper bound, 0 after a wall clock stepped back);
  // otherwise, in this process only, `current` (upper bound 0) when the owner runner of the id —
  // in any runtime of the process — proves every log's latest sequence durable under the epoch
  // the slot shows; else `unknown`. Never fails (errors read unknown); does not block but for
  // each log's commit mutex.
  coverage read_coverage(std::string_view id, milliseconds tolerance) const;
  // Unregisters every id; succeeds only if every shutdown succeeded, else backend_failed naming
  // the ids (their locks stay held for the life of this object). Same future every call.
  // Afterwards register_index fails stopped; status, readiness, metrics and request_rebuild
  // keep working.
  shared_future<void> stop();

 private:
  explicit runtime(std::shared_ptr<registration_handle::facade> f);
  std::shared_ptr<registration_handle::facade> facade_;
};

}  // namespace dix
