// `dix rebuild` (runtime/cli/cmd_rebuild.cpp) as a user runs it: --wait against a `dix serve`
// owner in another process, the refusal when no runtime is attached, and the failure of the
// attempt it asked for (the test process plays the owner there, so the failure is certain).
#include <catch2/catch.hpp>

#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "adapters/metrics_segment.hpp"
#include "adapters/readiness_segment.hpp"
#include "cli/dix_cli.hpp"
#include "harness/child_process.hpp"

using namespace dix;
using dix::test::dix_cli;
using dix::test::temp_dir;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr auto failure_timeout = 120s;

// The line of `out` that starts with `prefix`; empty when there is none.
std::string line_starting(const std::string& out, const std::string& prefix) {
  for (std::size_t at = 0; at < out.size();) {
    auto end = out.find('\n', at);
    auto line = out.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (line.rfind(prefix, 0) == 0) return line;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return {};
}

// The owner's side of a request: waits until the slot's flag shows (futex waits on the slot's
// change counter, no polling), then consumes it; false if none came within failure_timeout.
bool take_request(segment_slot& slot) {
  const auto until = std::chrono::steady_clock::now() + failure_timeout;
  for (auto seen = slot.change_counter(); !slot.rebuild_requested() && std::chrono::steady_clock::now() < until;) {
    seen = slot.wait_change(seen, 1000ms);
  }
  return slot.consume_rebuild_request();
}

// The test process as the owner of "idx": attached, its slot claimed, ready under epoch 1.
struct idle_owner {
  temp_dir dir;
  fs::path home;
  std::shared_ptr<readiness_segment> segment;
  std::shared_ptr<segment_slot> slot;

  idle_owner() {
    fs::create_directories(dir / "db");
    home = fs::canonical(dir / "db");
    segment = readiness_segment::attach(home).value();
    slot = segment->claim("idx").value();
    slot->mint_epoch().value();
    slot->publish(readiness_state::ready, readiness_reason::none, 0);
  }
};

std::uint64_t number_after(const std::string& text, const std::string& prefix) {
  auto at = text.find(prefix);
  if (at == std::string::npos) FAIL("no \"" << prefix << "\" in: " << text);
  return std::stoull(text.substr(at + prefix.size()));
}

}  // namespace

TEST_CASE("dix rebuild --wait: against a dix serve owner it follows the rebuild it asked for, in plain lines on a pipe, and exits 0 once the index is ready under a larger epoch with the scan's figures",
          "[system][cli][rebuild]") {
  temp_dir dir;
  const auto demo = dir / "serve";
  auto owner = cli::child_process::spawn({DIX_BINARY, "serve", "--dir", demo.string(), "--rate", "500"});
  REQUIRE(owner);
  const auto home = demo / "primary";
  const auto deadline = std::chrono::steady_clock::now() + failure_timeout;
  REQUIRE(owner->wait_line("serve: owner of", deadline));
  auto built = cli::wait_ready(home, {"by-brand", "by-category"}, 0, deadline);
  REQUIRE(built);
  REQUIRE(owner->wait_line("by-brand ready", deadline));

  auto r = dix_cli(dir, {"rebuild", "--db", home.string(), "by-brand", "--wait", "--timeout", "100"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find('\r') == std::string::npos);  // not a terminal: no redrawn line
  const auto asked = line_starting(r.out, "rebuild requested for by-brand (owner epoch ");
  REQUIRE_FALSE(asked.empty());
  const auto before = number_after(asked, "(owner epoch ");
  CHECK_FALSE(line_starting(r.out, "by-brand: rebuilding").empty());
  REQUIRE(r.out.size() > 1);
  const auto done = r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);  // the last line
  CHECK_THAT(done, Catch::StartsWith("by-brand: ready, epoch ") && Catch::Contains(" records by a scan at ") &&
                       Catch::EndsWith(" records/s\n"));
  const auto after = number_after(done, "ready, epoch ");
  CHECK(after > before);
  CHECK(number_after(done, ": rebuilt ") > 0);  // the serve writer put records in before

  // The owner's own lines show the same rebuild ending.
  CHECK(owner->wait_line("by-brand ready epoch=" + std::to_string(after), deadline));
  // The other index was left alone.
  auto reader = segment_reader::open(home).value();
  const auto table = reader->read().value();
  for (const auto& e : table.entries) {
    if (e.id == "by-category") CHECK(e.readiness.owner_epoch == *built);
  }

  // Without an attached runtime nothing would rebuild it: refused, and no request is left behind.
  CHECK(WIFEXITED(owner->reap(SIGTERM)));
  auto refused = dix_cli(dir, {"rebuild", "--db", home.string(), "by-brand", "--wait"});
  CHECK(refused.exit_code == 1);
  CHECK(refused.out.empty());
  CHECK(refused.err == "dix rebuild: no runtime is attached to " + home.string() +
                           ", so nothing would rebuild by-brand now: start its owner (e.g. dix serve), or leave out "
                           "--wait to leave the request for it\n");
  auto view = segment_view::open(home, segment_view::access::read_write).value();
  CHECK_FALSE(view->slot(*view->find("by-brand"))->rebuild_requested());
}

TEST_CASE("dix rebuild --wait: a failed attempt after the request exits 1 naming the state and the reason", "[system][cli][rebuild]") {
  idle_owner o;
  const auto& dir = o.dir;
  const auto& home = o.home;
  auto& slot = o.slot;

  // The owner: consumes the request when the flag shows, starts an attempt under a new epoch
  // and fails it.
  std::thread owner([&] {
    if (!take_request(*slot)) return;
    slot->publish(readiness_state::rebuilding, readiness_reason::rebuild_requested, 1);
    slot->mint_epoch().value();
    slot->publish(readiness_state::needs_rebuild, readiness_reason::backend_failed, 1);
  });
  auto r = dix_cli(dir, {"rebuild", "--db", home.string(), "idx", "--wait"});
  owner.join();
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::StartsWith("rebuild requested for idx (owner epoch 1); waiting until it is rebuilt\n") &&
                        Catch::EndsWith("idx: needs-rebuild (backend-failed), attempt 1, epoch 2\n"));
  CHECK(r.err == "dix rebuild: the rebuild of idx failed: needs-rebuild (backend-failed); the owner retries after its backoff\n");
}

namespace {

// Reads the pty `master` into `out` until it holds `needle` (true) or the child closed its side
// or the deadline passed (false). Polls the descriptor, no sleeps.
bool read_until(int master, std::string& out, const std::string& needle, std::chrono::steady_clock::time_point deadline) {
  while (needle.empty() || out.find(needle) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char chunk[4096];
    auto n = ::read(master, chunk, sizeof chunk);
    if (n <= 0) return needle.empty();  // EIO once the child's side is closed
    out.append(chunk, static_cast<std::size_t>(n));
  }
  return true;
}

// `dix rebuild --db home idx --wait --timeout 100` on a new pseudo-terminal: its pid, and the
// terminal's side in `master`.
pid_t spawn_wait_on_pty(const fs::path& home, int& master) {
  std::fflush(nullptr);
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::execl(DIX_BINARY, DIX_BINARY, "rebuild", "--db", home.c_str(), "idx", "--wait", "--timeout", "100",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// Reads the terminal into `out` to its end, reaps the child and closes the terminal: the child's
// exit status, or -1 when it did not exit by itself.
int reap_on_pty(pid_t pid, int master, std::string& out, std::chrono::steady_clock::time_point deadline) {
  CHECK(read_until(master, out, "", deadline));
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  ::close(master);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("dix rebuild --wait: on a terminal one line is redrawn in place with the bar, records, percent, rate and ETA, and the last line ends it", "[system][cli][rebuild]") {
  idle_owner o;
  const auto& home = o.home;
  auto& segment = o.segment;
  auto& slot = o.slot;

  int master = -1;
  const pid_t pid = spawn_wait_on_pty(home, master);
  const auto deadline = std::chrono::steady_clock::now() + failure_timeout;
  // The owner takes the request, mints, scans: 3 of 10 records so far.
  REQUIRE(take_request(*slot));
  // As the runner core orders them (protocol.md §11.4): rebuilding, then the attempt's epoch.
  slot->publish(readiness_state::rebuilding, readiness_reason::rebuild_requested, 1);
  const auto epoch = slot->mint_epoch().value();
  slot->publish(readiness_state::rebuilding, readiness_reason::rebuild_requested, 1);
  segment->metrics().write(slot->index(), metrics_block{1, rebuild_progress{epoch, 3, 10, 30, 233, false}});
  std::string out;
  const std::string bar = "\ridx rebuilding [#######-----------------] 3/10 records (30%), 30 records/s, ETA 0.2 s\x1b[K";
  CHECK(read_until(master, out, bar, deadline));  // redrawn within its 250 ms tick
  // The scan ends and the index is ready under the new epoch: the line is cleared, the last one printed.
  segment->metrics().write(slot->index(), metrics_block{2, rebuild_progress{epoch, 10, 10, 40, 0, true}});
  slot->publish(readiness_state::ready, readiness_reason::none, 0);
  const int exit_code = reap_on_pty(pid, master, out, deadline);
  INFO(out);
  CHECK(exit_code == 0);
  CHECK_THAT(out, Catch::StartsWith("rebuild requested for idx (owner epoch 1); waiting until it is rebuilt\r\n"));
  // The terminal turns each newline into CR LF.
  CHECK_THAT(out, Catch::EndsWith("\r\x1b[Kidx: ready, epoch 2: rebuilt 10 records by a scan at 40 records/s\r\n"));
  CHECK(out.find("\nidx: rebuilding") == std::string::npos);  // no plain lines on a terminal
}

TEST_CASE("dix rebuild: --timeout needs --wait, an id outside the name rules, a missing --db and a --db that names nothing exit 2, an id without a slot exits 1", "[system][cli][rebuild]") {
  temp_dir dir;
  fs::create_directories(dir / "db");
  const auto home = fs::canonical(dir / "db");
  auto segment = readiness_segment::attach(home).value();
  (void)segment->claim("idx").value();
  auto timeout = dix_cli(dir, {"rebuild", "--db", home.string(), "idx", "--timeout", "5"});
  CHECK(timeout.exit_code == 2);
  CHECK(timeout.err == "dix rebuild: --timeout needs --wait (dix rebuild --help for usage)\n");
  auto bad = dix_cli(dir, {"rebuild", "--db", home.string(), "--wait", ".bad"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::StartsWith("dix rebuild: invalid_argument: request_rebuild: backend id \".bad\""));
  CHECK(dix_cli(dir, {"rebuild", "idx", "--wait"}).exit_code == 2);
  auto unknown = dix_cli(dir, {"rebuild", "--db", home.string(), "nope", "--wait"});
  CHECK(unknown.exit_code == 1);
  CHECK_THAT(unknown.err, Catch::Contains("backend id \"nope\" has no slot") && Catch::Contains("; the ids with a slot: idx\n"));
  auto unknown_now = dix_cli(dir, {"rebuild", "--db", home.string(), "nope"});  // without --wait: the same list
  CHECK(unknown_now.exit_code == 1);
  CHECK_THAT(unknown_now.err, Catch::Contains("backend id \"nope\" has no slot") && Catch::Contains("; the ids with a slot: idx\n"));
  // A --db that names nothing is the bad argument dix status makes it, not "no readiness segment".
  const auto nothing = (dir / "nothing").string();
  for (const auto& args : {std::vector<std::string>{"rebuild", "--db", nothing, "idx"},
                           std::vector<std::string>{"rebuild", "--db", nothing, "idx", "--wait"}}) {
    auto missing = dix_cli(dir, args);
    CHECK(missing.exit_code == 2);
    CHECK(missing.err == "dix rebuild: --db " + nothing + ": no such directory (dix rebuild --help for usage)\n");
  }
  auto help = dix_cli(dir, {"rebuild", "--help"});
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Catch::StartsWith("usage: dix rebuild --db PATH ID [--wait [--timeout SECONDS]]"));
}

TEST_CASE("dix rebuild --wait: the scan figures of the epoch held before the request (an earlier build's) are not shown as the "
          "rebuild's, while the owner says rebuilding before it mints (a new user's trial)",
          "[system][cli][rebuild]") {
  idle_owner o;
  const auto& home = o.home;
  auto& segment = o.segment;
  auto& slot = o.slot;
  // The first build's final figures under epoch 1, as the owner left them.
  segment->metrics().write(slot->index(), metrics_block{1, rebuild_progress{1, 40, 40, 0, 0, true}});

  int master = -1;
  const pid_t pid = spawn_wait_on_pty(home, master);
  const auto deadline = std::chrono::steady_clock::now() + failure_timeout;
  REQUIRE(take_request(*slot));
  slot->publish(readiness_state::rebuilding, readiness_reason::rebuild_requested, 1);  // still epoch 1
  std::string out;
  // The state line, not the first build's bar (40/40 records, scan done).
  CHECK(read_until(master, out, "\ridx: rebuilding (rebuild-requested), attempt 1, epoch 1\x1b[K", deadline));
  const auto epoch = slot->mint_epoch().value();
  slot->publish(readiness_state::rebuilding, readiness_reason::rebuild_requested, 1);
  segment->metrics().write(slot->index(), metrics_block{2, rebuild_progress{epoch, 10, 10, 40, 0, true}});
  slot->publish(readiness_state::ready, readiness_reason::none, 0);
  const int exit_code = reap_on_pty(pid, master, out, deadline);
  INFO(out);
  CHECK(exit_code == 0);
  CHECK(out.find("40/40") == std::string::npos);
  CHECK(out.find("scan done: 40 records") == std::string::npos);
  CHECK_THAT(out, Catch::EndsWith("\r\x1b[Kidx: ready, epoch 2: rebuilt 10 records by a scan at 40 records/s\r\n"));
}
