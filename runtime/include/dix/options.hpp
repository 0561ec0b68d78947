// Options of the primary store, the runners and the runtime. Every field says its default;
// validate() checks every range of protocol.md §16 and names the failing field:
//   "runner_options.max_chunk_records = 0: must be in [1, 1048576]"
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <dix/result.hpp>

namespace dix {

using std::chrono::milliseconds;

struct store_options {
  std::string log_name;  // [a-z0-9._-]{1,64}, first [a-z0-9]. Default: none (required)
  bool create_if_missing = true;  // Default: true
  std::uint64_t wal_ttl_s = 259200;  // WAL_ttl_seconds, 0 = none. Default: 259 200 (3 days)
  std::uint64_t wal_size_limit_mb = 16384;  // WAL_size_limit_MB, 0 = none. Both 0: invalid. Default: 16 384 (16 GiB)
  bool sync_commits = false;  // WriteOptions::sync; with false the runtime syncs before delivery (protocol §4.8). Default: false
  // RocksDB memtable size of every column family, 0 = RocksDB's (64 MiB), else [64 KiB, 64 GiB].
  // With max_total_wal_size it bounds the WAL a crash leaves to replay, which a standby taking
  // over pays inside DB::Open (protocol §9.8; the failover fixture uses 4 MiB). Default: 0
  std::uint64_t write_buffer_size = 0;
  // RocksDB max_total_wal_size: live WAL bytes after which the memtables holding the oldest WAL
  // file are flushed, 0 = RocksDB's (4 × the memtable total), else [64 KiB, 1 TiB]. Archived WAL
  // (wal_ttl_s, wal_size_limit_mb) is not counted. Failover fixture: 8 MiB. Default: 0
  std::uint64_t max_total_wal_size = 0;
  // Free space the store leaves on its filesystem (decision 0013, docs/operations.md "Free
  // space"), 0 = automatic: 2 % of the filesystem, at least min(128 MiB, an eighth of it), at most
  // 4 GiB; else [1 MiB, 1 TiB]. Below it (the live WAL, which the memtables' flush writes again,
  // counted as used) a commit fails
  // io_error and writes nothing; the runtime's own system transactions stop at half of it, and
  // the store does not open below half of it plus the WAL it would recover. Default: 0
  std::uint64_t free_space_reserve_bytes = 0;
};

struct runner_options {
  std::uint32_t max_transactions_per_turn = 256;  // [1, 1 000 000]. Default: 256
  std::uint64_t max_bytes_per_turn = 4u << 20;  // [1 KiB, 1 GiB]. Default: 4 MiB
  milliseconds max_milliseconds_per_turn{5};  // [1, 1000]. Default: 5 ms
  std::uint32_t max_chunk_records = 4096;  // [1, 1 048 576]. Default: 4096
  std::uint64_t max_chunk_bytes = 4u << 20;  // [1 KiB, 256 MiB]; ≤ 32 MiB for a remote backend. Default: 4 MiB
  std::uint32_t max_accepted_batches_ahead = 64;  // [1, 4096]. Default: 64
  milliseconds max_flush_age{1000};  // [1, 600 000]. Default: 1000 ms
  std::uint32_t flush_after_mutations = 4096;  // [1, 16 777 216]. Default: 4096
  std::uint64_t flush_after_bytes = 8u << 20;  // [1 KiB, 1 GiB]. Default: 8 MiB
  milliseconds rebuild_backoff{1000};  // [1, 3 600 000]. Default: 1000 ms
  milliseconds max_rebuild_backoff{300000};  // [rebuild_backoff, 86 400 000]. Default: 300 000 ms
  std::uint32_t max_rebuild_attempts = 8;  // [1, 1000]. Default: 8
  milliseconds max_lag{0};  // 0 = no writer gate, else [1, 86 400 000]. Default: 0
  // Scheduled verification (issue 31, protocol.md §4.10): every verify_every the owner verifies
  // its index in the background — condemning it on a difference, as `dix verify` does — with its
  // scan paced at verify_entries_per_s (the index's and the primary's entries together). A
  // verify already running, or an index not ready, skips that turn. 0 = never, else
  // [1 000, 2 592 000 000] (1 s … 30 days). Default: 0
  milliseconds verify_every{0};
  std::uint64_t verify_entries_per_s = 100'000;  // [1, 1 000 000 000]. Default: 100 000
};

inline bool operator==(const runner_options& a, const runner_options& b) {
  return a.max_transactions_per_turn == b.max_transactions_per_turn
         && a.max_bytes_per_turn == b.max_bytes_per_turn
         && a.max_milliseconds_per_turn == b.max_milliseconds_per_turn
         && a.max_chunk_records == b.max_chunk_records && a.max_chunk_bytes == b.max_chunk_bytes
         && a.max_accepted_batches_ahead == b.max_accepted_batches_ahead && a.max_flush_age == b.max_flush_age
         && a.flush_after_mutations == b.flush_after_mutations && a.flush_after_bytes == b.flush_after_bytes
         && a.rebuild_backoff == b.rebuild_backoff && a.max_rebuild_backoff == b.max_rebuild_backoff
         && a.max_rebuild_attempts == b.max_rebuild_attempts && a.max_lag == b.max_lag
         && a.verify_every == b.verify_every && a.verify_entries_per_s == b.verify_entries_per_s;
}
inline bool operator!=(const runner_options& a, const runner_options& b) { return !(a == b); }

struct runtime_options {
  runner_options runner;  // per-registration options replace it whole. Default: {}
  milliseconds max_coverage_wait{30000};  // [0, 600 000]. Default: 30 000 ms
  milliseconds max_write_delay{100};  // [1, 1000]. Default: 100 ms
  std::uint32_t slot_count = 64;  // [1, 4096]; only when creating the segment. Default: 64
};

// The CAF scheduler policy of the blocking facade's actor system (decision 0006). `sharing`: one
// queue, idle workers block on a condition variable. `stealing` (CAF's own default): a queue per
// worker, idle workers poll — spinning, then sleeping 50 µs at a time for about 25 ms — before
// they block, which on a machine with few cores takes CPU from the tailer and the backends.
enum class actor_scheduler : std::uint8_t { sharing = 0, stealing = 1 };

// The actor system the blocking facade dix::runtime owns. An application that hosts dix in its
// own actor system (<dix/caf.hpp>) configures its scheduler itself.
struct system_options {
  std::uint32_t actor_threads = 0;  // CAF scheduler threads, else [1, 256]. Default: 0 = CAF's (max of hardware, 4)
  actor_scheduler scheduler = actor_scheduler::sharing;  // any other value is refused. Default: sharing
};

// Each fails invalid_argument naming the first field out of range; success leaves nothing to do.
result<void> validate(const store_options& options);
result<void> validate(const runner_options& options);
result<void> validate(const runtime_options& options);  // includes .runner
result<void> validate(const system_options& options);

}  // namespace dix
