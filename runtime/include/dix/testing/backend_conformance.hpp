// The backend conformance kit (docs/conformance.md, decision 0024): Catch2 checks of the backend
// contract (backends.md §0, api.md §5) that a backend author runs against their own backend.
//
// An author describes the backend as a `backend_subject` (a factory over a directory, projection
// bytes, a listing of what the index stores) and expands DIX_BACKEND_CONFORMANCE in a test file
// that includes <catch2/catch.hpp> first and links `dix::testing` (with Catch2::Catch2WithMain):
//
//   #include <catch2/catch.hpp>
//   #include <dix/testing/backend_conformance.hpp>
//   static dix::testing::backend_subject my_subject() { ... }
//   DIX_BACKEND_CONFORMANCE("my_backend", my_subject)
//
// Every check makes its own temporary directories, and a fresh backend per directory with
// `make`; the kill checks fork: the child builds the backend, delivers and dies with SIGKILL at a
// chosen point; the parent reopens the directory with `make` and compares the durable cursor
// with what `stored` lists. This header is standard-library only; the checks live in the
// dix_testing library, which includes Catch2.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include <dix/backend.hpp>

namespace dix::testing {

// One record of the index: (log, table, record id). Ordered, so a listing compares as a whole.
struct stored_key {
  std::string log;
  std::uint32_t table = 0;
  std::string record_id;
  friend bool operator<(const stored_key& a, const stored_key& b) noexcept {
    return std::tie(a.log, a.table, a.record_id) < std::tie(b.log, b.table, b.record_id);
  }
  friend bool operator==(const stored_key& a, const stored_key& b) noexcept {
    return a.log == b.log && a.table == b.table && a.record_id == b.record_id;
  }
};
// log/table/record_id, as failure messages print it.
inline std::ostream& operator<<(std::ostream& out, const stored_key& k) {
  return out << k.log << "/" << k.table << "/" << k.record_id;
}
// What an index holds: every record it stores, with the version (record_state::version) it
// stores it at.
using stored_records = std::map<stored_key, std::uint64_t>;

// The backend under test, as its author describes it. `name`, `make`, `projection`,
// `unindexable` and `stored` are required; the rest turn optional checks on.
struct backend_subject {
  // Prefixes every test case name, e.g. "rocksdb_index". No ';' and no backslash (ctest).
  std::string name;
  // A backend over `dir` (an existing directory the kit created and later removes). The same
  // directory means the same durable state: a fresh instance over it reopens what an earlier one,
  // shut down or killed, left there. The kit attaches its own host.
  std::function<std::shared_ptr<backend>(const std::filesystem::path& dir)> make;
  // Valid projection bytes for record number n (n ≥ 1): the backend must index them. Records the
  // kit writes carry projection(n) and version n.
  std::function<std::string(std::uint64_t n)> projection;
  // Projection bytes the backend must treat as unindexable (note_unindexable, then remove).
  std::function<std::string()> unindexable;
  // Everything the backend stores, read through its public API (a query or a listing call).
  // Called on the test thread with the kit's host attached (admit_query answers `current`).
  std::function<stored_records(backend& b)> stored;
  // The records a query answers for what projection(n) alone holds (a lookup of a key, a term or
  // a vector only projection(n) has), through the public query API. Optional, and strongly
  // advised: a listing of records and versions cannot see an entry an update or a delete left
  // behind (the record is listed once, at its new version), a query for the old value can. With
  // it every state check also requires, for each n up to the last batch, that finds(n) is exactly
  // the records the model holds at version n.
  std::function<std::vector<stored_key>(backend& b, std::uint64_t n)> finds;

  // How long the kit waits for one completion, state change or applier step before it fails
  // (plus min_barrier_interval() for a barrier): a bound for a hang, never a speed requirement.
  std::chrono::milliseconds wait_limit{60000};

  // Deferral by queue size: the `bytes` each delivered batch claims, chosen so that a few of them
  // exceed the cap `make` configured (e.g. the cap itself). 0 skips the check.
  std::uint64_t defer_batch_bytes = 0;
  // How many deliveries the deferral checks try before they fail for want of a `deferred`.
  std::size_t defer_max_deliveries = 64;
  // Deferral for a busy resource: takes the resource the backend over `dir` needs (a writer lock,
  // a connection) and holds it until the returned object is destroyed. Empty skips the check.
  std::function<std::shared_ptr<void>(const std::filesystem::path& dir)> occupy;

  // Makes the next shutdown of `b` be rejected (a fault point of the backend). Empty when the
  // backend never rejects a shutdown: the shutdown check then runs without a rejection.
  std::function<void(backend& b)> reject_next_shutdown;

  // Kill points inside a barrier (say, between an index file's save and the cursor's rename):
  // barrier_kill_points > 0 and arm_barrier_kill(b, k, kill) makes the next barrier of `b` call
  // `kill` (which never returns) at its step k. The kill check then also dies at each of them.
  std::size_t barrier_kill_points = 0;
  std::function<void(backend& b, std::size_t point, std::function<void()> kill)> arm_barrier_kill;

  // Kill points inside reset: reset_kill_points > 0 and arm_reset_kill(b, k, kill) makes the next
  // reset of `b` call `kill` (which never returns) at its step k, 0 ≤ k < reset_kill_points.
  // Without them the reset kill check kills the child right after calling reset and after reset
  // completed.
  std::size_t reset_kill_points = 0;
  std::function<void(backend& b, std::size_t point, std::function<void()> kill)> arm_reset_kill;
};

// A backend_host for the kit (and for authors' own tests): a settable owner epoch, counted
// unindexable notes and rebuild requests, admit_query answering `current`, and control over the
// applier through is_owner_epoch, which every backend calls before applying each batch and
// before publishing a barrier's cursor (backends.md §0). Thread-safe.
class conformance_host final : public backend_host {
 public:
  explicit conformance_host(epoch_t owner = 1) : owner_(owner) {}

  bool is_owner_epoch(epoch_t e) const noexcept override;
  dix::readiness readiness() const noexcept override;
  void note_unindexable(std::string_view reason) noexcept override;
  void request_rebuild() noexcept override;
  result<coverage> admit_query(const coverage_mode& mode, cancel_token cancel = {}) override;
  void note_hold(epoch_t epoch, backend_hold hold) noexcept override;

  void set_owner_epoch(epoch_t e);
  epoch_t owner_epoch() const;
  // The next is_owner_epoch call (from any thread) first makes `next` the owner epoch, then
  // answers: a takeover that lands between two steps of the backend.
  void supersede_at_next_check(epoch_t next);
  // While held, is_owner_epoch blocks on every thread but the one that called hold (so a backend
  // that checks inside deliver does not deadlock the test): the applier stops at its next check.
  void hold_epoch_checks();
  void release_epoch_checks();
  // is_owner_epoch calls so far, and a bounded wait until there were at least `n`.
  std::size_t epoch_checks() const;
  bool wait_epoch_checks(std::size_t n, std::chrono::milliseconds timeout) const;

  std::vector<std::string> unindexable_codes() const;
  std::size_t rebuild_requests() const;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  mutable epoch_t owner_;                      // mutable: a takeover lands inside a check
  mutable std::optional<epoch_t> supersede_;
  bool held_ = false;
  std::thread::id holder_;
  mutable std::size_t checks_ = 0;
  std::vector<std::string> unindexable_;
  std::size_t rebuilds_ = 0;
};

// The checks. Each runs against fresh directories and fails through Catch2 (REQUIRE/CHECK), so
// it must run inside a TEST_CASE; DIX_BACKEND_CONFORMANCE makes one test case per check.
void check_barrier_publishes_offered_cursor(const backend_subject& s);
void check_nothing_durable_before_barrier(const backend_subject& s);
void check_kill_between_apply_and_barrier(const backend_subject& s);
void check_superseded_batch_never_applied(const backend_subject& s);
void check_superseded_barrier_never_publishes(const backend_subject& s);
void check_deferral_by_queue_then_changed(const backend_subject& s);
void check_deferral_by_busy_resource_then_changed(const backend_subject& s);
void check_shutdown_releases_and_later_epoch_works(const backend_subject& s);
void check_reset_removes_cursor_then_state(const backend_subject& s);
void check_kill_inside_reset(const backend_subject& s);
void check_unindexable_removed_and_counted(const backend_subject& s);

}  // namespace dix::testing

// One Catch2 TEST_CASE per check, named "<name>: <what it checks>" and tagged [conformance].
// `name` is a string literal; `subject_factory` a callable returning a backend_subject (called
// once per test case). Expand it at namespace scope in a file that includes <catch2/catch.hpp>.
// The checks a backend cannot take part in still assert: without reset, that reset reports
// not_supported and changes nothing; with defer_batch_bytes = 0, that nothing is deferred.
#define DIX_CONFORMANCE_CASE_(name, subject_factory, what, check) \
  TEST_CASE(name ": " what, "[conformance]") { ::dix::testing::check(subject_factory()); }

#define DIX_BACKEND_CONFORMANCE(name, subject_factory)                                                              \
  DIX_CONFORMANCE_CASE_(name, subject_factory, "a barrier makes the last offered cursor durable, a scan chunk none", \
                        check_barrier_publishes_offered_cursor)                                                     \
  DIX_CONFORMANCE_CASE_(name, subject_factory, "applied work is not reported durable before its barrier",           \
                        check_nothing_durable_before_barrier)                                                       \
  DIX_CONFORMANCE_CASE_(name, subject_factory,                                                                      \
                        "a process killed between apply and barrier reopens with a cursor over exactly what is stored", \
                        check_kill_between_apply_and_barrier)                                                       \
  DIX_CONFORMANCE_CASE_(name, subject_factory, "a superseded epoch's batch is never applied",                       \
                        check_superseded_batch_never_applied)                                                       \
  DIX_CONFORMANCE_CASE_(name, subject_factory, "a barrier whose epoch was superseded publishes no cursor",          \
                        check_superseded_barrier_never_publishes)                                                   \
  DIX_CONFORMANCE_CASE_(name, subject_factory, "a full queue defers and changed follows after the deferral",        \
                        check_deferral_by_queue_then_changed)                                                       \
  DIX_CONFORMANCE_CASE_(name, subject_factory,                                                                      \
                        "shutdown releases the backend, a rejected one is retried, and a later epoch works",        \
                        check_shutdown_releases_and_later_epoch_works)                                              \
  DIX_CONFORMANCE_CASE_(name, subject_factory, "reset removes the cursor durably and empties the index",            \
                        check_reset_removes_cursor_then_state)                                                      \
  DIX_CONFORMANCE_CASE_(name, subject_factory, "a process killed inside reset leaves a cursor only over all its state", \
                        check_kill_inside_reset)                                                                    \
  DIX_CONFORMANCE_CASE_(name, subject_factory, "unindexable projections are removed and counted, never a failure",  \
                        check_unindexable_removed_and_counted)

// For a backend that defers while a resource it needs is busy (backend_subject::occupy set): one
// more test case, beside DIX_BACKEND_CONFORMANCE.
#define DIX_BACKEND_CONFORMANCE_BUSY_RESOURCE(name, subject_factory)                                   \
  DIX_CONFORMANCE_CASE_(name, subject_factory, "a busy resource defers and changed follows when it frees", \
                        check_deferral_by_busy_resource_then_changed)
