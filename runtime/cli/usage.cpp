#include "usage.hpp"

#include <algorithm>
#include <iterator>

namespace dix::cli {
namespace {

struct entry {
  const char* name;
  // The synopsis after the command's name, then the description, indented to the column the
  // command list uses.
  const char* text;
};

constexpr entry commands[] = {
    {"demo", R"([--dir DIR] [--records N] [--rate R] [--seed S] [--timeout SECONDS] [--indexes all|secondary]
         [--remote [--tls]]
         The main job: writes N catalogue operations (new products, updates and deletes) into DIR/primary
         at R per second while four indexes follow the WAL: two secondary ones (by category, by
         brand), a full-text one (Xapian) and a vector one (hnsw); --indexes secondary runs
         the first two alone. Shows progress; midway it asks for a rebuild of by-brand and shows
         the scan that rebuilds it; reads its last write back, runs sample queries and searches
         that wait for that write, verifies every index against the primary store.
         Defaults: DIR ./dix-demo, N 20000, R 10000, SECONDS 120. Run it again to resume.
         --remote: by-category, fulltext and similar live on index nodes, three `dix serve-backend`
         children on ephemeral loopback ports (DIR/nodes); midway the by-category node is
         SIGKILLed and restarted; queries run on the nodes; each node's index is verified from
         its files once it stopped. --tls: over mutual TLS, with a throw-away CA and certificates
         the openssl command makes in DIR/pki.
)"},
    {"wal", R"(--db PATH [--log NAME] [--from SEQ [--time NS]] [--identity ID] [--limit N] [--json]
         Print a primary store's log name, identity, latest sequence, WAL retention, then its
         transactions from SEQ (default: sequence 1; none beyond the latest sequence). SEQ must
         start a transaction (exit 2 otherwise, naming the one holding it). Never writes to the
         store. Exit 3 when the log cannot serve SEQ (log-retention, log-corrupt, log-missing).
)"},
    {"write", R"(--db PATH [--log NAME] [--records N] [--per-txn K] [--seed S] [--sync]
         Create or extend a primary store with a realistic product catalogue: N record writes
         (puts, updates and deletes) in transactions of K operations; --sync syncs each commit.
         Defaults: NAME main, N 10000 (1…10^9), K 10 (1…100000), S 1. A refused commit (a full
         disk) says how far it got: the sequence of the last transaction committed.
)"},
    {"status", R"(--db PATH [--json | --prometheus] [--watch [--updates N]]
         The readiness of every backend id (state, reason, attempts, epoch) from the database's
         readiness segment, and from its metrics segment a rebuilding index's progress (records,
         percent, rate, ETA) and the owner's lag figures: an activity line for each index that is
         not idle (following, catching up with rate and ETA, or stalled and why), the writer gate,
         retention and free space; never opens the store. --prometheus prints the same figures in
         the Prometheus text format. --watch reprints on change (futex wakeups) until
         SIGINT/SIGTERM. Exit 3 on a segment of another layout. `dix status --help` for more.
)"},
    {"rebuild", R"(--db PATH ID [--wait [--timeout SECONDS]]
         Asks the owner of index ID for a rebuild through the readiness segment, from any
         process; never opens the store. The owner resets the index and rebuilds it from a
         snapshot scan. --wait follows that rebuild until ID is ready again (exit 0): a progress
         bar redrawn on a terminal (records, percent, rate, ETA), plain lines otherwise. Exit 1
         when ID has no slot, and with --wait when no runtime is attached, the rebuild fails
         (needs-rebuild, unavailable: the reason is named) or SECONDS pass.
)"},
    {"verify", R"(--db PATH ID [--rate ENTRIES_PER_S|max] [--limit N] [--report-only] [--json] [--timeout SECONDS]
         Asks the owner of index ID, in whichever process, to prove that the index equals the
         projection of the primary store at a sequence: the owner makes it durable at a fence of
         the log (writers go on), then merges its digest view with a scan of the store at that
         fence, at ENTRIES_PER_S (default: a quarter of the rate its first 65 536 entries were
         read at unpaced; max: as fast as it goes). Prints `verified ID through
         LOG:SEQ: N records` (exit 0), or the records that differ, up to N (default 100; exit 1):
         the index is condemned (needs-rebuild, verify-failed) and rebuilt, unless --report-only.
         Exit 3 when no owner is attached, 4 when nothing could be proven (a rebuild running, not
         ready, a fault, SECONDS passed; default 3600). Never opens the store.
)"},
    {"serve", R"(--dir DIR [--standby] [--rate R] [--seed S] [--write-buffer-kib K] [--max-wal-kib W]
         [--flush-age-ms MS] [--scheduler sharing|stealing] [--indexes ID[,ID...]] [--timing]
         [--metrics-listen ADDR] [--backend-host ID=HOST:PORT[,ID=HOST:PORT...]
         [--tls-cert F --tls-key F --tls-ca F]]
         One process of a failover pair: owns DIR/primary (--standby: waits without polling until
         the owning process is gone, then takes the store over, WAL recovery included, while the
         index databases recover on threads of their own), runs the demo's four indexes
         (by-category, by-brand, fulltext, similar; --indexes names the ones to run), writes R
         catalogue operations per second (default 1000) and prints each readiness change
         (`by-category ready epoch=N`). Runs until SIGINT/SIGTERM (a clean
         stop) or SIGKILL. Memtables of K KiB (default 4096) and W KiB of live WAL (default 8192)
         bound what a takeover replays. Exit 1 at once if another process holds the store and
         --standby is not given. --metrics-listen PORT (127.0.0.1), HOST:PORT or [V6]:PORT
         serves GET /metrics in the Prometheus text format once the runtime runs (every
         runner_metrics figure of its indexes); it prints `serve: metrics on
         http://HOST:PORT/metrics` (PORT 0 picks a free port). A non-loopback HOST is bound as
         given: anyone who reaches it reads the figures. --backend-host registers the named
         indexes (by-category, by-brand, fulltext, similar) as remote backends on index nodes
         (`dix serve-backend --kind rocksdb|xapian|hnsw`), with mutual TLS when the three
         files are given.
)"},
    {"serve-backend", R"(--kind rocksdb|xapian|hnsw --path DIR [--id ID] [--listen HOST:PORT]
         [--tls-cert F --tls-key F --tls-ca F] [--allow-remote-interfaces] [--home-db PATH]
         An index node: serves one backend of the demo's kind over CAF's middleman to the
         owner's remote_backend (<dix/remote.hpp>). The index lives in DIR/index, the highest
         owner epoch seen in DIR/epoch. ID defaults to the demo's (by-category, fulltext,
         similar). The first line on stdout is `dix serve-backend: listening on ADDRESS:PORT`.
         --listen defaults to 127.0.0.1:0 (an ephemeral port); any non-loopback address needs
         --allow-remote-interfaces and all three TLS files (mutual TLS), else exit 2. A plain
         loopback port trusts every local user. Runs until SIGINT/SIGTERM (exit 0). Readers'
         queries (dix query) are admitted by the coverage the owner forwards, or, with
         --home-db (the owner's store on this machine), by that store's readiness segment.
)"},
    {"query", R"(--backend-host HOST:PORT [--id ID] lookup KEY | range BEGIN END | search TEXT |
         knn TEXT [--limit N] [--wait-since T [--timeout MS] | --tolerance MS | --strict]
         [--tls-cert F --tls-key F --tls-ca F] [--json]
         A reader's query on an index node (`dix serve-backend`): lookup and range on a RocksDB
         index, search on Xapian, knn on hnsw (TEXT embedded as the demo's vectors are). The
         node admits it by the coverage its owner forwards: --wait-since T waits (at most
         --timeout, default 30000 ms) until the index covers index time T, a writer's commit
         time (read-your-writes across machines); by default the coverage must be at most
         --tolerance ms old (3000); --strict is always refused there (only the owner's process
         can prove an index current). ID defaults to by-category. One row per line
         (LOG/TABLE/ID version V, and score S for search and knn), then the count and the
         coverage. Exit 1 when the node refuses (index_lagging, unavailable, …) or cannot be
         reached.
)"},
    {"bench", R"(wal|catchup|rebuild|verify|failover|ryw|sustained|fulltext|vector|remote [options]
         The end-to-end benchmarks (Release builds only): commit and WAL tailing, a new index
         catching up with a backlog or rebuilt, failover takeovers, read-your-writes latency,
         sustained write rates with indexes and under the writer gate, a full-text (Xapian) and
         a vector (hnsw) index catching up beside their libraries alone, a remote index
         catching up beside the same index in process. `dix bench --help`
         lists their options.
)"},
};

constexpr const char* arguments = R"(
arguments: options take two dashes (--name VALUE or --name=VALUE), each at most once, never an
empty value; a command takes no other words than its synopsis shows. `dix <command> --help`
prints that command's usage. --db PATH also takes the directory of dix demo or dix serve (their
--dir): the store is then DIR/primary.
)";

constexpr const char* exit_status = R"(
exit status: 0 success, 1 error, 2 bad arguments, 3 log cannot serve the request (wal) or
readiness or metrics segment of another layout (status) or no owner to ask (verify); verify: 1
records differ, 4 nothing proven
)";

}  // namespace

std::string dix_usage() {
  std::string out = "usage: dix <command> [options]\n\ncommands:\n";
  for (const auto& c : commands) {
    std::string name = c.name;
    out += "  " + name + std::string(name.size() < 7 ? 7 - name.size() : 1, ' ') + c.text;
  }
  out += "  help   [COMMAND] This text, or COMMAND's usage (as dix COMMAND --help).\n";
  return out + arguments + exit_status;
}

std::string command_usage(std::string_view command) {
  auto c = std::find_if(std::begin(commands), std::end(commands), [&](const entry& e) { return command == e.name; });
  if (c == std::end(commands)) return dix_usage();
  // Exit 3 belongs to wal, status and verify (issue 34), 4 to verify: the others end with 0, 1 and 2.
  std::string status = "\nexit status: 0 success, 1 error, 2 bad arguments\n";
  if (command == "wal") status = "\nexit status: 0 success, 1 error, 2 bad arguments, 3 the log cannot serve the requested range\n";
  if (command == "status") status = "\nexit status: 0 success, 1 error, 2 bad arguments, 3 a readiness or metrics segment of another layout\n";
  if (command == "verify") {
    status = "\nexit status: 0 proven equal, 1 records differ, 2 bad arguments, 3 no owner to ask, 4 nothing proven\n";
  }
  return "usage: dix " + std::string(command) + " " + c->text + arguments + status;
}

}  // namespace dix::cli
