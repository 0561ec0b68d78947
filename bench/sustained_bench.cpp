// `dix bench sustained`: what the writer sustains with indexes in step. One store, one run, three
// phases, each with the unpaced paced_writer (one thread, one put per transaction):
//  (a) alone: no runtime, a table nobody projects;
//  (b) with --indexes N RocksDB indexes (default three; their defaults, no writer gate) registered
//      on a runtime and projecting the table written; sampled every 100 ms: commits/s and each
//      index's lag_ms; then, all but the first unregistered, the first alone at the pace N
//      sustained: cost_growth is the CPU per commit with N over that with one (issue 32 item 4);
//  (c) overload: one more RocksDB index on a table of its own, slowed by a real sleep of
//      --slow-us per record delivered (so it indexes at most 10⁶/slow-us records/s, below what
//      the writer commits) and gated (max_lag --max-lag-ms): the writer gate throttles commits
//      (a wait of up to max_write_delay) and refuses them (index_lagging) at max_lag; the writer
//      retries a refusal after max_write_delay. The longest interval between two consecutive
//      successful commits is the write outage to compare with max_write_delay. Over (c)'s last
//      half: the commit rate's coefficient of variation (of its 100 ms samples) and the slow
//      index's lag range, which show whether the gate settles the writer or swings it (issue 32
//      item 2), and the rate the slow index indexed at over (c).
// --plot draws the samples (lag per index, commits/s) with gnuplot.
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/primary_store.hpp>
#include <dix/runtime.hpp>

#include "bench.hpp"
#include "harness/child_process.hpp"
#include "live_index.hpp"
#include "paced_writer.hpp"
#include "pipeline_floor.hpp"
#include "report.hpp"
#include "tool/args.hpp"

namespace dix::bench {
namespace {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::uint32_t indexed_table = 1;  // phase (b)
constexpr std::uint32_t plain_table = 2;    // phase (a), never projected
constexpr std::uint32_t slow_table = 3;     // phase (c)
constexpr std::size_t max_indexes = 16;  // --indexes
constexpr std::uint64_t steps = 5;          // phase (b): paced at k/steps of phase (a)'s rate, then unpaced
constexpr std::uint64_t refine_steps = 2;   // phase (b): after a broken bound, halfway steps
constexpr double lag_bound_ms = 1000;       // phase (b)'s bound on every index's lag
// The first step starts on idle indexes, whose lag_ms (protocol.md §13.1) jumps to about the
// idle time with the first commits and falls only with the first flush, which at a low rate is
// the age flush (max_flush_age): the first step runs this much longer, uncounted.
constexpr milliseconds first_step_warmup = runner_options{}.max_flush_age + milliseconds(500);
constexpr std::uint32_t gate_exceeded = 0xFFFFFFFF;  // activity.hpp: lag_gate when refusing

// A RocksDB index that takes `slow_us` of real time per record delivered before passing the
// batch on: a backend slower than the writer. Everything else is the real backend's.
class slow_backend final : public backend {
 public:
  slow_backend(std::shared_ptr<backend> inner, std::uint64_t slow_us) : inner_(std::move(inner)), slow_us_(slow_us) {}
  const std::string& id() const noexcept override { return inner_->id(); }
  std::string_view kind() const noexcept override { return inner_->kind(); }
  void attach(backend_host& host) override { inner_->attach(host); }
  result<std::optional<cursor>> durable_cursor() override { return inner_->durable_cursor(); }
  delivery_result deliver(std::shared_ptr<const batch> b) override {
    std::this_thread::sleep_for(std::chrono::microseconds(slow_us_ * b->records.size()));
    return inner_->deliver(std::move(b));
  }
  void flush(flush_reason reason, completion done) override { inner_->flush(reason, std::move(done)); }
  void shutdown(epoch_t epoch, completion done) override { inner_->shutdown(epoch, std::move(done)); }
  subscription on_state_change(std::function<void(state_change)> callback) override {
    return inner_->on_state_change(std::move(callback));
  }
  bool supports_reset() const noexcept override { return inner_->supports_reset(); }
  void reset(epoch_t epoch, completion done) override { inner_->reset(epoch, std::move(done)); }
  milliseconds min_barrier_interval() const noexcept override { return inner_->min_barrier_interval(); }
  void publish_coverage(const positions& p, index_time_t coverage_time, epoch_t epoch) noexcept override {
    inner_->publish_coverage(p, coverage_time, epoch);
  }

 private:
  std::shared_ptr<backend> inner_;
  std::uint64_t slow_us_;
};

// protocol.md §13.1: lag_ms is the largest of these; which one says why an index fell behind
// (unread: the reader did not reach the end of the log since the age began; cursor: read but not
// durable; oldest accepted: delivered, not durable; stalled: deferred or waiting for a barrier).
struct lag_parts {
  std::uint64_t unread_age_ms = 0, cursor_lag_ms = 0, oldest_accepted_age_ms = 0, stalled_ms = 0;
};

std::string lag_parts_json(const lag_parts& l) {
  std::ostringstream out;
  out << "{\"unread_age_ms\":" << l.unread_age_ms << ",\"cursor_lag_ms\":" << l.cursor_lag_ms
      << ",\"oldest_accepted_age_ms\":" << l.oldest_accepted_age_ms << ",\"stalled_ms\":" << l.stalled_ms << "}";
  return out.str();
}

constexpr std::array<double, max_indexes> no_lags() {
  std::array<double, max_indexes> out{};
  for (auto& l : out) l = NAN;
  return out;
}

struct point {
  double t_ms = 0;
  char phase = 'a';
  double commits_per_s = 0;
  std::array<double, max_indexes> lag_ms = no_lags();  // NAN: no such index in this phase
  bool throttled = false, exceeded = false;               // the gate (phase c)
};

// Samples every 100 ms, from its own thread, the writer's commits and the lag of `ids` on `rt`.
class sampler {
 public:
  // Samples before `counted_from` go into the series but not into max_lag_ms().
  sampler(clock_type::time_point origin, char phase, const paced_writer& writer, runtime* rt,
          std::vector<std::string> ids, std::vector<point>& out, clock_type::time_point counted_from)
      : origin_(origin), phase_(phase), writer_(writer), rt_(rt), ids_(std::move(ids)), out_(out),
        counted_from_(counted_from), thread_([this] { run(); }) {}
  ~sampler() { stop(); }
  void stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
  }
  double max_lag_ms() const { return max_lag_ms_; }
  // The lag components (protocol.md §13.1) of the counted sample with the largest lag_ms.
  const lag_parts& worst() const { return worst_; }
  // Commits made while the last sample showed the gate throttling.
  std::uint64_t throttled_commits() const { return throttled_commits_; }

 private:
  void run() {
    auto last_commits = writer_.commits();
    auto last = clock_type::now();
    auto next = last;
    while (!stopping_) {
      next += milliseconds(100);
      std::this_thread::sleep_until(next);
      const auto now = clock_type::now();
      const auto commits = writer_.commits();
      point p;
      p.t_ms = std::chrono::duration<double, std::milli>(now - origin_).count();
      p.phase = phase_;
      p.commits_per_s = static_cast<double>(commits - last_commits) / std::chrono::duration<double>(now - last).count();
      if (throttling_) throttled_commits_ += commits - last_commits;
      throttling_ = false;
      for (std::size_t i = 0; rt_ && i < ids_.size(); ++i) {
        auto m = rt_->metrics(ids_[i]);
        if (!m) continue;
        p.lag_ms[i] = static_cast<double>(m->lag_ms);
        if (now >= counted_from_ && p.lag_ms[i] > max_lag_ms_) {
          max_lag_ms_ = p.lag_ms[i];
          worst_ = lag_parts{m->unread_age_ms, m->cursor_lag_ms, m->oldest_accepted_age_ms, m->stalled_ms};
        }
        p.exceeded = p.exceeded || m->lag_gate == gate_exceeded;
        p.throttled = p.throttled || (m->lag_gate != 0 && m->lag_gate != gate_exceeded);
      }
      throttling_ = p.throttled;
      out_.push_back(p);
      last_commits = commits;
      last = now;
    }
  }

  clock_type::time_point origin_;
  char phase_;
  const paced_writer& writer_;
  runtime* rt_;
  std::vector<std::string> ids_;
  std::vector<point>& out_;
  clock_type::time_point counted_from_;
  std::atomic<bool> stopping_{false};
  double max_lag_ms_ = 0;
  lag_parts worst_;
  bool throttling_ = false;
  std::uint64_t throttled_commits_ = 0;
  std::thread thread_;
};

// The CPUs this process may run on.
unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
}

struct phase_result {
  double tps = 0;
  double cpu_us_per_commit = 0;  // the process's CPU over the phase per commit made in it
  // Of that, RocksDB's background threads' (memtable flushes, compactions of every database)
  double background_cpu_us_per_commit = 0;
  double max_lag_ms = 0;
  lag_parts worst;  // the components of max_lag_ms
  std::uint64_t throttled = 0;
  writer_result written;
};

// Runs a writer for `length`, sampled; lag samples in its first `warmup` do not count.
phase_result run_phase(primary_store& store, writer_options wo, milliseconds length, clock_type::time_point origin,
                       char phase, runtime* rt, std::vector<std::string> ids, std::vector<point>& series,
                       milliseconds warmup = milliseconds(0)) {
  paced_writer writer(store, std::move(wo));
  const auto start = clock_type::now();
  const auto cpu_start = process_cpu_us();
  const auto background_start = threads_cpu_us("rocksdb:");
  writer.start();
  sampler s(origin, phase, writer, rt, std::move(ids), series, start + warmup);
  std::this_thread::sleep_for(length);
  phase_result out;
  s.stop();  // first: no sample sees the stopped writer
  out.written = writer.stop();
  out.tps = static_cast<double>(out.written.waits_us.size()) / seconds_since(start);
  const auto commits = static_cast<double>(std::max<std::size_t>(out.written.waits_us.size(), 1));
  out.cpu_us_per_commit = (process_cpu_us() - cpu_start) / commits;
  out.background_cpu_us_per_commit = (threads_cpu_us("rocksdb:") - background_start) / commits;
  out.max_lag_ms = s.max_lag_ms();
  out.worst = s.worst();
  out.throttled = s.throttled_commits();
  return out;
}

// Waits (up to 10 s) until every index of `ids` shows a lag under 100 ms: a fresh registration's
// lag counts from before it was ready, which is not what a step measures.
void settle(runtime& rt, const std::vector<std::string>& ids) {
  for (auto deadline = clock_type::now() + std::chrono::seconds(10); clock_type::now() < deadline;) {
    bool settled = true;
    for (const auto& id : ids) {
      auto m = rt.metrics(id);
      settled = settled && m && m->lag_ms < 100;
    }
    if (settled) return;
    std::this_thread::sleep_for(milliseconds(10));
  }
  std::cerr << "dix bench sustained: the indexes' lag did not settle under 100 ms within 10 s\n";
}

std::string number_or_null(double v) {
  if (std::isnan(v)) return "null";
  std::ostringstream out;
  out << v;
  return out.str();
}

// Over the last half of phase (c)'s samples: how steady the commit rate was (its coefficient of
// variation, standard deviation over mean, of the 100 ms rates) and the slow index's lag range
// (issue 32 item 2: a gate that converges holds both steady; a bang-bang swings both).
struct convergence {
  std::size_t samples = 0;
  double mean_tps = 0, cv = 0, lag_min_ms = 0, lag_max_ms = 0;
};

convergence last_half(const std::vector<point>& series, char phase) {
  std::vector<const point*> in;
  for (const auto& p : series) {
    if (p.phase == phase) in.push_back(&p);
  }
  convergence out;
  if (in.size() < 2) return out;
  const auto from = in.size() / 2;
  out.samples = in.size() - from;
  double sum = 0, squares = 0;
  out.lag_min_ms = INFINITY;
  out.lag_max_ms = 0;
  for (auto i = from; i < in.size(); ++i) {
    sum += in[i]->commits_per_s;
    squares += in[i]->commits_per_s * in[i]->commits_per_s;
    if (!std::isnan(in[i]->lag_ms[0])) {
      out.lag_min_ms = std::min(out.lag_min_ms, in[i]->lag_ms[0]);
      out.lag_max_ms = std::max(out.lag_max_ms, in[i]->lag_ms[0]);
    }
  }
  const auto n = static_cast<double>(out.samples);
  out.mean_tps = sum / n;
  const double variance = std::max(0.0, squares / n - out.mean_tps * out.mean_tps);
  out.cv = out.mean_tps > 0 ? std::sqrt(variance) / out.mean_tps : 0;
  if (std::isinf(out.lag_min_ms)) out.lag_min_ms = 0;
  return out;
}

std::string series_json(const std::vector<point>& series, std::size_t index_count) {
  std::ostringstream out;
  out << "[";
  for (std::size_t i = 0; i < series.size(); ++i) {
    const auto& p = series[i];
    out << (i ? "," : "") << "{\"time_ms\":" << static_cast<std::uint64_t>(p.t_ms) << ",\"phase\":\"" << p.phase
        << "\",\"commits_per_s\":" << static_cast<std::uint64_t>(p.commits_per_s) << ",\"lag_ms\":[";
    for (std::size_t j = 0; j < index_count; ++j) out << (j ? "," : "") << number_or_null(p.lag_ms[j]);
    out << "],\"gate\":\"" << (p.exceeded ? "exceeded" : p.throttled ? "throttled" : "open") << "\"}";
  }
  return out.str() + "]";
}

// Writes the samples and a gnuplot script beside `png`, runs gnuplot; one line when it cannot.
// `budget_ms` is the slow index's gate budget B (operations.md, "The writer gate").
void plot(const std::vector<point>& series, const std::string& png, std::uint64_t budget_ms, std::size_t index_count) {
  const std::string data = png + ".dat", script = png + ".gp";
  {
    std::ofstream d(data);
    d << "# time_s commits_per_s lag_ms_1 … lag_ms_" << index_count << " (phase c: lag_ms_1 is the slow index)\n";
    for (std::size_t i = 0; i < series.size(); ++i) {
      const auto& p = series[i];
      if (i > 0 && p.t_ms - series[i - 1].t_ms > 300) d << "\n";  // a new phase: no line across the gap
      d << p.t_ms / 1000 << " " << p.commits_per_s;
      for (std::size_t j = 0; j < index_count; ++j) {
        const auto l = p.lag_ms[j];
        d << " " << (std::isnan(l) ? std::string("NaN") : std::to_string(l));
      }
      d << "\n";
    }
  }
  {
    std::ofstream g(script);
    g << "set terminal pngcairo size 1200,700 noenhanced\nset output '" << png << "'\n"
      << "set title 'dix bench sustained: (a) writer alone, (b) " << index_count
      << " indexes, (c) overload, one slow gated index'\n"
      << "set xlabel 'time (s)'\nset ylabel 'lag (ms)'\nset y2label 'commits/s'\nset ytics nomirror\nset y2tics\n"
      << "set yrange [0:*]\nset logscale y2\nset y2range [1:*]\nset key outside bottom center horizontal\nset grid\n"
      << "set datafile missing 'NaN'\n"
      << "plot '" << data << "' using 1:2 axes x1y2 with lines lw 2 title 'commits/s (right, log scale; 0 not drawn)', "
      << "'' using 1:3 with lines title 'lag index 1 / slow index (ms)', ";
    for (std::size_t j = 2; j <= index_count; ++j) {
      g << "'' using 1:" << j + 2 << " with lines title 'lag index " << j << " (ms)', ";
    }
    g << budget_ms / 2 << " with lines dt 2 title 'slow index: H = B/2, the throttle starts', " << budget_ms
      << " with lines dt 3 title 'slow index: B, refusals'\n";
  }
  auto gnuplot = std::filesystem::path("/usr/bin/gnuplot");
  if (!std::filesystem::exists(gnuplot)) {
    std::cerr << "dix bench sustained: no plot: gnuplot is not installed (apt-get install gnuplot-nox); data in " << data << "\n";
    return;
  }
  auto child = cli::child_process::spawn({gnuplot.string(), script}).value();
  const int status = child.reap(0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::cerr << "dix bench sustained: no plot: gnuplot failed on " << script << "\n";
  }
}

}  // namespace

int run_sustained(const std::vector<std::string>& argv) {
  int status = tool::exit_usage;
  auto a = tool::args::parse_command(argv, {{"seconds", "slow-us", "max-lag-ms", "flush-age-ms", "floor-commits", "indexes", "rate", "dir", "json", "plot"}, {}},
                                     "dix bench sustained", usage("sustained"), status);
  if (!a) return status;
  std::string problem;
  json_report report;
  auto seconds = a->number("seconds", 20, 3, 3600, problem);
  auto slow_us = seconds ? a->number("slow-us", 100, 1, 100'000, problem) : std::nullopt;
  auto max_lag = slow_us ? a->number("max-lag-ms", 1000, 10, 60'000, problem) : std::nullopt;
  // Phase (b)'s indexes flush at least this often: a lag bound of 1 s means little beside the
  // default max_flush_age of 1 s, which alone lets a steadily fed index's lag reach 1 s.
  auto flush_age = max_lag ? a->number("flush-age-ms", 250, 10, 60'000, problem) : std::nullopt;
  // The raw-RocksDB floor's commits (pipeline_floor.hpp); 0 skips it.
  auto floor_commits = flush_age ? a->number("floor-commits", 200'000, 0, 10'000'000, problem) : std::nullopt;
  auto indexes = floor_commits ? a->number("indexes", 3, 1, max_indexes, problem) : std::nullopt;
  // (b) at one fixed pace instead of the steps; 0: the steps.
  auto fixed_rate = indexes ? a->number("rate", 0, 0, 10'000'000, problem) : std::nullopt;
  if (!seconds || !slow_us || !max_lag || !flush_age || !floor_commits || !indexes || !fixed_rate ||
      !check_scratch_base(*a, problem) ||
      !report.open(*a, problem)) {
    return tool::refuse("dix bench sustained", problem);
  }
  try {
    scratch_dir dir(a->get("dir"));
    auto store = primary_store::open(dir.path() / "primary", bench_store_options()).value();
    for (auto t : {indexed_table, plain_table, slow_table}) store->create_table(t).value();
    const auto total = milliseconds(*seconds * 1000);
    const auto origin = clock_type::now();
    std::vector<point> series;

    // (a) The writer alone.
    auto alone = run_phase(*store, {0, plain_table, "a", {}, {}}, total / 4, origin, 'a', nullptr, {}, series);
    std::cerr << "alone: " << alone.tps << " commits/s\n";

    const auto index_count = static_cast<std::size_t>(*indexes);
    // (b) N indexes in step.
    runtime_options ro;
    auto rt = runtime::create({store}, ro).value();
    std::vector<std::string> ids;
    std::vector<registration_handle> handles;
    runner_options in_step = ro.runner;
    in_step.max_flush_age = milliseconds(*flush_age);
    for (std::size_t i = 0; i < index_count; ++i) {
      ids.push_back("index-" + std::to_string(i + 1));
      handles.push_back(register_ready(*rt, store->log_name(), indexed_table, ids.back(), dir.path() / ids.back(), nullptr,
                                       in_step, std::chrono::seconds(60)));
    }
    settle(*rt, ids);
    // Stepped up: paced at a fifth, two fifths … of the lone writer's rate, then unpaced, each
    // step as long; the highest step whose lag stayed under 1 s is the sustained rate. A broken
    // bound is then narrowed: `refine_steps` more steps, each paced halfway between the best
    // pace kept and the lowest that broke, once the indexes settled again (fifths alone report
    // 0.2 for a pipeline that keeps up with 0.39).
    phase_result with;
    std::uint64_t with_paced_at = 0;  // the pace of `with`
    double broke_at_tps = 0, broke_lag_ms = 0;
    lag_parts broke_parts;
    std::uint64_t broke_paced_at = 0;  // the pace of the step that broke the bound; 0: unpaced
    const auto note_broken = [&](const phase_result& r, std::uint64_t paced_at) {
      broke_at_tps = r.tps;
      broke_lag_ms = r.max_lag_ms;
      broke_parts = r.worst;
      broke_paced_at = paced_at;
    };
    const auto step = total * 2 / 5 / steps;
    if (*fixed_rate > 0) {
      // One step as long as all of them, paced at --rate: CPU per commit at a rate chosen, not
      // found, so that two builds compare at the same operating point (the steps' result moves
      // with each run's lag search: a pipeline that keeps up unpaced is measured at saturation).
      with = run_phase(*store, {*fixed_rate, indexed_table, "b1-", {}, {}}, total * 2 / 5 + first_step_warmup, origin, 'b',
                       rt.get(), ids, series, first_step_warmup);
      with_paced_at = *fixed_rate;
      std::cerr << "with " << index_count << " indexes, paced at " << *fixed_rate << "/s: " << with.tps
                << " commits/s, max lag " << with.max_lag_ms << " ms\n";
      if (with.max_lag_ms >= lag_bound_ms) {
        note_broken(with, *fixed_rate);
      }
    }
    for (std::uint64_t k = 1; k <= steps && *fixed_rate == 0; ++k) {
      const auto rate = k == steps ? 0 : static_cast<std::uint64_t>(alone.tps * static_cast<double>(k) / steps);
      const auto warmup = k == 1 ? first_step_warmup : milliseconds(0);
      auto r = run_phase(*store, {rate, indexed_table, "b" + std::to_string(k) + "-", {}, {}}, step + warmup, origin,
                         'b', rt.get(), ids, series, warmup);
      std::cerr << "with " << index_count << " indexes, step " << k << ": " << r.tps << " commits/s, max lag "
                << r.max_lag_ms << " ms\n";
      if (r.max_lag_ms >= lag_bound_ms) {
        note_broken(r, rate);
        break;
      }
      with = std::move(r);
      with_paced_at = rate;
    }
    std::uint64_t refined = 0;
    if (broke_at_tps > 0 && *fixed_rate == 0) {
      // An unpaced step that broke: its achieved rate is the bound above.
      auto high = broke_paced_at != 0 ? broke_paced_at : static_cast<std::uint64_t>(broke_at_tps);
      for (std::uint64_t j = 0; j < refine_steps && high > with_paced_at + 1; ++j) {
        settle(*rt, ids);
        const auto rate = (with_paced_at + high) / 2;
        auto r = run_phase(*store, {rate, indexed_table, "b" + std::to_string(steps + 1 + j) + "-", {}, {}}, step,
                           origin, 'b', rt.get(), ids, series);
        ++refined;
        std::cerr << "with " << index_count << " indexes, refined step at " << rate << "/s: " << r.tps
                  << " commits/s, max lag " << r.max_lag_ms << " ms\n";
        if (r.max_lag_ms >= lag_bound_ms) {
          high = rate;
          note_broken(r, rate);
        } else {
          if (r.tps > with.tps) with = std::move(r);
          with_paced_at = rate;
        }
      }
    }

    // What (b)'s pipelines did: the mean batch (the floor below delivers batches as large).
    double delivered_batches = 0, delivered_records = 0, wal_syncs = 0;
    for (const auto& id : ids) {
      auto m = rt->metrics(id).value();
      delivered_batches += static_cast<double>(m.delivered_batches);
      delivered_records += static_cast<double>(m.delivered_records);
      wal_syncs += static_cast<double>(m.wal_syncs);
    }
    const double records_per_batch = delivered_batches > 0 ? delivered_records / delivered_batches : 1;

    // (b) again with the first index alone, paced at the commit rate the N reached at their
    // sustained step: the CPU per commit of one index's pipeline at the same commit rate.
    phase_result one = with;
    if (index_count > 1) {
      for (std::size_t i = 1; i < index_count; ++i) handles[i].unregister().get().value();
      settle(*rt, {ids[0]});
      const auto pace = std::max<std::uint64_t>(static_cast<std::uint64_t>(with.tps), 1);
      // Its own record ids (step k writes "b<k>-…"): inserts, as the steps made.
      one = run_phase(*store, {pace, indexed_table, "one-", {}, {}}, step, origin, 'b', rt.get(), {ids[0]}, series);
      std::cerr << "with 1 index at " << pace << "/s: " << one.tps << " commits/s, " << one.cpu_us_per_commit
                << " us/commit\n";
    }
    const double cost_growth = one.cpu_us_per_commit > 0 ? with.cpu_us_per_commit / one.cpu_us_per_commit : 0;

    // (c) Overload: an unthrottled writer, one slow index under the writer gate.
    rocksdb_index_options io;
    io.path = dir.path() / "slow";
    auto slow = std::make_shared<slow_backend>(rocksdb_index_backend::create("slow", io).value(), *slow_us);
    runner_options gated = ro.runner;
    gated.max_lag = milliseconds(*max_lag);
    register_ready(*rt, store->log_name(), slow_table, "slow", {}, slow, gated, std::chrono::seconds(60));
    settle(*rt, {"slow"});
    const auto slow_before = rt->metrics("slow").value().delivered_records;
    const auto over_start = clock_type::now();
    auto over = run_phase(*store, {0, slow_table, "c", ro.max_write_delay, {}}, total - total / 4 - total * 2 / 5,
                          origin, 'c', rt.get(), {"slow"}, series);
    // What the slow index indexed over (c): the pace a converging gate settles the writer near.
    const double slow_records_per_s =
        static_cast<double>(rt->metrics("slow").value().delivered_records - slow_before) / seconds_since(over_start);
    const auto settled = last_half(series, 'c');
    std::cerr << "overload: " << over.tps << " commits/s, longest outage " << over.written.longest_gap_ms << " ms, "
              << over.written.refused << " refused; last half: " << settled.mean_tps << " commits/s, cv " << settled.cv
              << ", slow index lag " << settled.lag_min_ms << "-" << settled.lag_max_ms << " ms, it indexed "
              << slow_records_per_s << " records/s\n";
    rt->stop().get().value();
    rt.reset();
    // The floor: the same work in raw RocksDB, nothing else running (pipeline_floor.hpp).
    const auto cores = usable_cores();
    pipeline_floor floor;
    if (*floor_commits > 0) {
      floor = measure_pipeline_floor(dir.path(), *floor_commits, index_count,
                                     static_cast<std::size_t>(std::max(1.0, std::round(records_per_batch))), cores);
      std::cerr << "floor: writer " << floor.writer_cpu_us << " us/commit, " << index_count << " indexes "
                << floor.indexes_cpu_us << " us/commit, bound ratio " << floor.bound_ratio << "\n";
    }
    const auto budget = std::max<std::uint64_t>(*max_lag, 2 * static_cast<std::uint64_t>(gated.max_flush_age.count()));

    // What the cores allow: every core busy with (b)'s work per commit, against (a)'s rate.
    const double cpu_bound_ratio =
        with.cpu_us_per_commit > 0 && alone.tps > 0
            ? std::min(1.0, static_cast<double>(cores) * 1e6 / with.cpu_us_per_commit / alone.tps)
            : 0.0;
    // Both without RocksDB's background threads: the floor's commits may never fill a memtable,
    // while (b) flushes and compacts every database it writes (diagnostic, beside the ratio).
    const double with_foreground = with.cpu_us_per_commit - with.background_cpu_us_per_commit;
    const double floor_foreground = floor.writer_cpu_us + floor.indexes_cpu_us - floor.background_cpu_us;
    std::ostringstream json;
    json << "{\"bench\":\"sustained\"," << build_fields() << ",\"seconds\":" << *seconds
         << ",\"writer_alone_tps\":" << static_cast<std::uint64_t>(alone.tps)
         << ",\"with_indexes_tps\":" << static_cast<std::uint64_t>(with.tps) << ",\"ratio\":" << with.tps / alone.tps
         << ",\"max_lag_ms\":" << with.max_lag_ms << ",\"max_lag_parts\":" << lag_parts_json(with.worst)
         << ",\"indexes\":" << index_count
         << ",\"cores\":" << cores << ",\"alone_cpu_us_per_commit\":" << alone.cpu_us_per_commit
         << ",\"with_indexes_cpu_us_per_commit\":" << with.cpu_us_per_commit
         << ",\"with_indexes_background_cpu_us_per_commit\":" << with.background_cpu_us_per_commit
         << ",\"cpu_bound_ratio\":" << cpu_bound_ratio
         << ",\"indexes_max_flush_age_ms\":" << *flush_age
         << ",\"lag_warmup_ms\":" << first_step_warmup.count() << ",\"lag_bound_broken_at_tps\":" << static_cast<std::uint64_t>(broke_at_tps)
         << ",\"lag_bound_broken_lag_ms\":" << broke_lag_ms
         << ",\"lag_bound_broken_paced_tps\":" << broke_paced_at
         << ",\"lag_bound_broken_parts\":" << lag_parts_json(broke_parts)
         << ",\"with_indexes_paced_tps\":" << with_paced_at << ",\"fixed_rate\":" << *fixed_rate
         << ",\"refined_steps\":" << refined
         << ",\"one_index_tps\":" << static_cast<std::uint64_t>(one.tps)
         << ",\"one_index_cpu_us_per_commit\":" << one.cpu_us_per_commit << ",\"cost_growth\":" << cost_growth
         << ",\"records_per_batch\":" << records_per_batch
         << ",\"wal_syncs_per_batch\":" << (delivered_batches > 0 ? wal_syncs / delivered_batches : 0)
         << ",\"floor\":{\"commits\":" << floor.commits << ",\"batch_records\":"
         << static_cast<std::uint64_t>(std::max(1.0, std::round(records_per_batch)))
         << ",\"writer_cpu_us_per_commit\":" << floor.writer_cpu_us
         << ",\"indexes_cpu_us_per_commit\":" << floor.indexes_cpu_us << ",\"bound_ratio\":" << floor.bound_ratio
         << ",\"with_indexes_over_floor\":"
         << (floor.writer_cpu_us + floor.indexes_cpu_us > 0 ? with.cpu_us_per_commit / (floor.writer_cpu_us + floor.indexes_cpu_us) : 0)
         << ",\"background_cpu_us_per_commit\":" << floor.background_cpu_us
         << ",\"foreground_over_floor\":" << (floor_foreground > 0 ? with_foreground / floor_foreground : 0) << "}"
         << ",\"overload\":{\"slow_us_per_record\":" << *slow_us << ",\"max_lag_ms\":" << *max_lag
         << ",\"gate_budget_ms\":" << budget << ",\"max_write_delay_ms\":" << ro.max_write_delay.count()
         << ",\"tps\":" << static_cast<std::uint64_t>(over.tps)
         << ",\"longest_write_outage_ms\":" << over.written.longest_gap_ms
         << ",\"commit_p99_ms\":" << quantile(over.written.waits_us, 0.99) / 1000
         << ",\"commits\":" << over.written.waits_us.size() << ",\"throttled_commits\":" << over.throttled
         << ",\"refused_commits\":" << over.written.refused << ",\"slow_index_max_lag_ms\":" << over.max_lag_ms
         << ",\"slow_index_records_per_s\":" << slow_records_per_s << ",\"last_half\":{\"samples\":" << settled.samples
         << ",\"tps\":" << settled.mean_tps << ",\"commit_rate_cv\":" << settled.cv
         << ",\"slow_index_lag_min_ms\":" << settled.lag_min_ms << ",\"slow_index_lag_max_ms\":" << settled.lag_max_ms << "}"
         << "},\"series\":" << series_json(series, index_count) << "}\n";
    if (a->has("plot")) plot(series, a->get("plot"), budget, index_count);
    if (!report.write(json.str(), problem)) throw std::runtime_error(problem);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dix bench sustained: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace dix::bench
