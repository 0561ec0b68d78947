// tailer_core: turns a registration's logs into bounded batches (protocol.md §3, §4).
//
//   install(cursor) ──► exact resume of every log (§3.1, §3.2) ──► pull() … pull() …
//
// Each pull() is one drain turn in four phases. collect: continue the carried remainder of the
// previous turn, read more transactions (smallest next header time first, ties by attach
// order), stop at the turn budgets or the chunk's distinct-key bound (both may cut a
// transaction). resolve: read each distinct key once with a primary read after its last
// collected occurrence. cut: the chunk is the longest resolved prefix; `through` advances per
// log over the transactions it holds completely. sync: every store the batch read is synced up
// to what was read (§4.8) before the batch is returned. What a turn collected beyond its chunk
// is kept as key identities, so the next turn collects that remainder again (same stops, same
// clock reads) without hashing its record ids again.
//
// A rebuild (protocol.md §11.5–§11.7) uses the same core: capture_boundary() commits the
// boundary in every log's store and takes one snapshot per store, scan() reads them in bounded
// chunks (stores in attach order, tables ascending, ids ascending), and the last chunk carries
// the boundary cursor as its `through`; install(boundary) then resumes the logs there.
//
// The core drives its ports (log sources, store readers) synchronously and takes time only from
// the clock it is given; it owns no thread. Any fault leaves it needing install() again.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dix/batch.hpp>
#include <dix/projection.hpp>
#include <dix/readiness.hpp>

#include "core/clock.hpp"
#include "core/coverage.hpp"
#include "core/key_table.hpp"
#include "core/log_merge.hpp"
#include "core/shared_reads.hpp"
#include "core/turn_budgets.hpp"
#include "ports/log_source.hpp"
#include "ports/store_reader.hpp"

namespace dix {

// One log of a registration, in attach order. The pointers outlive the core.
struct tailer_log {
  log_source* source = nullptr;
  store_reader* store = nullptr;
  std::uint64_t wal_ttl_s = 0;  // the store's WAL TTL (0: none), for the rebuild's retention fit
};

// A store the runtime attached — every one, not only the registration's logs: its log name and
// DB identity (GetDbIdentity()), which installing a cursor checks each entry against (§3.1).
struct attached_log {
  std::string name;
  std::string identity;
};

// A fault to hand to the runner: suspect (condemn, with a reason) or transient (retry).
struct tailer_fault {
  bool transient = false;
  readiness_reason reason = readiness_reason::none;
  std::string text;  // local only: may name tables, never record content
};

struct log_progress {
  std::string log;
  std::uint64_t read_sequence = 0;    // end of the last transaction read from the log
  std::uint64_t latest_sequence = 0;  // the store's latest sequence when the turn ended
};

inline bool operator==(const log_progress& a, const log_progress& b) {
  return a.log == b.log && a.read_sequence == b.read_sequence && a.latest_sequence == b.latest_sequence;
}
inline bool operator!=(const log_progress& a, const log_progress& b) { return !(a == b); }

struct tailer_chunk {
  std::shared_ptr<const batch> delivery;  // null: nothing to deliver this turn
  bool cut_open = false;     // a transaction is cut: `through` cannot pass it until it completes
  bool end_of_log = false;   // every log caught up and nothing carried
  std::uint64_t bytes_read = 0;
  std::uint64_t transactions_read = 0;
  std::uint64_t primary_reads = 0;  // read calls (groups of ≤ 16 keys, protocol.md §4.3)
  std::uint64_t unindexable = 0;
  std::uint64_t wal_syncs = 0;
  std::uint64_t log_reopens = 0;  // iterator re-opens after WAL switches, all logs (the sources' totals)
  std::vector<log_progress> logs;  // attach order
  // Per log, the end sequence (sequence + op count − 1) of the anchor of the cursor the tailer
  // stands at after this turn — `delivery->through` when the batch advanced it — which coverage
  // association compares with captured positions (protocol.md §12.2).
  dix::positions through_ends;
  // The coverage capture taken at the start of this turn, when pull() was asked for one (§12.1).
  std::optional<coverage_capture> capture;
  // The verify fence is reached: every log is read up to its fence snapshot's sequence, and
  // everything read is delivered (nothing carried), so `through` stands exactly at the fence
  // (tailer_core::fence). A fenced chunk is not end_of_log while commits wait beyond the fence: a
  // runner stops pulling at fence_reached until it lifts the fence.
  bool fence_reached = false;
};

// The delivery compares by value (same_batch, <dix/batch.hpp>).
inline bool operator==(const tailer_chunk& a, const tailer_chunk& b) {
  return same_batch(a.delivery, b.delivery) && a.cut_open == b.cut_open && a.end_of_log == b.end_of_log
         && a.bytes_read == b.bytes_read && a.transactions_read == b.transactions_read
         && a.primary_reads == b.primary_reads && a.unindexable == b.unindexable && a.wal_syncs == b.wal_syncs
         && a.log_reopens == b.log_reopens && a.logs == b.logs && a.through_ends == b.through_ends
         && a.capture == b.capture && a.fence_reached == b.fence_reached;
}
inline bool operator!=(const tailer_chunk& a, const tailer_chunk& b) { return !(a == b); }

struct install_outcome {
  std::optional<tailer_fault> fault;
  std::vector<std::uint64_t> anchor_ends;  // per log (attach order): the anchor's end sequence
  std::optional<cursor> installed;         // the cursor now installed
};

struct pull_outcome {
  std::optional<tailer_fault> fault;
  tailer_chunk chunk;
};

// What capture_boundary() found (§11.5): the boundary cursor, and the projected tables'
// estimates. The tailer actor sends it to the runner as is (boundary_captured).
struct boundary_found {
  std::optional<cursor> boundary;
  std::uint64_t estimated_records = 0;  // rocksdb.estimate-num-keys over the projected tables
  std::uint64_t estimated_bytes = 0;    // rocksdb.estimate-live-data-size over them
  std::uint64_t wal_syncs = 0;
  friend bool operator==(const boundary_found& a, const boundary_found& b) {
    return a.boundary == b.boundary && a.estimated_records == b.estimated_records &&
           a.estimated_bytes == b.estimated_bytes && a.wal_syncs == b.wal_syncs;
  }
  friend bool operator!=(const boundary_found& a, const boundary_found& b) { return !(a == b); }
};

struct boundary_outcome {
  std::optional<tailer_fault> fault;  // sent as log_fault
  boundary_found found;
};

// One scan turn (§11.6). `delivery` is null when the turn's time ran out before a record; the
// last chunk (`last`) carries `through` = the boundary and may hold no record (§11.7). The tailer
// actor sends it to the runner as is (scan_chunk).
struct scan_step {
  std::shared_ptr<const batch> delivery;
  bool last = false;
  std::uint64_t scanned = 0;  // records in the delivery
  std::uint64_t unindexable = 0;
  friend bool operator==(const scan_step& a, const scan_step& b) {
    return same_batch(a.delivery, b.delivery) && a.last == b.last && a.scanned == b.scanned && a.unindexable == b.unindexable;
  }
  friend bool operator!=(const scan_step& a, const scan_step& b) { return !(a == b); }
};

struct scan_outcome {
  std::optional<tailer_fault> fault;  // sent as log_fault
  scan_step step;
};

class tailer_core {
 public:
  // `logs`: the registration's logs; `attached`: every store of the runtime, attach order, which
  // holds each of `logs` under its name and identity.
  tailer_core(std::vector<tailer_log> logs, std::map<table_ref, projection> projections,
              std::vector<attached_log> attached);
  ~tailer_core();
  tailer_core(const tailer_core&) = delete;
  tailer_core& operator=(const tailer_core&) = delete;

  // Checks every cursor entry first — it names an attached log with that store's identity, else
  // log-missing — and then that the entries name exactly this registration's logs, else
  // registration-changed (protocol.md §3.1). Opens each log at its anchor with exact resume and
  // forgets everything carried, and an abandoned scan with its snapshots. The anchors are
  // skipped: they are already in the index.
  install_outcome install(const cursor& c);

  // For an index with no durable cursor: every log must still hold its first transaction
  // (sequence 1, the store's `format` record: a system transaction), which becomes the anchor of
  // a start cursor that is then installed. log-retention when a log no longer starts at 1;
  // cursor-missing when the first transaction holds projected operations (it cannot be skipped).
  install_outcome install_from_start();

  // One drain turn; see the file comment. `epoch` is stamped on the batch. `capture`: first take
  // the coverage capture of every log, before anything is read (§12.1); a failed capture is a
  // transient fault like a failed read.
  pull_outcome pull(const turn_budgets& budgets, epoch_t epoch, const clock& time, bool capture = false);

  // §11.5: in every store of the registration's logs, in attach order, the system transaction
  // boundary/<id> = epoch; then one snapshot per store, and a WAL sync of each store whose
  // snapshot may hold unsynced commits (§4.8: nothing delivered is ahead of the synced log).
  // Retention fit: the scan's estimated duration (the projected tables' live bytes ÷
  // `scan_bytes_per_s`) must fit every store's WAL TTL, else log-retention with the figures. A
  // failed commit is rebuild-failed; a failed snapshot, estimate or sync is transient. Forgets
  // any installed cursor and any earlier scan: only scan() and then install() follow.
  boundary_outcome capture_boundary(std::string_view id, epoch_t epoch, std::uint64_t scan_bytes_per_s, const clock& time);

  // One scan chunk from the snapshots (§11.6): records projected with their stored version,
  // `rebuild` set, no `through`; closed at max_chunk_records, max_chunk_bytes or the turn's time
  // (checked per entry). After the last record the chunk is the boundary chunk and the
  // snapshots are released. A fault ends the scan (capture_boundary again).
  scan_outcome scan(const turn_budgets& budgets, epoch_t epoch, const clock& time);

  // The verify fence (issue 31, decision 0056): takes one snapshot per log (attach order) and
  // from then on reads no transaction beyond its snapshot's sequence, and resolves every key at
  // its snapshot instead of the latest state. So once a chunk says fence_reached, an index that
  // applied every chunk holds exactly the registration's projection of the snapshots, at
  // through(): what dix verify compares. Writers are never blocked; the tailer only stops
  // reading at the fence until lift_fence(). Returns the snapshots' sequences (attach order).
  // invalid_argument when not installed, during a rebuild scan, or already fenced; io_error when
  // a snapshot cannot be taken, or when the tailer already read beyond it (a store whose WAL
  // shows a transaction its snapshot does not hold yet: fence again later). install(),
  // install_from_start() and capture_boundary() lift it; so does any fault of a pull.
  result<std::vector<std::uint64_t>> fence();
  bool fenced() const noexcept { return fence_.has_value(); }
  // Lifts the fence and hands over its snapshots (attach order; empty when not fenced): the
  // verify scans them while the tailer reads on.
  std::vector<std::unique_ptr<store_snapshot>> lift_fence();

  // The cursor the last batch advanced to (the installed one before any batch).
  const std::optional<cursor>& through() const noexcept { return through_; }

  // Makes the next turn collect the carried remainder from the record ids again, as if nothing
  // had been kept from the last turn: the tests compare the two ways.
  void test_forget_collection() noexcept {
    carried_op_keys_.clear();
    carried_key_hashes_.clear();
  }

 private:
  struct open_txn {
    std::size_t log = 0;
    wal_transaction txn;  // by value: its views point into its storage, which a move keeps
    std::size_t done_ops = 0;  // operations already delivered in earlier chunks (a cut transaction)
  };
  struct log_state {
    tailer_log port;
    std::string name;
    std::string identity;
    std::uint64_t read_end = 0;
    log_position through;                      // this log's entry of `through_`
    std::uint64_t through_end = 0;             // the end sequence of that entry's anchor
    // The projected tables of this log, by table id, each with its projection (in projections_).
    std::vector<std::pair<std::uint32_t, const projection*>> projected;
  };
  // One collected operation: where it is in carried_ and the index of its key in keys_.
  struct collected_op {
    std::size_t txn = 0;  // index into carried_
    std::size_t op = 0;
    std::ptrdiff_t key = -1;  // -1: not projected (its transaction still advances `through`)
  };
  struct turn;  // what the phases of one pull() hand on (tailer_core.cpp)

  // The four phases of pull(), in order; a fault ends the turn and needs install() again.
  // collect: continue the carried remainder, read more transactions, stop at the budgets (§4.2).
  std::optional<tailer_fault> collect(turn& t, tailer_chunk& chunk);
  // resolve: read each distinct key once, in first-occurrence order, up to the chunk's bounds (§4.3).
  std::optional<tailer_fault> resolve(turn& t, tailer_chunk& chunk);
  // cut: the chunk is the longest resolved prefix; `through` advances over the transactions it
  // holds completely; what lies beyond is carried to the next turn (§4.5–4.7).
  std::optional<tailer_fault> cut(turn& t, epoch_t epoch, tailer_chunk& chunk);
  // sync: every log's progress, and the sync before delivery of every store the batch read
  // (§4.8); only then is the batch handed out.
  std::optional<tailer_fault> sync(turn& t, tailer_chunk& chunk);

  // Reads the next transaction over all logs through merge_ (header-time order); sets
  // all_caught_up_ when every log is caught up.
  std::optional<tailer_fault> read_next(std::optional<open_txn>& out, std::uint64_t& bytes_read);
  // The values of group_ids_ (keys_ from `first` on, all of one log and table): at the fence's
  // snapshot when fenced, else from the store, or from its shared reads where another tailer's
  // read may stand in for ours (core/shared_reads.hpp). A failed read is a transient fault.
  std::optional<tailer_fault> read_group(std::size_t log, std::uint32_t table, std::size_t first, tailer_chunk& chunk,
                                         std::vector<std::optional<std::string>>& values);
  // The projection of (log, table), or null when the registration does not project the table.
  const projection* projection_of(std::size_t log, std::uint32_t table) const;
  // The state of one stored value (nullopt: absent) under its table's projection (§4.3, §4.4);
  // returns its size estimate's stored part. runner-failed when the projection throws.
  std::optional<tailer_fault> project(std::size_t log, std::uint32_t table, std::string_view id,
                                      const std::optional<std::string_view>& stored, record_entry& e,
                                      std::uint64_t& unindexable_count) const;

  // The rebuild scan in progress: one snapshot per log, the position (log, index into its
  // `projected`), whether that table is sought yet, and the boundary the last chunk carries.
  struct scan_state {
    std::vector<std::unique_ptr<store_snapshot>> snapshots;
    std::size_t log = 0;
    std::size_t table = 0;
    bool sought = false;
    std::optional<cursor> boundary;
  };
  std::optional<scan_state> scan_;
  // The verify fence: one snapshot per log, attach order (fence()).
  struct fence_state {
    std::vector<std::unique_ptr<store_snapshot>> snapshots;
  };
  std::optional<fence_state> fence_;

  std::vector<log_state> logs_;
  std::vector<attached_log> attached_;
  std::map<table_ref, projection> projections_;
  std::unique_ptr<log_merge> merge_;  // over the sources in attach order; rebuilt by install()
  bool all_caught_up_ = false;        // the last read of this turn found every log caught up
  std::deque<open_txn> carried_;  // read, not yet wholly delivered, in read order
  // What the last turn collected beyond its chunk, in collection order: per operation the index
  // of its key in carried_key_hashes_ (-1: not projected), per key the hash of its identity. A
  // turn collects the carried remainder again first (§4.2); it takes these operations' keys from
  // here instead of hashing every record id again. Identities only: the bytes stay in carried_.
  std::vector<std::int32_t> carried_op_keys_;
  std::vector<std::uint64_t> carried_key_hashes_;
  // The scratch of a turn, kept across turns for its capacity: the turn's operations and keys,
  // the last turn's carried identities while they are replayed (swapped with the two above),
  // each carried key's index in this turn, per carried transaction the operations the chunk
  // consumed, the logs the batch read, and the ids of one primary read group. keys_ views record
  // ids in carried_, so it is read only in the turn that filled it.
  std::vector<collected_op> ops_;
  key_table keys_;
  std::vector<std::int32_t> replay_op_keys_;
  std::vector<std::uint64_t> replay_key_hashes_;
  std::vector<std::uint32_t> renumber_;
  std::vector<std::size_t> consumed_;
  std::vector<bool> logs_read_;
  std::vector<std::uint64_t> turn_end_;  // per log: its latest sequence as the turn began (collect)
  std::vector<std::string_view> group_ids_;
  std::vector<std::uint64_t> group_at_least_;  // per id of the group: its last occurrence's end sequence
  std::vector<bool> group_found_;              // per id: found in the shared reads
  std::vector<std::string_view> miss_ids_;     // the ids the shared reads did not have
  std::optional<cursor> through_;
  // Sets installed_; the tailer is counted among its stores' shared-read followers exactly while
  // installed.
  void set_installed(bool installed) noexcept;
  bool installed_ = false;
};

}  // namespace dix
