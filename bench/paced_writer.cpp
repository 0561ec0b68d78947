#include "paced_writer.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace dix::bench {

using clock_type = std::chrono::steady_clock;

paced_writer::paced_writer(primary_store& store, writer_options options)
    : store_(store), options_(std::move(options)) {}

paced_writer::~paced_writer() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

void paced_writer::start() {
  if (options_.table == 0) return;
  thread_ = std::thread([this] { run(); });
}

writer_result paced_writer::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  if (!failure_.empty()) throw std::runtime_error("writer: " + failure_);
  return std::move(result_);
}

std::string paced_writer::payload_of(std::uint64_t n) {
  char key[16];
  std::snprintf(key, sizeof key, "k%07llu", static_cast<unsigned long long>(n % 10'000'000));
  return std::string(key, 8) + std::string(92, 'w');
}

void paced_writer::run() {
  const bool paced = options_.rate > 0;
  const auto period = std::chrono::nanoseconds(paced ? 1'000'000'000 / options_.rate : 0);
  auto next = clock_type::now();
  auto last_commit = next;
  for (std::uint64_t i = 0; !stopping_;) {
    if (paced) {
      std::this_thread::sleep_until(next);
      next += period;
    }
    const auto begin = clock_type::now();
    auto txn = store_.begin();
    txn.put(options_.table, options_.prefix + std::to_string(i), payload_of(i));
    auto done = txn.commit();
    const auto end = clock_type::now();
    if (!done) {
      if (done.error().value() == errc::index_lagging && options_.retry_pause.count() > 0) {
        ++result_.refused;
        std::this_thread::sleep_for(options_.retry_pause);
        continue;  // the same record again
      }
      failure_ = done.error().to_string();
      return;
    }
    result_.waits_us.push_back(std::chrono::duration<double, std::micro>(end - begin).count());
    result_.longest_gap_ms =
        std::max(result_.longest_gap_ms, std::chrono::duration<double, std::milli>(end - last_commit).count());
    last_commit = end;
    if (options_.on_commit) options_.on_commit(i, *done, end);
    commits_.fetch_add(1, std::memory_order_relaxed);
    ++i;
  }
}

}  // namespace dix::bench
