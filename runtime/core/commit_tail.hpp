// commit_tail: one store's latest committed transactions, decoded once by the commit path, and
// tail_log_source, the log_source a tailer reads through to take them instead of reading the WAL
// (issue 32 item 1, decision 0064).
//
//   the store's commit path ── append() after DB::Write returned OK, under the commit mutex ──┐
//                                                                                           ▼
//   tail_log_source ── next() ──► commit_tail: the transaction after mine is here?  [t₁ … tₙ]
//        │ (own source:            ├─ yes: a copy of it (decoded once, by the writer)
//        │  open(), and            ├─ I stand at its end: nothing more yet (the next commit
//        ▼  whenever the tail      │  appends it, or resets the tail)
//   log_source (RocksDB or fake)   └─ no (I am behind it, it was reset, I never joined)
//      cannot serve)                  : my own source reads the WAL, exactly as without a tail
//
// Why the tail holds exactly what the WAL holds. The store serialises every DB::Write under its
// commit mutex, so one WriteBatch is one WAL record at the sequences the commit returns; the
// writer appends a transaction decoded from the very bytes it wrote, with the decoder the WAL
// reader uses, only once Write returned OK (the record is in the WAL). Within one *generation*
// the tail's transactions are consecutive, and a follower standing at its end may answer "caught
// up" only because every commit after the last one held is either appended or ends the generation:
// a commit made while nothing followed calls missed(), a failed write (its record may be in the
// WAL all the same) or a batch the decoder refuses calls reset(), as does a simulated crash; and
// append() of a transaction that does not start right after the last one resets first (a guard:
// the commit path leaves no such hole). A follower joins only at a
// transaction it read from its own source and finds here, the same (sequence, end, header time);
// from there on it takes the transaction that starts right after its last, in the same
// generation, and leaves for its own source when the generation changed or the transaction it
// needs was evicted. Leaving re-opens its own source exactly at the transaction after the last one
// it returned, once the log holds it — as the re-open after a WAL switch (protocol.md §3.4), so the
// WAL file of the last one may have been purged meanwhile — and reads on from there.
//
// What stays unchanged: the sync before delivery (§4.8; the tailer syncs as before, the tail holds
// unsynced commits exactly as the WAL file does); an OS crash takes the process and the tail with
// it; a store opened again has a new tail; a fake store that simulates the crash in process
// resets it. A transaction the tail holds was committed, whatever a purge removed from the WAL
// files since; a follower that leaves needs the WAL from its next transaction on, as it would have
// without the tail.
//
// Bounded by a transaction count and a byte count (each transaction's data_size, its operations
// and a fixed overhead); the oldest go first, and one larger than the byte bound is not held.
// Appended only while at least one source follows (a source follows while it is open), and
// emptied when the last one leaves, so a store without tailers pays two atomic loads per commit.
//
// Thread safety: commit_tail from any thread (one mutex); append() from one writer at a time (the
// store's commit mutex); reset() also from the store's close and from the last follower's
// unfollow(). A tail_log_source is used by one thread at a time, like any log_source.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "ports/log_source.hpp"

namespace dix {

class commit_tail {
 public:
  struct limits {
    std::size_t max_transactions = 1u << 17;
    std::uint64_t max_bytes = 16u << 20;  // data_size + operations + overhead of the held transactions
  };
  // What one held transaction is charged beyond its data and operations.
  static constexpr std::uint64_t entry_overhead = 96;

  commit_tail() = default;
  explicit commit_tail(limits l) : limits_(l) {}
  commit_tail(const commit_tail&) = delete;
  commit_tail& operator=(const commit_tail&) = delete;

  // Writer side. Whether anything follows (else append() need not be called).
  bool wanted() const noexcept { return followers_.load(std::memory_order_acquire) != 0; }
  // Appends the transaction the store just committed (resetting first when it does not follow the
  // last one, and instead of appending when it does not fit). Returns what was evicted, for the
  // caller to free outside its locks. May throw std::bad_alloc; the caller then resets (the commit
  // itself stands).
  std::vector<std::shared_ptr<const wal_transaction>> append(std::shared_ptr<const wal_transaction> t);
  // Drops everything (freed here: rare) and starts a new generation: no follower takes another
  // transaction from what came before. Allocates nothing.
  void reset() noexcept;
  // reset(), returning what the tail held for the caller to free outside its locks. May throw
  // std::bad_alloc (then nothing changed).
  std::vector<std::shared_ptr<const wal_transaction>> take_all();
  // The store committed without appending (nothing followed when it looked): the tail no longer
  // reaches the log's end, so it is reset unless it holds nothing of this generation. Without
  // this a follower joining at the tail's end would wait for a commit already made. One atomic
  // load when there is nothing to reset.
  void missed() noexcept;

  void follow() noexcept { followers_.fetch_add(1, std::memory_order_acq_rel); }
  // The last follower's unfollow() empties the tail (a new generation), freeing it in its thread.
  void unfollow() noexcept;
  // Whether a transaction of `data_size` bytes is held at all: one larger than the byte bound is
  // not (append() ends the generation instead, and its followers read it from the WAL).
  bool fits(std::uint64_t data_size) const noexcept { return data_size + entry_overhead <= limits_.max_bytes; }

  // A follower's place: the generation it joined and the position (counted from the tail's first
  // append ever) of the transaction it takes next.
  struct place {
    std::uint64_t generation = 0;
    std::uint64_t next = 0;
  };
  enum class answer : std::uint8_t {
    found,      // `txn` is the follower's next transaction; `at` moved past it
    caught_up,  // the follower stands at the tail's end: nothing more committed yet
    outside,    // the tail cannot serve this follower (evicted, reset): read on its own
  };
  struct step {
    answer kind = answer::outside;
    std::shared_ptr<const wal_transaction> txn;
  };
  // The transaction after the follower's last one (ending at `last_end`), from `at`.
  step next_after(place& at, std::uint64_t last_end) const;
  // Where a follower joins when the tail holds the transaction (sequence, end, header time): the
  // place after it; false when it does not hold it.
  bool join_after(std::uint64_t sequence, std::uint64_t end, index_time_t time, place& at) const;
  // The held transaction at exactly `sequence` (and `time`, unless 0), with the place after it;
  // null when not held: what open() may answer without the WAL.
  std::shared_ptr<const wal_transaction> find(std::uint64_t sequence, index_time_t time, place& at) const;

  struct counters {
    std::uint64_t appended = 0;  // transactions appended
    std::uint64_t served = 0;    // transactions handed to followers (found, and opens answered)
    std::uint64_t resets = 0;    // generations ended by a hole or reset()
    std::uint64_t evicted = 0;   // transactions evicted by the bounds
    std::size_t held = 0;        // transactions held now
    std::uint64_t bytes = 0;     // bytes charged now
  };
  counters stats() const;

 private:
  static std::uint64_t charge(const wal_transaction& t) noexcept;
  void end_generation() noexcept;  // under mutex_: drops everything held, a new generation
  // The held transaction at position `p`, or null. Under mutex_.
  const std::shared_ptr<const wal_transaction>* at(std::uint64_t p) const noexcept;
  // Under mutex_: the index in held_ of the transaction starting at `sequence`, else held_.size().
  std::size_t index_of(std::uint64_t sequence) const noexcept;

  limits limits_;
  std::atomic<std::size_t> followers_{0};
  std::atomic<bool> armed_{false};  // next_sequence_ ≠ 0: a follower may stand at the end
  mutable std::mutex mutex_;
  std::deque<std::shared_ptr<const wal_transaction>> held_;
  std::uint64_t first_ = 0;       // the position of held_.front()
  std::uint64_t generation_ = 1;  // 0 is no follower's
  std::uint64_t next_sequence_ = 0;  // the sequence the next append must start at; 0: any
  std::uint64_t bytes_ = 0;
  std::uint64_t appended_ = 0, resets_ = 0, evicted_ = 0;
  mutable std::uint64_t served_ = 0;
};

class tail_log_source final : public log_source {
 public:
  // `own`: this follower's source; `tail` may be null (then it is `own` alone).
  tail_log_source(std::unique_ptr<log_source> own, std::shared_ptr<commit_tail> tail);
  ~tail_log_source() override;
  tail_log_source(const tail_log_source&) = delete;
  tail_log_source& operator=(const tail_log_source&) = delete;

  const std::string& log_name() const noexcept override { return own_->log_name(); }
  const std::string& identity() const noexcept override { return own_->identity(); }
  // From the tail when it holds the transaction at (sequence, time); else the own source's open.
  result<wal_transaction> open(std::uint64_t sequence, index_time_t time) override;
  result<std::optional<wal_transaction>> next() override;
  result<std::uint64_t> latest_sequence() const override { return own_->latest_sequence(); }
  result<wal_retention> retention(std::uint64_t anchor_sequence, std::uint64_t wall_now_ns) const override {
    return own_->retention(anchor_sequence, wall_now_ns);
  }
  // Its own source's, and the opens of its own source when it left the tail.
  std::uint64_t reopens() const noexcept override { return own_->reopens() + reopens_; }

  bool in_tail() const noexcept { return in_tail_; }

 private:
  void returned(const wal_transaction& t) noexcept;
  void set_opened(bool opened) noexcept;  // and follows the tail exactly while opened
  // After a transaction read from the own source (or the own source caught up): join the tail
  // when it holds the last one returned.
  void try_join() noexcept;
  // Out of the tail: the own source opened at the transaction after the last one returned.
  result<std::optional<wal_transaction>> leave();

  std::unique_ptr<log_source> own_;
  std::shared_ptr<commit_tail> tail_;
  bool opened_ = false;     // open() succeeded and no error since
  bool following_ = false;  // counted among the tail's followers
  bool in_tail_ = false;    // reading from the tail at place_
  bool own_stale_ = false;  // the tail served since own_ last read: reopen own_ at the last
  commit_tail::place place_;
  std::uint64_t reopens_ = 0;
  std::uint64_t last_sequence_ = 0, last_end_ = 0;
  index_time_t last_time_ = 0;
};

}  // namespace dix
