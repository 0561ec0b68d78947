// `dix bench failover`: the time a standby process needs to take a store over after the owner
// dies (protocol.md §9.8, behaviour 14). Two `dix serve` processes share one directory: the owner
// runs the store, the catalogue indexes (all four, or those --indexes names) and a writer at
// --rate; the standby blocks on the store's LOCK. Each round lets the owner write for
// --interval-ms, SIGKILLs it while it writes and times kill → `ready` (every index served, under
// larger epochs) as this process sees it through the segment futex; the killed side then comes
// back as the next standby. The standby's `--timing` lines
// split the time into phases (CLOCK_MONOTONIC, the same clock as here): the owner's exit until
// the LOCK probe is granted, the store's DB::Open (WAL recovery) and `clock` write, runtime
// creation, registration, acquisition until `ready`, and the first durable advance after it.
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "bench.hpp"
#include "harness/child_process.hpp"
#include "report.hpp"
#include "tool/args.hpp"
#include "tool/catalogue_ids.hpp"
#include "tool/executable.hpp"

namespace dix::bench {
namespace {

using namespace std::chrono_literals;
using cli::child_process;


std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

std::int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Nearest rank: the smallest value with at least p of the samples at or below it.
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::min(v.size(), std::max<std::size_t>(rank, 1)) - 1];
}

// The value of `key=` in a line ("phase store t_ns=123"), or nullopt.
std::optional<std::int64_t> field(const std::string& line, const std::string& key) {
  auto at = line.find(key + "=");
  if (at == std::string::npos) return std::nullopt;
  return std::stoll(line.substr(at + key.size() + 1));
}

// Bytes of live (not archived) WAL in the store: what DB::Open replays after a crash.
std::uint64_t live_wal_bytes(const std::filesystem::path& db) {
  std::uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(db, ec)) {
    if (e.path().extension() == ".log") total += e.file_size(ec);
  }
  return total;
}

// One takeover, in ms after the SIGKILL (phases from the standby's lines).
struct round {
  double ready_ms = 0;                // this process saw every index ready (futex)
  std::map<std::string, double> at;   // phase → ms after the kill
  double wal_mb = 0;                  // live WAL at the kill
};

class failover_run {
 public:
  failover_run(std::vector<std::string> serve_args, std::filesystem::path dir, std::vector<std::string> ids)
      : serve_(std::move(serve_args)), dir_(std::move(dir)), ids_(std::move(ids)) {}

  child_process start(bool standby) {
    auto argv = serve_;
    if (standby) argv.push_back("--standby");
    auto c = child_process::spawn(argv);
    if (!c) throw std::runtime_error(c.error().to_string());
    auto expect = standby ? "serve: standby, waiting" : "phase registered";
    if (!c->wait_line(expect, std::chrono::steady_clock::now() + 60s)) {
      throw std::runtime_error(std::string("dix serve did not print \"") + expect + "\"");
    }
    return std::move(*c);
  }

  epoch_t wait_ready(epoch_t above) {
    auto e = cli::wait_ready(dir_ / "primary", ids_, above, std::chrono::steady_clock::now() + 30s);
    if (!e) throw std::runtime_error("waiting for ready: " + e.error().to_string());
    return *e;
  }

  // Kills `owner` while it writes, waits for `standby` to publish ready; returns the timings.
  round takeover(child_process& owner, child_process& standby, epoch_t& epoch) {
    round r;
    r.wal_mb = static_cast<double>(live_wal_bytes(dir_ / "primary")) / (1 << 20);
    auto kill_ns = monotonic_ns();
    ::kill(owner.pid(), SIGKILL);
    epoch = wait_ready(epoch);
    r.ready_ms = static_cast<double>(monotonic_ns() - kill_ns) / 1e6;
    owner.reap(0);
    auto deadline = std::chrono::steady_clock::now() + 30s;
    auto note = [&](const std::string& name, const std::string& needle) {
      if (auto line = standby.wait_line(needle, deadline)) {
        if (auto t = field(*line, "t_ns")) r.at[name] = static_cast<double>(*t - kill_ns) / 1e6;
      }
    };
    note("granted", "phase granted");
    note("store", "phase store");
    note("runtime", "phase runtime");
    note("registered", "phase registered");
    // Every index: the latest of its lines counts, and each index's `ready` on its own.
    for (const auto& what : {std::string(" ready epoch="), std::string(" durable seq=")}) {
      for (const auto& id : ids_) {
        const bool ready = what == " ready epoch=";
        if (auto line = standby.wait_line(id + what, deadline)) {
          if (auto t = field(*line, "t_ns")) {
            auto ms = static_cast<double>(*t - kill_ns) / 1e6;
            auto& latest = r.at[ready ? "ready_line" : "durable"];
            latest = std::max(latest, ms);
            if (ready) r.at["ready " + id] = ms;
          }
        }
      }
    }
    return r;
  }

 private:
  std::vector<std::string> serve_;
  std::filesystem::path dir_;
  std::vector<std::string> ids_;
};

// The `dix` executable beside this one: the owner and the standby are `dix serve` processes.
std::string dix_path() {
  std::string problem;
  auto dix = tool::sibling_executable("dix", problem);
  if (!dix) throw std::runtime_error(problem);
  return dix->string();
}

}  // namespace

int run_failover(const std::vector<std::string>& argv) {
  int status = tool::exit_usage;
  auto a = tool::args::parse_command(
      argv,
      {{"kills", "rate", "interval-ms", "dir", "json", "write-buffer-kib", "max-wal-kib", "flush-age-ms", "scheduler",
        "indexes"},
       {"verbose"}},
      "dix bench failover", usage("failover"), status);
  if (!a) return status;
  std::string problem;
  json_report report;
  auto kills = a->number("kills", 50, 1, 100000, problem);
  auto rate = kills ? a->number("rate", 2000, 0, 10'000'000, problem) : std::nullopt;
  auto interval = rate ? a->number("interval-ms", 1000, 0, 3'600'000, problem) : std::nullopt;
  auto buffer_kib = interval ? a->number("write-buffer-kib", 4096, 64, 64ull << 20, problem) : std::nullopt;
  auto wal_kib = buffer_kib ? a->number("max-wal-kib", 8192, 64, 1ull << 30, problem) : std::nullopt;
  auto flush_age = wal_kib ? a->number("flush-age-ms", 1000, 1, 600'000, problem) : std::nullopt;
  auto scheduler = flush_age ? a->choice("scheduler", {"sharing", "stealing"}, 0, problem) : std::nullopt;
  auto ids = scheduler ? a->subset("indexes", tool::catalogue_ids(), problem) : std::nullopt;
  if (!ids || !check_scratch_base(*a, problem) || !report.open(*a, problem)) {
    return tool::refuse("dix bench failover", problem);
  }
  const bool verbose = a->has("verbose");
  try {
    scratch_dir scratch(a->get("dir"));
    const std::vector<std::string> serve{dix_path(),
                                         "serve",
                                         "--dir",
                                         scratch.path().string(),
                                         "--rate",
                                         std::to_string(*rate),
                                         "--write-buffer-kib",
                                         std::to_string(*buffer_kib),
                                         "--max-wal-kib",
                                         std::to_string(*wal_kib),
                                         "--flush-age-ms",
                                         std::to_string(*flush_age),
                                         "--scheduler",
                                         *scheduler == 0 ? "sharing" : "stealing",
                                         "--indexes",
                                         joined(*ids),
                                         "--timing"};
    failover_run run(serve, scratch.path(), *ids);
    auto owner = run.start(false);
    epoch_t epoch = run.wait_ready(0);
    auto standby = run.start(true);
    std::vector<round> rounds;
    for (std::uint64_t k = 0; k < *kills; ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(*interval));  // the owner writes meanwhile
      rounds.push_back(run.takeover(owner, standby, epoch));
      std::cerr << "kill " << (k + 1) << ": ready after " << rounds.back().ready_ms << " ms (epoch " << epoch << ", "
                << rounds.back().wal_mb << " MiB live WAL)\n";
      if (verbose) {
        for (const auto& line : standby.lines()) std::cerr << "  | " << line << "\n";
      }
      owner = std::move(standby);
      standby = run.start(true);  // the killed side comes back as the next standby
    }
    standby.reap(SIGKILL);
    owner.reap(SIGTERM);

    std::vector<double> ready, wal;
    std::map<std::string, std::vector<double>> phase;  // each phase's own duration
    const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> steps{
        {"exit_ms", {"", "granted"}},          {"open_ms", {"granted", "store"}},
        {"runtime_ms", {"store", "runtime"}},  {"register_ms", {"runtime", "registered"}},
        {"acquire_ms", {"registered", "ready_line"}}, {"first_durable_ms", {"", "durable"}}};
    for (const auto& r : rounds) {
      ready.push_back(r.ready_ms);
      wal.push_back(r.wal_mb);
      for (const auto& [name, span] : steps) {
        auto to = r.at.find(span.second);
        auto from = span.first.empty() ? std::optional<double>(0) : std::optional<double>();
        if (!span.first.empty() && r.at.count(span.first) != 0) from = r.at.at(span.first);
        if (to != r.at.end() && from) phase[name].push_back(to->second - *from);
      }
    }
    std::ostringstream json;
    json << "{\"bench\":\"failover\"," << build_fields() << ",\"kills\":" << rounds.size() << ",\"rate\":" << *rate
         << ",\"interval_ms\":" << *interval << ",\"write_buffer_kib\":" << *buffer_kib
         << ",\"max_wal_kib\":" << *wal_kib << ",\"flush_age_ms\":" << *flush_age
         << ",\"scheduler\":\"" << (*scheduler == 0 ? "sharing" : "stealing") << "\""
         << ",\"indexes\":[";
    for (std::size_t i = 0; i < ids->size(); ++i) json << (i == 0 ? "\"" : ",\"") << (*ids)[i] << "\"";
    json << "]"
         << ",\"p50_ms\":" << percentile(ready, 0.5) << ",\"p99_ms\":" << percentile(ready, 0.99)
         << ",\"max_ms\":" << percentile(ready, 1.0) << ",\"live_wal_mib_p50\":" << percentile(wal, 0.5)
         << ",\"live_wal_mib_max\":" << percentile(wal, 1.0) << ",\"phases\":{";
    bool first = true;
    for (const auto& [name, span] : steps) {
      const auto& v = phase[name];
      json << (first ? "" : ",") << "\"" << name << "\":{\"p50\":" << percentile(v, 0.5)
           << ",\"p99\":" << percentile(v, 0.99) << ",\"n\":" << v.size() << "}";
      first = false;
    }
    // Each index's `ready` line after the kill: which one a takeover waits for.
    json << "},\"per_index\":{";
    for (std::size_t i = 0; i < ids->size(); ++i) {
      std::vector<double> v;
      for (const auto& r : rounds) {
        if (auto at = r.at.find("ready " + (*ids)[i]); at != r.at.end()) v.push_back(at->second);
      }
      json << (i == 0 ? "" : ",") << "\"" << (*ids)[i] << "\":{\"ready_p50_ms\":" << percentile(v, 0.5)
           << ",\"ready_p99_ms\":" << percentile(v, 0.99) << ",\"n\":" << v.size() << "}";
    }
    json << "}}\n";
    if (!report.write(json.str(), problem)) {
      std::cerr << "dix bench failover: " << problem << "\n";
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dix bench failover: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace dix::bench
