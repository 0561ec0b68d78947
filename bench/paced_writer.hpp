// The writer the benchmarks share (rebuild, ryw, sustained): one thread committing one put per
// transaction into a table, on a fixed schedule of `rate` transactions/s (a late commit does not
// shift the later ones) or, with rate 0, as fast as it can. It records each successful commit's
// wait (begin to commit()), the longest interval between two consecutive successful commits, and
// the commits the writer gate refused (index_lagging), which it retries after `retry_pause`.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <dix/primary_store.hpp>

namespace dix::bench {

struct writer_options {
  std::uint64_t rate = 0;     // transactions/s; 0 = unpaced
  std::uint32_t table = 0;
  std::string prefix;         // record ids are prefix + the commit's number
  // After an index_lagging refusal the writer sleeps this long and tries again (the same
  // transaction's writes); 0 = a refusal is a failure like any other.
  std::chrono::milliseconds retry_pause{0};
  // Called on the writer thread after each successful commit: its number from 0, what commit()
  // returned, the time it returned.
  std::function<void(std::uint64_t, const commit_info&, std::chrono::steady_clock::time_point)> on_commit;
};

struct writer_result {
  std::vector<double> waits_us;  // per successful commit
  std::uint64_t refused = 0;     // index_lagging refusals (each retried)
  double longest_gap_ms = 0;     // between consecutive successful commits (from start())
};

class paced_writer {
 public:
  paced_writer(primary_store& store, writer_options options);
  ~paced_writer();
  paced_writer(const paced_writer&) = delete;
  paced_writer& operator=(const paced_writer&) = delete;

  void start();  // a rate-0 writer of a table 0 never starts: stop() returns nothing
  // Successful commits so far; any thread may read it while the writer runs.
  std::uint64_t commits() const noexcept { return commits_.load(std::memory_order_relaxed); }
  // Stops and returns what the writer recorded; throws what a failed commit said.
  writer_result stop();

  // The payload of commit `n`: 8 bytes the benchmarks' projections index ("k" and 7 digits of
  // n mod 10 000 000), then 92 filler bytes.
  static std::string payload_of(std::uint64_t n);

 private:
  void run();

  primary_store& store_;
  writer_options options_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> commits_{0};
  std::thread thread_;
  writer_result result_;
  std::string failure_;
};

}  // namespace dix::bench
