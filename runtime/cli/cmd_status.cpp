// `dix status`: the readiness of every backend id of a database, read from its shared readiness
// segment (formats.md §4) the way read_readiness reads one id (api.md §7), through
// <dix/segment.hpp>: it maps `<db>/dix/readiness.seg` read-only and tests `attach.lock` with
// F_OFD_GETLK; it never opens the RocksDB store, takes no lock and writes nothing, so it is safe
// beside a running owner.
//
// It runs in a process of its own, which has no runtime: a rebuilding index's progress and the
// owner's lag figures come from the metrics segment beside the readiness segment
// (docs/formats-metrics.md), written by the owner; attribute() (<dix/activity.hpp>) turns them
// into an activity and a stall cause (decision 0021), and --prometheus prints them for a
// scraper. `--watch` sleeps on the header's segment_change_counter futex and reprints when the
// table changed; the wait's timeout (tick_ms) re-checks the stop flag, the attach state and
// whether the segment file was created or replaced, none of which moves the counter, and the
// progress and activity shown, which the owner rewrites a few times a second (and the reader
// ages) without moving it either.
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <dix/activity.hpp>
#include <dix/names.hpp>
#include <dix/primary_store.hpp>
#include <dix/readiness.hpp>
#include <dix/segment.hpp>

#include "commands.hpp"
#include "paths.hpp"
#include "stop_signals.hpp"
#include "prom_metrics.hpp"
#include "tool/args.hpp"
#include "tool/json.hpp"
#include "tool/prometheus.hpp"
#include "wording.hpp"

namespace dix::cli {
namespace {

namespace fs = std::filesystem;
using tool::json_string;

constexpr const char* usage = R"(usage: dix status --db PATH [--json | --prometheus] [--watch [--updates N]]

Print the readiness of every backend id of the database whose home store is PATH: one line per
id, sorted, with state, reason, rebuild attempts and owner epoch (formats.md §4.5 names), and
for each `rebuilding` index whose scan the owner reports, a progress line: records rebuilt of
the estimate, percent, rate and ETA ("progress by-brand: 6144/14000 records (43%), 52000
records/s, ETA 0.2 s"). Reads only PATH/dix/readiness.seg and PATH/dix/metrics.seg (mapped
read-only) and tests PATH/dix/attach.lock without locking it; never opens the RocksDB store, so
it is safe while the owning process runs. Without an attached runtime every id reads `unknown`
with its stored epoch. The owner's lag figures come from the metrics segment too (decision
0021): each index that is not idle gets an activity line in words ("activity by-brand: stalled
(backend-deferred): the backend defers deliveries; parked for 3.0 s"), following the log (behind
by no more than the flush rhythm), or catching up with its rate and ETA; a closed writer gate
and a log's retention forecast get lines of their own. An index whose backend defers deliveries
for want of disk space gets a line saying so, and so does the store when its filesystem is
below (or within twice) the free-space reserve its runtime stored.

  --json         one JSON object per table:
                 {"db","segment","attached","indexes":[{"id","state","reason",
                  "rebuild_attempts","owner_epoch","hold","rebuild_requested"}]}; a rebuilding
                  index with progress also has "rebuilt_records","estimated_records",
                  "scan_records_per_s","rebuild_eta_ms","scan_ended"; an index with the owner's lag figures
                  also has "activity" (idle, following, catching-up, stalled, unknown),
                  "stall_cause" (none, backend-deferred, barrier, accepted-cap,
                  log-unreadable, rebuild, gate, unavailable), "lag_ms", "words",
                  "runner_state","cursor_lag_ms","stalled_ms","unread_age_ms",
                  "oldest_accepted_age_ms","accepted_batches","max_accepted_batches_ahead",
                  "gate" (open, throttled, exceeded),"gate_delay_us","transient_faults",
                  "read_per_s","eta_ms" (when known),"lag_taken_wall_ns","logs":[{"log"
                  (its name),"position" (in attach order),"sequence_lag","read_per_s",
                  "retention_headroom_ms","verified_sequence" (once verified)}],
                  "verifying","verify_failures", and once a verify succeeded
                  "verified_records","verified_age_ms"; once a runtime stored the store's reserve,
                  "store_space":{"available_bytes","capacity_bytes","unflushed_bytes",
                  "reserve_bytes","below_reserve"}
  --prometheus   the same figures in the Prometheus text format (docs/operations.md lists the
                 metric names; labels index and log, log being the log's name, as
                 `dix serve --metrics-listen` labels it)
  --watch        print the table, then again whenever it changes (futex wakeups on the
                 segment's change counter, not polling; a rebuild's progress at most once a
                 second) until SIGINT or SIGTERM; each plain table starts with `at TIME` (UTC,
                 ms) and a blank line ends it
  --updates N    with --watch: exit after N reprints

exit status: 0 success (also: no segment yet), 1 error, 2 bad arguments,
3 the readiness or metrics segment has another layout (the message names the remedy)
)";

// The wall clock now as ISO 8601 UTC with milliseconds: "2026-12-04T23:50:01.123Z".
std::string utc_now_text() {
  const auto now = std::chrono::system_clock::now();
  const auto t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm parts{};
  gmtime_r(&t, &parts);
  char text[96];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1,
                parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec, static_cast<int>(ms));
  return text;
}

// The futex wait's timeout: how often --watch re-checks what does not move the change counter.
constexpr std::chrono::milliseconds tick_ms{1000};


// The home store's filesystem beside the reserve a runtime stored in the segment (decision 0013).
struct store_room {
  dix::store_space space;
  std::uint64_t reserve_bytes = 0;
  // What the store's commits see: available less the live WAL its memtables will flush again.
  std::uint64_t free_bytes() const noexcept {
    return space.available_bytes > space.unflushed_bytes ? space.available_bytes - space.unflushed_bytes : 0;
  }
};

struct table {
  bool segment = false;   // PATH/dix/readiness.seg exists with a non-zero magic
  bool empty_file = false;  // no segment, but the file is there: empty or a zero magic
  bool attached = false;  // some runtime holds its OFD read lock on attach.lock
  std::vector<readiness_entry> indexes;  // sorted by id; each id escaped (escape_bytes)
  std::optional<store_room> space;       // known once a runtime stored the reserve
  std::vector<std::string> problems;     // what a damaged segment shows (readiness_table)
};

// The home store's free space, when the segment holds its reserve; a failed statvfs shows nothing.
std::optional<store_room> read_store_room(const fs::path& home, std::uint64_t reserve_bytes) {
  if (reserve_bytes == 0) return std::nullopt;
  auto space = read_store_space(home);
  if (!space) return std::nullopt;
  return store_room{*space, reserve_bytes};
}

std::string mib(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

// Which file a view maps, so --watch notices a segment deleted and created anew.
struct file_identity {
  dev_t device = 0;
  ino_t inode = 0;
  bool operator==(const file_identity& other) const { return device == other.device && inode == other.inode; }
};

std::optional<file_identity> identity_of(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return file_identity{st.st_dev, st.st_ino};
}

// The segment of one database, re-opened when its file appears or is replaced.
class segment_source {
 public:
  explicit segment_source(fs::path home) : home_(std::move(home)), file_(home_ / "dix" / "readiness.seg") {}

  // Opens the reader when there is none or the file changed. Fails segment_layout_mismatch, io_error.
  result<void> refresh() {
    auto now = identity_of(file_);
    if (reader_ && now && *now == identity_) return {};
    // Identity before open: a file replaced in between is noticed at the next refresh.
    auto reader = segment_reader::open(home_);
    if (!reader) return reader.error();
    reader_ = std::move(*reader);
    identity_ = reader_ && now ? *now : file_identity{};
    return {};
  }

  result<table> read() const {
    table t;
    if (!reader_) {
      t.empty_file = identity_of(file_).has_value();  // segment_reader answers none for it
      // No segment, yet a runtime holds the attach lock: the file was removed under it (issue
      // 34). Said so, and exit 1, instead of "no runtime has attached".
      if (auto held = segment_reader::runtime_attached(home_); held && *held) {
        t.attached = true;
        t.problems.push_back("the readiness segment " + file_.string() +
                             " is missing while a runtime is attached (attach.lock is held): it was removed under the "
                             "running runtime; no readiness can be read until that runtime stops and another attaches");
      }
      return t;
    }
    t.segment = true;
    auto read = reader_->read();
    if (!read) return read.error();
    t.attached = read->attached;
    t.indexes = std::move(read->entries);
    t.problems = std::move(read->problems);
    t.space = read_store_room(home_, read->store_reserve_bytes);
    std::sort(t.indexes.begin(), t.indexes.end(),
              [](const readiness_entry& a, const readiness_entry& b) { return a.id < b.id; });
    // One rule for a byte outside printable ASCII in every output (issue 34): \xNN, as
    // escape_bytes writes it. The plain table, JSON and Prometheus then carry the same text; a
    // newline or carriage return in a corrupt id can no longer break a line or the terminal.
    for (auto& e : t.indexes) e.id = escape_bytes(e.id);
    return t;
  }

  std::uint64_t counter() const noexcept { return reader_ ? reader_->change_counter() : 0; }

  // Blocks until the table may have changed (true) or a stop was requested (false). Every
  // tick_ms it re-checks the stop flag, the attach state and the segment file's identity; while
  // a progress line is shown (`progress_seen`), each tick may change the table.
  bool wait(std::uint64_t seen, bool attached_seen, bool progress_seen) const {
    for (;;) {
      if (stop_signal() != 0) return false;
      if (reader_) {
        if (reader_->wait_change(seen, tick_ms) != seen) return true;
      } else {
        ::poll(nullptr, 0, static_cast<int>(tick_ms.count()));  // returns early on a signal
      }
      if (stop_signal() != 0) return false;
      if (progress_seen) return true;
      auto now = identity_of(file_);
      if (reader_ ? !now || !(*now == identity_) : now.has_value()) return true;
      if (reader_) {
        auto read = reader_->read();
        if (!read || read->attached != attached_seen) return true;
      }
    }
  }

  const fs::path& home() const { return home_; }

 private:
  fs::path home_;
  fs::path file_;
  std::unique_ptr<segment_reader> reader_;
  file_identity identity_;
};

// The progress `e` shows: the owner's figures of a rebuilding index (segment_reader gives only
// those of the slot's current epoch).
const rebuild_progress* shown_progress(const readiness_entry& e) {
  return e.readiness.state == readiness_state::rebuilding && e.progress ? &*e.progress : nullptr;
}

bool shows_progress(const table& t) {
  return std::any_of(t.indexes.begin(), t.indexes.end(), [](const readiness_entry& e) { return shown_progress(e); });
}

std::uint64_t wall_now_ns() {
  return static_cast<std::uint64_t>(
    std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

// The owner's lag figures as they stand now (the ages grown since they were taken), when present.
std::optional<lag_figures> lag_now(const readiness_entry& e, std::uint64_t now_ns) {
  if (!e.lag) return std::nullopt;
  return e.lag->aged_at(now_ns);
}

// "verify by-brand: verified through main:1234 (60000 records) 12.5 s ago; 1 failed; one running".
std::string verify_line(const std::string& id, const lag_figures& l) {
  std::string line = "verify " + id + ":";
  if (l.verified) {
    std::string through;
    for (std::size_t g = 0; g < l.logs.size(); ++g) {
      if (l.logs[g].verified_sequence == 0) continue;
      through += (through.empty() ? "" : ",") + log_label(l, g) + ":" + std::to_string(l.logs[g].verified_sequence);
    }
    line += " verified through " + (through.empty() ? std::string("the start") : through) + " (" +
            std::to_string(l.verified_records) + " records) " + duration_text(l.verified_age_ms) + " ago";
  } else {
    line += " never verified since the owner registered it";
  }
  if (l.verify_failures > 0) {
    line += "; " + std::to_string(l.verify_failures) + (l.verify_failures == 1 ? " verify" : " verifies") + " found a difference";
  }
  if (l.verifying) line += "; a verify runs";
  return line;
}

const char* gate_word(std::uint32_t gate) {
  return gate == 0 ? "open" : gate == lag_gate_exceeded ? "exceeded" : "throttled";
}

// While an index is not idle its figures age on screen: --watch re-renders every tick.
bool shows_activity(const table& t) {
  return std::any_of(t.indexes.begin(), t.indexes.end(), [](const readiness_entry& e) {
    return e.lag && attribute(e.readiness, e.lag).activity != index_activity::idle;
  });
}

std::string render_prometheus(const table& t) {
  tool::metrics_text out;
  const auto now_ns = wall_now_ns();
  out.add("dix_runtime_attached", tool::metric_type::gauge, "1 while some runtime of the database is attached", {},
          t.attached ? 1 : 0);
  out.add("dix_segment_problems", tool::metric_type::gauge,
          "slots of the readiness segment found damaged (an invalid id length, an id claimed twice); dix status names them",
          {}, static_cast<double>(t.problems.size()));
  for (const auto& e : t.indexes) add_segment_metrics(out, e, now_ns);
  return out.str();
}

std::string render_json(const fs::path& home, const table& t) {
  std::ostringstream out;
  const auto now_ns = wall_now_ns();
  out << "{\"db\":" << json_string(home.string()) << ",\"segment\":" << (t.segment ? "true" : "false")
      << ",\"attached\":" << (t.attached ? "true" : "false") << ",\"indexes\":[";
  for (std::size_t i = 0; i < t.indexes.size(); ++i) {
    const auto& e = t.indexes[i];
    const auto& r = e.readiness;
    out << (i == 0 ? "" : ",") << "{\"id\":" << json_string(e.id) << ",\"state\":\"" << to_string(r.state)
        << "\",\"reason\":\"" << to_string(r.reason) << "\",\"rebuild_attempts\":" << r.rebuild_attempts
        << ",\"owner_epoch\":" << r.owner_epoch << ",\"hold\":\"" << to_string(e.hold)
        << "\",\"rebuild_requested\":" << (e.rebuild_requested ? "true" : "false");
    if (const auto* p = shown_progress(e)) {
      out << ",\"rebuilt_records\":" << p->rebuilt_records << ",\"estimated_records\":" << p->estimated_records
          << ",\"scan_records_per_s\":" << p->scan_records_per_s << ",\"rebuild_eta_ms\":" << p->rebuild_eta_ms
          << ",\"scan_ended\":" << (p->scan_ended ? "true" : "false");
    }
    // The activity is the reading of the owner's figures: an index without them (no owner
    // published any under its epoch) shows its readiness only.
    if (const auto lag = lag_now(e, now_ns)) {
      const auto a = attribute(r, lag);
      const auto& l = *lag;
      out << ",\"activity\":\"" << to_string(a.activity) << "\",\"stall_cause\":\"" << to_string(a.cause)
          << "\",\"lag_ms\":" << a.lag_ms << ",\"words\":" << json_string(a.words);
      out << ",\"runner_state\":\"" << to_string(l.state) << "\",\"cursor_lag_ms\":" << l.cursor_lag_ms
          << ",\"stalled_ms\":" << l.stalled_ms << ",\"unread_age_ms\":" << l.unread_age_ms
          << ",\"oldest_accepted_age_ms\":" << l.oldest_accepted_age_ms << ",\"accepted_batches\":" << l.accepted_batches
          << ",\"max_accepted_batches_ahead\":" << l.max_accepted_batches_ahead << ",\"gate\":\"" << gate_word(l.lag_gate)
          << "\",\"gate_delay_us\":" << (l.lag_gate == lag_gate_exceeded ? 0 : l.lag_gate)
          << ",\"transient_faults\":" << l.transient_faults << ",\"read_per_s\":" << a.read_per_s;
      if (a.eta_ms) out << ",\"eta_ms\":" << *a.eta_ms;
      out << ",\"lag_taken_wall_ns\":" << l.taken_wall_ns << ",\"logs\":[";
      for (std::size_t g = 0; g < l.logs.size(); ++g) {
        out << (g == 0 ? "" : ",") << "{\"log\":" << json_string(log_label(l, g)) << ",\"position\":" << g
            << ",\"sequence_lag\":" << l.logs[g].sequence_lag
            << ",\"read_per_s\":" << l.logs[g].read_per_s
            << ",\"retention_headroom_ms\":" << l.logs[g].retention_headroom_ms;
        if (l.verified) out << ",\"verified_sequence\":" << l.logs[g].verified_sequence;
        out << "}";
      }
      out << "]";
      out << ",\"verifying\":" << (l.verifying ? "true" : "false") << ",\"verify_failures\":" << l.verify_failures;
      if (l.verified) out << ",\"verified_records\":" << l.verified_records << ",\"verified_age_ms\":" << l.verified_age_ms;
      if (l.link) {
        const auto& k = *l.link;
        out << ",\"link\":{\"address\":" << json_string(k.address) << ",\"connected\":" << (k.connected ? "true" : "false")
            << ",\"round_trip_us\":" << k.round_trip_us << ",\"window_batches\":" << k.window_batches
            << ",\"window_bytes\":" << k.window_bytes << ",\"durable_sequence\":" << k.durable_sequence
            << ",\"sessions\":" << k.connects << "}";
      }
    }
    out << "}";
  }
  out << "]";
  if (!t.problems.empty()) {
    out << ",\"problems\":[";
    for (std::size_t i = 0; i < t.problems.size(); ++i) out << (i == 0 ? "" : ",") << json_string(t.problems[i]);
    out << "]";
  }
  if (t.space) {
    const auto& sp = t.space->space;
    out << ",\"store_space\":{\"available_bytes\":" << sp.available_bytes << ",\"capacity_bytes\":" << sp.capacity_bytes
        << ",\"unflushed_bytes\":" << sp.unflushed_bytes << ",\"reserve_bytes\":" << t.space->reserve_bytes
        << ",\"below_reserve\":" << (t.space->free_bytes() < t.space->reserve_bytes ? "true" : "false") << "}";
  }
  out << "}\n";
  return out.str();
}

std::string render_plain(const fs::path& home, const table& t) {
  std::ostringstream out;
  const auto now_ns = wall_now_ns();
  if (!t.segment && t.attached) {
    for (const auto& p : t.problems) out << "problem: " << p << "\n";
    return out.str();
  }
  if (!t.segment) {
    if (t.empty_file) {
      out << "readiness segment " << (home / "dix" / "readiness.seg").string()
          << " is empty (a runtime is creating it, or its creation was interrupted): no runtime has attached to it; "
             "the next runtime to attach creates it again\n";
    } else {
      out << "no readiness segment at " << (home / "dix").string() << " (no runtime has attached)\n";
      // A mistyped --db looks the same: say when no store is there either (a new user's trial).
      std::error_code ec;
      if (!fs::exists(home / "CURRENT", ec)) out << "and no store: " << home.string() << " holds no RocksDB CURRENT file\n";
    }
    return out.str();
  }
  out << "db " << home.string() << "\n";
  out << (t.attached ? "runtime attached\n"
                     : "no runtime attached: every id reads unknown with its stored epoch\n");
  if (t.space && t.space->free_bytes() < 2 * t.space->reserve_bytes) {
    const auto& room = *t.space;
    out << "store " << home.string() << ": " << mib(room.free_bytes()) << " free on its filesystem ("
        << mib(room.space.unflushed_bytes) << " of unflushed WAL counted as used), "
        << (room.free_bytes() < room.reserve_bytes
                ? "below its free-space reserve of " + mib(room.reserve_bytes) + ": commits are refused (io_error) until space is freed\n"
                : "near its free-space reserve of " + mib(room.reserve_bytes) + ": commits are refused below it\n");
  }
  for (const auto& p : t.problems) out << "problem: " << p << "\n";
  if (t.indexes.empty()) {
    out << "no backend id has claimed a slot\n";
    return out.str();
  }
  std::vector<std::vector<std::string>> rows{{"id", "state", "reason", "attempts", "epoch"}};
  for (const auto& e : t.indexes) {
    const auto& r = e.readiness;
    rows.push_back({e.id, std::string(to_string(r.state)), std::string(to_string(r.reason)),
                    std::to_string(r.rebuild_attempts), std::to_string(r.owner_epoch)});
  }
  std::vector<std::size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      out << row[c];
      if (c + 1 < row.size()) out << std::string(widths[c] - row[c].size() + 2, ' ');
    }
    out << '\n';
  }
  for (const auto& e : t.indexes) {
    if (e.rebuild_requested) {
      out << "rebuild " << e.id << ": requested, not yet taken by an owner"
          << (t.attached ? "" : " (no runtime attached: the next one to own the index rebuilds it)") << "\n";
    }
    if (e.lag && e.lag->link) {
      const auto& k = *e.lag->link;
      out << "link " << e.id << ": index node " << k.address << ", " << (k.connected ? "connected" : "NOT connected");
      if (k.round_trip_us > 0) out << ", round trip " << k.round_trip_us << " us";
      out << ", window " << k.window_batches << " batches (" << k.window_bytes << " bytes), durable through seq "
          << k.durable_sequence << ", " << k.connects << (k.connects == 1 ? " session" : " sessions") << "\n";
    }
    if (e.hold == backend_hold::remote_unreachable) {
      out << e.id << ": deliveries deferred (remote-host-unreachable): its index node cannot be reached; the owner "
                     "reconnects by itself and replays what was not durable there\n";
    }
    if (e.hold == backend_hold::low_disk_space) {
      out << e.id << ": deliveries deferred (low-disk-space): the filesystem of its index is below the backend's "
                     "free-space reserve; they resume by themselves when space is freed\n";
    }
    if (const auto* p = shown_progress(e)) out << "progress " << e.id << ": " << progress_text(*p) << "\n";
    const auto lag = lag_now(e, now_ns);
    if (lag && (lag->verified || lag->verifying || lag->verify_failures > 0)) out << verify_line(e.id, *lag) << "\n";
    const auto a = attribute(e.readiness, lag);
    // With the owner's figures only (the table row already tells a readiness), and not twice
    // for a rebuild whose progress line is shown.
    if (lag && a.activity != index_activity::idle && !(a.cause == stall_cause::rebuild && shown_progress(e))) {
      out << "activity " << e.id << ": " << a.words << "\n";
    }
    if (lag && lag->lag_gate != 0) {
      out << "gate " << e.id << ": " << gate_word(lag->lag_gate)
          << (lag->lag_gate == lag_gate_exceeded ? ": commits to its tables are refused (index_lagging, retryable)"
                                                  : ": each commit to its tables waits " + std::to_string(lag->lag_gate) + " us")
          << "\n";
    }
    for (std::size_t g = 0; lag && g < lag->logs.size(); ++g) {
      if (lag->logs[g].retention_headroom_ms < 0) continue;
      char text[64];
      std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(lag->logs[g].retention_headroom_ms) / 1000.0);
      out << "retention " << e.id << " log " << log_label(*lag, g) << ": " << text
          << " before the WAL file holding its durable anchor ages out (then log-retention)\n";
    }
  }
  return out.str();
}

// One line on stderr; with --json also an error object on stdout, as `dix wal` does.
int fail(const fs::path& home, bool json, const error& e) {
  std::cerr << "dix status: " << e.to_string() << "\n";
  if (json) {
    std::cout << "{\"db\":" << json_string(home.string()) << ",\"error\":{\"reason\":"
              << json_string(to_string(e.value())) << ",\"message\":" << json_string(e.message()) << "}}\n"
              << std::flush;
  }
  return e.value() == errc::segment_layout_mismatch ? exit_layout : exit_error;
}

}  // namespace

int run_status(const std::vector<std::string>& argv) {
  int status = exit_usage;
  auto a = tool::args::parse_command(argv, {{"db", "updates"}, {"json", "prometheus", "watch"}}, "dix status", usage, status);
  if (!a) return status;
  std::string problem;
  if (!a->has("db")) problem = "--db PATH is required";
  else if (a->has("updates") && !a->has("watch")) problem = "--updates needs --watch";
  else if (a->has("json") && a->has("prometheus")) problem = "--json and --prometheus exclude each other";
  // A plain value, not the optional: GCC 12 at -O3 warns that the optional may be uninitialized.
  std::uint64_t updates = 0;
  bool updates_ok = false;
  if (problem.empty()) {
    if (auto n = a->number("updates", 0, 1, UINT64_MAX, problem)) {
      updates = *n;
      updates_ok = true;
    }
  }
  if (!problem.empty() || !updates_ok) {
    return tool::refuse("dix status", problem);
  }
  auto given = fs::path(a->get("db"));
  // A demo or serve --dir names its store DIR/primary: read that (issue 34).
  const auto found = store_dir(given);
  const auto& db = found.path;
  std::error_code ec;
  auto kind = fs::status(given, ec).type();
  auto home = kind == fs::file_type::directory ? fs::canonical(db, ec) : fs::path();
  if (ec && kind != fs::file_type::not_found) {
    // A path the system refuses (permission, a name too long, a loop): io_error, exit 1, as in
    // every command (docs/operations.md), not a bad argument; with --json the error object too.
    return fail(given, a->has("json"), error{errc::io_error, "--db " + given.string() + ": " + ec.message()});
  }
  if (kind != fs::file_type::directory) {
    return tool::refuse("dix status", "--db " + given.string() + ": " +
                                          (kind == fs::file_type::not_found ? "no such directory" : "not a directory"));
  }
  bool json = a->has("json");
  bool prometheus = a->has("prometheus");
  bool watch = a->has("watch");
  if (watch) install_stop_handlers();

  segment_source source(home);
  std::optional<std::string> shown;
  std::uint64_t reprints = 0;
  for (;;) {
    if (auto opened = source.refresh(); !opened) return fail(home, json, opened.error());
    // The counter before the table: a change made after this load wakes the wait below.
    auto seen = source.counter();
    auto t = source.read();
    if (!t) return fail(home, json, t.error());
    auto text = json ? render_json(home, *t) : prometheus ? render_prometheus(*t) : render_plain(home, *t);
    if (watch && !json) text += "\n";
    // The counter also moves for fields the table does not show (coverage time, lag gate,
    // demands), so --watch prints only tables that differ from the last one.
    if (!shown || text != *shown) {
      // Each plain table of --watch says when it was read (issue 34); compared without it.
      if (watch && !json && !prometheus) std::cout << "at " << utc_now_text() << "\n";
      std::cout << text << std::flush;
      if (shown) ++reprints;
      shown = std::move(text);
    }
    if (!watch) return !t->segment && t->attached ? exit_error : exit_ok;
    if (updates != 0 && reprints >= updates) return exit_ok;
    if (!source.wait(seen, t->attached, shows_progress(*t) || shows_activity(*t))) return exit_ok;
  }
}

}  // namespace dix::cli
