// `dix bench ryw`: read-your-writes latency. A writer commits one put per transaction into the
// projected table at --rate transactions/s on a fixed schedule; every 10th commit is a sample: a
// reader in this process calls runtime::wait_for_coverage(id, since = that commit's index time)
// and a reader in another process (`dix-bench ryw-reader`, exec'd, through the free function on
// the shared segment) does the same; each records commit → resolved on CLOCK_MONOTONIC, which
// both processes share. The index is the RocksDB secondary index with its defaults
// (max_flush_age 1 s): what the waits measure is how soon a `coverage` demand makes the owner
// flush and publish, not the age timer. After the waits, the floor (decision 0029): on the same
// filesystem, what the two durable appends every answer needs cost one after the other.
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

#include <dix/free_functions.hpp>
#include <dix/primary_store.hpp>
#include <dix/runtime.hpp>

#include "bench.hpp"
#include "harness/child_process.hpp"
#include "live_index.hpp"
#include "paced_writer.hpp"
#include "report.hpp"
#include "tool/args.hpp"
#include "tool/executable.hpp"

namespace dix::bench {
namespace {

using clock_type = std::chrono::steady_clock;
constexpr std::uint32_t table = 1;
constexpr const char* index_id = "ryw";
constexpr auto wait_timeout = std::chrono::milliseconds(10'000);
// What each WAL gets between two syncs at 10 000 commits/s and a turn every 2–3 ms (~25 records
// of ~130 bytes): the floor's append.
constexpr std::size_t floor_append_bytes = 4096;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch()).count();
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
  std::ostringstream out;
  out.precision(3);
  out << std::fixed << "\"samples\":" << l.ms.size() << ",\"p50_ms\":" << quantile(l.ms, 0.5)
      << ",\"p99_ms\":" << quantile(l.ms, 0.99) << ",\"max_ms\":" << quantile(l.ms, 1.0)
      << ",\"failures\":" << l.failures;
  return out.str();
}

// The floor under every answer (decision 0029). An answer needs two durable appends in a row:
// the primary store's SyncWAL before its batch is delivered (protocol.md §4.8) and the index's
// barrier, FlushWAL(true), before coverage is published (§12.3). With the stores' options
// (use_fsync off, allow_fallocate off, manual_wal_flush off) RocksDB 7.8.3 makes each one an
// fdatasync of a WAL file that grows by what was written since the last one (its bytes are in the
// file already; a directory fsync follows only the first sync after a WAL switch). So the floor is
// an append of `bytes` to a file and its fdatasync, then the same on a second file, timed together,
// pairs back to back for `span`, in `dir` beside the stores.
struct floor_run {
  latencies pairs;                     // each pair's duration
  std::vector<std::int64_t> start_ns;  // and when it started
};

floor_run durable_floor(const std::filesystem::path& dir, std::chrono::seconds span, std::size_t bytes) {
  struct file {
    int fd = -1;
    explicit file(const std::filesystem::path& p)
        : fd(::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600)) {
      if (fd < 0) throw std::runtime_error("io_error: cannot create " + p.string());
    }
    ~file() { ::close(fd); }
    file(const file&) = delete;
    file& operator=(const file&) = delete;
    void append(const std::string& data) const {
      if (::write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
        throw std::runtime_error("io_error: floor write");
      }
      if (::fdatasync(fd) != 0) throw std::runtime_error("io_error: floor fdatasync");
    }
  };
  const file primary(dir / "floor-primary.log");
  const file index(dir / "floor-index.log");
  const std::string data(bytes, 'f');
  floor_run out;
  const auto end = clock_type::now() + span;
  while (clock_type::now() < end) {
    const auto start = now_ns();
    primary.append(data);
    index.append(data);
    out.pairs.ms.push_back(static_cast<double>(now_ns() - start) / 1e6);
    out.start_ns.push_back(start);
  }
  return out;
}

// The floor as a commit arriving at a random moment meets it (decision 0029, revisited): it
// waits for the pair in progress to end, then for a whole pair of its own. Arrivals every
// `every_ns` over the run (the bench's commit spacing), up to the last pair's start. A pair that
// takes 150 ms then counts for every arrival during it, as a stalled fsync does for every commit
// waiting behind it, where the pairs' own quantiles count it once.
std::vector<double> arrival_floor(const floor_run& run, std::int64_t every_ns) {
  std::vector<double> out;
  const auto& starts = run.start_ns;
  if (starts.size() < 2 || every_ns <= 0) return out;
  std::size_t k = 0;
  for (auto t = starts.front(); t < starts.back(); t += every_ns) {
    while (k + 1 < starts.size() - 1 && starts[k + 1] <= t) ++k;
    const double end_k = static_cast<double>(starts[k]) + run.pairs.ms[k] * 1e6;
    const double rest = std::max(0.0, end_k - static_cast<double>(t));
    out.push_back(rest / 1e6 + run.pairs.ms[k + 1]);
  }
  return out;
}

std::string floor_figures(const floor_run& run, const latencies& waits, std::int64_t every_ns) {
  const auto& floor = run.pairs;
  std::ostringstream out;
  out.precision(3);
  const double p99 = quantile(floor.ms, 0.99);
  const auto arrivals = arrival_floor(run, every_ns);
  const double arrival_p99 = quantile(arrivals, 0.99);
  const double waits_p99 = quantile(waits.ms, 0.99);
  out << std::fixed << "\"floor_samples\":" << floor.ms.size() << ",\"floor_p50_ms\":" << quantile(floor.ms, 0.5)
      << ",\"floor_p99_ms\":" << p99 << ",\"floor_max_ms\":" << quantile(floor.ms, 1.0)
      << ",\"p99_over_floor\":" << (p99 > 0 ? waits_p99 / p99 : 0.0)
      << ",\"floor_arrival_p50_ms\":" << quantile(arrivals, 0.5) << ",\"floor_arrival_p99_ms\":" << arrival_p99
      << ",\"p99_over_arrival_floor\":" << (arrival_p99 > 0 ? waits_p99 / arrival_p99 : 0.0);
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
  int status = tool::exit_usage;
  auto a = tool::args::parse_command(argv, {{"db", "fifo", "threads"}, {}}, "dix-bench ryw-reader", usage("ryw-reader"),
                                     status);
  if (!a) return status;
  std::string problem;
  auto threads = a->number("threads", 8, 1, 64, problem);
  if (!threads || !a->has("db") || !a->has("fifo")) {
    return tool::refuse("dix-bench ryw-reader", (problem.empty() ? "--db and --fifo are required" : problem));
  }
  return reader_child(a->get("db"), a->get("fifo"), static_cast<unsigned>(*threads));
}

int run_ryw(const std::vector<std::string>& argv) {
  int status = tool::exit_usage;
  auto a = tool::args::parse_command(argv, {{"rate", "seconds", "dir", "json", "every", "turn-transactions"}, {}}, "dix bench ryw",
                                     usage("ryw"), status);
  if (!a) return status;
  std::string problem;
  json_report report;
  auto rate = a->number("rate", 10'000, 1, 1'000'000, problem);
  auto seconds = rate ? a->number("seconds", 10, 1, 3600, problem) : std::nullopt;
  auto every = seconds ? a->number("every", 10, 1, 1'000'000, problem) : std::nullopt;
  runner_options ro;
  auto turn = every ? a->number("turn-transactions", ro.max_transactions_per_turn, 1, 1'000'000, problem) : std::nullopt;
  if (!rate || !seconds || !every || !turn || !check_scratch_base(*a, problem) || !report.open(*a, problem)) {
    return tool::refuse("dix bench ryw", problem);
  }
  try {
    scratch_dir dir(a->get("dir"));
    const auto home = dir.path() / "primary";
    auto store = primary_store::open(home, bench_store_options()).value();
    store->create_table(table).value();
    auto rt = runtime::create({store}).value();
    ro.max_transactions_per_turn = static_cast<std::uint32_t>(*turn);
    register_ready(*rt, store->log_name(), table, index_id, dir.path() / "index", nullptr, ro, std::chrono::seconds(60));

    const auto fifo = dir.path() / "samples.fifo";
    if (::mkfifo(fifo.c_str(), 0600) != 0) throw std::runtime_error("io_error: mkfifo " + fifo.string());
    auto self = tool::sibling_executable("dix-bench", problem);
    if (!self) throw std::runtime_error(problem);
    auto child =
        cli::child_process::spawn({self->string(), "ryw-reader", "--db", home.string(), "--fifo", fifo.string()}).value();
    std::FILE* to_child = std::fopen(fifo.c_str(), "w");  // blocks until the child opened it
    if (!to_child) throw std::runtime_error("io_error: cannot open " + fifo.string());
    // The child's answers are read as they come (a full pipe would stall its readers).
    latencies other;
    const auto last_answer = clock_type::now() + std::chrono::seconds(*seconds) + wait_timeout + std::chrono::seconds(5);
    bool child_done = false;
    std::thread drain([&] { child_done = child.wait_line("done", last_answer).has_value(); });

    local_reader local(*rt);
    writer_options wo;
    wo.rate = *rate;
    wo.table = table;
    wo.prefix = "r";
    wo.on_commit = [&, n = std::uint64_t{0}](std::uint64_t, const commit_info& c, clock_type::time_point) mutable {
      if (++n % *every != 0) return;
      sample s{c.time, now_ns()};
      local.add(s);
      std::fprintf(to_child, "%llu %lld\n", static_cast<unsigned long long>(s.since),
                   static_cast<long long>(s.committed_ns));
      std::fflush(to_child);
    };
    paced_writer writer(*store, std::move(wo));
    const auto start = clock_type::now();
    writer.start();
    std::this_thread::sleep_for(std::chrono::seconds(*seconds));
    writer_result written;
    std::string writer_failure;  // rethrown once the reader threads are joined
    try {
      written = writer.stop();
    } catch (const std::exception& e) {
      writer_failure = e.what();
    }
    const double elapsed = seconds_since(start);
    std::fclose(to_child);  // the child reads to the end, answers and says done
    auto in_process = local.finish();
    drain.join();
    if (!writer_failure.empty()) throw std::runtime_error(writer_failure);
    for (const auto& line : child.lines()) {
      if (line.rfind("ms ", 0) == 0) {
        other.ms.push_back(std::stod(line.substr(3)));
      } else if (line != "done" && other.failures++ == 0) {
        other.first_failure = line;
      }
    }
    if (!child_done && other.failures++ == 0) other.first_failure = "the reader process did not finish";
    child.reap(0);
    rt->stop().get().value();
    rt.reset();
    store.reset();
    // The floor's own phase, as long as the waits', with the stores closed.
    const auto floor = durable_floor(dir.path(), std::chrono::seconds(*seconds), floor_append_bytes);

    std::ostringstream out;
    out << "{\"bench\":\"ryw\"," << build_fields() << ",\"configured_rate\":" << *rate << ",\"seconds\":" << *seconds
        << ",\"rate\":" << static_cast<std::uint64_t>(static_cast<double>(written.waits_us.size()) / elapsed)
        << ",\"max_flush_age_ms\":" << ro.max_flush_age.count() << ",\"max_transactions_per_turn\":" << *turn
        << ",\"commit_p99_us\":" << quantile(written.waits_us, 0.99) << "," << figures(in_process)
        << ",\"other_process\":{" << figures(other) << "}," << floor_figures(floor, in_process, 1'000'000'000 / static_cast<std::int64_t>(*rate)) << "}\n";
    if (!report.write(out.str(), problem)) throw std::runtime_error(problem);
    if (in_process.failures + other.failures > 0) {
      throw std::runtime_error("waits failed: " + in_process.first_failure + " " + other.first_failure);
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dix bench ryw: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace dix::bench
