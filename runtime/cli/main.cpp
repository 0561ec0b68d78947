// `dix`: the command-line entry point. Subcommands live in runtime/cli/cmd_*.cpp.
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"

namespace {

constexpr const char* usage = R"(usage: dix <command> [options]

commands:
  demo   [--dir DIR] [--records N] [--rate R] [--seed S] [--timeout SECONDS]
         The main job: writes N product records (updates and deletes mixed in) into DIR/primary
         at R per second while two secondary indexes (by category, by brand) follow the WAL;
         shows progress, runs sample queries, verifies the indexes against the primary store.
         Defaults: DIR ./dix-demo, N 20000, R 10000. Run it again to resume.
  wal    --db PATH [--log NAME] [--from SEQ [--time NS] [--identity ID]] [--limit N] [--json]
         Print a primary store's log name, identity, latest sequence, WAL retention, then its
         transactions from SEQ (default: sequence 1). Never writes to the store.
         Exit 3 when the log cannot serve SEQ (log-retention, log-corrupt, log-missing).
  write  --db PATH [--log NAME] [--records N] [--per-txn K] [--seed S] [--sync]
         Create or extend a primary store with a realistic product catalogue: N record writes
         (puts, updates and deletes) in transactions of K operations.
  status --db PATH [--json] [--watch [--updates N]]
         The readiness of every backend id (state, reason, attempts, epoch) from the database's
         readiness segment; never opens the store. No lag: only a runtime knows it. --watch
         reprints on change (futex wakeups) until SIGINT/SIGTERM. Exit 3 on a segment of another
         layout. `dix status --help` for more.
  rebuild --db PATH ID
         Asks the owner of index ID for a rebuild through the readiness segment, from any
         process; never opens the store. Until rebuild exists the owner condemns the index
         (`needs-rebuild`, reason `rebuild-requested`). Exit 1 when ID has no slot.
  serve  --dir DIR [--standby] [--rate R] [--seed S] [--write-buffer-kib K] [--max-wal-kib W]
         [--flush-age-ms MS] [--scheduler sharing|stealing] [--timing]
         One process of a failover pair: owns DIR/primary (--standby: waits without polling until
         the owning process is gone, then takes the store over, WAL recovery included, while the
         index databases recover on threads of their own), runs the
         demo's two indexes, writes R catalogue operations per second (default 1000) and prints
         each readiness change (`by-category ready epoch=N`). Runs until SIGINT/SIGTERM (a clean
         stop) or SIGKILL. Memtables of K KiB (default 4096) and W KiB of live WAL (default 8192)
         bound what a takeover replays. Exit 1 at once if another process holds the store and
         --standby is not given.
  bench  wal [--records N] [--rounds R] [--dir DIR] [--json FILE]
         Commit and WAL-tailing throughput of dix beside raw RocksDB (Release builds only).
  bench  catchup [--records N] [--dir DIR] [--json FILE] [--timeout S] [--turn-ms MS] [--chunk-records N]
         [--actor-threads T] [--scheduler sharing|stealing]
         Time for a new RocksDB index to catch up with a backlog of N records, beside a raw
         RocksDB ingest of the same entries; peak RSS.
  bench  failover [--kills N] [--rate R] [--interval-ms MS] [--dir DIR] [--json FILE]
         [--write-buffer-kib K] [--max-wal-kib W] [--flush-age-ms MS] [--scheduler sharing|stealing]
         An owner and a standby `dix serve`; SIGKILLs the owner N times (default 50) and times kill →
         the standby's `ready` (p50/p99/max and per phase).
  help   This text.

exit status: 0 success, 1 error, 2 bad arguments, 3 log cannot serve the request (wal) or
readiness segment of another layout (status)
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::cout << usage;
    return args.empty() ? dix::cli::exit_usage : dix::cli::exit_ok;
  }
  auto command = args[0];
  args.erase(args.begin());
  if (command == "wal") return dix::cli::run_wal(args);
  if (command == "write") return dix::cli::run_write(args);
  if (command == "demo") return dix::cli::run_demo(args);
  if (command == "status") return dix::cli::run_status(args);
  if (command == "rebuild") return dix::cli::run_rebuild(args);
  if (command == "serve") return dix::cli::run_serve(args);
  if (command == "bench") return dix::cli::run_bench(args);
  std::cerr << "dix: unknown command \"" << command << "\"\n" << usage;
  return dix::cli::exit_usage;
}
