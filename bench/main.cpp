// `dix-bench <name> …`, run by `dix bench <name> …`: dispatches to one benchmark.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "bench.hpp"
#include "tool/args.hpp"

namespace dix::bench {
namespace {

struct entry {
  const char* name;
  const char* text;  // the synopsis after the name, then the description
};

constexpr entry benchmarks[] = {
    {"wal", R"([--records N] [--rounds R] [--dir DIR] [--json FILE]
         Commit and WAL-tailing throughput of dix beside raw RocksDB, and commits sent as
         commit_transaction messages beside blocking ones (Release builds only).
)"},
    {"catchup", R"([--records N] [--dir DIR] [--json FILE] [--timeout S] [--turn-ms MS] [--chunk-records N]
         [--actor-threads T] [--scheduler sharing|stealing] [--memory-mb M] [--no-digest]
         Time for a new RocksDB index to catch up with a backlog of N records, beside two raw
         RocksDB ingests of the same entries in child processes (RocksDB's defaults; the
         backend's own options in dix's batch sizes); peak RSS of each; memory budget M MiB.
         --no-digest: the index keeps no digest (formats.md §7), to measure what it costs.
)"},
    {"rebuild", R"([--records N] [--dir DIR] [--json FILE] [--timeout S] [--writer-rate R] [--writer-ms MS]
         Time for a new RocksDB index to be built over an N-record store and become ready,
         beside a plain scan writing the same entries with the index's own RocksDB options (a
         child process); a writer's p99 commit wait at R transactions/s (default 2000) alone
         and during a rebuild; peak RSS.
)"},
    {"verify", R"([--records N] [--dir DIR] [--json FILE] [--timeout S] [--pairs P]
         dix verify of a RocksDB index over an N-record store at full rate, beside a bare scan of
         the same table in the same sitting, P pairs alternating (default 3): each pair's rates,
         their medians and the median ratio (verify records/s over scan records/s).
)"},
    {"failover", R"([--kills N] [--rate R] [--interval-ms MS] [--dir DIR] [--json FILE]
         [--write-buffer-kib K] [--max-wal-kib W] [--flush-age-ms MS] [--scheduler sharing|stealing]
         [--indexes ID[,ID...]]
         An owner and a standby `dix serve`; SIGKILLs the owner N times (default 50) and times kill →
         the standby's `ready` of every index it serves (--indexes: some of by-category, by-brand,
         fulltext, similar; default all four), p50/p99/max, per index and per phase.
)"},
    {"ryw", R"([--rate R] [--seconds S] [--every N] [--turn-transactions T] [--dir DIR] [--json FILE]
         Read-your-writes latency: a writer commits R transactions/s (default 10 000) for S
         seconds (default 10) into a table a RocksDB index projects; every Nth commit (default
         10) a reader waits for coverage of it, in this process (runtime::wait_for_coverage) and
         in another (the free wait_for_coverage on the shared segment): commit → resolved
         p50/p99/max. Then, for S seconds more, the floor: a 4 KiB append + fdatasync to a
         file and the same to a second file, timed together, in DIR (p50/p99/max, p99 ratio),
         and as a commit arriving at a random moment meets it: the pair in progress, then one
         more (floor_arrival_p50/p99_ms, p99_over_arrival_floor).
         T: the index's max_transactions_per_turn (default 256, the option's default).
)"},
    {"sustained", R"([--seconds S] [--slow-us US] [--max-lag-ms MS] [--flush-age-ms F] [--floor-commits N]
         [--indexes K] [--rate R] [--dir DIR] [--json FILE] [--plot FILE.png]
         Over S seconds (default 20, at least 3): the unpaced writer's commits/s alone; with K
         RocksDB indexes registered (default 3, at most 16; max_flush_age F ms, default 250), the
         rate stepped up while their lag stays under 1 s, and the process's CPU per commit in both
         (cpu_bound_ratio: what the usable cores allow at the second's CPU per commit, against the
         first's rate); the first index alone at the commit rate the K reached, and cost_growth,
         the CPU per commit with K indexes over that with one; then
         unpaced against one more index slowed by US µs per record delivered (default 100) and
         gated with max_lag MS (default 1000): the longest write outage beside max_write_delay,
         throttled and refused commits, the lag series. --plot draws lag and commits/s over time
         with gnuplot when it is installed. Last, the floor: the same writer and K indexes'
         least work in raw RocksDB over N commits (default 200000; 0 skips it), per commit, and
         the ratio no implementation of this design reaches past on these cores (floor.bound_ratio).
         Beside each CPU figure, RocksDB's background threads' part (flushes, compactions), and
         floor.foreground_over_floor, the ratio without it on either side.
         --rate R: the K indexes' step is one step paced at R commits/s instead of the steps
         (fixed_rate in the JSON): CPU per commit at one operating point, to compare two builds;
         with_indexes_tps and ratio are then that step's, not a sustained maximum.
)"},
    {"fulltext", R"([--records N] [--dir DIR] [--json FILE] [--timeout S]
         Time for a new Xapian full-text index to catch up with a backlog of N product-like
         records (default 200 000), beside Xapian alone indexing the same documents in this
         process with the same stemming and commit cadence.
)"},
    {"vector", R"([--records N] [--dimension D] [--queries Q] [--ef EF] [--dir DIR] [--json FILE] [--timeout S]
         Time for a new hnsw index to catch up with N records of D-dimensional vectors (default
         100 000 of 128), beside hnswlib alone inserting the same vectors (same M and
         ef_construction); recall@10 of both against brute force over Q queries (default 200),
         searched with EF (default 64).
)"},
    {"remote", R"([--records N] [--tls] [--dir DIR] [--json FILE] [--timeout S]
         Catch-up of N records (default 1 000 000) through a RocksDB index in a `dix serve-backend`
         child on 127.0.0.1 (--tls: mutual TLS over a throw-away PKI), beside the same index in
         process, in the same run: records/s of both and their ratio, the link's round trips
         (p50/p99), the host's and this owner's peak RSS.
)"},
};

constexpr const char* rules = R"(
Each prints its JSON report on stdout and, with --json FILE, into FILE (created before the run:
a FILE that cannot be created is a bad argument). Options take two dashes, each at most once,
never an empty value.

exit status: 0 success, 1 error, 2 bad arguments
)";

std::string all_usage() {
  std::string out = "usage: dix bench <name> [options]\n\nbenchmarks:\n";
  for (const auto& b : benchmarks) {
    std::string name = b.name;
    out += "  " + name + std::string(name.size() < 9 ? 9 - name.size() : 1, ' ') + b.text;
  }
  return out + rules;
}

// The benchmarks' names in the order of the table, ", " between them: the unknown-name refusal
// lists them from the same table as the usage.
std::string known_names() {
  std::string out;
  for (const auto& b : benchmarks) out += (out.empty() ? "" : ", ") + std::string(b.name);
  return out;
}

}  // namespace

// Not a benchmark of its own: the child process `catchup` runs for each of its baselines.
constexpr const char* catchup_baseline_usage = R"(usage: dix-bench catchup-baseline --kind plain|tuned --dir DIR [--records N]
         [--batch-records B] [--memory-mb M]
         One baseline of `dix bench catchup` (its child process): writes N records' index entries
         into a fresh database at DIR and prints {"records_per_s":R,"peak_rss_mb":M}.
)";

constexpr const char* ryw_reader_usage = R"(usage: dix-bench ryw-reader --db DIR --fifo FILE [--threads T]
         The other-process reader of `dix bench ryw` (its child process): reads "since
         committed_ns" lines from FILE, waits for each with the free wait_for_coverage over the
         store DIR's segment on T threads (default 8), prints "ms M" per sample, then "done".
)";

std::string usage(std::string_view name) {
  if (name == "catchup-baseline") return catchup_baseline_usage;
  if (name == "ryw-reader") return ryw_reader_usage;
  auto b = std::find_if(std::begin(benchmarks), std::end(benchmarks), [&](const entry& e) { return name == e.name; });
  if (b == std::end(benchmarks)) return all_usage();
  return "usage: dix bench " + std::string(name) + " " + b->text + rules;
}

}  // namespace dix::bench

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << dix::bench::usage("");
    return dix::tool::exit_usage;
  }
  // --help (or -h) wherever it comes before a benchmark's name (a benchmark's own parser takes
  // it after one).
  if (args[0] == "help" || (args[0].rfind("-", 0) == 0 && std::any_of(args.begin(), args.end(), [](const std::string& a) {
                              return a == "--help" || a == "-h";
                            }))) {
    std::cout << dix::bench::usage("");
    return dix::tool::exit_ok;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  // The scratch directories (--dir) are made and removed with std::filesystem; a path the system
  // refuses (too long, a symlink loop, no permission) is one line and exit 1, never an abort.
  try {
    if (args[0] == "wal") return dix::bench::run_wal(rest);
    if (args[0] == "catchup") return dix::bench::run_catchup(rest);
    if (args[0] == "catchup-baseline") return dix::bench::run_catchup_baseline(rest);
    if (args[0] == "failover") return dix::bench::run_failover(rest);
    if (args[0] == "rebuild") return dix::bench::run_rebuild(rest);
    // The baseline of `rebuild`, in a process of its own; not listed in the usage.
    if (args[0] == "rebuild-baseline") return dix::bench::run_rebuild_baseline(rest);
    if (args[0] == "verify") return dix::bench::run_verify(rest);
    if (args[0] == "ryw") return dix::bench::run_ryw(rest);
    if (args[0] == "ryw-reader") return dix::bench::run_ryw_reader(rest);  // not listed either
    if (args[0] == "sustained") return dix::bench::run_sustained(rest);
    if (args[0] == "fulltext") return dix::bench::run_fulltext(rest);
    if (args[0] == "vector") return dix::bench::run_vector(rest);
    if (args[0] == "remote") return dix::bench::run_remote(rest);
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "dix bench " << args[0] << ": io_error: " << e.what() << "\n";
    return 1;  // as the dix commands exit on a failed operation
  }
  return dix::tool::refuse("dix bench", "unknown benchmark \"" + args[0] + "\" (known: " + dix::bench::known_names() + ")");
}
