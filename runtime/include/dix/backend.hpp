// The backend contract: what dix requires of an index backend, and what the runtime promises it.
// Summarised in api.md §5; the obligations every backend keeps are backends.md §0; the conformance
// kit (<dix/testing/backend_conformance.hpp>, docs/conformance.md) tests them. These files are
// installed in share/doc/dix/.
//
// A backend accepts, defers or fails batches, makes the work it applied durable at flush
// barriers, and stores each batch's `through` cursor atomically with the index state that cursor
// covers. Exact resume rests on two rules a backend must never break:
//   * it applies only work of the owner's epoch (backend_host::is_owner_epoch), and
//   * it never makes durable, or reports from durable_cursor(), a cursor ahead of the index state
//     stored with it.
//
// THREADS. The runtime never calls two members of one backend at the same time. It calls
// id(), kind(), supports_reset(), min_barrier_interval(), attach() and on_state_change() on the
// runtime actor's thread while it registers the backend, and every other member on the backend's
// proxy actor, a thread of its own in production (actors.md §1), never a CAF scheduler thread
// there. Successive calls may come from different threads. A backend registered again while its
// previous registration is still releasing may see that registration's attach() and
// on_state_change() meanwhile.
//
// BLOCKING. Only durable_cursor() may block, and only briefly (reading the stored cursor; a
// remote backend waits up to its request_timeout). Every other call validates, queues and returns:
// applying, writing and syncing happen on the backend's own helper thread (the shipped backends
// run one applier thread per instance). A call that blocks delays every later call to this
// backend, its barriers included, and with them the index's lag and coverage.
//
// CALLBACKS. on_state_change callbacks and completions may be invoked from any thread, inside the
// call that causes them included. The runtime first posts them to the proxy actor's mailbox, so
// they reach the runner after the result of the call that caused them (protocol.md §5.1).
//
// EXCEPTIONS. A member that throws is a failure, never a crash of the runtime: deliver →
// `failed`; durable_cursor, flush, shutdown, reset → backend_failed; attach or on_state_change →
// the registration fails (protocol.md §5.1, §10.5). noexcept members must not throw.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <dix/batch.hpp>
#include <dix/cursor.hpp>
#include <dix/digest.hpp>
#include <dix/query.hpp>
#include <dix/readiness.hpp>
#include <dix/result.hpp>

namespace dix {

enum class delivery_result : std::int8_t { accepted = 1, deferred = 0, failed = -1 };
enum class flush_reason : std::uint8_t { age, threshold, shutdown, coverage };
enum class state_change_kind : std::uint8_t { changed, accepted_work_lost, failed };

struct state_change {
  state_change_kind kind = state_change_kind::changed;
  epoch_t epoch = 0;  // the work concerned; 0 = none in particular
};

inline bool operator==(const state_change& a, const state_change& b) {
  return a.kind == b.kind && a.epoch == b.epoch;
}
inline bool operator!=(const state_change& a, const state_change& b) { return !(a == b); }

// The answer to flush, shutdown and reset. Call it exactly once with the outcome, from any thread,
// inside the call or later, as an rvalue: std::move(done)(outcome). A second call does nothing. Move-only. Destroyed (or overwritten)
// uncalled, it reports backend_failed ("completion dropped"), so a lost completion is never a
// hang — but it is a failure: a backend must not drop one on purpose.
class completion {
 public:
  completion() = default;
  explicit completion(std::function<void(result<void>)> fn) : fn_(std::move(fn)) {}
  completion(completion&& other) noexcept : fn_(std::exchange(other.fn_, nullptr)) {}
  completion& operator=(completion&& other) noexcept;
  completion(const completion&) = delete;
  completion& operator=(const completion&) = delete;
  ~completion();

  void operator()(result<void> outcome) &&;
  explicit operator bool() const noexcept { return static_cast<bool>(fn_); }

 private:
  std::function<void(result<void>)> fn_;
};

// What on_state_change returns: runs the backend's unsubscribe function when reset or destroyed;
// once it has returned, the backend must not invoke that callback again. Move-only.
class subscription {
 public:
  subscription() = default;
  explicit subscription(std::function<void()> unsubscribe) : unsubscribe_(std::move(unsubscribe)) {}
  subscription(subscription&& other) noexcept : unsubscribe_(std::exchange(other.unsubscribe_, nullptr)) {}
  subscription& operator=(subscription&& other) noexcept {
    if (this != &other) {
      reset();
      unsubscribe_ = std::exchange(other.unsubscribe_, nullptr);
    }
    return *this;
  }
  subscription(const subscription&) = delete;
  subscription& operator=(const subscription&) = delete;
  ~subscription() { reset(); }
  void reset() noexcept {
    if (auto fn = std::exchange(unsubscribe_, nullptr)) fn();
  }

 private:
  std::function<void()> unsubscribe_;
};

// The runtime side a backend talks to, handed over in backend::attach (api.md §5).
//
// Every call is thread-safe and may be made from any thread — the applier, a query thread, a
// callback — at any time, inside a call of the runtime's included. None blocks, except
// admit_query in `wait` mode (at most the mode's timeout); none calls back into the backend.
//
// LIFETIME. The host outlives the registration that handed it out: a backend may keep the
// reference and call it until the runtime object is destroyed (~runtime returns only after every
// backend's last shutdown settled; after that a backend makes no host call). Once the
// registration has ended, is_owner_epoch answers false for every epoch, readiness() the value it
// had then, admit_query not_registered, and the other calls do nothing. Hosts other than the
// runtime's (make_query_host, <dix/query_host.hpp>; a remote backend host; the conformance kit's)
// keep the same contract with answers of their own.
class backend_host {
 public:
  virtual ~backend_host() = default;
  // Whether `e` is the owner epoch of this backend id now: the slot's owner_epoch, loaded with
  // acquire, equals `e` (protocol.md §9.4). The fence against a superseded owner: a backend asks it
  // before applying each batch, after each asynchronous step, and before publishing a barrier's
  // cursor, and drops — never applies, never publishes — whatever belongs to another epoch. An
  // answer may be stale the moment it returns; asking again at the next step is what bounds that.
  // Lock-free, never blocks.
  virtual bool is_owner_epoch(epoch_t e) const noexcept = 0;
  // The id's readiness as any process reads it (its readiness slot): state, reason, rebuild
  // attempts, the current owner epoch. Lock-free, never blocks. A backend may use owner_epoch to
  // learn the epoch it serves; it must not wait for a state here.
  virtual dix::readiness readiness() const noexcept = 0;
  // Counts one record the backend treated as unindexable (backends.md §0): `reason` is a code of
  // 1…48 characters of [A-Za-z0-9_.:-] (protocol.md §4.4), never record content. Call it once per
  // such record, for the backend's own skips only (not for records the batch already marks
  // unindexable: the runtime counted those). Cheap; never blocks.
  virtual void note_unindexable(std::string_view reason) noexcept = 0;
  // Asks for a rebuild of this index, as runtime::request_rebuild(id) does (protocol.md §11.2);
  // the answer is ignored. Asynchronous: it posts a request and returns. For a backend that knows
  // its index has degraded (hnsw_backend: too many deleted labels); not a way to report a failure
  // (emit state_change_kind::failed for that).
  virtual void request_rebuild() noexcept = 0;
  // What every query of the backend calls first (api.md §7): for coverage_kind::wait, waits until
  // the index covers mode.since (at most mode.timeout; `cancel` ends the wait) and fails as that
  // wait fails; then admits by readiness (rebuilding → rebuilding; any state but ready →
  // unavailable) and by coverage (strict needs current, bounded current or bounded, else
  // index_lagging), returning the coverage the query reports. A refusal never condemns the index.
  // Blocks only in wait mode; call it from a query thread, never from the applier or a runtime
  // call.
  virtual result<coverage> admit_query(const coverage_mode& mode, cancel_token cancel = {}) = 0;
  // Why the backend holds deliveries of `epoch` back (low disk space, an unreachable index node),
  // or backend_hold::none once it takes them again. Stored in the slot for readers in other
  // processes (`dix status`) only while `epoch` is the owner's; cheap when nothing changes.
  // Informational: holding back is still reported as `deferred`. Default: ignored.
  virtual void note_hold(epoch_t epoch, backend_hold hold) noexcept {
    (void)epoch;
    (void)hold;
  }
  // A backend that reaches its index over a network (remote_backend) reports its link, at most
  // every 100 ms, for readers in other processes (`dix status`); kept only while `epoch` is the
  // owner's. Never blocks. Default: ignored.
  virtual void note_link(epoch_t epoch, const link_figures& link) noexcept {
    (void)epoch;
    (void)link;
  }
};

// One entry of an index as its digest counts it (<dix/digest.hpp>): a record the index holds,
// its version and entry_hash(log, table, record_id, version, projection).
struct digest_entry {
  std::string log;
  std::uint32_t table = 0;
  std::string record_id;
  std::uint64_t version = 0;
  hash128 hash;
};

// What backend::open_digest returns: a pinned view, read by one thread at a time for as long as
// its backend object lives (the kit and dix verify destroy it first).
class digest_view {
 public:
  virtual ~digest_view() = default;
  // The cursor stored with the digest (none: a fresh or reset index, whose digest is empty).
  virtual const std::optional<cursor>& through() const noexcept = 0;
  virtual const index_digest& digest() const noexcept = 0;
  // The next entry the digest counts (nullptr after the last), valid until the next call. Each
  // entry comes exactly once, in the order a merge with a primary scan reads: each log's entries
  // together (the logs in any order), within a log the tables ascending, within a table the
  // record ids ascending bytewise. May read the index (a long scan); errors are its read errors.
  virtual result<const digest_entry*> next() = 0;
  // Calls `each` for every entry still to come, in next()'s order, until it answers false.
  result<void> for_each_entry(const std::function<bool(const digest_entry&)>& each);
  // Work the view does before its first entry (e.g. checking that the index's own structures
  // agree, so that next() can name a record they disagree on), a bounded slice at a time: up to
  // about `units` rows read; answers the rows read, 0 once there is nothing left to do. dix verify
  // calls it until 0 before its first next(), counting the rows at its rate, so a large index's
  // check never stalls the backend's other calls for long; a next() before then does whatever is
  // left at once. Errors are its read errors. Default: nothing to do.
  virtual result<std::uint64_t> prepare(std::uint64_t units) {
    (void)units;
    return std::uint64_t{0};
  }
  // About how many rows prepare() reads in all (for a verify's progress and ETA); 0: none.
  virtual std::uint64_t preparation_rows() const noexcept { return 0; }
  // Whether the view answers for its backend's skips() (a remote backend's, whose node holds the
  // backend that decides). Then dix verify asks skips(records) only about the records the index
  // lacks, in batches, instead of backend::skips about every record. Default: false.
  virtual bool answers_skips() const noexcept { return false; }
  // With answers_skips(): whether the backend leaves out each of `records` (one answer each, in
  // order), as its skips() would. Errors end the verify (a remote node's, unreachable).
  virtual result<std::vector<bool>> skips(const std::vector<record_entry>& records) {
    return std::vector<bool>(records.size(), false);
  }
};

// An index backend (api.md §5, backends.md §0). See THREADS, BLOCKING, CALLBACKS and EXCEPTIONS
// at the top of this file for what holds for every member.
class backend {
 public:
  // The runtime holds a backend by shared_ptr and lets go only when it makes no more calls on it
  // (after its last shutdown settled). Stop the helper thread here; work still queued was never
  // durable, so dropping it loses nothing the runtime cannot replay.
  virtual ~backend() = default;
  // The backend id: 1…64 characters of [A-Za-z0-9._-], not starting with '.' (formats.md §4.1).
  // Constant for the object's life; it names the readiness slot, the runner lock and the
  // metadata records. Called at registration and for messages; must not block.
  virtual const std::string& id() const noexcept = 0;
  // The backend's kind, e.g. "rocksdb_index". Constant; part of the registration's fingerprint
  // (formats.md §5), so changing it rebuilds the index. "remote" limits max_chunk_bytes to 32 MiB.
  virtual std::string_view kind() const noexcept = 0;  // e.g. "rocksdb_index"; in the fingerprint
  // Hands the backend its host. Called on the runtime actor's thread once per registration,
  // before any other call of that registration — again when the same object is registered again
  // (keep the newest host). The backend keeps the reference (see backend_host, LIFETIME). May
  // do light work (checking options); must not block on I/O nor call back into the runtime
  // beyond the host. A throw or a failure here fails register_index, and nothing of the
  // registration remains.
  virtual void attach(backend_host& host) = 0;  // once per registration, before any other call
  // The cursor the backend made durable at its last successful barrier (or that an earlier owner
  // left on disk), or none: a fresh index, or after reset. Called on the proxy's thread when this
  // runtime acquires the id, after a reset, after accepted_work_lost and after a transient fault,
  // to learn where to resume; the runtime checks it is one it offered (protocol.md §5). The only
  // member that may block, briefly. It must never return a cursor ahead of the index state stored
  // with it, nor one that a later crash could take back. Errors: cursor_invalid (stored bytes
  // undecodable) condemns the index; any other error is a transient fault, retried later with
  // readiness unchanged (protocol.md §10.5).
  virtual result<std::optional<cursor>> durable_cursor() = 0;  // as of the last barrier
  // Offers one batch (protocol.md §5). Called on the proxy's thread, in log order, for batches of
  // the epoch the runtime owns (b->epoch). Validate, queue, return at once: never apply, write or
  // sync inside the call. Keep the shared_ptr; never copy the batch.
  //   accepted: the batch is the backend's; it will be applied (if its epoch is still the owner's
  //     when the applier reaches it, which it asks is_owner_epoch before applying) and made
  //     durable by a later barrier.
  //   deferred: not taken; the queue is at its cap or a resource that frees itself is busy. The
  //     runtime offers the same batch again after the next state_change_kind::changed, which the
  //     backend MUST emit after returning deferred (when the queue is at half its cap, the resource
  //     frees, the link is back). Anything that passes by itself is deferred, never failed.
  //   failed: the backend cannot go on; the runtime condemns the index (backend-failed).
  // Never apply a batch of an epoch that is not the owner's, not even one accepted earlier.
  virtual delivery_result deliver(std::shared_ptr<const batch> b) = 0;  // retain without copying
  // Asks for a barrier after everything accepted so far (backends.md §0): apply what is queued,
  // then make the applied state and the last applied `through` cursor durable atomically, then
  // call `done` and emit `changed`. Requests made while a barrier is still queued may join it.
  // Called on the proxy's thread for `reason` (age, threshold, coverage; shutdown during a
  // release); returns at once, the barrier runs on the backend's thread. Before publishing the
  // cursor the barrier asks is_owner_epoch for the epoch of the work it covers; a barrier whose
  // epoch was superseded publishes no cursor (`done` may still report success or an error). A
  // scan chunk carries no `through`: a barrier during a scan stores no new cursor. Never make
  // durable a cursor ahead of the work applied with it. An error in `done` condemns the index
  // (backend-failed), except for flush_reason::shutdown, where the release goes on. Not called
  // while a reset's completion is pending.
  virtual void flush(flush_reason reason, completion done) = 0;
  // Quiesces epoch `epoch` and releases what is exclusive (backends.md §0): drop the epoch's queued
  // work, wait for the apply and barrier in flight, close database handles and writer locks, then
  // call `done`. Called on the proxy's thread (by the runner, or the supervisor for a dead runner)
  // at unregister, stop, a handoff or a rebuild, after flush(shutdown); returns at once. At most one
  // successful shutdown per epoch; after a rejected one (`done` with an error: the runtime keeps
  // the lock, readiness unavailable/shutdown-failed) the runtime may call it again and the backend
  // must accept the retry. After a successful one the same object must accept work of a later
  // epoch, reopening its resources lazily. Not called while a reset's completion is pending.
  virtual void shutdown(epoch_t epoch, completion done) = 0;
  // Subscribes `callback` to the backend's state changes: `changed` (something that held work
  // back passed: after a deferral, after each barrier), `accepted_work_lost{epoch}` (accepted
  // work of that epoch will not be applied; the runtime reads durable_cursor() and replays) and
  // `failed{epoch}` (the backend cannot go on; the runtime condemns the index). Called on the
  // runtime actor's thread once per registration, after attach; the registration keeps the
  // subscription until it ends. The callback may be invoked from any thread, inside any call
  // included, and must not be invoked after its subscription was reset. A throw here fails
  // register_index.
  virtual subscription on_state_change(std::function<void(state_change)> callback) = 0;
  // Whether reset() is implemented, i.e. the index can be rebuilt (protocol.md §11.1). Constant;
  // read at registration. A backend without reset is never rebuilt: a condemned index parks in
  // needs-rebuild, and runtime::request_rebuild answers false.
  virtual bool supports_reset() const noexcept { return false; }
  // Empties the index for a rebuild under epoch `epoch` (backends.md §0): the same quiescence as
  // shutdown, then remove the stored cursor durably FIRST, then destroy the index state, and only
  // then call `done`; a crash in between must leave no cursor, never a cursor over a half-emptied
  // index. Called on the proxy's thread; returns at once. Afterwards durable_cursor() answers none
  // and the backend takes the rebuild's batches of `epoch`. An error in `done` fails the rebuild
  // attempt (it is retried with backoff).
  virtual void reset(epoch_t epoch, completion done);  // default: not_supported
  // The least time between two of the backend's barriers, for a backend that spaces them (a
  // barrier that writes the whole index). Read at registration; added to the writer gate's lag
  // budget (protocol.md §13.3). Constant or cheap; never blocks.
  virtual std::chrono::milliseconds min_barrier_interval() const noexcept { return std::chrono::milliseconds{0}; }
  // Informational (protocol.md §12.3): every log's position `p` is covered by the durable cursor of
  // `epoch`, certified as of index time `coverage_time`. Called on the proxy's thread after that
  // entry was durable, at most about once per max_flush_age; best effort, never read back, never a
  // condition of coverage. Keep it only for the owner's epoch; must not throw or block.
  virtual void publish_coverage(const positions& p, index_time_t coverage_time, epoch_t epoch) noexcept {
    (void)p;
    (void)coverage_time;
    (void)epoch;
  }
  // Answers one query of the index (issue 29; <dix/query.hpp>), admitted first through the host
  // (backend_host::admit_query, with q.mode) as the backend's own query calls are: the runtime
  // actor's `query_index` request and an index node's queries come here. Called on a query thread
  // of the runtime's (never the proxy's, never a CAF scheduler thread), possibly several at once
  // and concurrently with every other call: it must be thread-safe. May block while a `wait`
  // admission waits (at most q.mode.timeout) and while it reads; must never apply, flush or
  // otherwise change the index. A kind the backend does not answer: not_supported. Default: every
  // query not_supported.
  virtual result<query_rows> query(const index_query& q);
  // Optional (issue 31, formats.md §7): a consistent view of the index's digest — the cursor,
  // the digest stored with it in the same atomic write, and the entries they summarise — pinned
  // when the view opens (a snapshot, a revision) and unchanged by later work. The digest must be
  // exactly as durable as the cursor: a reset removes both, a restart finds both, and after any
  // crash the stored digest is the digest of the stored entries. Called on the proxy's thread or a
  // query thread, concurrently with every other call (thread-safe); may block briefly to pin the
  // view. Must never change the index. Default: not_supported (the index cannot be verified).
  virtual result<std::unique_ptr<digest_view>> open_digest();
  // With open_digest (issue 31, formats.md §7): whether apply() keeps a delivered record
  // (state_kind::record) as an entry — nullopt — or skips it as unindexable, answering the code it
  // notes (note_unindexable). Decided from the record alone, exactly as apply() decides (the
  // conformance kit checks that they agree, codes included), never from the index's state: dix
  // verify leaves the records it skips out of the projection's side, so a disagreement reads as
  // drift. Any thread, concurrently with every other call; never blocks. Default: every record is
  // kept.
  virtual std::optional<std::string> skips(const record_entry& r) const;
};

}  // namespace dix
