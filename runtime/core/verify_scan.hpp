// The scan of `dix verify` (issue 31, decision 0056): the drift merge of an index's digest view
// with the projection of the fence's snapshots (core/drift.hpp), read at a rate so that a verify
// of a large index leaves the store's bandwidth to its users, with the progress and ETA a watcher
// shows. Pure: whoever runs it (a worker thread) feeds it the time and waits until resume_at.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <dix/result.hpp>

#include "core/clock.hpp"
#include "core/drift.hpp"

namespace dix {

struct verify_progress {
  std::uint64_t read = 0;      // entries read, both sides
  std::uint64_t expected = 0;  // the entries both sides are expected to hold (grows if exceeded)
  std::optional<std::chrono::milliseconds> eta;  // none before a rate is known
};

struct verify_step {
  bool done = false;
  // Not done: when to step again (the rate's next allowance); nullopt: at once (the turn's
  // maximum was read).
  std::optional<clock::steady_time> resume_at;
};

class verify_scan {
 public:
  // `expected`: the entries both sides are expected to hold together (e.g. twice the index
  // digest's count), for progress only. `entries_per_s`: the rate (0: unbounded), kept as a token
  // bucket: credit accrues at the rate up to a burst of a tenth of a second's worth (at least 64
  // entries) and reading spends it, so after a stall the scan never reads more than the burst at
  // once. verify_rate_measured (<dix/verify.hpp>): unbounded for the first
  // verify_calibration_entries entries, then a quarter of the rate they were read at (at least
  // 1 000 a second; unbounded still if no time passed, as under a clock nobody advances).
  verify_scan(entry_source& index, std::vector<std::string> logs, primary_source_of primary_of, std::size_t limit,
              std::uint64_t expected, std::uint64_t entries_per_s, clock::steady_time start);

  // Reads what the rate allows by `now`, at most `max_entries` (one turn of its worker; at least
  // 1). A step may read one entry more than it was allowed (the merge finishes a pair); the
  // credit then goes below zero and the next allowance waits for it.
  result<verify_step> step(clock::steady_time now, std::uint64_t max_entries);
  verify_progress progress(clock::steady_time now) const;
  bool done() const noexcept { return merge_.done(); }
  // The pace in entries per second (0: unbounded), once known: nullopt while a measured rate is
  // still being measured.
  std::optional<std::uint64_t> pace() const noexcept;
  const drift_report& report() const noexcept { return merge_.report(); }

 private:
  // The bucket, in millionths of an entry: credit_ as of last_.
  void refill(clock::steady_time now);
  void set_rate(std::uint64_t entries_per_s, clock::steady_time now);

  drift_merge merge_;
  std::uint64_t expected_;
  std::uint64_t rate_;
  bool measuring_;
  std::int64_t burst_micro_;
  std::int64_t credit_micro_;
  clock::steady_time start_;
  clock::steady_time last_;
};

}  // namespace dix
