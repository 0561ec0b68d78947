#include <catch2/catch.hpp>

#include <fcntl.h>

#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>

#include "adapters/metrics_segment.hpp"
#include "adapters/readiness_segment.hpp"
#include "adapters/test_support.hpp"
#include "cli/dix_cli.hpp"
#include "core/bytes.hpp"
#include "support/file_bytes.hpp"
#include "support/prom_text.hpp"

using namespace dix;
using dix::test::temp_dir;
namespace fs = std::filesystem;

namespace {

// Every wait on the child is bounded by this; a child still running then is killed.
constexpr std::chrono::seconds failure_timeout{30};

using test::dix_cli;

fs::path make_home(const temp_dir& dir) {
  auto home = dir / "db";
  fs::create_directories(home);
  return fs::canonical(home);
}

std::shared_ptr<readiness_segment> attach(const fs::path& home) {
  auto s = readiness_segment::attach(home);
  if (!s) FAIL(s.error().to_string());
  return *s;
}

std::shared_ptr<segment_slot> claim(readiness_segment& s, std::string_view id) {
  auto slot = s.claim(id);
  if (!slot) FAIL(slot.error().to_string());
  return *slot;
}

// `id` claimed as its owner leaves it: an epoch minted, then `state` published.
struct owned_slot {
  std::shared_ptr<segment_slot> slot;
  epoch_t epoch = 0;
};
owned_slot own(readiness_segment& s, std::string_view id, readiness_state state = readiness_state::ready,
               readiness_reason reason = readiness_reason::none, std::uint32_t attempts = 0) {
  auto slot = claim(s, id);
  const auto epoch = slot->mint_epoch().value();
  slot->publish(state, reason, attempts);
  return {slot, epoch};
}

// The test process plays the runtime: three ids, claimed out of order, each in another state.
std::shared_ptr<readiness_segment> three_indexes(const fs::path& home) {
  auto segment = attach(home);
  auto category = claim(*segment, "by-category");
  category->raise_epoch_floor(2);
  category->publish(readiness_state::ready, readiness_reason::none, 0);
  auto brand = claim(*segment, "by-brand");
  brand->raise_epoch_floor(5);
  brand->publish(readiness_state::needs_rebuild, readiness_reason::log_retention, 2);
  auto other = claim(*segment, "a.x");
  CHECK(other->mint_epoch().value() == 1);
  other->publish(readiness_state::rebuilding, readiness_reason::rebuild_requested, 1);
  return segment;
}

// `dix status --watch` with stdout on a pipe; killed at scope exit if it is still running.
class watcher {
 public:
  watcher(const temp_dir& dir, std::vector<std::string> args) {
    args.insert(args.begin(), DIX_BINARY);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    auto err_path = dir / "watch-stderr.txt";
    // Made before the fork: the child of a threaded process may only make async-signal-safe
    // calls before exec (an allocation there can wait for ever on another thread's lock).
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE(err >= 0);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::fflush(nullptr);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::dup2(err, STDERR_FILENO);
      ::close(fds[0]);
      ::close(fds[1]);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(err);
    ::close(fds[1]);
    out_ = fds[0];
    deadline_ = std::chrono::steady_clock::now() + failure_timeout;
  }
  ~watcher() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(out_);
  }
  watcher(const watcher&) = delete;
  watcher& operator=(const watcher&) = delete;

  pid_t pid() const { return pid_; }

  // The next plain table: everything up to and including the blank line that ends it. Empty on
  // end of file or the failure timeout.
  // The next plain table, without the `at TIME` line --watch starts it with (checked here: ISO
  // 8601 UTC with milliseconds, issue 34).
  std::string next_table() {
    auto table = next_until("\n\n");
    if (table.rfind("at ", 0) != 0) {
      FAIL_CHECK("a --watch table without its time line: " << table);
      return table;
    }
    const auto line_end = table.find('\n');
    const auto stamp = table.substr(3, line_end - 3);
    CHECK(stamp.size() == 24);
    CHECK(stamp.back() == 'Z');
    CHECK(stamp[10] == 'T');
    return table.substr(line_end + 1);
  }
  // The next line (a --json table), with its newline.
  std::string next_line() { return next_until("\n"); }

  // Reads to end of file (the child closed stdout by exiting) and reaps it; -1 on the timeout.
  int exit_code() {
    while (fill()) {
    }
    if (!eof_) return -1;
    int status = 0;
    REQUIRE(::waitpid(pid_, &status, 0) == pid_);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  std::string rest() const { return buffer_; }

 private:
  std::string next_until(const std::string& end) {
    for (;;) {
      if (auto at = buffer_.find(end); at != std::string::npos) {
        auto text = buffer_.substr(0, at + end.size());
        buffer_.erase(0, at + end.size());
        return text;
      }
      if (!fill()) return {};
    }
  }

  // One blocking read, bounded by the deadline; false at end of file or past the deadline.
  bool fill() {
    if (eof_) return false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{out_, POLLIN, 0};
    int ready;
    do {
      ready = ::poll(&p, 1, static_cast<int>(left.count()));
    } while (ready < 0 && errno == EINTR);
    if (ready <= 0) return false;
    char chunk[4096];
    auto n = ::read(out_, chunk, sizeof chunk);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int out_ = -1;
  bool eof_ = false;
  std::string buffer_;
  std::chrono::steady_clock::time_point deadline_;
};

const std::string three_rows =
    "id           state          reason             attempts  epoch\n"
    "a.x          rebuilding     rebuild-requested  1         1\n"
    "by-brand     needs-rebuild  log-retention      2         5\n"
    "by-category  ready          none               0         2\n";

}  // namespace

TEST_CASE("dix status: one aligned line per backend id sorted by id with the names of formats.md §4.5", "[system][cli][status]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto segment = three_indexes(home);
  auto r = dix_cli(dir, {"status", "--db", home.string()});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(r.out == "db " + home.string() + "\nruntime attached\n" + three_rows);
}

TEST_CASE("dix status: --json prints the database, the attach state and every index", "[system][cli][status]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto segment = three_indexes(home);
  auto r = dix_cli(dir, {"status", "--db", home.string(), "--json"});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "{\"db\":\"" + home.string() +
                     "\",\"segment\":true,\"attached\":true,\"indexes\":["
                     "{\"id\":\"a.x\",\"state\":\"rebuilding\",\"reason\":\"rebuild-requested\","
                     "\"rebuild_attempts\":1,\"owner_epoch\":1,\"hold\":\"none\",\"rebuild_requested\":false},"
                     "{\"id\":\"by-brand\",\"state\":\"needs-rebuild\",\"reason\":\"log-retention\","
                     "\"rebuild_attempts\":2,\"owner_epoch\":5,\"hold\":\"none\",\"rebuild_requested\":false},"
                     "{\"id\":\"by-category\",\"state\":\"ready\",\"reason\":\"none\","
                     "\"rebuild_attempts\":0,\"owner_epoch\":2,\"hold\":\"none\",\"rebuild_requested\":false}]}\n");
}

TEST_CASE("dix status: an index whose backend defers for want of disk space says so, and so does the store below or near its reserve (decision 0013)", "[system][cli][status][space]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto segment = three_indexes(home);
  claim(*segment, "by-brand")->set_hold(backend_hold::low_disk_space);
  auto plain = dix_cli(dir, {"status", "--db", home.string()});
  CHECK(plain.exit_code == 0);
  CHECK(plain.out == "db " + home.string() + "\nruntime attached\n" + three_rows +
                         "by-brand: deliveries deferred (low-disk-space): the filesystem of its index is below the "
                         "backend's free-space reserve; they resume by themselves when space is freed\n");
  auto json = dix_cli(dir, {"status", "--db", home.string(), "--json"});
  CHECK_THAT(json.out, Catch::Contains("\"owner_epoch\":5,\"hold\":\"low-disk-space\",\"rebuild_requested\":false}"));
  CHECK_THAT(json.out, !Catch::Contains("store_space"));  // no runtime stored the store's reserve

  // A reserve no filesystem here can meet (1 TiB) is always below; one of 1 MiB is neither.
  segment->set_store_reserve(1ull << 40);
  plain = dix_cli(dir, {"status", "--db", home.string()});
  CHECK_THAT(plain.out, Catch::Contains("runtime attached\nstore " + home.string() + ": ") &&
                            Catch::Contains(" MiB free on its filesystem (") &&
                            Catch::Contains("below its free-space reserve of 1048576.0 MiB: commits are refused (io_error) until space is freed\n"));
  json = dix_cli(dir, {"status", "--db", home.string(), "--json"});
  CHECK_THAT(json.out, Catch::Contains(",\"store_space\":{\"available_bytes\":") &&
                           Catch::Contains(",\"reserve_bytes\":1099511627776,\"below_reserve\":true}}"));
  segment->set_store_reserve(1u << 20);
  plain = dix_cli(dir, {"status", "--db", home.string()});
  CHECK_THAT(plain.out, !Catch::Contains("store " + home.string()));
  json = dix_cli(dir, {"status", "--db", home.string(), "--json"});
  CHECK_THAT(json.out, Catch::Contains(",\"reserve_bytes\":1048576,\"below_reserve\":false}}"));
}

TEST_CASE("dix status: without an attached runtime every id reads unknown with its stored epoch", "[system][cli][status]") {
  temp_dir dir;
  auto home = make_home(dir);
  three_indexes(home).reset();  // the runtime detaches; the slots keep their last states
  auto r = dix_cli(dir, {"status", "--db", home.string()});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "db " + home.string() +
                     "\nno runtime attached: every id reads unknown with its stored epoch\n"
                     "id           state    reason  attempts  epoch\n"
                     "a.x          unknown  none    0         1\n"
                     "by-brand     unknown  none    0         5\n"
                     "by-category  unknown  none    0         2\n");
  auto json = dix_cli(dir, {"status", "--db", home.string(), "--json"});
  CHECK(json.exit_code == 0);
  CHECK_THAT(json.out, Catch::Contains("\"attached\":false"));
  CHECK_THAT(json.out, Catch::Contains("{\"id\":\"by-brand\",\"state\":\"unknown\",\"reason\":\"none\","
                                       "\"rebuild_attempts\":0,\"owner_epoch\":5,\"hold\":\"none\",\"rebuild_requested\":false}"));
}

TEST_CASE("dix status: a database without a segment prints a note and exits 0", "[system][cli][status]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto r = dix_cli(dir, {"status", "--db", home.string()});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "no readiness segment at " + (home / "dix").string() + " (no runtime has attached)\n" +
                     "and no store: " + home.string() + " holds no RocksDB CURRENT file\n");
  auto json = dix_cli(dir, {"status", "--db", home.string(), "--json"});
  CHECK(json.exit_code == 0);
  CHECK(json.out == "{\"db\":\"" + home.string() + "\",\"segment\":false,\"attached\":false,\"indexes\":[]}\n");
  CHECK_FALSE(fs::exists(home / "dix"));  // a reader creates nothing
}

TEST_CASE("dix status: a segment of another layout exits 3 naming the reason and the remedy", "[system][cli][status]") {
  temp_dir dir;
  auto home = make_home(dir);
  attach(home).reset();
  auto path = home / "dix" / "readiness.seg";
  test::patch_file(path, 8, test::le(std::uint32_t{2}));  // layout_version (formats.md §4.2)
  auto r = dix_cli(dir, {"status", "--db", home.string()});
  CHECK(r.exit_code == 3);
  CHECK(r.out.empty());
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_THAT(r.err, Catch::StartsWith("dix status: segment_layout_mismatch"));
  CHECK_THAT(r.err, Catch::Contains("found layout version 2, expected layout version 1"));
  CHECK_THAT(r.err, Catch::Contains("stop every process using this database, then delete " + path.string()));
  auto json = dix_cli(dir, {"status", "--db", home.string(), "--json"});
  CHECK(json.exit_code == 3);
  CHECK_THAT(json.out, Catch::Contains("\"error\":{\"reason\":\"segment_layout_mismatch\""));
}

TEST_CASE("dix status: bad arguments and a missing database exit 2", "[system][cli][status]") {
  temp_dir dir;
  auto home = make_home(dir);
  CHECK(dix_cli(dir, {"status"}).exit_code == 2);
  CHECK(dix_cli(dir, {"status", "--db"}).exit_code == 2);
  CHECK(dix_cli(dir, {"status", "--db", home.string(), "--bogus"}).exit_code == 2);
  CHECK(dix_cli(dir, {"status", "--db", home.string(), "extra"}).exit_code == 2);
  CHECK(dix_cli(dir, {"status", "--db", home.string(), "--updates", "1"}).exit_code == 2);
  CHECK(dix_cli(dir, {"status", "--db", home.string(), "--watch", "--updates", "0"}).exit_code == 2);
  auto usage = dix_cli(dir, {"status", "--db", home.string(), "--json", "--frobnicate"});
  CHECK(usage.exit_code == 2);
  // One line that names the argument (issue 12 item 7), not the whole usage.
  CHECK(usage.err == "dix status: unknown option --frobnicate (dix status --help for usage)\n");
  auto missing = dix_cli(dir, {"status", "--db", (dir / "nothing").string()});
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Catch::Contains((dir / "nothing").string() + ": no such directory"));
  std::ofstream(dir / "plain-file") << "x";
  auto file = dix_cli(dir, {"status", "--db", (dir / "plain-file").string()});
  CHECK(file.exit_code == 2);
  CHECK_THAT(file.err, Catch::Contains("not a directory"));
  auto help = dix_cli(dir, {"status", "--help"});
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Catch::Contains("The owner's lag figures come from the metrics segment too"));
}

TEST_CASE("dix status: reads the segment beside a running owner and never opens the store's files", "[system][cli][status]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto store = test::open_store(home);  // the owner: RocksDB open, its LOCK held
  auto segment = three_indexes(home);
  int events = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  REQUIRE(events >= 0);
  REQUIRE(::inotify_add_watch(events, home.c_str(), IN_OPEN) >= 0);

  auto r = dix_cli(dir, {"status", "--db", home.string()});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::EndsWith(three_rows));

  // Opens reported for entries of the store directory. An idle RocksDB opens none of these, and
  // a read-only open would read CURRENT, IDENTITY and the MANIFEST; LOCK is never to be touched.
  std::vector<std::string> opened;
  alignas(inotify_event) char buffer[4096];
  ssize_t n;
  while ((n = ::read(events, buffer, sizeof buffer)) > 0) {
    for (char* p = buffer; p < buffer + n;) {
      auto* e = reinterpret_cast<inotify_event*>(p);
      if (e->len > 0 && (e->mask & IN_ISDIR) == 0) opened.emplace_back(e->name);
      p += sizeof(inotify_event) + e->len;
    }
  }
  ::close(events);
  for (const auto& name : opened) {
    INFO(name);
    CHECK(name != "LOCK");
    CHECK(name != "CURRENT");
    CHECK(name != "IDENTITY");
    CHECK(name.rfind("MANIFEST", 0) != 0);
    CHECK(name.rfind("OPTIONS", 0) != 0);
  }
  REQUIRE(store->close());
}

TEST_CASE("dix status --watch: reprints when a slot changes and exits after --updates 1", "[system][cli][status]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto segment = three_indexes(home);
  watcher w(dir, {"status", "--db", home.string(), "--watch", "--updates", "1"});
  auto first = w.next_table();
  CHECK(first == "db " + home.string() + "\nruntime attached\n" + three_rows + "\n");

  // The child printed the table after loading the change counter, so this change wakes it.
  claim(*segment, "by-category")->publish(readiness_state::rebuilding, readiness_reason::reload, 1);
  auto second = w.next_table();
  CHECK_THAT(second, Catch::Contains("by-category  rebuilding     reload             1         2\n"));
  CHECK_THAT(second, Catch::Contains("by-brand     needs-rebuild  log-retention      2         5\n"));
  CHECK(w.exit_code() == 0);
  CHECK(w.rest().empty());
}

TEST_CASE("dix status --watch: notices a segment created after it started and a runtime detaching", "[system][cli][status]") {
  temp_dir dir;
  auto home = make_home(dir);
  watcher w(dir, {"status", "--db", home.string(), "--watch", "--updates", "2"});
  CHECK(w.next_table() == "no readiness segment at " + (home / "dix").string() + " (no runtime has attached)\n" +
                              "and no store: " + home.string() + " holds no RocksDB CURRENT file\n\n");

  // The segment is prepared beside the database and renamed into place, so the child sees it
  // complete or not at all. The OFD lock belongs to the open attach.lock, which the rename keeps.
  // Neither the new file nor the detach moves a counter the child waits on: its tick finds them.
  fs::create_directories(dir / "staging");
  auto segment = three_indexes(fs::canonical(dir / "staging"));
  fs::rename(dir / "staging" / "dix", home / "dix");
  CHECK(w.next_table() == "db " + home.string() + "\nruntime attached\n" + three_rows + "\n");
  segment.reset();
  auto detached = w.next_table();
  CHECK_THAT(detached, Catch::Contains("no runtime attached"));
  CHECK_THAT(detached, Catch::Contains("by-brand     unknown  none    0         5\n"));
  CHECK(w.exit_code() == 0);
}

TEST_CASE("dix status --watch: SIGTERM and SIGINT stop it with exit status 0", "[system][cli][status]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto segment = three_indexes(home);
  for (int signal : {SIGTERM, SIGINT}) {
    INFO(signal);
    watcher w(dir, {"status", "--db", home.string(), "--watch", "--json"});
    // The first table is printed after the handlers are installed.
    CHECK_THAT(w.next_line(), Catch::Contains("\"attached\":true"));
    REQUIRE(::kill(w.pid(), signal) == 0);
    CHECK(w.exit_code() == 0);
    CHECK(w.rest().empty());
  }
}

TEST_CASE("dix status: an index rebuilt because it has no cursor reads cursor-missing with its attempt, fresh or not (decision 0015)",
          "[system][cli][status]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto segment = attach(home);
  // A never-built index and one whose cursor was lost take the same path (reset, scan): the
  // slot cannot tell them apart, and both are true as "cursor-missing".
  claim(*segment, "fresh")->publish(readiness_state::rebuilding, readiness_reason::cursor_missing, 1);
  auto plain = dix_cli(dir, {"status", "--db", home.string()});
  INFO(plain.out << plain.err);
  CHECK(plain.exit_code == 0);
  CHECK_THAT(plain.out, Catch::Contains("fresh  rebuilding  cursor-missing  1"));
  auto json = dix_cli(dir, {"status", "--db", home.string(), "--json"});
  CHECK_THAT(json.out, Catch::Contains("{\"id\":\"fresh\",\"state\":\"rebuilding\",\"reason\":\"cursor-missing\""));
}

TEST_CASE("dix status: a rebuilding index shows the owner's scan progress in a line a person reads and in --json, but not figures of another epoch or of an index no longer rebuilding",
          "[system][cli][status][metrics]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto segment = attach(home);
  auto [brand, epoch] = own(*segment, "by-brand", readiness_state::rebuilding, readiness_reason::rebuild_requested, 1);
  auto category = claim(*segment, "by-category");
  category->publish(readiness_state::ready, readiness_reason::none, 0);
  segment->metrics().write(brand->index(), metrics_block{1, rebuild_progress{epoch, 6144, 14000, 52000, 151, false}});
  // An old block of by-category (an earlier rebuild): it is ready now, nothing to show.
  segment->metrics().write(category->index(), metrics_block{1, rebuild_progress{category->owner_epoch(), 9, 9, 9, 0, true}});

  auto plain = dix_cli(dir, {"status", "--db", home.string()});
  INFO(plain.out << plain.err);
  CHECK(plain.exit_code == 0);
  CHECK_THAT(plain.out, Catch::EndsWith("by-category  ready       none               0         0\n"
                                        "progress by-brand: 6144/14000 records (43%), 52000 records/s, ETA 0.1 s\n"));
  auto json = dix_cli(dir, {"status", "--db", home.string(), "--json"});
  CHECK(json.exit_code == 0);
  CHECK_THAT(json.out, Catch::Contains("{\"id\":\"by-brand\",\"state\":\"rebuilding\",\"reason\":\"rebuild-requested\","
                                       "\"rebuild_attempts\":1,\"owner_epoch\":" + std::to_string(epoch) +
                                       ",\"hold\":\"none\",\"rebuild_requested\":false,\"rebuilt_records\":6144,\"estimated_records\":14000,\"scan_records_per_s\":52000,"
                                       "\"rebuild_eta_ms\":151,\"scan_ended\":false}"));
  CHECK_THAT(json.out, Catch::Contains("{\"id\":\"by-category\",\"state\":\"ready\",\"reason\":\"none\","
                                       "\"rebuild_attempts\":0,\"owner_epoch\":0,\"hold\":\"none\",\"rebuild_requested\":false}"));

  // The scan ended: the line says what comes next.
  segment->metrics().write(brand->index(), metrics_block{2, rebuild_progress{epoch, 14000, 14000, 51000, 0, true}});
  CHECK_THAT(dix_cli(dir, {"status", "--db", home.string()}).out,
             Catch::Contains("progress by-brand: scan done: 14000 records at 51000 records/s, replaying the log from the boundary\n"));

  // The next attempt minted a new epoch and has not scanned yet: the old figures are not its own.
  CHECK(brand->mint_epoch().value() == epoch + 1);
  auto next = dix_cli(dir, {"status", "--db", home.string()});
  CHECK_THAT(next.out, !Catch::Contains("progress "));
  CHECK_THAT(dix_cli(dir, {"status", "--db", home.string(), "--json"}).out, !Catch::Contains("rebuilt_records"));
}

TEST_CASE("dix status: a metrics segment of another layout exits 3 naming it and the remedy", "[system][cli][status][metrics]") {
  temp_dir dir;
  auto home = make_home(dir);
  attach(home).reset();
  auto path = home / "dix" / "metrics.seg";
  test::patch_file(path, 8, test::le(std::uint32_t{3}));  // layout_version (formats-metrics.md §1)
  auto r = dix_cli(dir, {"status", "--db", home.string()});
  CHECK(r.exit_code == 3);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_THAT(r.err, Catch::StartsWith("dix status: segment_layout_mismatch: metrics segment " + path.string()) &&
                        Catch::Contains("found layout version 3, expected layout version 2") &&
                        Catch::Contains("then delete " + path.string()));
}

TEST_CASE("dix status --watch: while a progress line is shown it reprints the owner's new figures, which move no change counter", "[system][cli][status][metrics]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto segment = attach(home);
  auto [brand, epoch] = own(*segment, "by-brand", readiness_state::rebuilding, readiness_reason::rebuild_requested, 1);
  segment->metrics().write(brand->index(), metrics_block{1, rebuild_progress{epoch, 100, 1000, 5000, 180, false}});
  watcher w(dir, {"status", "--db", home.string(), "--watch", "--updates", "1"});
  CHECK_THAT(w.next_table(), Catch::EndsWith("progress by-brand: 100/1000 records (10%), 5000 records/s, ETA 0.1 s\n\n"));
  const auto counter = segment->segment_change_counter();
  segment->metrics().write(brand->index(), metrics_block{2, rebuild_progress{epoch, 600, 1000, 5000, 80, false}});
  CHECK(segment->segment_change_counter() == counter);  // only the metrics segment's counter moved
  // Reprinted within the watch's one-second tick.
  CHECK_THAT(w.next_table(), Catch::EndsWith("progress by-brand: 600/1000 records (60%), 5000 records/s, ETA 0.0 s\n\n"));
  CHECK(w.exit_code() == 0);
}

namespace {

std::uint64_t wall_ns_now() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count());
}

// The owner's lag figures as a runner publishes them (decision 0021), taken `ago_ms` before now.
lag_figures owner_lag(epoch_t epoch, runner_state state, std::uint64_t ago_ms) {
  lag_figures l;
  l.epoch = epoch;
  l.taken_wall_ns = wall_ns_now() - ago_ms * 1'000'000;
  l.state = state;
  l.max_accepted_batches_ahead = 64;
  l.log_count = 1;
  l.logs = {log_lag_figures{0, 0, -1, "main"}};
  return l;
}

}  // namespace

TEST_CASE("dix status: the owner's lag figures say in words and fields what holds an index, aged to now, and figures of another epoch are not shown",
          "[system][cli][status][lag]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto segment = attach(home);
  auto [brand, epoch] = own(*segment, "by-brand");
  auto [category, category_epoch] = own(*segment, "by-category");
  auto [stale, stale_epoch] = own(*segment, "stale");
  auto [colour, colour_epoch] = own(*segment, "by-colour");

  // by-brand: parked in deferred since 3 s before the figures, taken 2 s ago: 5 s by now.
  auto deferred = owner_lag(epoch, runner_state::deferred, 2000);
  deferred.stalled_ms = deferred.lag_ms = 3000;
  deferred.stalled_growing = true;
  deferred.lag_gate = lag_gate_exceeded;
  deferred.logs = {log_lag_figures{40, 0, 90'000, "main"}};
  segment->metrics().write(brand->index(), metrics_block{1, std::nullopt, deferred});
  // by-category: catching up, 5000 sequences behind at 2000/s.
  auto behind = owner_lag(category_epoch, runner_state::running, 0);
  behind.cursor_lag_ms = behind.lag_ms = 800;
  behind.logs = {log_lag_figures{5000, 2000, -1, "main"}};
  segment->metrics().write(category->index(), metrics_block{1, std::nullopt, behind});
  // by-colour: following a steady writer, the durable position a flush interval behind.
  auto following = owner_lag(colour_epoch, runner_state::running, 0);
  following.cursor_lag_ms = following.lag_ms = 874;
  following.logs = {log_lag_figures{8740, 10000, -1, "main"}};
  segment->metrics().write(colour->index(), metrics_block{1, std::nullopt, following});
  // stale: an earlier owner's figures (its epoch is older than the slot's).
  segment->metrics().write(stale->index(), metrics_block{1, std::nullopt, owner_lag(stale_epoch - 1, runner_state::deferred, 0)});

  auto plain = dix_cli(dir, {"status", "--db", home.string()});
  INFO(plain.out << plain.err);
  CHECK(plain.exit_code == 0);
  CHECK_THAT(plain.out, Catch::Contains("activity by-brand: stalled (backend-deferred): the backend defers deliveries; parked for "));
  CHECK_THAT(plain.out, Catch::Contains("gate by-brand: exceeded: commits to its tables are refused (index_lagging, retryable)\n"));
  CHECK_THAT(plain.out, Catch::Contains("retention by-brand log main: 90.0 s before the WAL file holding its durable anchor ages out"));
  // The lag is said once, in the words.
  CHECK_THAT(plain.out, Catch::Contains("activity by-category: catching up: lag 0.8 s, 5000 sequences behind at 2000 sequences/s, ETA 2.5 s\n"));
  CHECK_THAT(plain.out, Catch::Contains("activity by-colour: following the log, lag 0.9 s\n"));
  CHECK_THAT(plain.out, !Catch::Contains("activity stale"));

  auto json = dix_cli(dir, {"status", "--db", home.string(), "--json"});
  INFO(json.out);
  CHECK(json.exit_code == 0);
  CHECK_THAT(json.out, Catch::Contains("\"activity\":\"stalled\",\"stall_cause\":\"backend-deferred\",\"lag_ms\":"));
  CHECK_THAT(json.out, Catch::Contains("\"gate\":\"exceeded\",\"gate_delay_us\":0"));
  CHECK_THAT(json.out, Catch::Contains("\"activity\":\"catching-up\",\"stall_cause\":\"none\",\"lag_ms\":800"));
  CHECK_THAT(json.out, Catch::Contains("\"read_per_s\":2000,\"eta_ms\":2500"));
  CHECK_THAT(json.out, Catch::Contains("\"activity\":\"following\",\"stall_cause\":\"none\",\"lag_ms\":874"));
  CHECK_THAT(json.out, Catch::Contains("\"logs\":[{\"log\":\"main\",\"position\":0,\"sequence_lag\":40,\"read_per_s\":0,\"retention_headroom_ms\":90000}]"));
  // Aged by the reader: at least the 3 s taken plus the 2 s since.
  const auto at = json.out.find("\"stalled_ms\":");
  REQUIRE(at != std::string::npos);
  CHECK(std::stoull(json.out.substr(at + 13)) >= 5000);
  // The stale id shows its readiness only.
  CHECK_THAT(json.out, Catch::Contains("{\"id\":\"stale\",\"state\":\"ready\",\"reason\":\"none\",\"rebuild_attempts\":0,\"owner_epoch\":" +
                                       std::to_string(stale_epoch) + ",\"hold\":\"none\",\"rebuild_requested\":false}"));
}

TEST_CASE("dix status --prometheus: readiness, the owner's lag figures and the activity in the text format, which our parser and promtool accept",
          "[system][cli][status][prometheus]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto segment = attach(home);
  auto [brand, epoch] = own(*segment, "by-brand");
  claim(*segment, "Odd.id-2")->publish(readiness_state::needs_rebuild, readiness_reason::log_retention, 1);
  auto capped = owner_lag(epoch, runner_state::waiting_durable, 0);
  capped.accepted_batches = 64;
  capped.stalled_ms = capped.lag_ms = 2500;
  capped.lag_gate = 250;
  // Two logs, named as the owner's runner_metrics names them (1 and 64 bytes: decision 0030).
  const std::string long_log(64, 'w');
  capped.log_count = 2;
  capped.logs = {log_lag_figures{12, 0, 30'000, "m"}, log_lag_figures{3, 0, -1, long_log}};
  segment->metrics().write(brand->index(), metrics_block{1, std::nullopt, capped});

  auto r = dix_cli(dir, {"status", "--db", home.string(), "--prometheus"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  auto parsed = test::parse_prometheus(r.out);
  for (const auto& p : parsed.problems) FAIL_CHECK(p);
  for (const auto& p : test::metric_name_problems(parsed)) FAIL_CHECK(p);
  CHECK(parsed.value("dix_runtime_attached") == 1);
  CHECK(parsed.value("dix_readiness_state", {{"index", "by-brand"}, {"state", "ready"}}) == 1);
  CHECK(parsed.value("dix_readiness_state", {{"index", "by-brand"}, {"state", "rebuilding"}}) == 0);
  CHECK(parsed.value("dix_index_stalled", {{"index", "by-brand"}, {"cause", "accepted-cap"}}) == 1);
  CHECK(parsed.value("dix_index_activity", {{"index", "by-brand"}, {"activity", "stalled"}}) == 1);
  CHECK(parsed.value("dix_accepted_batches", {{"index", "by-brand"}}) == 64);
  CHECK(parsed.value("dix_gate_delay_seconds", {{"index", "by-brand"}}) == Approx(0.00025));
  CHECK(parsed.value("dix_log_sequence_lag", {{"index", "by-brand"}, {"log", "m"}}) == 12);
  CHECK(parsed.value("dix_log_retention_headroom_seconds", {{"index", "by-brand"}, {"log", "m"}}) == 30);
  CHECK(parsed.value("dix_log_sequence_lag", {{"index", "by-brand"}, {"log", long_log}}) == 3);
  CHECK_FALSE(parsed.value("dix_log_sequence_lag", {{"index", "by-brand"}, {"log", "0"}}));
  CHECK(parsed.value("dix_lag_seconds", {{"index", "by-brand"}}) >= 2.5);
  // An index without lag figures has its readiness and activity only.
  CHECK(parsed.value("dix_readiness_state", {{"index", "Odd.id-2"}, {"state", "needs-rebuild"}}) == 1);
  CHECK(parsed.value("dix_index_stalled", {{"index", "Odd.id-2"}, {"cause", "rebuild"}}) == 1);
  CHECK_FALSE(parsed.value("dix_lag_seconds", {{"index", "Odd.id-2"}}));
  CHECK(parsed.types.at("dix_lag_seconds") == "gauge");
  if (auto verdict = test::promtool_problems(r.out)) {
    CHECK(*verdict == "");
  } else {
    WARN("promtool is not installed (Debian package prometheus): the promtool check is skipped");
  }
  auto both = dix_cli(dir, {"status", "--db", home.string(), "--prometheus", "--json"});
  CHECK(both.exit_code == 2);
  CHECK_THAT(both.err, Catch::Contains("--json and --prometheus exclude each other"));
}

TEST_CASE("dix status: an older runtime's layout-1 metrics segment, which stores no log names, is read as before, each log labelled by its position in text, JSON and Prometheus",
          "[system][cli][status][names]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto segment = attach(home);  // stands for the older runtime, attached
  auto [brand, epoch] = own(*segment, "by-brand");
  const auto path = home / "dix" / "metrics.seg";
  test::replace_file(path, test::layout_1_metrics_file(segment_layout::default_slot_count, brand->index(), epoch, wall_ns_now()));
  // A retention forecast of 90 s for its log (formats-metrics.md §2.1, log 0's third field).
  test::patch_file(path, 128 + std::size_t{brand->index()} * 256 + 160, test::le(std::uint64_t{90'000}));

  auto plain = dix_cli(dir, {"status", "--db", home.string()});
  INFO(plain.out << plain.err);
  CHECK(plain.exit_code == 0);
  CHECK_THAT(plain.out, Catch::Contains("retention by-brand log 0: 90.0 s before the WAL file holding its durable anchor ages out"));

  auto json = dix_cli(dir, {"status", "--db", home.string(), "--json"});
  INFO(json.out << json.err);
  CHECK(json.exit_code == 0);
  CHECK_THAT(json.out, Catch::Contains("\"logs\":[{\"log\":\"0\",\"position\":0,\"sequence_lag\":42,"));
  auto prom = dix_cli(dir, {"status", "--db", home.string(), "--prometheus"});
  INFO(prom.out << prom.err);
  CHECK(prom.exit_code == 0);
  auto parsed = test::parse_prometheus(prom.out);
  for (const auto& p : parsed.problems) FAIL_CHECK(p);
  CHECK(parsed.value("dix_log_sequence_lag", {{"index", "by-brand"}, {"log", "0"}}) == 42);
  if (auto verdict = test::promtool_problems(prom.out)) CHECK(*verdict == "");
}

TEST_CASE("dix status: a pending rebuild request shows in the plain table, in --json and in --prometheus, attached or not, until an owner takes it",
          "[system][cli][status][rebuild]") {
  temp_dir dir;
  auto home = make_home(dir);
  {
    auto segment = attach(home);
    own(*segment, "by-brand");
    own(*segment, "by-category");
  }  // detached: a request made now waits for the next owner
  auto asked = dix_cli(dir, {"rebuild", "--db", home.string(), "by-brand"});
  REQUIRE(asked.exit_code == 0);
  auto r = dix_cli(dir, {"status", "--db", home.string()});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("\nrebuild by-brand: requested, not yet taken by an owner (no runtime attached: the "
                                    "next one to own the index rebuilds it)\n"));
  CHECK_THAT(r.out, !Catch::Contains("rebuild by-category"));
  auto json = dix_cli(dir, {"status", "--db", home.string(), "--json"});
  CHECK_THAT(json.out, Catch::Contains("{\"id\":\"by-brand\",\"state\":\"unknown\",\"reason\":\"none\",\"rebuild_attempts\":0,"
                                       "\"owner_epoch\":1,\"hold\":\"none\",\"rebuild_requested\":true}"));
  CHECK_THAT(json.out, Catch::Contains("\"id\":\"by-category\"") && Catch::Contains("\"rebuild_requested\":false}"));
  auto prom = dix_cli(dir, {"status", "--db", home.string(), "--prometheus"});
  auto parsed = test::parse_prometheus(prom.out);
  for (const auto& p : parsed.problems) FAIL_CHECK(p);
  for (const auto& p : test::metric_name_problems(parsed)) FAIL_CHECK(p);
  CHECK(parsed.value("dix_rebuild_requested", {{"index", "by-brand"}}) == 1);
  CHECK(parsed.value("dix_rebuild_requested", {{"index", "by-category"}}) == 0);
  CHECK(parsed.types.at("dix_rebuild_requested") == "gauge");
  // An owner attached: still shown, without the note, until it consumes the request.
  auto segment = attach(home);
  auto attached = dix_cli(dir, {"status", "--db", home.string()});
  CHECK_THAT(attached.out, Catch::Contains("\nrebuild by-brand: requested, not yet taken by an owner\n"));
  auto slot = claim(*segment, "by-brand");
  REQUIRE(slot->consume_rebuild_request());
  auto taken = dix_cli(dir, {"status", "--db", home.string(), "--json"});
  CHECK_THAT(taken.out, !Catch::Contains("\"rebuild_requested\":true"));
}

TEST_CASE("dix status: an empty, a truncated and a directory readiness.seg are each named for what they are", "[system][cli][status]") {
  temp_dir dir;
  auto home = make_home(dir);
  attach(home).reset();
  const auto path = home / "dix" / "readiness.seg";
  const auto full = fs::file_size(path);
  fs::resize_file(path, 0);  // a creation interrupted before its ftruncate
  auto empty = dix_cli(dir, {"status", "--db", home.string()});
  INFO(empty.out << empty.err);
  CHECK(empty.exit_code == 0);
  CHECK(empty.out == "readiness segment " + path.string() +
                         " is empty (a runtime is creating it, or its creation was interrupted): no runtime has attached "
                         "to it; the next runtime to attach creates it again\n");
  fs::remove(path);
  attach(home).reset();
  fs::resize_file(path, 100);
  REQUIRE(full > 100);
  auto truncated = dix_cli(dir, {"status", "--db", home.string()});
  INFO(truncated.out << truncated.err);
  CHECK(truncated.exit_code == 3);
  CHECK_THAT(truncated.err, Catch::Contains("found a file of 100 bytes that is truncated, shorter than its own header, expected "
                                            "layout version 1 (at least "));
  CHECK_THAT(truncated.err, !Catch::Contains("found layout version 1"));
  fs::remove(path);
  fs::create_directory(path);
  auto directory = dix_cli(dir, {"status", "--db", home.string()});
  INFO(directory.out << directory.err);
  CHECK(directory.exit_code == 1);
  CHECK_THAT(directory.err, Catch::StartsWith("dix status: io_error: readiness segment " + path.string() +
                                              ": not a regular file (a directory)"));
  CHECK_THAT(directory.err, !Catch::Contains("No such device"));
}

TEST_CASE("dix status, dix rebuild, dix wal and dix write take the directory given to dix demo or dix serve as --dir and read its store DIR/primary (issue 34 item 12)", "[system][cli][status]") {
  temp_dir dir;
  const auto demo_dir = dir / "demo";
  REQUIRE(dix_cli(dir, {"demo", "--dir", demo_dir.string(), "--records", "20", "--rate", "0", "--indexes", "secondary"}).exit_code == 0);
  auto status = dix_cli(dir, {"status", "--db", demo_dir.string()});
  INFO(status.out << status.err);
  CHECK(status.exit_code == 0);
  CHECK_THAT(status.out, Catch::StartsWith("db " + fs::canonical(demo_dir / "primary").string() + "\n"));
  CHECK_THAT(status.out, Catch::Contains("by-category"));
  auto json = dix_cli(dir, {"status", "--db", demo_dir.string(), "--json"});
  CHECK_THAT(json.out, Catch::Contains("\"segment\":true"));
  auto rebuild = dix_cli(dir, {"rebuild", "--db", demo_dir.string(), "by-brand"});
  CHECK(rebuild.exit_code == 0);
  CHECK(rebuild.out == "rebuild requested for by-brand\n");
  auto wal = dix_cli(dir, {"wal", "--db", demo_dir.string(), "--limit", "1"});
  CHECK(wal.exit_code == 0);
  CHECK_THAT(wal.out, Catch::StartsWith("log main\n"));
  // dix write too, naming the store it wrote to (a new user's trial: it refused the directory).
  auto write = dix_cli(dir, {"write", "--db", demo_dir.string(), "--records", "5"});
  INFO(write.err);
  CHECK(write.exit_code == 0);
  CHECK_THAT(write.out, Catch::EndsWith("to " + (demo_dir / "primary").string() + "; the last transaction starts at sequence " +
                                        write.out.substr(write.out.rfind(' ') + 1)));
  // A directory that is neither: as before, no segment.
  fs::create_directories(dir / "plain");
  CHECK_THAT(dix_cli(dir, {"status", "--db", (dir / "plain").string()}).out, Catch::StartsWith("no readiness segment at "));
}

namespace {
// Rewrites, in the segment file, the id of the slot holding `id` to `bytes` (and its length to
// `length`, default the new id's), as a damaged or hostile segment would hold it.
void rewrite_id(const fs::path& home, const std::string& id, const std::string& bytes, std::optional<std::uint32_t> length = {}) {
  const auto file = home / "dix" / "readiness.seg";
  const auto contents = test::read_file(file);
  const auto at = contents.find(id);
  REQUIRE(at != std::string::npos);
  REQUIRE(at >= 8);
  std::string padded = bytes;
  padded.resize(64, '\0');
  test::patch_file(file, at, padded);
  const std::uint32_t len = length.value_or(static_cast<std::uint32_t>(bytes.size()));
  std::string len_bytes(4, '\0');
  for (int i = 0; i < 4; ++i) len_bytes[static_cast<std::size_t>(i)] = static_cast<char>((len >> (8 * i)) & 0xFF);
  test::patch_file(file, at - 8, len_bytes);
}
}  // namespace

TEST_CASE("dix status: a corrupt slot id shows escaped the same way (backslash, x, two hex digits) in every output, a slot with an invalid id length and an id claimed twice are reported (issue 34 item 8)", "[system][cli][status]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto segment = three_indexes(home);
  claim(*segment, "zz.second");
  claim(*segment, "zz.broken");
  rewrite_id(home, "a.x", std::string("a\nb\rc\xff", 6));
  rewrite_id(home, "zz.second", "by-brand");
  rewrite_id(home, "zz.broken", "zz.broken", 4000);

  auto plain = dix_cli(dir, {"status", "--db", home.string()});
  INFO(plain.out << plain.err);
  CHECK(plain.exit_code == 0);
  CHECK(plain.out.find('\r') == std::string::npos);
  CHECK(plain.out.find('\xff') == std::string::npos);
  CHECK_THAT(plain.out, Catch::Contains("\na\\x0ab\\x0dc\\xff  "));  // one row, escaped
  CHECK_THAT(plain.out, Catch::Contains("problem: slot ") && Catch::Contains("has an id length of 4000 bytes (at most 64)"));
  CHECK_THAT(plain.out, Catch::Contains("repeats the id by-brand of slot"));
  std::size_t rows = 0;
  for (std::size_t at = plain.out.find("\nby-brand "); at != std::string::npos; at = plain.out.find("\nby-brand ", at + 1)) ++rows;
  CHECK(rows == 1);  // listed once
  CHECK_THAT(plain.out, !Catch::Contains("zz.broken"));

  auto json = dix_cli(dir, {"status", "--db", home.string(), "--json"});
  CHECK(json.exit_code == 0);
  CHECK_THAT(json.out, Catch::Contains("\"id\":\"a\\\\x0ab\\\\x0dc\\\\xff\""));
  CHECK_THAT(json.out, !Catch::Contains("\\u00"));
  CHECK_THAT(json.out, Catch::Contains("\"problems\":[\"slot "));

  auto prom = dix_cli(dir, {"status", "--db", home.string(), "--prometheus"});
  CHECK(prom.exit_code == 0);
  CHECK(prom.out.find('\r') == std::string::npos);
  CHECK_THAT(prom.out, Catch::Contains("index=\"a\\\\x0ab\\\\x0dc\\\\xff\""));
  CHECK_THAT(prom.out, Catch::Contains("dix_segment_problems 2\n"));
}

TEST_CASE("dix status: a readiness segment deleted under an attached runtime is named as such with exit 1, not as no runtime attached (issue 34 item 10)", "[system][cli][status]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto segment = three_indexes(home);  // attached: this process holds attach.lock
  fs::remove(home / "dix" / "readiness.seg");
  auto plain = dix_cli(dir, {"status", "--db", home.string()});
  INFO(plain.out << plain.err);
  CHECK(plain.exit_code == 1);
  CHECK_THAT(plain.out, Catch::StartsWith("problem: the readiness segment ") && Catch::Contains("is missing while a runtime is attached"));
  CHECK_THAT(plain.out, !Catch::Contains("no runtime has attached"));
  auto json = dix_cli(dir, {"status", "--db", home.string(), "--json"});
  CHECK(json.exit_code == 1);
  CHECK_THAT(json.out, Catch::Contains("\"segment\":false,\"attached\":true") && Catch::Contains("\"problems\":["));
  segment.reset();  // detached: nobody holds the lock any more
  auto after = dix_cli(dir, {"status", "--db", home.string()});
  CHECK(after.exit_code == 0);
  CHECK_THAT(after.out, Catch::StartsWith("no readiness segment at "));
}

TEST_CASE("dix status: a FIFO in place of readiness.seg or metrics.seg is refused at once, named, never waited on (issue 34 sweep)", "[system][cli][status]") {
  for (const auto* name : {"readiness.seg", "metrics.seg"}) {
    INFO(name);
    temp_dir dir;
    auto home = make_home(dir);
    { auto segment = three_indexes(home); }
    fs::remove(home / "dix" / name);
    REQUIRE(::mkfifo((home / "dix" / name).c_str(), 0600) == 0);
    auto r = dix_cli(dir, {"status", "--db", home.string()});  // before: blocked in open() for ever
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out + r.err, Catch::Contains(name) && Catch::Contains("not a regular file (a FIFO)"));
  }
}

TEST_CASE("dix status and dix rebuild: a path component longer than NAME_MAX, a symlink loop or a directory it may not search "
          "is one line of io_error and exit 1, as in every command, not a bad argument (a new user's trial: status said exit 2)",
          "[system][cli]") {
  dix::test::temp_dir dir, other;  // one set of hostile paths per directory
  dix::test::check_refuses_hostile_paths(dir, "status", [](const std::string& path) { return std::vector<std::string>{"--db", path}; });
  dix::test::check_refuses_hostile_paths(other, "rebuild",
                                         [](const std::string& path) { return std::vector<std::string>{"--db", path, "by-brand"}; });
}

TEST_CASE("dix status --json: a path the system refuses prints the error object on stdout beside the line on stderr, as other errors do",
          "[system][cli][status]") {
  dix::test::temp_dir dir;
  const auto too_long = dir / std::string(300, 'x');
  auto r = dix_cli(dir, {"status", "--db", too_long.string(), "--json"});
  CHECK(r.exit_code == 1);
  CHECK(r.out == "{\"db\":\"" + too_long.string() + "\",\"error\":{\"reason\":\"io_error\",\"message\":\"--db " + too_long.string() +
                     ": File name too long\"}}\n");
  CHECK_THAT(r.err, Catch::StartsWith("dix status: io_error: --db "));
}
