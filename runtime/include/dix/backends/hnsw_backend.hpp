// hnsw_backend: approximate nearest neighbours over fixed-dimension float vectors, an hnswlib
// HierarchicalNSW graph kept in memory and saved whole at barriers (backends.md §3, decision
// 0023). A projection encodes a record's vector with encode_vector(); each record ref owns a label
// of the graph (allocated in increasing order, never reused); replace keeps the label, remove
// marks it deleted. A barrier saves the graph and the label map as generation g (`index.<g>`,
// `labels.<g>`), verifies them, then commits them by renaming a `cursor` file that names g with
// the files' lengths and CRC-32s (docs/formats.md, "hnsw_backend").
//
// Threads: deliver/flush/shutdown/reset enqueue; one applier thread per instance applies the
// queue (never a CAF scheduler thread). Queries may run on any thread at any time: they hold the
// index shared, an apply (and the capacity growth inside it) exclusively.
// Crash contract: the `cursor` file is the commit point; it always describes exactly the files it
// names, and a cursor whose bytes or files do not verify counts as absent (cursorless).
//
// STATES of the in-memory index: closed (created, or after shutdown/reset-then-shutdown) → open
// at open() or the first call that needs it (durable_cursor, deliver's apply, a query,
// stored_records), loading the generation the `cursor` names, else empty → closed again by
// shutdown. A graph a
// query opened after a shutdown is a snapshot: the owner's next durable_cursor or apply loads the
// directory again (another owner may have committed since).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <dix/backend.hpp>
#include <dix/query.hpp>

namespace dix {

enum class hnsw_space : std::uint8_t {
  l2,      // squared Euclidean distance
  ip,      // 1 − inner product
  cosine,  // vectors normalised on insert and query, then ip: 1 − cosine similarity
};

struct hnsw_options {
  // The backend's directory: created if missing (its last component only), else empty or the
  // backend's own (decision 0038). Default: none (required)
  std::filesystem::path state_dir;
  std::size_t dimension = 0;        // [1, 4096] float32 components per vector. Default: none (required)
  hnsw_space space = hnsw_space::l2;  // Default: l2
  std::size_t m = 16;                 // graph degree, [2, 100]. Default: 16
  std::size_t ef_construction = 200;  // [1, 10000]. Default: 200
  std::size_t initial_capacity = 1024;  // [1, 2^32] labels before the first doubling. Default: 1024
  std::uint64_t max_queued_bytes = 64u << 20;  // [1 KiB, 16 GiB]; deliveries are deferred above. Default: 64 MiB
  // Above this share of deleted labels the backend asks for a rebuild (once per index lifetime,
  // decision 0023), which rewrites the graph without deleted slots. (0, 1]. Default: 0.5
  double max_deleted_ratio = 0.5;
  // Free space left on the filesystem of `state_dir` (decision 0013), 0 = automatic (as
  // rocksdb_index_options: half the store's automatic rule); else [1 MiB, 1 TiB]. A barrier
  // writes the whole graph anew beside the one it replaces: a delivery is deferred (the host
  // hears backend_hold::low_disk_space) while the filesystem would keep less than this after a
  // generation of the saved one's size plus twice the batch. Default: 0
  std::uint64_t free_space_reserve_bytes = 0;
  // The clock that spaces barriers (decision 0023). Default: empty = std::chrono::steady_clock.
  std::function<std::chrono::steady_clock::time_point()> clock;
};
// invalid_argument naming the field and its range.
result<void> validate(const hnsw_options& options);

// The projection encoding: n float32 little-endian. The backend treats a length other than
// 4 × dimension as unindexable `dimension`, a non-finite component (or a zero vector under
// cosine) as unindexable `non_finite`, never as a failure.
std::string encode_vector(const float* v, std::size_t n);
// The components; invalid_argument `dimension` when the length is not a multiple of 4.
result<std::vector<float>> decode_vector(std::string_view bytes);

class hnsw_backend final : public backend {
 public:
  // invalid_argument for bad options or id. Nothing is read before the first call that needs it.
  static result<std::shared_ptr<hnsw_backend>> create(std::string id, hnsw_options options);
  ~hnsw_backend() override;  // stops the applier; drops queued work (never durable, so replayable)

  // Loads the committed generation now, as the owner's first call that needs it would (the
  // whole graph and label map, checked): a standby that holds the home store calls it on a thread
  // of its own, so the load overlaps the store's recovery (docs/operations.md, "standby").
  // Optional, idempotent, thread-safe, allowed before attach. An owner's open: call it only in
  // the process that will own the index next (what another owner commits afterwards is read at
  // the next ownership after a shutdown). Errors as durable_cursor's; the first call that needs
  // the graph then tries again.
  result<void> open();

  const std::string& id() const noexcept override;
  std::string_view kind() const noexcept override { return "hnsw"; }
  void attach(backend_host& host) override;
  // The cursor the verified `cursor` file holds, none when cursorless. io_error when the files
  // the cursor names verify but the graph does not load.
  result<std::optional<cursor>> durable_cursor() override;
  delivery_result deliver(std::shared_ptr<const batch> b) override;
  // Non-shutdown barriers are spaced (min_barrier_interval()); requests meanwhile join the
  // pending one. flush_reason::shutdown runs at once.
  void flush(flush_reason reason, completion done) override;
  void shutdown(epoch_t epoch, completion done) override;
  subscription on_state_change(std::function<void(state_change)> callback) override;
  bool supports_reset() const noexcept override { return true; }
  void reset(epoch_t epoch, completion done) override;
  // min(3 × the last save's duration, 60 s); 0 before the first save.
  std::chrono::milliseconds min_barrier_interval() const noexcept override;

  // The k nearest live records to `query` (n components), ascending by distance (scored_ref::score
  // in the space's metric), searched with `ef` (raised to k if smaller). Admission first
  // (host.admit_query(mode)); invalid_argument when n ≠ dimension or a component is not finite
  // (or the vector is zero under cosine). Sees applied state, durable or not.
  result<query_result<std::vector<scored_ref>>> knn(const float* query, std::size_t n, std::size_t k,
                                                     const coverage_mode& mode = {}, std::size_t ef = 64);
  // backend::query: knn (q.vector, k = q.limit, q.ef).
  result<query_rows> query(const index_query& q) override;
  // The digest (formats.md §7) of the committed generation, read from its files (the cursor file
  // and the labels file it names), never from the graph in memory. not_supported for a generation
  // written before digests (labels format 1; a rebuild adds them).
  result<std::unique_ptr<digest_view>> open_digest() override;
  std::optional<std::string> skips(const record_entry& r) const override;
  // Every record the index holds with its version, in (log, table, record_id) order. No
  // admission (for tests and the conformance kit); opens the index if needed.
  result<std::vector<record_ref>> stored_records();
  // Metric: deleted labels ÷ labels of the open graph (0 when empty or closed).
  double deleted_ratio() const;

  struct impl;

 private:
  friend struct hnsw_probe;  // runtime/backends/hnsw_probe.hpp: what tests observe and inject
  explicit hnsw_backend(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

// The query-only handle of an hnsw_backend's directory (backends.md §0, decision 0023 "Query-only
// handle"), for a process with no runtime while the owner, in another process, writes there. It
// never writes a byte there. Each query admits through `host` FIRST, then re-reads the `cursor`
// file and, when it names other files than the loaded generation, loads that generation (verified
// as the backend verifies it at open; the loaded one stays until the new one verified), THEN reads:
// the owner publishes coverage only after the barrier that made it durable, so the answer holds at
// least what the admission certified. A generation whose files the owner removed before they were
// read (its next barrier, a reset) makes the reader read the cursor again, a few times. No cursor
// (none yet, a corrupt one, or a reset in progress): no rows.
// Threads: any number of queries at once; a load runs in one of them while the others wait for it
// or (when their cursor read found nothing new) search the generation they hold.
class hnsw_reader {
 public:
  // invalid_argument for bad options (validate()), id or a null host; io_error when the directory
  // or its cursor cannot be read, or the cursor's generation does not load (as knn). Loads the
  // generation the cursor names. Of the options, state_dir, dimension and space are read: they must
  // be the owner's (labels of another dimension or space do not verify). The reader keeps `host`.
  static result<std::shared_ptr<hnsw_reader>> open(std::string id, hnsw_options options, std::shared_ptr<backend_host> host);
  ~hnsw_reader();

  const std::string& id() const noexcept;
  // As hnsw_backend::knn (validation, admission, ordering, scores), over the latest committed
  // generation. io_error (retryable) when the generation the cursor names could not be loaded in
  // max_load_attempts cursor reads (the owner removed its files each time first, or they do not
  // verify); the message names the generation.
  result<query_result<std::vector<scored_ref>>> knn(const float* query, std::size_t n, std::size_t k,
                                                     const coverage_mode& mode = {}, std::size_t ef = 64);
  // Every record of the latest committed generation with its version, in (log, table, record_id)
  // order. No admission (as hnsw_backend::stored_records); refreshes first.
  result<std::vector<record_ref>> stored_records();

  static constexpr std::size_t max_load_attempts = 8;

  struct impl;

 private:
  friend struct hnsw_probe;
  explicit hnsw_reader(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace dix
