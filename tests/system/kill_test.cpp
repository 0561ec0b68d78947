// The kill test: the real `dix` binary (`dix demo`, fork + exec) writes and indexes while this
// process SIGKILLs it at seeded, varied moments and starts it again. With the child dead, the
// parent reads what it left on disk (the primary store and the four indexes' cursors — the two
// RocksDB index databases read-only, the Xapian and hnsw ones through their backends' own
// durable_cursor(), which writes nothing — and the readiness segment without attaching) and checks that nothing went backwards; a last run ends
// normally and verifies every index against the projection of the primary store. Some rounds ask
// for a rebuild of an index while the child runs (the free request_rebuild, as `dix rebuild`
// does), so kills also land inside rebuilds: reset, scan, boundary, the drain before `ready`.
//
// DIX_KILLS=N sets the number of kills (default 10), DIX_KILL_SEED=S the schedule's seed (printed).
// The seed fixes the schedule (workload, kill event, delay), not the child's progress at the kill:
// that depends on the machine, and pass/fail never does.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include <rocksdb/db.h>

#include <dix/backends/hnsw_backend.hpp>
#include <dix/backends/xapian_backend.hpp>
#include <dix/cursor.hpp>
#include <dix/free_functions.hpp>

#include "adapters/readiness_segment.hpp"
#include "adapters/test_support.hpp"
#include "core/bytes.hpp"
#include "support/fake_host.hpp"

namespace {

namespace fs = std::filesystem;
using std::chrono::microseconds;
using steady = std::chrono::steady_clock;

// A child silent for this long is hung: the test kills it and fails.
constexpr int silence_limit_ms = 60'000;
// The demo's indexes: two RocksDB secondary indexes, a Xapian full-text and an hnsw vector index.
const std::vector<std::string> index_ids{"by-category", "by-brand", "fulltext", "similar"};

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  return std::stoull(value);
}

// One `dix demo` process: stdout on a pipe this process reads, stderr into a file.
class demo_child {
 public:
  // Returns once exec succeeded: the close-on-exec pipe reads EOF (the first pipe event).
  demo_child(const std::vector<std::string>& argv, const fs::path& stderr_path) {
    int out[2];
    int exec_done[2];
    REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(exec_done, O_CLOEXEC) == 0);
    int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE(err >= 0);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::fflush(nullptr);  // nothing buffered may be written twice by the child
    pid_ = ::fork();
    if (pid_ == 0) {
      // Only async-signal-safe calls between fork and exec. dup2 clears FD_CLOEXEC on the copy.
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(err, STDERR_FILENO);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(out[1]);
    ::close(exec_done[1]);
    ::close(err);
    REQUIRE(pid_ > 0);
    out_ = out[0];
    pollfd p{exec_done[0], POLLIN, 0};
    bool ready = ::poll(&p, 1, silence_limit_ms) == 1;
    ::close(exec_done[0]);
    REQUIRE(ready);
  }
  ~demo_child() {
    if (pid_ > 0) (void)kill_and_reap();  // a failed REQUIRE must not leave a writer behind
    if (out_ >= 0) ::close(out_);
  }
  demo_child(const demo_child&) = delete;
  demo_child& operator=(const demo_child&) = delete;

  // Reads until `count` progress lines ("committed …") arrived or EOF; false after
  // silence_limit_ms of silence.
  bool read_progress_lines(std::size_t count) {
    auto progress = [&] {
      return static_cast<std::size_t>(std::count_if(lines_.begin(), lines_.end(), [](const std::string& l) {
        return l.rfind("committed ", 0) == 0;
      }));
    };
    while (progress() < count && !eof_) {
      if (!read_once(silence_limit_ms)) return false;
    }
    return true;
  }
  // Reads whatever arrives during `delay` (the chosen kill moment, not a wait for something);
  // EOF ends it early.
  void drain_for(microseconds delay) {
    auto deadline = steady::now() + delay;
    while (!eof_) {
      auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - steady::now());
      if (left.count() <= 0) return;
      timespec ts{static_cast<time_t>(left.count() / 1'000'000'000), static_cast<long>(left.count() % 1'000'000'000)};
      pollfd p{out_, POLLIN, 0};
      if (::ppoll(&p, 1, &ts, nullptr) == 1) consume();
    }
  }
  bool read_to_end() {
    while (!eof_) {
      if (!read_once(silence_limit_ms)) return false;
    }
    return true;
  }
  // SIGKILL (harmless when the child already exited: it stays a zombie until reaped), then
  // waitpid. Returns the wait status.
  int kill_and_reap() {
    ::kill(pid_, SIGKILL);
    return reap();
  }
  int reap() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }
  const std::vector<std::string>& lines() const noexcept { return lines_; }
  const std::string& text() const noexcept { return text_; }

 private:
  bool read_once(int timeout_ms) {
    pollfd p{out_, POLLIN, 0};
    int n = ::poll(&p, 1, timeout_ms);
    if (n == 0) return false;
    if (n == 1) consume();
    return true;
  }
  void consume() {
    char buf[4096];
    auto n = ::read(out_, buf, sizeof buf);
    if (n <= 0) {
      if (n == 0 || errno != EINTR) eof_ = true;
      return;
    }
    text_.append(buf, static_cast<std::size_t>(n));
    partial_.append(buf, static_cast<std::size_t>(n));
    for (auto end = partial_.find('\n'); end != std::string::npos; end = partial_.find('\n')) {
      lines_.push_back(partial_.substr(0, end));
      partial_.erase(0, end + 1);
    }
  }

  pid_t pid_ = -1;
  int out_ = -1;
  bool eof_ = false;
  std::string text_, partial_;
  std::vector<std::string> lines_;
};

std::string slurp(const fs::path& path) {
  std::string text;
  if (FILE* f = std::fopen(path.c_str(), "r")) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
  }
  return text;
}

// What a run's progress lines claimed: "committed N ops (last transaction at seq S) | <id>: indexed
// through seq D, behind B (or caught up), STATE | …" ("store at seq S" before the run's first
// commit). The test checks the claims against the disk after the kill.
struct run_claims {
  std::uint64_t latest_sequence = 0;
  std::map<std::string, std::uint64_t> durable_sequence;  // the highest "indexed seq" per id
  std::map<std::string, bool> published;                  // a state other than unknown was shown
  // The demo's midway rebuild: "dix demo: asking for a rebuild of <id>" (printed before it asks),
  // "dix demo: <id> rebuilt by a scan: …" once it is over.
  std::set<std::string> rebuild_asked, rebuilt;
};

run_claims parse_progress(const std::vector<std::string>& lines) {
  run_claims c;
  auto number_after = [](const std::string& s, const std::string& label) -> std::uint64_t {
    auto at = s.find(label);
    return at == std::string::npos ? 0 : std::strtoull(s.c_str() + at + label.size(), nullptr, 10);
  };
  for (const auto& line : lines) {
    for (const auto& id : index_ids) {
      if (line.rfind("dix demo: asking for a rebuild of " + id + " ", 0) == 0) c.rebuild_asked.insert(id);
      if (line.rfind("dix demo: " + id + " rebuilt by a scan: ", 0) == 0) c.rebuilt.insert(id);
    }
    if (line.rfind("committed ", 0) != 0) continue;
    c.latest_sequence = std::max({c.latest_sequence, number_after(line, "last transaction at seq "),
                                  number_after(line, "store at seq ")});
    std::istringstream parts(line);
    std::string part;
    while (std::getline(parts, part, '|')) {
      for (const auto& id : index_ids) {
        if (part.find(" " + id + ": ") != 0) continue;
        c.durable_sequence[id] = std::max(c.durable_sequence[id], number_after(part, "indexed through seq "));
        if (part.find(", unknown") == std::string::npos) c.published[id] = true;
      }
    }
  }
  return c;
}

struct index_state {
  std::optional<dix::cursor> cursor;
  std::uint64_t epoch = 0;       // epoch/<id> in the home store's dix.meta; 0 = none yet
  std::uint64_t slot_epoch = 0;  // the readiness slot's owner_epoch; 0 = no slot yet
  bool condemned = false;        // condemned/<id> in dix.meta (formats.md §5)
  // What the dead child last published in the slot (read_readiness says `unknown` while no
  // runtime is attached; the raw slot still holds it): the reason of a condemnation.
  dix::readiness last_published;
};

struct disk_state {
  bool primary = false;  // the primary store exists
  std::string identity;
  std::uint64_t latest_sequence = 0;
  std::map<std::string, index_state> indexes;
};

// The index's durable cursor as backends.md §1 stores it (family `meta`, key `cursor`), read from
// a read-only RocksDB instance: nothing is written, not even the WAL recovery the backend's own
// read-write open would do. An index database a kill interrupted at creation has no cursor.
std::optional<dix::cursor> read_index_cursor(const fs::path& path, std::vector<std::string>& problems) {
  if (!fs::exists(path / "CURRENT")) return std::nullopt;
  std::vector<std::string> families;
  auto s = rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions{}, path.string(), &families);
  if (!s.ok()) {
    problems.push_back("listing the families of " + path.string() + ": " + s.ToString());
    return std::nullopt;
  }
  if (std::find(families.begin(), families.end(), "meta") == families.end()) return std::nullopt;
  std::vector<rocksdb::ColumnFamilyDescriptor> open{{rocksdb::kDefaultColumnFamilyName, {}}, {"meta", {}}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  s = rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions{}, path.string(), open, &handles, &raw);
  if (!s.ok()) {
    problems.push_back("opening " + path.string() + " read-only: " + s.ToString());
    return std::nullopt;
  }
  std::unique_ptr<rocksdb::DB> db(raw);
  std::string bytes;
  s = db->Get(rocksdb::ReadOptions{}, handles[1], "cursor", &bytes);
  for (auto* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  if (s.IsNotFound()) return std::nullopt;
  if (!s.ok()) {
    problems.push_back("reading the cursor of " + path.string() + ": " + s.ToString());
    return std::nullopt;
  }
  auto decoded = dix::cursor::decode(bytes);
  if (!decoded) {
    problems.push_back("the cursor of " + path.string() + " does not decode: " + decoded.error().to_string());
    return std::nullopt;
  }
  return *decoded;
}

// The durable cursor of a search index, read through the backend's own durable_cursor() on a
// fresh instance that never writes: the Xapian backend reads `dix.cursor` through a read-only
// Database (no writer lock), the hnsw backend verifies its `cursor` file and the generation it
// names. Their options other than the path do not matter for reading.
std::optional<dix::cursor> read_search_cursor(const std::string& id, const fs::path& path, std::vector<std::string>& problems) {
  std::shared_ptr<dix::backend> b;
  if (!fs::exists(path)) return std::nullopt;  // create() would make the directory
  if (id == "fulltext") {
    dix::xapian_options o;
    o.path = path;
    o.fields = {{"text", {"T", 1}}};
    auto created = dix::xapian_backend::create(id, o);
    if (created) b = *created;
    else problems.push_back("creating a reader of " + id + ": " + created.error().to_string());
  } else {
    dix::hnsw_options o;
    o.state_dir = path;
    o.dimension = 16;
    o.space = dix::hnsw_space::cosine;
    auto created = dix::hnsw_backend::create(id, o);
    if (created) b = *created;
    else problems.push_back("creating a reader of " + id + ": " + created.error().to_string());
  }
  if (!b) return std::nullopt;
  dix::test::fake_host host;
  b->attach(host);
  auto c = b->durable_cursor();
  if (!c) {
    problems.push_back("reading the cursor of " + path.string() + ": " + c.error().to_string());
    return std::nullopt;
  }
  return *c;
}

disk_state read_disk(const fs::path& demo_dir, std::vector<std::string>& problems) {
  disk_state d;
  auto home = demo_dir / "primary";
  for (const auto& id : index_ids) {
    d.indexes[id].cursor = id == "fulltext" || id == "similar" ? read_search_cursor(id, demo_dir / id, problems)
                                                               : read_index_cursor(demo_dir / id, problems);
  }
  if (fs::exists(home / "CURRENT")) {
    auto store = dix::open_read_only(home, "main");
    if (!store) {
      problems.push_back("opening the primary store read-only: " + store.error().to_string());
    } else {
      d.primary = true;
      d.identity = (*store)->identity();
      d.latest_sequence = dix::latest_sequence(**store);
      for (const auto& id : index_ids) {
        auto value = dix::read_meta(**store, "epoch/" + id);
        if (!value) problems.push_back("reading epoch/" + id + ": " + value.error().to_string());
        else if (*value && (*value)->size() != 8) problems.push_back("epoch/" + id + " is not 8 bytes");
        else if (*value) d.indexes[id].epoch = dix::get_le<std::uint64_t>(**value, 0);
        auto marker = dix::read_meta(**store, "condemned/" + id);
        if (!marker) problems.push_back("reading condemned/" + id + ": " + marker.error().to_string());
        else d.indexes[id].condemned = marker->has_value();
      }
      dix::ignore_result((*store)->close(), "read-only: closing writes nothing, a failure changes nothing here");
    }
  }
  for (const auto& id : index_ids) {
    auto r = dix::read_readiness(home, id);
    if (r) {
      d.indexes[id].slot_epoch = r->owner_epoch;
    } else if (r.error().value() != dix::errc::not_registered) {  // not_registered: no slot yet
      problems.push_back("read_readiness(" + id + "): " + r.error().to_string());
    }
  }
  auto view = dix::segment_view::open(home);
  if (!view) {
    problems.push_back("mapping the readiness segment: " + view.error().to_string());
  } else if (*view) {
    for (const auto& id : index_ids) {
      if (auto index = (*view)->find(id)) d.indexes[id].last_published = (*view)->read(*index);
    }
  }
  return d;
}

// Everything that must hold between the state before a run and the state after it (the child
// dead). Returns the violations, each a sentence naming the values.
// `requested`: ids whose rebuild the test or a run asked for that no run has seen to its end yet (the request
// survives a kill in the slot, and the next acquisition takes it).
std::vector<std::string> violations(const disk_state& before, const disk_state& after, const run_claims& claims,
                                    bool completed, const std::set<std::string>& requested) {
  std::vector<std::string> v;
  auto say = [&](std::string s) { v.push_back(std::move(s)); };
  if (before.primary && !after.primary) say("the primary store vanished");
  if (before.primary && after.identity != before.identity) say("the primary store's identity changed");
  if (after.latest_sequence < before.latest_sequence) {
    say("the primary's latest sequence went back from " + std::to_string(before.latest_sequence) + " to " +
        std::to_string(after.latest_sequence));
  }
  if (after.latest_sequence < claims.latest_sequence) {
    say("the primary's latest sequence " + std::to_string(after.latest_sequence) + " is below the " +
        std::to_string(claims.latest_sequence) + " the child reported committed");
  }
  for (const auto& id : index_ids) {
    const auto& b = before.indexes.at(id);
    const auto& a = after.indexes.at(id);
    auto name = [&](const std::string& what) { return id + ": " + what; };
    if (a.epoch < b.epoch) {
      say(name("epoch/<id> went down from " + std::to_string(b.epoch) + " to " + std::to_string(a.epoch)));
    }
    if (a.slot_epoch < b.slot_epoch) {
      say(name("the slot epoch went down from " + std::to_string(b.slot_epoch) + " to " +
               std::to_string(a.slot_epoch)));
    }
    // Minting is the slot's fetch_add, persisting comes after it (protocol.md §9.3).
    if (a.slot_epoch < a.epoch) {
      say(name("the slot epoch " + std::to_string(a.slot_epoch) + " is below the persisted " +
               std::to_string(a.epoch)));
    }
    const bool cursor_moved = a.cursor.has_value() && (!b.cursor || *a.cursor != *b.cursor);
    // The child acquired the id (a new epoch persisted before any backend call, §9.3) when its
    // cursor moved, when it published a state, or when it ran to a verified end.
    const bool acquired = cursor_moved || claims.published.count(id) != 0 || completed;
    if (acquired && a.epoch <= b.epoch) {
      say(name("the child acquired (cursor moved " + std::string(cursor_moved ? "yes" : "no") + ", published " +
               std::string(claims.published.count(id) != 0 ? "yes" : "no") + ") but epoch/<id> did not grow: " +
               std::to_string(b.epoch) + " → " + std::to_string(a.epoch)));
    }
    // An index without a cursor is rebuilt (reset, scan, boundary; protocol.md §11), condemned
    // until its first `ready`; so is one whose marker a killed rebuild left, one the test asked to
    // rebuild, and one whose rebuild the demo asked for midway (this run or an earlier one whose
    // request is not over). Nothing else in this workload condemns an index (same registration): a
    // kill must be followed by a run that resumes (operations.md), not one that needs a rebuild.
    const bool rebuilding = !b.cursor || b.condemned || requested.count(id) != 0 || claims.rebuild_asked.count(id) != 0;
    if (!rebuilding && (a.condemned || a.last_published.state == dix::readiness_state::needs_rebuild ||
                        a.last_published.state == dix::readiness_state::unavailable)) {
      say(name("condemned: marker " + std::string(a.condemned ? "present" : "absent") + ", the slot last said " +
               std::string(to_string(a.last_published.state)) + " (" +
               std::string(to_string(a.last_published.reason)) + ")"));
    }
    // Only a reset makes a cursor absent, and only a rebuild resets (§11.4).
    if (b.cursor && !a.cursor && !rebuilding) say(name("the durable cursor vanished (was " + b.cursor->to_json() + ")"));
    if (!a.cursor) continue;
    const auto* now = a.cursor->find("main");
    if (now == nullptr || a.cursor->logs().size() != 1) {
      say(name("the cursor does not name exactly the log main: " + a.cursor->to_json()));
      continue;
    }
    if (now->identity != after.identity) {
      say(name("the cursor names identity " + now->identity + ", the store is " + after.identity));
    }
    if (now->sequence > after.latest_sequence) {
      say(name("the cursor " + a.cursor->to_json() + " is ahead of the primary's latest sequence " +
               std::to_string(after.latest_sequence)));
    }
    auto claimed = claims.durable_sequence.count(id) != 0 ? claims.durable_sequence.at(id) : 0;
    if (now->sequence < claimed) {
      say(name("the cursor " + a.cursor->to_json() + " is below the sequence " + std::to_string(claimed) +
               " the child reported durable"));
    }
    if (!b.cursor || rebuilding) continue;  // a rebuild's boundary starts a new cursor
    const auto* was = b.cursor->find("main");
    if (was == nullptr) continue;
    if (now->sequence < was->sequence || (now->sequence == was->sequence && *a.cursor != *b.cursor) ||
        now->time < was->time) {
      say(name("the durable cursor moved backwards: " + b.cursor->to_json() + " → " + a.cursor->to_json()));
    }
  }
  return v;
}

std::string describe(const disk_state& d) {
  std::string s = "primary seq " + std::to_string(d.latest_sequence);
  for (const auto& id : index_ids) {
    const auto& ix = d.indexes.at(id);
    const auto* at = ix.cursor ? ix.cursor->find("main") : nullptr;
    s += "; " + id + " cursor " + (at != nullptr ? std::to_string(at->sequence) : std::string("none")) + " epoch " +
         std::to_string(ix.epoch) + " slot " + std::to_string(ix.slot_epoch) + " " +
         std::string(to_string(ix.last_published.state));
    if (ix.last_published.reason != dix::readiness_reason::none) {
      s += " (" + std::string(to_string(ix.last_published.reason)) + ")";
    }
    if (ix.condemned) s += " marker";
  }
  return s;
}

}  // namespace

TEST_CASE("kill test: SIGKILL at seeded random moments never moves a durable cursor or an epoch backwards "
          "and the indexes end equal to the projection of the primary store",
          "[system][kill]") {
  // Found, at about 1 run in 1000 kills, RocksDB's empty recovery batch after a torn WAL tail
  // (decision 0005); `DIX_KILLS=200 dix_system_tests "[kill]"` runs the long version.
  const auto kills_wanted = env_number("DIX_KILLS", 10);
  const auto seed = env_number("DIX_KILL_SEED", 20250101);
  std::cout << "kill test: seed " << seed << ", " << kills_wanted << " kills (DIX_KILL_SEED=" << seed
            << " DIX_KILLS=" << kills_wanted << ")" << std::endl;
  INFO("seed " << seed << " (DIX_KILL_SEED=" << seed << " DIX_KILLS=" << kills_wanted
               << " reproduces the schedule)");
  std::mt19937_64 rng(seed);
  auto uniform = [&](std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };

  // DIX_KILL_DIR=PATH (a new directory) keeps the databases after the test, to inspect a failure.
  dix::test::temp_dir scratch;
  const char* keep = std::getenv("DIX_KILL_DIR");
  const fs::path dir = keep != nullptr && *keep != '\0' ? fs::path(keep) : scratch.path();
  REQUIRE((dir == scratch.path() || fs::create_directories(dir)));
  const auto demo_dir = dir / "demo";
  const auto stderr_path = dir / "child-stderr.txt";
  std::cout << "kill test: databases in " << demo_dir.string() << std::endl;
  std::vector<std::string> problems;
  disk_state state = read_disk(demo_dir, problems);
  REQUIRE(problems.empty());

  // Ids the test asked to rebuild since the last run that finished: the slot's flag outlives a
  // child killed before it acquired, and a later child consumes it.
  std::set<std::string> test_asked;
  std::set<std::string> demo_asked;  // midway rebuilds the demo asked for, not seen to their end
  auto requested_now = [&] {
    auto all = test_asked;
    all.insert(demo_asked.begin(), demo_asked.end());
    return all;
  };
  const auto started = steady::now();
  std::uint64_t kills = 0, completed_runs = 0, round = 0;
  while (kills < kills_wanted) {
    ++round;
    REQUIRE(round <= 4 * kills_wanted + 10);  // completed runs do not count as kills
    // The schedule: mostly a writer that never finishes (paced), sometimes a short full-speed run
    // that may reach catch-up, verification and shutdown before the kill (or finish). The kill
    // comes a random delay after a pipe event: exec done, or the k-th progress line (one a
    // second), so it lands in open and recovery, acquisition, the initial build, steady
    // writing, catch-up, verification or close.
    const bool short_run = uniform(0, 4) == 0;
    const auto records = short_run ? uniform(50, 3000) : 100'000'000;
    const auto rate = short_run ? 0 : std::vector<std::uint64_t>{1000, 3000, 6000}[uniform(0, 2)];
    std::size_t lines_first = 0;
    if (!short_run && uniform(0, 3) == 0) lines_first = uniform(0, 3) == 0 ? 2 : 1;
    const auto delay = microseconds(short_run         ? uniform(0, 4'000'000)
                                    : lines_first == 0 ? uniform(0, 1'200'000)
                                                       : uniform(0, 400'000));
    // A rebuild request while the child runs (the slot exists from the first run on; the flag
    // waits for the child's acquisition when it comes before).
    const bool ask_rebuild = !short_run && uniform(0, 2) == 0;
    const auto rebuild_id = index_ids[uniform(0, index_ids.size() - 1)];
    std::string plan = "round " + std::to_string(round) + ": " +
                       (short_run ? "short run of " + std::to_string(records) + " at full speed"
                                  : "writer at " + std::to_string(rate) + "/s") +
                       ", kill " + std::to_string(delay.count()) + " µs after " +
                       (lines_first == 0 ? std::string("exec") : "progress line " + std::to_string(lines_first)) +
                       (ask_rebuild ? ", rebuild of " + rebuild_id + " requested first" : std::string());
    INFO(plan);

    int status = 0;
    run_claims claims;
    std::string output;
    {
      demo_child child({DIX_BINARY, "demo", "--dir", demo_dir.string(), "--records", std::to_string(records),
                        "--rate", std::to_string(rate), "--seed", std::to_string(uniform(1, 1'000'000))},
                       stderr_path);
      REQUIRE(child.read_progress_lines(lines_first));
      if (ask_rebuild) {
        auto asked = dix::request_rebuild(demo_dir / "primary", rebuild_id);
        if (asked && *asked) test_asked.insert(rebuild_id);
      }
      child.drain_for(delay);
      status = child.kill_and_reap();
      claims = parse_progress(child.lines());
      output = child.text();
    }
    const bool killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    const bool completed = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    INFO("child stdout:\n" << output << "child stderr:\n" << slurp(stderr_path));
    auto after = read_disk(demo_dir, problems);
    INFO("before: " << describe(state) << "\nafter:  " << describe(after));
    auto v = violations(state, after, claims, completed, requested_now());
    // A run that finished consumed any flag left and verified every index ready. A rebuild the
    // demo asked for stays requested until a run sees one to its end (a later request of the
    // same run included); the test's own requests only until a run finishes.
    for (const auto& id : claims.rebuild_asked) demo_asked.insert(id);
    for (const auto& id : claims.rebuilt) demo_asked.erase(id);
    if (completed) {
      test_asked.clear();
      demo_asked.clear();
    }
    for (const auto& p : problems) v.push_back(p);
    std::string found;
    for (const auto& s : v) found += s + "\n";
    INFO(found);
    REQUIRE((killed || completed));  // an early exit is a failure of its own (stderr says why)
    REQUIRE(v.empty());
    if (completed) {
      CHECK_THAT(output, Catch::Contains("dix demo: verified"));
      ++completed_runs;
    } else {
      ++kills;
    }
    std::cout << plan << (completed ? " → finished, verified" : " → killed") << "; " << describe(after)
              << std::endl;
    state = std::move(after);
  }

  // The last run ends normally: the demo exits 0 only when every index equals the projection of
  // the primary store (every key, record id and version, nothing else).
  demo_child last(
      {DIX_BINARY, "demo", "--dir", demo_dir.string(), "--records", "200", "--rate", "0", "--timeout", "600"},
      stderr_path);
  const bool ended = last.read_to_end();
  const int status = last.kill_and_reap();
  INFO("final run stdout:\n" << last.text() << "stderr:\n" << slurp(stderr_path));
  REQUIRE(ended);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  CHECK_THAT(last.text(), Catch::Contains("verify by-category: OK"));
  CHECK_THAT(last.text(), Catch::Contains("verify by-brand: OK"));
  CHECK_THAT(last.text(), Catch::Contains("verify fulltext: OK"));
  CHECK_THAT(last.text(), Catch::Contains("verify similar: OK"));
  CHECK_THAT(last.text(), Catch::Contains("dix demo: verified"));
  // The final run ends ready: its progress lines must parse, or the claims checked after every
  // kill (committed and durable sequences, published states) would silently check nothing.
  auto final_claims = parse_progress(last.lines());
  CHECK(final_claims.latest_sequence > 0);
  for (const auto& id : index_ids) {
    CHECK(final_claims.published.count(id) == 1);
    CHECK(final_claims.durable_sequence[id] > 0);
  }
  auto after = read_disk(demo_dir, problems);
  auto v = violations(state, after, final_claims, true, requested_now());
  for (const auto& p : problems) v.push_back(p);
  std::string found;
  for (const auto& s : v) found += s + "\n";
  INFO(found);
  REQUIRE(v.empty());
  auto seconds = std::chrono::duration<double>(steady::now() - started).count();
  std::cout << "kill test: seed " << seed << ": " << kills << " kills, " << completed_runs
            << " runs finished before their kill (verified), final run verified; " << describe(after) << "; "
            << seconds << " s" << std::endl;
}
