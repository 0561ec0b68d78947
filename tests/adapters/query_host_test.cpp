// make_query_host (decision 0028): the host of a query-only handle, over a real readiness
// segment that this process's owner side writes (attach, claim, mint, apply: what a runtime's
// publisher does), read the way another process reads it — the free functions, never attached.
// The wall clock that ages coverage times is injected (make_query_host_at).
#include <catch2/catch.hpp>

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <dix/free_functions.hpp>
#include <dix/query_host.hpp>

#include "adapters/query_host.hpp"
#include "core/clock.hpp"
#include "support/futex_probe.hpp"
#include "support/home_slot.hpp"

using namespace dix;
using dix::test::home_with_slot;
using dix::test::until_asleep;
using dix::test::until_slot;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t ms = 1'000'000;
constexpr index_time_t t0 = 1'700'000'000'000'000'000ull;

errc code_of(const result<coverage>& r) { return r ? errc::none : r.error().value(); }

coverage_mode strict() { return coverage_mode{coverage_kind::strict, 3000ms, 0, 0ms}; }
coverage_mode bounded(std::chrono::milliseconds tolerance) { return coverage_mode{coverage_kind::bounded, tolerance, 0, 0ms}; }
coverage_mode wait_for(index_time_t since, std::chrono::milliseconds timeout) {
  return coverage_mode{coverage_kind::wait, 3000ms, since, timeout};
}

}  // namespace

TEST_CASE("query host: rebuilding is refused with rebuilding, any other state but ready with unavailable", "[adapter][query-host]") {
  home_with_slot h;
  manual_clock clock(t0);
  auto host = make_query_host_at(h.home, "idx", clock);
  CHECK(code_of(host->admit_query(bounded(3000ms))) == errc::unavailable);  // unknown: never published
  h.state(readiness_state::rebuilding);
  auto r = host->admit_query(bounded(3000ms));
  CHECK(code_of(r) == errc::rebuilding);
  CHECK_THAT(r.error().message(), Catch::Contains("idx"));
  CHECK(code_of(host->admit_query(strict())) == errc::rebuilding);
  for (auto s : {readiness_state::needs_rebuild, readiness_state::unavailable}) {
    h.state(s);
    CHECK(code_of(host->admit_query(bounded(3000ms))) == errc::unavailable);
  }
  CHECK(host->readiness().state == readiness_state::unavailable);
  CHECK(host->readiness().owner_epoch == h.epoch);
  // No slot for the id, or no segment at all: not_registered, and unavailable (unknown).
  CHECK(code_of(make_query_host_at(h.home, "other", clock)->admit_query(bounded(3000ms))) == errc::not_registered);
  CHECK(code_of(make_query_host_at(h.dir / "none", "idx", clock)->admit_query(bounded(3000ms))) == errc::unavailable);
  CHECK(make_query_host(h.dir / "none", "idx")->readiness().state == readiness_state::unknown);
}

TEST_CASE("query host: strict is always index_lagging from another process, bounded is admitted while the coverage is fresh and index_lagging when not", "[adapter][query-host]") {
  home_with_slot h;
  h.ready(t0);
  manual_clock clock(t0 + 250 * ms);
  auto host = make_query_host_at(h.home, "idx", clock);
  auto s = host->admit_query(strict());
  CHECK(code_of(s) == errc::index_lagging);  // fresh, but only the owner's process can prove current
  auto fresh = host->admit_query(bounded(3000ms));
  REQUIRE(fresh);
  CHECK(fresh->state == coverage_state::bounded);
  CHECK(fresh->tolerance == 3000ms);
  CHECK(fresh->lag_upper_bound == 250ms);
  auto stale = host->admit_query(bounded(200ms));
  CHECK(code_of(stale) == errc::index_lagging);
  CHECK_THAT(stale.error().message(), Catch::Contains("250 ms"));
  h.ready(0);  // ready without a coverage time: unknown, refused
  CHECK(code_of(host->admit_query(bounded(3000ms))) == errc::index_lagging);
  h.ready(t0 + 200 * ms);  // a newer coverage: fresh enough again
  CHECK(host->admit_query(bounded(200ms))->lag_upper_bound == 50ms);
  // The real clock: a coverage time of an hour ago is stale, one of now fresh.
  auto real = make_query_host(h.home, "idx");
  const auto now = static_cast<index_time_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  h.ready(now - 3'600'000 * ms);
  CHECK(code_of(real->admit_query(bounded(60000ms))) == errc::index_lagging);
  h.ready(now);
  CHECK(real->admit_query(bounded(60000ms))->state == coverage_state::bounded);
}

TEST_CASE("query host: a wait admission resolves after the owner's publication covering since, and fails as the wait does", "[adapter][query-host]") {
  home_with_slot h;
  h.ready(t0);
  manual_clock clock(t0 + 10 * ms);
  auto host = make_query_host_at(h.home, "idx", clock);
  const index_time_t since = t0 + 5 * ms;
  SECTION("covered after the owner's barrier: admitted with the time path's coverage") {
    std::atomic<pid_t> tid{0};
    result<coverage> admitted = error{errc::none, "not yet"};
    std::thread querier([&] {
      tid = static_cast<pid_t>(::syscall(SYS_gettid));
      admitted = host->admit_query(wait_for(since, 60000ms));
    });
    REQUIRE(until_slot(*h.slot, [&] { return h.slot->coverage_demand() == since; }));  // the demand asks the owner
    REQUIRE(until_asleep(tid));
    h.ready(since);  // the owner's barrier made since durable, then it published
    querier.join();
    REQUIRE(admitted);
    CHECK(admitted->state == coverage_state::bounded);
    CHECK(admitted->lag_upper_bound == 5ms);
  }
  SECTION("covered already: admitted at once, even with a coverage older than the tolerance") {
    auto admitted = host->admit_query(coverage_mode{coverage_kind::wait, 1ms, t0, 0ms});
    REQUIRE(admitted);
    CHECK(admitted->state == coverage_state::unknown);  // the wait certified it, not the time path
  }
  SECTION("not covered by the deadline: index_lagging") {
    CHECK(code_of(host->admit_query(wait_for(since, 0ms))) == errc::index_lagging);
  }
  SECTION("a rebuild: waited through, rebuilding if still built at the deadline; an unavailable index: unavailable at once") {
    h.state(readiness_state::rebuilding);
    CHECK(code_of(host->admit_query(wait_for(since, 0ms))) == errc::rebuilding);
    h.state(readiness_state::needs_rebuild);
    CHECK(code_of(host->admit_query(wait_for(since, 0ms))) == errc::rebuilding);
    h.state(readiness_state::unavailable);
    CHECK(code_of(host->admit_query(wait_for(since, 60000ms))) == errc::unavailable);
  }
  SECTION("a rebuild in progress is waited through: admitted once the rebuilt index covers since") {
    h.state(readiness_state::rebuilding);
    std::atomic<pid_t> tid{0};
    result<coverage> admitted = error{errc::none, "not yet"};
    std::thread querier([&] {
      tid = static_cast<pid_t>(::syscall(SYS_gettid));
      admitted = host->admit_query(wait_for(since, 60000ms));
    });
    REQUIRE(until_slot(*h.slot, [&] { return h.slot->coverage_demand() == since; }));
    REQUIRE(until_asleep(tid));
    h.ready(since);  // the rebuild's boundary durable: ready, covering since
    querier.join();
    REQUIRE(admitted);
  }
  SECTION("cancelled: the sleeping admission returns cancelled at once") {
    std::atomic<pid_t> tid{0};
    cancel_source cancel;
    result<coverage> admitted = error{errc::none, "not yet"};
    std::thread querier([&] {
      tid = static_cast<pid_t>(::syscall(SYS_gettid));
      admitted = host->admit_query(wait_for(since, 600000ms), cancel.token());
    });
    REQUIRE(until_slot(*h.slot, [&] { return h.slot->coverage_demand() == since; }));
    REQUIRE(until_asleep(tid));
    cancel.cancel();
    querier.join();
    CHECK(code_of(admitted) == errc::cancelled);
  }
  SECTION("invalid wait arguments: invalid_argument") {
    CHECK(code_of(host->admit_query(wait_for(0, 10ms))) == errc::invalid_argument);
    CHECK(code_of(host->admit_query(wait_for(since, 600001ms))) == errc::invalid_argument);
  }
}

TEST_CASE("query host: never an owner, and its notes change nothing in the slot", "[adapter][query-host]") {
  home_with_slot h;
  h.ready(t0);
  auto host = make_query_host(h.home, "idx");
  CHECK_FALSE(host->is_owner_epoch(h.epoch));
  CHECK_FALSE(host->is_owner_epoch(0));
  const auto counter = h.slot->change_counter();
  host->request_rebuild();
  host->note_unindexable("bad_encoding");
  host->note_hold(h.epoch, backend_hold::low_disk_space);
  CHECK_FALSE(h.slot->rebuild_requested());
  CHECK(h.slot->change_counter() == counter);
  CHECK(host->readiness().state == readiness_state::ready);
  CHECK(host->readiness().owner_epoch == h.epoch);
}
