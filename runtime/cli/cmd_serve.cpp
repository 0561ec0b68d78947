// `dix serve`: one process of a failover pair (protocol.md §9.8). It opens DIR/primary — with
// --standby through primary_store::open_standby, which blocks on the store's LOCK until the
// owning process is gone —, creates the runtime, registers the demo's catalogue indexes, writes
// catalogue operations at --rate from a thread while the indexes follow, and runs until killed
// (SIGINT/SIGTERM: a standby waiting for the store ends at once, exit 0 as a clean stop; any
// other process stops cleanly, once its store is open and its runtime runs).
// It prints one line per readiness change of each index, read from the shared segment through
// its futex, and with --timing the CLOCK_MONOTONIC time of each takeover phase, which
// `dix bench failover` subtracts from the time it sent SIGKILL to the owner.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <chrono>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include <dix/primary_store.hpp>
#include <dix/runtime.hpp>
#include <dix/segment.hpp>

#include "catalogue.hpp"
#include "commands.hpp"
#include "paths.hpp"
#include "metrics_server.hpp"
#include "prom_metrics.hpp"
#include "usage.hpp"
#include "tool/args.hpp"
#include "tool/prometheus.hpp"

namespace dix::cli {
namespace {

// CLOCK_MONOTONIC in ns (libstdc++'s steady_clock): comparable between processes of one boot.
std::int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Wakes the main thread: a signal handler (async-signal-safe write) or a failed writer.
int wake_pipe[2] = {-1, -1};
// 1 while a standby waits for the store (it holds nothing but the probe of LOCK): a stop then
// ends the process at once, with the status of an owner's clean stop.
volatile std::sig_atomic_t standby_waiting = 0;
volatile std::sig_atomic_t stop_requested = 0;

extern "C" void on_stop_signal(int) {
  stop_requested = 1;
  if (standby_waiting) ::_exit(exit_ok);
  char c = 's';
  auto n = ::write(wake_pipe[1], &c, 1);
  (void)n;  // the pipe holds far more than the signals anyone sends
}

class printer {
 public:
  explicit printer(bool timing) : timing_(timing) {}
  // One line, flushed: a pipe (a test, the bench) sees each line as it happens. Any thread.
  void line(const std::string& text) const {
    std::lock_guard g(mutex_);
    std::cout << text << std::endl;
  }
  // "phase NAME t_ns=…" with --timing only.
  void phase(const std::string& name) const {
    if (timing_) line("phase " + name + " t_ns=" + std::to_string(monotonic_ns()));
  }
  bool timing() const { return timing_; }

 private:
  bool timing_;
  mutable std::mutex mutex_;
};

// Prints each index's readiness whenever it changes (segment futex), and with --timing the
// first durable advance after each `ready` (metrics, read every millisecond until it moves:
// a measurement aid, off without --timing).
// The store's refusal of a commit below its free-space reserve (decision 0013: io_error, its
// message naming the reserve), which a writer waits out; not any other io_error.
bool is_space_refusal(const error& e) {
  return e.value() == errc::io_error && e.message().find("free-space reserve") != std::string::npos;
}

void watch_readiness(const printer& out, runtime& rt, const segment_reader& segment, const std::vector<std::string>& ids,
                     const std::atomic<bool>& stop) {
  struct seen {
    std::optional<readiness> last;
    std::optional<std::uint64_t> durable_at_ready;  // awaiting the first advance past it
  };
  std::vector<seen> state(ids.size());
  auto durable = [&](const std::string& id) -> std::uint64_t {
    auto m = rt.metrics(id);
    return m && !m->logs.empty() ? m->logs[0].durable_sequence : 0;
  };
  while (!stop.load()) {
    auto counter = segment.change_counter();
    auto table = segment.read();
    bool awaiting_advance = false;
    for (std::size_t i = 0; table && i < ids.size(); ++i) {
      auto& s = state[i];
      const auto& id = ids[i];
      auto entry = std::find_if(table->entries.begin(), table->entries.end(),
                                [&](const readiness_entry& e) { return e.id == id; });
      if (entry == table->entries.end()) continue;
      const auto& r = entry->readiness;
      if (!s.last || r.state != s.last->state || r.reason != s.last->reason || r.owner_epoch != s.last->owner_epoch) {
        s.last = r;
        std::string text = id + " " + std::string(to_string(r.state)) + " epoch=" + std::to_string(r.owner_epoch);
        if (r.reason != readiness_reason::none) text += " reason=" + std::string(to_string(r.reason));
        if (out.timing()) text += " t_ns=" + std::to_string(monotonic_ns());
        out.line(text);
        s.durable_at_ready.reset();
        if (r.state == readiness_state::ready && out.timing()) s.durable_at_ready = durable(id);
      }
      if (s.durable_at_ready) {
        auto now = durable(id);
        if (now > *s.durable_at_ready) {
          out.line(id + " durable seq=" + std::to_string(now) + " t_ns=" + std::to_string(monotonic_ns()));
          s.durable_at_ready.reset();
        } else {
          awaiting_advance = true;
        }
      }
    }
    // The 250 ms bound only lets a clean stop end this thread; changes wake it at once.
    segment.wait_change(counter, std::chrono::milliseconds(awaiting_advance ? 1 : 250));
  }
}

}  // namespace

// The indexes this process serves itself, made before the store is ours (nothing opened yet).
struct local_indexes {
  std::vector<catalogue_index> secondary;
  catalogue_search search;

  static result<local_indexes> make(const std::filesystem::path& dir, const std::set<std::string>& leave_out) {
    auto secondary = make_catalogue_indexes(dir, leave_out);
    if (!secondary) return secondary.error();
    auto search = make_catalogue_search(dir, leave_out);
    if (!search) return search.error();
    return local_indexes{std::move(*secondary), std::move(*search)};
  }
};

// Opens the catalogue's indexes early, one thread each: the RocksDB index databases
// (rocksdb_index_backend::open(), each replays its WAL) and the vector index's graph
// (hnsw_backend::open(), the whole saved graph read and checked). The full-text index opens its
// database at its first batch either way.
class early_opens {
 public:
  explicit early_opens(const printer& out) : out_(out) {}
  ~early_opens() { join(); }
  early_opens(const early_opens&) = delete;
  early_opens& operator=(const early_opens&) = delete;

  // Starts one open per index unless they were started already.
  void start(const local_indexes& indexes) {
    if (started()) return;
    for (const auto& ix : indexes.secondary) {
      threads_.emplace_back([this, id = ix.id, backend = ix.backend] { report(id, backend->open()); });
    }
    if (indexes.search.similar) {
      threads_.emplace_back([this, backend = indexes.search.similar] { report(similar_id, backend->open()); });
    }
  }
  bool started() const noexcept { return !threads_.empty(); }
  // Waits for every open started; start() may then open again.
  void join() {
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void report(const std::string& id, const result<void>& opened) const {
    if (opened) {
      out_.phase("index-open " + id);
    } else {
      out_.line("serve: early open of " + id + " failed (retried at acquisition): " + opened.error().to_string());
    }
  }

  const printer& out_;
  std::vector<std::thread> threads_;
};

int run_serve(const std::vector<std::string>& argv) {
  int parse_status = exit_usage;
  auto a = tool::args::parse_command(
      argv, {{"dir", "rate", "seed", "write-buffer-kib", "max-wal-kib", "flush-age-ms", "scheduler", "indexes",
              "metrics-listen", "backend-host", "tls-cert", "tls-key", "tls-ca"},
             {"standby", "timing"}},
      "dix serve", command_usage("serve"), parse_status);
  if (!a) return parse_status;
  std::string problem;
  if (!a->has("dir")) problem = "--dir DIR is required";
  auto rate = problem.empty() ? a->number("rate", 1000, 0, 10'000'000, problem) : std::nullopt;
  auto seed = rate ? a->number("seed", 1, 0, UINT64_MAX, problem) : std::nullopt;
  auto buffer_kib = seed ? a->number("write-buffer-kib", 4096, 64, 64ull << 20, problem) : std::nullopt;
  auto wal_kib = buffer_kib ? a->number("max-wal-kib", 8192, 64, 1ull << 30, problem) : std::nullopt;
  const runner_options defaults;
  auto flush_age = wal_kib ? a->number("flush-age-ms", static_cast<std::uint64_t>(defaults.max_flush_age.count()), 1,
                                       600'000, problem)
                           : std::nullopt;
  auto scheduler = flush_age ? a->choice("scheduler", {"sharing", "stealing"}, 0, problem) : std::nullopt;
  // The indexes this process serves (all four by default; `dix bench failover --indexes` times a
  // takeover of fewer).
  auto served = scheduler ? a->subset("indexes", catalogue_ids(), problem) : std::nullopt;
  std::optional<listen_address> listen;
  if (problem.empty() && served && a->has("metrics-listen")) {
    auto parsed = parse_listen_address(a->get("metrics-listen"));
    if (parsed) listen = *parsed;
    else problem = "--metrics-listen: " + parsed.error().message();
  }
  // Indexes on index nodes (issue 28): registered as remote backends instead of local ones.
  std::map<std::string, listen_address> nodes;
  if (problem.empty() && served && a->has("backend-host")) {
    auto parsed = parse_backend_hosts(a->get("backend-host"));
    if (parsed) nodes = std::move(*parsed);
    else problem = "--backend-host: " + parsed.error().message();
  }
  for (const auto& [id, at] : nodes) {
    if (problem.empty() && std::find(served->begin(), served->end(), id) == served->end()) {
      problem = "--backend-host names " + id + ", which --indexes leaves out";
    }
  }
  remote_tls tls{a->get("tls-cert"), a->get("tls-key"), a->get("tls-ca")};
  if (problem.empty() && tls.any() && !a->has("backend-host")) problem = "--tls-cert, --tls-key and --tls-ca need --backend-host";
  if (problem.empty() && tls.any() && !tls.complete()) problem = "give all three of --tls-cert, --tls-key and --tls-ca, or none";
  if (!problem.empty() || !served) {
    return tool::refuse("dix serve", problem);
  }
  // Not opened here: the indexes on index nodes and those --indexes leaves out.
  std::set<std::string> not_local;
  for (const auto& [id, at] : nodes) not_local.insert(id);
  for (const auto& id : catalogue_ids()) {
    if (std::find(served->begin(), served->end(), id) == served->end()) not_local.insert(id);
  }
  // SIGINT/SIGTERM from here on: a waiting standby ends at once; otherwise the stop is carried
  // out cleanly once the store is open and the runtime runs (the main thread reads the pipe).
  // SA_RESTART: a signal taken by any thread while RocksDB and CAF start does not fail their calls.
  if (::pipe2(wake_pipe, O_CLOEXEC) != 0) {
    std::cerr << "dix serve: pipe: " << std::strerror(errno) << "\n";
    return exit_error;
  }
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  const std::filesystem::path dir = a->get("dir");
  const auto path = dir / "primary";
  // A typo must not grow a tree: only DIR itself may be new (decision 0035).
  if (auto wrong = new_directory_problem(dir)) return tool::refuse("dix serve", "--dir " + dir.string() + ": " + *wrong);
  if (auto wrong = layout_directory_problem(dir)) return tool::refuse("dix serve", "--dir " + dir.string() + " " + *wrong);
  if (auto made = make_directory(dir); !made) {
    std::cerr << "dix serve: " << made.error().to_string() << "\n";
    return exit_error;
  }
  const printer out(a->has("timing"));
  out.phase("start");

  // The index backends exist before the store is ours: once it is granted, each index database
  // (and the vector index's graph) opens on a thread of its own, so their recoveries overlap the
  // store's (the runner would otherwise open them one step later, at acquisition). A failed early
  // open is only late: the acquisition opens it again.
  auto indexes = local_indexes::make(dir, not_local);
  if (!indexes) {
    std::cerr << "dix serve: " << indexes.error().to_string() << "\n";
    return exit_error;
  }
  early_opens opens(out);
  std::string replace_error;

  store_options so;
  so.log_name = "main";
  so.write_buffer_size = *buffer_kib << 10;
  so.max_total_wal_size = *wal_kib << 10;
  const bool standby = a->has("standby");
  std::uint64_t waits = 0;
  standby_events events;
  // The store is not ours after a grant (another process won it, or its open was refused): close
  // what we opened early, replacing the backends by unopened ones. Else a winner could not open
  // its index databases, and the vector graph loaded here would be stale once another owner
  // committed (hnsw_backend::open() is an owner's open).
  auto let_go_early_opens = [&] {
    if (!opens.started()) return;
    opens.join();
    *indexes = {};
    auto fresh = local_indexes::make(dir, not_local);
    if (fresh) {
      *indexes = std::move(*fresh);
    } else {
      replace_error = fresh.error().to_string();
    }
  };
  events.waiting = [&] {
    let_go_early_opens();
    ++waits;
    // What the early opens held is closed: from here a stop may end the process at once.
    standby_waiting = 1;
    if (stop_requested) ::_exit(exit_ok);
    out.line("serve: standby, waiting for " + path.string());
    out.phase("waiting");
  };
  events.granted = [&] {
    standby_waiting = 0;
    out.phase("granted");
    if (replace_error.empty()) opens.start(*indexes);
  };
  // What the runtime's attach would refuse is refused before the store is opened read-write
  // (issue 34): a refusal then leaves the store as it was.
  if (auto ok = check_attachable(path); !ok) {
    std::cerr << "dix serve: " << ok.error().to_string() << "\n";
    return exit_error;
  }
  auto store = standby ? primary_store::open_standby(path, so, events) : primary_store::open(path, so);
  // A standby that got the store but cannot open it for want of space (its open is refused
  // below half the reserve) waits and tries again every second, as a writer does at the reserve
  // (issue 34: it exited, leaving nobody to serve the indexes).
  for (bool said = false; standby && !store && is_space_refusal(store.error()) && !stop_requested;) {
    if (!said) out.line("serve: standby: the store cannot be opened yet, retrying every second: " + store.error().to_string());
    said = true;
    // The store's lock is released meanwhile: another process may own it and its indexes.
    let_go_early_opens();
    for (int i = 0; i < 10 && !stop_requested; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    store = primary_store::open_standby(path, so, events);
  }
  if (standby && !store && stop_requested) return exit_ok;
  if (!store && !standby && held_by_another_process(store.error())) {
    std::cerr << "dix serve: " << store.error().to_string() << "; --standby waits for it\n";
    return exit_error;
  }
  if (standby && store) out.line("serve: took over " + path.string() + " after " + std::to_string(waits) + " wait(s)");
  if (!store) {
    std::cerr << "dix serve: " << store.error().to_string() << "\n";
    return exit_error;
  }
  if (!replace_error.empty()) {
    std::cerr << "dix serve: " << replace_error << "\n";
    return exit_error;
  }
  out.phase("store");
  opens.start(*indexes);  // an owner, or a standby that found the store free: open them now
  if (auto ok = (*store)->create_table(products_table); !ok) {
    std::cerr << "dix serve: " << ok.error().to_string() << "\n";
    return exit_error;
  }
  system_options sys;
  sys.scheduler = static_cast<actor_scheduler>(*scheduler);
  auto rt = runtime::create({*store}, {}, sys);
  if (!rt) {
    std::cerr << "dix serve: " << rt.error().to_string() << "\n";
    return exit_error;
  }
  out.phase("runtime");
  runner_options ro;
  ro.max_flush_age = std::chrono::milliseconds(*flush_age);
  if (auto registered = register_catalogue_indexes(**rt, indexes->secondary, ro); !registered) {
    std::cerr << "dix serve: " << registered.error().to_string() << "\n";
    return exit_error;
  }
  // The demo's search indexes too (issue 34: serve ran two of its four): full text (Xapian) and
  // vectors (hnsw).
  if (auto registered = register_catalogue_search(**rt, indexes->search, ro); !registered) {
    std::cerr << "dix serve: " << registered.error().to_string() << "\n";
    return exit_error;
  }
  std::vector<std::shared_ptr<remote_backend>> remotes;
  for (const auto& [id, at] : nodes) {
    remote_backend_options o;
    o.id = id;
    o.kind = node_kind_of(id)->backend;
    o.host = at.host;
    o.port = at.port;
    o.tls = tls;
    auto remote = remote_backend::create(o);
    if (!remote) {
      std::cerr << "dix serve: " << id << ": " << remote.error().to_string() << "\n";
      return exit_error;
    }
    if (auto ok = register_catalogue_remote(**rt, id, *remote, ro); !ok) {
      std::cerr << "dix serve: " << ok.error().to_string() << "\n";
      return exit_error;
    }
    out.line("serve: " + id + " on the index node " + at.host + ":" + std::to_string(at.port));
    remotes.push_back(std::move(*remote));
  }
  const std::vector<std::string>& ids = *served;
  out.phase("registered");
  auto segment = segment_reader::open(path);
  if (!segment || !*segment) {
    std::cerr << "dix serve: cannot map the readiness segment of " << path.string() << ": "
              << (segment ? std::string("missing") : segment.error().to_string()) << "\n";
    return exit_error;
  }
  // The owner's full figures for a scraper, rendered at each request from the runtime's own
  // status and metrics (decision 0021), with the read rates it published in the metrics
  // segment, which runner_metrics lacks; the server stops before the runtime does.
  std::unique_ptr<metrics_server> scrape;
  if (listen) {
    const segment_reader& published = **segment;
    auto started = metrics_server::start(*listen, [&rt, &ids, &published, ro] {
      tool::metrics_text text;
      auto table = published.read();
      for (const auto& id : ids) {
        auto status = (*rt)->status(id);
        auto metrics = (*rt)->metrics(id);
        const readiness_entry* entry = nullptr;
        if (table) {
          for (const auto& e : table->entries) {
            if (e.id == id) entry = &e;
          }
        }
        if (status && metrics) add_runner_metrics(text, id, *status, *metrics, ro, entry);
      }
      return text.str();
    });
    if (!started) {
      std::cerr << "dix serve: " << started.error().message() << "\n";
      return exit_error;
    }
    scrape = std::move(*started);
    const auto& host = scrape->host();
    out.line("serve: metrics on http://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
             std::to_string(scrape->port()) + "/metrics");
  }

  std::atomic<bool> stop{false};
  std::thread watcher([&] { watch_readiness(out, **rt, **segment, ids, stop); });
  opens.join();  // after the watcher has its baseline; no early open outlives the runtime
  auto existing = highest_id(**store);
  std::string writer_error;
  std::thread writer;
  if (!existing) {
    writer_error = existing.error().to_string();
  } else {
    out.line("serve: owner of " + path.string() + " (" + std::to_string(*existing) + " products), writing " +
             (*rate == 0 ? std::string("at full speed") : std::to_string(*rate) + "/s"));
    writer = std::thread([&] {
      writer_progress progress;
      auto from = *existing;
      bool waiting = false;
      for (;;) {
        const auto before = progress.written.load();
        auto done = write_catalogue(**store, *seed, from, UINT64_MAX, *rate, stop, progress);
        if (done || stop.load()) break;
        if (progress.written.load() != before) waiting = false;  // it wrote since: a new shortage
        // The store's free-space reserve refuses commits (decision 0013): the owner goes on
        // serving its indexes, which catch up meanwhile, and the writer tries again every second
        // (issue 34: ending the owner there left nobody serving). Any other failure ends serve.
        if (!is_space_refusal(done.error())) {
          writer_error = done.error().to_string();
          char c = 'w';
          auto n = ::write(wake_pipe[1], &c, 1);
          (void)n;
          break;
        }
        if (!waiting) out.line("serve: the writer waits for free space, the indexes are still served: " + done.error().to_string());
        waiting = true;
        for (int i = 0; i < 10 && !stop.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (auto now = highest_id(**store); now) from = *now;
      }
    });
  }
  if (writer_error.empty()) {
    char c = 0;
    while (::read(wake_pipe[0], &c, 1) < 0 && errno == EINTR) {
    }
  }
  stop = true;
  if (writer.joinable()) writer.join();
  watcher.join();
  scrape.reset();  // no request reads the runtime after this
  int status = exit_ok;
  if (!writer_error.empty()) {
    std::cerr << "dix serve: the writer failed: " << writer_error << "\n";
    status = exit_error;
  }
  if (auto stopped = (*rt)->stop().get(); !stopped) {
    std::cerr << "dix serve: stop: " << stopped.error().to_string() << "\n";
    status = exit_error;
  }
  rt->reset();
  *indexes = {};
  if (auto ok = (*store)->close(); !ok) {
    std::cerr << "dix serve: closing the store: " << ok.error().to_string() << "\n";
    status = exit_error;
  }
  out.line("serve: stopped");
  return status;
}

}  // namespace dix::cli
