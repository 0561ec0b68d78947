#include <catch2/catch.hpp>

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include <dix/free_functions.hpp>

#include "adapters/coverage_readers.hpp"
#include "adapters/readiness_segment.hpp"
#include "core/clock.hpp"
#include "support/child.hpp"
#include "support/futex_probe.hpp"
#include "support/home_slot.hpp"
#include "support/temp_dir.hpp"

using namespace dix;
using dix::test::fork_child;
using dix::test::home_with_slot;
using dix::test::until_slot;
using dix::test::until_asleep;
using dix::test::pipe_pair;
using dix::test::temp_dir;
using dix::test::wait_exit;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t ms = 1'000'000;
constexpr index_time_t t0 = 1'700'000'000'000'000'000ull;

}  // namespace

TEST_CASE("coverage double read: a torn read under a concurrent state change is never used", "[adapter][coverage]") {
  home_with_slot h;
  h.ready(t0);
  SECTION("a change between the pairs on every attempt: the time is absent after four attempts") {
    int calls = 0;
    auto r = h.slot->read_coverage([&](int) {
      ++calls;
      // Another writer flips the state between this attempt's time load and its second pair.
      h.state(calls % 2 == 1 ? readiness_state::rebuilding : readiness_state::ready);
      if (calls % 2 == 0) h.ready(t0);
    });
    CHECK(calls == coverage_read_attempts);
    CHECK_FALSE(r.coverage_time);
  }
  SECTION("an epoch minted between the pairs, once: the re-read settles under the new epoch") {
    int calls = 0;
    auto r = h.slot->read_coverage([&](int attempt) {
      ++calls;
      if (attempt == 0) REQUIRE(h.slot->mint_epoch());
    });
    CHECK(calls == 2);
    REQUIRE(r.coverage_time);
    CHECK(*r.coverage_time == t0);
    CHECK(r.epoch == h.epoch + 1);
  }
  SECTION("through a second, read-only mapping of the same file, as another process reads it") {
    auto view = segment_view::open(h.home).value();
    auto index = view->find("idx").value();
    int calls = 0;
    auto r = view->read_coverage(index, [&](int attempt) {
      ++calls;
      if (attempt == 0) h.state(readiness_state::needs_rebuild);  // coverage_time zeroed, state changed
    });
    CHECK(calls == 2);
    CHECK(r.state == readiness_state::needs_rebuild);
    CHECK_FALSE(r.coverage_time);
    auto calm = view->read_coverage(index);
    CHECK(calm.state == readiness_state::needs_rebuild);
  }
}

TEST_CASE("read_coverage: unknown without a segment, a slot, an attached runtime, ready or a time", "[adapter][coverage]") {
  temp_dir dir;
  auto home = dir / "db";
  fs::create_directories(home);
  manual_clock clock(t0);
  CHECK(read_coverage_at(home, "idx", 3000ms, clock).state == coverage_state::unknown);  // no segment
  CHECK(read_coverage(dir / "missing", "idx", 3000ms).state == coverage_state::unknown);
  {
    auto segment = readiness_segment::attach(home).value();
    auto slot = segment->claim("idx").value();
    CHECK(read_coverage_at(home, "other", 3000ms, clock).state == coverage_state::unknown);  // no slot
    CHECK(read_coverage_at(home, "../bad", 3000ms, clock).state == coverage_state::unknown);  // invalid id
    CHECK(read_coverage_at(home, "idx", 3000ms, clock).state == coverage_state::unknown);  // state unknown
    slot->apply(slot_publication{readiness_state::ready, readiness_reason::none, 0, std::nullopt, std::nullopt});
    auto c = read_coverage_at(home, "idx", 3000ms, clock);
    CHECK(c.state == coverage_state::unknown);  // ready, coverage_time 0 = none
    CHECK_FALSE(c.lag_upper_bound);
    slot->set_coverage_time(t0 - 10 * ms);
    CHECK(read_coverage_at(home, "idx", 3000ms, clock).state == coverage_state::bounded);
  }
  // The runtime detached (the segment handle and slot gone): the time left in the slot is unused.
  CHECK(read_coverage_at(home, "idx", 3000ms, clock).state == coverage_state::unknown);
}

TEST_CASE("read_coverage: bounded within the tolerance with the age as lag bound, unknown beyond, and a wall clock stepped back clamps the age to 0", "[adapter][coverage]") {
  home_with_slot h;
  h.ready(t0);
  manual_clock clock(t0 + 250 * ms);
  auto c = read_coverage_at(h.home, "idx", 3000ms, clock);
  CHECK(c.state == coverage_state::bounded);
  CHECK(c.tolerance == 3000ms);
  CHECK(c.lag_upper_bound == 250ms);
  c = read_coverage_at(h.home, "idx", 200ms, clock);
  CHECK(c.state == coverage_state::unknown);
  CHECK(c.lag_upper_bound == 250ms);
  clock.set_wall_ns(t0 - 60'000 * ms);  // stepped back a minute
  c = read_coverage_at(h.home, "idx", 1ms, clock);
  CHECK(c.state == coverage_state::bounded);
  CHECK(c.lag_upper_bound == 0ms);
  h.state(readiness_state::rebuilding);
  CHECK(read_coverage_at(h.home, "idx", 3000ms, clock).state == coverage_state::unknown);
}

TEST_CASE("free wait_for_coverage: invalid arguments and missing segment or slot fail at once", "[adapter][coverage]") {
  temp_dir dir;
  auto home = dir / "db";
  fs::create_directories(home);
  auto code = [&](std::string_view id, index_time_t since, std::chrono::milliseconds timeout) {
    auto r = wait_for_coverage(home, id, since, timeout);
    return r ? errc::none : r.error().value();
  };
  CHECK(code("idx", 1, 10ms) == errc::not_registered);  // no segment
  auto segment = readiness_segment::attach(home).value();
  auto slot = segment->claim("idx").value();
  CHECK(code("other", 1, 10ms) == errc::not_registered);
  CHECK(code("idx", 0, 10ms) == errc::invalid_argument);
  CHECK(code("idx", 1, 600001ms) == errc::invalid_argument);
  CHECK(code(".bad", 1, 10ms) == errc::invalid_argument);
  CHECK(slot->coverage_demand() == 0);  // a refused call raised nothing
}

TEST_CASE("free wait_for_coverage: at the deadline index_lagging, or rebuilding while being built, a proof present at the deadline succeeds, unavailable at once", "[adapter][coverage]") {
  home_with_slot h;
  h.ready(t0);
  wait_stats stats;
  auto r = wait_for_coverage_counted(h.home, "idx", t0 + 1, 0ms, {}, stats);
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::index_lagging);
  CHECK(stats.wakeups == 0);
  CHECK(wait_for_coverage(h.home, "idx", t0, 0ms));
  h.state(readiness_state::rebuilding);
  CHECK(wait_for_coverage(h.home, "idx", t0, 0ms).error().value() == errc::rebuilding);
  h.state(readiness_state::needs_rebuild);
  CHECK(wait_for_coverage(h.home, "idx", t0, 0ms).error().value() == errc::rebuilding);
  h.state(readiness_state::unavailable);
  CHECK(wait_for_coverage(h.home, "idx", t0, 60000ms).error().value() == errc::unavailable);
}

// Issue 29: a reader in another process waits through a rebuild as the runtime's waiter does.
TEST_CASE("free wait_for_coverage: waits through needs-rebuild and rebuilding and succeeds at ready", "[adapter][coverage]") {
  home_with_slot h;
  h.state(readiness_state::needs_rebuild);
  auto waited = std::async(std::launch::async, [&] {
    return wait_for_coverage(h.home, "idx", t0, 60000ms);
  });
  // Each publication is a slot change: the waiter looks again at each, and keeps waiting until
  // ready covers since. The demand it raises is the sign that it is waiting (a refusal raises none).
  REQUIRE(test::until_slot(*h.slot, [&] { return h.slot->coverage_demand() >= t0; }));
  h.state(readiness_state::rebuilding);
  CHECK(waited.wait_for(0s) == std::future_status::timeout);
  h.ready(t0);
  REQUIRE(waited.wait_for(20s) == std::future_status::ready);
  CHECK(waited.get());
}

TEST_CASE("free wait_for_coverage: since stays fixed, the demand is raised to it, and each futex wake-up is one slot change", "[adapter][coverage]") {
  home_with_slot h;
  h.ready(t0);
  const index_time_t since = t0 + 100 * ms;
  std::atomic<pid_t> tid{0};
  wait_stats stats;
  result<void> outcome = error{errc::none, "not yet"};
  std::thread waiter([&] {
    tid = static_cast<pid_t>(::syscall(SYS_gettid));
    outcome = wait_for_coverage_counted(h.home, "idx", since, 60000ms, {}, stats);
  });
  REQUIRE(until_slot(*h.slot, [&] { return h.slot->coverage_demand() == since; }));
  REQUIRE(until_asleep(tid));
  h.ready(since - 1);  // a later publication short of since: the waiter looks and sleeps again
  // Back from that wake-up and asleep again (the thread can still sit in the first wait when
  // the test looks, the wake delivered but not yet run: then the next publication found it there).
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (stats.wakeups.load() < 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  REQUIRE(stats.wakeups.load() == 1);
  REQUIRE(until_asleep(tid));
  h.ready(since);
  waiter.join();
  CHECK(outcome);
  CHECK(stats.raised_demand);
  CHECK(stats.wakeups == 2);  // one per publication: no polling loop
}

TEST_CASE("free wait_for_coverage: cancel wakes the sleeping thread at once with cancelled", "[adapter][coverage]") {
  home_with_slot h;
  h.ready(t0);
  std::atomic<pid_t> tid{0};
  cancel_source cancel;
  wait_stats stats;
  result<void> outcome;
  std::thread waiter([&] {
    tid = static_cast<pid_t>(::syscall(SYS_gettid));
    outcome = wait_for_coverage_counted(h.home, "idx", t0 + 1, 600000ms, cancel.token(), stats);
  });
  REQUIRE(until_slot(*h.slot, [&] { return h.slot->coverage_demand() == t0 + 1; }));
  REQUIRE(until_asleep(tid));
  const auto start = std::chrono::steady_clock::now();
  cancel.cancel();
  waiter.join();
  REQUIRE_FALSE(outcome);
  CHECK(outcome.error().value() == errc::cancelled);
  CHECK(stats.wakeups == 1);
  CHECK(std::chrono::steady_clock::now() - start < 10s);  // the wake, not the 600 s deadline
}

TEST_CASE("free wait_for_coverage in another process resolves on the futex wake of the owner's publication", "[system][coverage]") {
  home_with_slot h;
  h.ready(t0);
  const index_time_t since = t0 + 5 * ms;
  pipe_pair report;
  // Forked before any thread exists here; the child maps the segment itself (the free function).
  pid_t child = fork_child([&]() {
    wait_stats stats;
    auto r = wait_for_coverage_counted(h.home, "idx", since, 60000ms, {}, stats);
    char bytes[2] = {static_cast<char>(r ? 'k' : 'f'), static_cast<char>('0' + std::min<std::uint64_t>(stats.wakeups, 9))};
    if (::write(report.write_end, bytes, 2) != 2) return 10;
    return 0;
  });
  REQUIRE(until_slot(*h.slot, [&] { return h.slot->coverage_demand() == since; }));
  REQUIRE(until_asleep(child, child));  // its only thread sleeps in FUTEX_WAIT
  h.ready(since);
  CHECK(report.receive() == 'k');
  CHECK(report.receive() == '1');  // exactly one wake-up: the publication's
  CHECK(wait_exit(child) == 0);
}
