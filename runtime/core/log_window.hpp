// log_window: one store's recently decoded WAL transactions, shared by the tailers that follow the
// store (issue 32 item 1, decision 0061), and windowed_log_source, the log_source each of them reads
// through.
//
//   windowed_log_source ── next() ──► log_window: the transaction after mine is in the window?
//        │ (own source:                 ├─ yes: a copy of it (decoded once, by whoever read it)
//        │  open(), and                 ├─ I stand at the window's end: the window reads on from
//        │  whenever the window         │  its own source (the feeder), keeps what it read, and
//        ▼  cannot serve)               │  hands me the first
//   log_source (RocksDB or fake)        └─ no (I am behind it, or it holds nothing yet I can follow)
//                                          : my own source reads, exactly as without a window
//
// Exactness is the sources' own: the feeder is a log_source with exact resume and continuity, so
// the window holds consecutive transactions of the log; a follower takes the transaction whose
// sequence follows the end of the one it returned last, and only while the window also holds that
// one with the same sequence and header time, or it is the window's first (seeded at the
// follower's own position with the feeder's exact open). A follower that leaves the window (it
// fell behind, the window was dropped) opens its own source again at the transaction it returned
// last — the exact resume of protocol.md §3.2 — and reads on from there.
//
// A fault of the feeder drops the window (the follower that met it gets the error, as from its own
// source); the next follower at the end seeds it again. Whatever the window holds must still be the
// store's: an OS crash that loses the unsynced tail takes the process with it; a fake store that
// simulates the crash in process calls forget(). Bounded by a transaction count and a byte count
// (the transactions' data_size). Shared only while at least `min_followers` sources follow it (a
// source follows while it is open).
//
// Thread safety: log_window is used from any thread (one mutex; the feeder is read under it). A
// windowed_log_source is used by one thread at a time, like any log_source.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "ports/log_source.hpp"

namespace dix {

class log_window {
 public:
  struct limits {
    std::size_t max_transactions = 8192;
    std::uint64_t max_bytes = 8u << 20;  // sum of the held transactions' data_size
    std::size_t min_followers = 2;
    std::size_t read_ahead = 64;         // transactions the feeder reads at most per extension
    std::size_t stale_asks = 4096;       // asks from ahead of a window that does not grow, before it is dropped
  };

  log_window(std::unique_ptr<log_source> feeder, limits l);
  log_window(const log_window&) = delete;
  log_window& operator=(const log_window&) = delete;

  void follow() noexcept;
  void unfollow() noexcept;

  enum class answer : std::uint8_t {
    found,      // `txn` is the transaction after the follower's last
    caught_up,  // the follower stands at the window's end and the log holds nothing more yet
    outside,    // the window cannot serve this follower: read on its own
  };
  struct step {
    answer kind = answer::outside;
    std::shared_ptr<const wal_transaction> txn;
  };
  // The transaction after the follower's last one, (sequence, end, time) — see the file comment.
  // `joining`: the follower has been reading on its own; it joins only in the window's newer half.
  // An error is the feeder's (log_retention, log_corrupt, io_error), met by this follower at the
  // window's end (a feed keeps what it read before a fault, and the follower that reaches the
  // fault gets it); the window is then dropped.
  result<step> next_after(std::uint64_t last_sequence, std::uint64_t last_end, index_time_t last_time, bool joining);

  // Drops everything (the store lost state: a simulated crash).
  void forget();

  // Counters (cumulative): transactions served from the window, transactions the feeder read.
  std::uint64_t served() const;
  std::uint64_t fed() const;

 private:
  enum class place : std::uint8_t { served, outside, at_end, unseeded };
  // Where the follower stands (under mutex_); `served`: `out` holds its transaction.
  place locate(std::uint64_t last_sequence, std::uint64_t last_end, index_time_t last_time, bool joining, step& out);
  void evict();          // under mutex_: the oldest beyond the limits
  void drop() noexcept;  // under mutex_

  limits limits_;
  mutable std::mutex mutex_;  // the window; never held while the feeder reads
  std::mutex feed_mutex_;     // one feeder reader at a time (seeding and reading on)
  std::unique_ptr<log_source> feeder_;
  bool seeded_ = false;  // the feeder is open and window_ (or seed_*) ends where it stands
  std::deque<std::shared_ptr<const wal_transaction>> window_;
  std::uint64_t bytes_ = 0;
  // The transaction the feeder was opened at (its anchor), until the window holds another one:
  // the follower that seeded the window stands there.
  std::uint64_t seed_sequence_ = 0, seed_end_ = 0;
  index_time_t seed_time_ = 0;
  std::size_t seed_pause_ = 0;  // calls to answer `outside` before seeding again after a failed seed
  std::optional<error> fault_;  // the feeder's fault after the last transaction it kept
  std::uint64_t generation_ = 0;  // moved by drop(): a feed begun before it is not appended
  std::size_t asks_ahead_ = 0;    // asks from beyond the window's end since it last grew
  std::size_t followers_ = 0;
  std::uint64_t served_ = 0;
  std::uint64_t fed_ = 0;
};

class windowed_log_source final : public log_source {
 public:
  // `own`: this follower's source; `window` may be null (then it is `own` alone).
  windowed_log_source(std::unique_ptr<log_source> own, std::shared_ptr<log_window> window);
  ~windowed_log_source() override;
  windowed_log_source(const windowed_log_source&) = delete;
  windowed_log_source& operator=(const windowed_log_source&) = delete;

  const std::string& log_name() const noexcept override { return own_->log_name(); }
  const std::string& identity() const noexcept override { return own_->identity(); }
  result<wal_transaction> open(std::uint64_t sequence, index_time_t time) override;
  result<std::optional<wal_transaction>> next() override;
  result<std::uint64_t> latest_sequence() const override { return own_->latest_sequence(); }
  result<wal_retention> retention(std::uint64_t anchor_sequence, std::uint64_t wall_now_ns) const override {
    return own_->retention(anchor_sequence, wall_now_ns);
  }
  // Its own source's, and its own opens when it left the window (the feeder's are the window's).
  std::uint64_t reopens() const noexcept override { return own_->reopens() + reopens_; }

 private:
  void returned(const wal_transaction& t) noexcept;
  void set_opened(bool opened) noexcept;  // and follows the window exactly while opened

  std::unique_ptr<log_source> own_;
  std::shared_ptr<log_window> window_;
  bool opened_ = false;     // open() succeeded and no error since
  bool following_ = false;  // counted among the window's followers
  bool own_stale_ = false;  // the window served since own_ last read: reopen own_ at the last
  bool own_read_ = false;   // own_ has read since the window last served (joining: see next_after)
  std::uint64_t reopens_ = 0;
  std::uint64_t last_sequence_ = 0, last_end_ = 0;
  index_time_t last_time_ = 0;
};

}  // namespace dix
