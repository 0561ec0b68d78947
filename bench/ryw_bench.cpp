// `dix bench ryw`: read-your-writes latency. A writer commits one put per transaction into the
// projected table at --rate transactions/s on a fixed schedule; every 10th commit is a sample: a
// reader in this process calls runtime::wait_for_coverage(id, since = that commit's index time)
// and a reader in another process (`dix-bench ryw-reader`, exec'd, through the free function on
// the shared segment) does the same; each records commit → resolved on CLOCK_MONOTONIC, which
// both processes share. The index is the RocksDB secondary index with its defaults
// (max_flush_age 1 s): what the waits measure is how soon a `coverage` demand makes the owner
// flush and publish, not the age timer.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/free_functions.hpp>
#include <dix/primary_store.hpp>
#include <dix/runtime.hpp>

#include "bench.hpp"
#include "harness/child_process.hpp"
#include "report.hpp"
#include "tool/args.hpp"
#include "tool/executable.hpp"

namespace dix::bench {
namespace {

using clock_type = std::chrono::steady_clock;
constexpr std::uint32_t table = 1;
constexpr const char* index_id = "ryw";
constexpr auto wait_timeout = std::chrono::milliseconds(10'000);

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch()).count();
}

projection_result project(std::string_view payload, const record_info&) {
  return encode_keys({std::string(payload.substr(0, 8))});
}

struct sample {
  index_time_t since = 0;
  std::int64_t committed_ns = 0;
};

struct latencies {
  std::vector<double> ms;
  std::uint64_t failures = 0;
  std::string first_failure;
};

std::string figures(const latencies& l) {
  auto v = l.ms;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v.empty() ? 0.0 : v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))]; };
  std::ostringstream out;
  out.precision(3);
  out << std::fixed << "\"samples\":" << v.size() << ",\"p50_ms\":" << at(0.5) << ",\"p99_ms\":" << at(0.99)
      << ",\"max_ms\":" << (v.empty() ? 0.0 : v.back()) << ",\"failures\":" << l.failures;
  return out.str();
}

// The in-process reader: a future per sample at once (the writer never waits for a reader), then
// resolved in commit order. Coverage only moves forward, so a later sample never resolves before
// an earlier one: taking the time when each get() returns measures each resolution.
class local_reader {
 public:
  explicit local_reader(runtime& rt) : rt_(rt), thread_([this] { run(); }) {}
  ~local_reader() { finish(); }

  void add(const sample& s) {
    auto f = rt_.wait_for_coverage(index_id, s.since, wait_timeout);
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back({s, std::move(f)});
    cv_.notify_one();
  }
  latencies finish() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
      cv_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
    return out_;
  }

 private:
  struct waiting {
    sample s;
    future<void> f;
  };
  void run() {
    for (;;) {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return done_ || !pending_.empty(); });
      if (pending_.empty()) return;
      auto w = std::move(pending_.front());
      pending_.pop_front();
      lock.unlock();
      auto r = w.f.get();
      if (!r) {
        if (out_.failures++ == 0) out_.first_failure = r.error().to_string();
        continue;
      }
      out_.ms.push_back(static_cast<double>(now_ns() - w.s.committed_ns) / 1e6);
    }
  }

  runtime& rt_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<waiting> pending_;
  bool done_ = false;
  latencies out_;
  std::thread thread_;
};

// Reads "since committed_ns" lines and answers "ms" or "failed <error>" lines, from `threads`
// threads, each blocking in the free wait_for_coverage.
int reader_child(const std::filesystem::path& home, const std::filesystem::path& fifo, unsigned threads) {
  std::FILE* in = std::fopen(fifo.c_str(), "r");
  if (!in) {
    std::cerr << "dix-bench ryw-reader: cannot open " << fifo << "\n";
    return 1;
  }
  std::mutex mutex, out_mutex;
  std::condition_variable cv;
  std::deque<sample> queue;
  bool eof = false;
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < threads; ++i) {
    pool.emplace_back([&] {
      for (;;) {
        std::unique_lock<std::mutex> lock(mutex);
        cv.wait(lock, [&] { return eof || !queue.empty(); });
        if (queue.empty()) return;
        auto s = queue.front();
        queue.pop_front();
        lock.unlock();
        auto r = wait_for_coverage(home, index_id, s.since, wait_timeout);
        const auto resolved = now_ns();
        std::lock_guard<std::mutex> out(out_mutex);
        if (r) {
          std::printf("ms %.3f\n", static_cast<double>(resolved - s.committed_ns) / 1e6);
        } else {
          std::printf("failed %s\n", r.error().to_string().c_str());
        }
      }
    });
  }
  unsigned long long since = 0;
  long long committed = 0;
  while (std::fscanf(in, "%llu %lld", &since, &committed) == 2) {
    std::lock_guard<std::mutex> lock(mutex);
    queue.push_back({since, committed});
    cv.notify_one();
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    eof = true;
    cv.notify_all();
  }
  for (auto& t : pool) t.join();
  std::printf("done\n");
  std::fflush(stdout);
  std::fclose(in);
  return 0;
}

}  // namespace

int run_ryw_reader(const std::vector<std::string>& argv) {
  auto parsed = tool::args::parse(argv, {"db", "fifo", "threads"}, {});
  if (!parsed || !parsed->has("db") || !parsed->has("fifo")) {
    std::cerr << usage("ryw-reader");
    return tool::exit_usage;
  }
  return reader_child(parsed->get("db"), parsed->get("fifo"),
                      static_cast<unsigned>(parsed->get_uint("threads", 8, 1, 64).value_or(8)));
}

int run_ryw(const std::vector<std::string>& argv) {
  // Parsed below; see usage("ryw").
  auto parsed = tool::args::parse(argv, {"rate", "seconds", "dir", "json", "every"}, {});
  std::string problem;
  json_report report;
  if (!parsed || !report.open(*parsed, problem)) {
    std::cerr << (problem.empty() ? usage("ryw") : "dix bench ryw: " + problem + "\n");
    return tool::exit_usage;
  }
  const auto rate = parsed->get_uint("rate", 10'000, 1, 1'000'000).value();
  const auto seconds = parsed->get_uint("seconds", 10, 1, 3600).value();
  const auto every = parsed->get_uint("every", 10, 1, 1'000'000).value();

  scratch_dir dir(parsed->get("dir"));
  const auto home = dir.path() / "primary";
  auto store = primary_store::open(home, store_options{}).value();
  store->create_table(table).value();
  auto rt = runtime::create({store}).value();
  rocksdb_index_options io;
  io.path = dir.path() / "index";
  registration r;
  r.backend = rocksdb_index_backend::create(index_id, io).value();
  r.projections[table_ref{store->log_name(), table}] = project;
  rt->register_index(std::move(r)).value();
  // Ready first (a fresh index is built before it serves): the samples measure steady state.
  for (auto deadline = clock_type::now() + std::chrono::seconds(60);;) {
    auto m = rt->metrics(index_id);
    if (m && m->readiness.state == readiness_state::ready) break;
    if (clock_type::now() > deadline) {
      std::cerr << "dix bench ryw: io_error: the index was not ready within 60 s\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  const auto fifo = dir.path() / "samples.fifo";
  if (::mkfifo(fifo.c_str(), 0600) != 0) {
    std::cerr << "dix bench ryw: io_error: mkfifo " << fifo << "\n";
    return 1;
  }
  auto self = tool::sibling_executable("dix-bench", problem);
  if (!self) {
    std::cerr << "dix bench ryw: " << problem << "\n";
    return 1;
  }
  auto child = cli::child_process::spawn({self->string(), "ryw-reader", "--db", home.string(), "--fifo", fifo.string()}).value();
  std::FILE* to_child = std::fopen(fifo.c_str(), "w");  // blocks until the child opened it

  local_reader local(*rt);
  const auto period = std::chrono::nanoseconds(1'000'000'000 / rate);
  const std::string payload(100, 'p');
  std::uint64_t commits = 0, refused = 0;
  const auto start = clock_type::now();
  auto next = start;
  const auto end = start + std::chrono::seconds(seconds);
  for (std::uint64_t i = 0; clock_type::now() < end; ++i) {
    std::this_thread::sleep_until(next);
    next += period;
    auto txn = store->begin();
    txn.put(table, "k" + std::to_string(i % 100'000), std::to_string(i % 1000) + payload);
    auto done = txn.commit();
    const auto committed = now_ns();
    if (!done) {
      ++refused;
      continue;
    }
    if (++commits % every != 0) continue;
    sample s{done->time, committed};
    local.add(s);
    std::fprintf(to_child, "%llu %lld\n", static_cast<unsigned long long>(s.since), static_cast<long long>(s.committed_ns));
    std::fflush(to_child);
  }
  const double elapsed = seconds_since(start);
  std::fclose(to_child);
  auto in_process = local.finish();
  latencies other;
  while (auto line = child.wait_line("", clock_type::now() + wait_timeout + std::chrono::seconds(5))) {
    if (*line == "done") break;
    if (line->rfind("ms ", 0) == 0) {
      other.ms.push_back(std::stod(line->substr(3)));
    } else if (other.failures++ == 0) {
      other.first_failure = *line;
    }
  }
  child.reap(0);
  rt->stop().get().value();

  std::ostringstream out;
  out << "{\"benchmark\":\"ryw\"," << build_fields() << ",\"rate\":" << rate << ",\"seconds\":" << seconds
      << ",\"achieved_tps\":" << static_cast<std::uint64_t>(static_cast<double>(commits) / elapsed)
      << ",\"refused_commits\":" << refused << "," << figures(in_process) << ",\"other_process\":{" << figures(other) << "}}\n";
  if (!report.write(out.str(), problem)) {
    std::cerr << "dix bench ryw: " << problem << "\n";
    return 1;
  }
  if (in_process.failures + other.failures > 0) {
    std::cerr << "dix bench ryw: waits failed: " << in_process.first_failure << " " << other.first_failure << "\n";
    return 1;
  }
  return 0;
}

}  // namespace dix::bench
