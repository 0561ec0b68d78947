// core/coverage (protocol.md §12.1–§12.4): the tracker with plain values, and the owner's coverage
// through runner_core in the deterministic sim_pipeline (captures by the tailer core over a
// fake_store, publications as the slot stores them).
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/coverage.hpp"
#include "support/sim_pipeline.hpp"

using namespace dix;
using dix::test::sim_pipeline;
using dix::test::sim_table;

namespace {

using std::chrono::milliseconds;
using steady = std::chrono::steady_clock::time_point;

coverage_capture capture(index_time_t time, std::uint64_t position) { return coverage_capture{time, {{"main", position}}}; }

// A pipeline whose index is built, ready and idle, with barriers only when the test runs one.
struct ready_pipeline {
  sim_pipeline p;
  explicit ready_pipeline(runner_options o = {}) : p(o) {
    p.commit({test::put(sim_table, "a", "1")});
    p.advance(milliseconds(1000));  // the boundary becomes durable: ready
    REQUIRE(p.slot_readiness.state == readiness_state::ready);
    REQUIRE(p.runner->state() == runner_state::idle);
    p.backend.auto_barrier = false;
  }
  std::size_t flushes(flush_reason r) const {
    return static_cast<std::size_t>(std::count(p.flush_requests.begin(), p.flush_requests.end(), r));
  }
};

}  // namespace

TEST_CASE("coverage: a capture is covered by an entry whose anchors end at or after every position above 0", "[core][coverage]") {
  coverage_capture c{10, {{"a", 7}, {"b", 0}}};
  CHECK(covers({{"a", 7}}, c));  // b has no write: nothing to cover there
  CHECK(covers({{"a", 9}, {"b", 3}}, c));
  CHECK_FALSE(covers({{"a", 6}, {"b", 3}}, c));
  CHECK_FALSE(covers({{"b", 8}}, c));  // a log the entry does not name covers nothing above 0
}

TEST_CASE("coverage: the tracker publishes the newest covered capture once and drops the older ones", "[core][coverage]") {
  coverage_tracker t(milliseconds(1000));
  t.add(capture(100, 5));
  t.add(capture(200, 8));
  t.add(capture(300, 12));
  CHECK_FALSE(t.publish({{"main", 4}}));  // nothing covered yet
  CHECK(t.publish({{"main", 9}}) == std::optional<index_time_t>(200));
  CHECK(t.published() == 200);
  CHECK(t.held() == 1);                   // 100 and 200 are gone, 300 waits
  CHECK_FALSE(t.publish({{"main", 9}}));  // the same entry certifies nothing new
  t.add(capture(150, 20));                // older than the published time: certifies nothing
  CHECK(t.held() == 1);
  CHECK(t.publish({{"main", 12}}) == std::optional<index_time_t>(300));
  t.cleared();  // a non-ready publication stored 0
  CHECK(t.published() == 0);
  t.add(capture(400, 12));
  t.discard();  // discard progress forgets captures, not the published time
  CHECK(t.held() == 0);
  CHECK_FALSE(t.publish({{"main", 99}}));
}

TEST_CASE("coverage: captures come every max_flush_age/4, and at every turn while a demand is above the published time", "[core][coverage]") {
  coverage_tracker t(milliseconds(1000));
  const steady t0{};
  CHECK(t.wants_capture(t0));  // none asked for yet
  t.requested(t0);
  CHECK_FALSE(t.wants_capture(t0 + milliseconds(249)));
  CHECK(t.wants_capture(t0 + milliseconds(250)));
  t.demand(500);
  CHECK(t.demand_open());
  CHECK(t.wants_capture(t0 + milliseconds(1)));
  t.add(capture(450, 3));  // taken before the waiter's commit: does not serve it
  CHECK_FALSE(t.demand_delivered({{"main", 3}}));
  t.add(capture(600, 4));
  CHECK_FALSE(t.demand_delivered({{"main", 3}}));  // its commits are not all delivered
  CHECK(t.demand_delivered({{"main", 4}}));
  CHECK(t.publish({{"main", 4}}) == std::optional<index_time_t>(600));
  CHECK_FALSE(t.demand_open());  // served
  CHECK_FALSE(t.wants_capture(t0 + milliseconds(1)));
}

TEST_CASE("coverage: a capture asked for while a demand was open serves that demand, also once a later waiter raised it (decision 0026)", "[core][coverage]") {
  const steady t0{};
  coverage_tracker t(milliseconds(1000));
  t.demand(500);
  t.requested(t0);  // the turn captures for the demand 500
  t.demand(700);    // a waiter for a later commit, before the capture came back
  t.add(capture(600, 4));
  CHECK_FALSE(t.demand_delivered({{"main", 3}}));  // its commits are not all delivered
  CHECK(t.demand_delivered({{"main", 4}}));        // the waiters up to 600 need only a barrier
  REQUIRE(t.publish({{"main", 4}}) == std::optional<index_time_t>(600));
  CHECK(t.demand_open());  // 700 still waits
  // A capture asked for with no demand open serves none, whatever the demand is when it lands.
  coverage_tracker u(milliseconds(1000));
  u.requested(t0);
  u.demand(700);
  u.add(capture(600, 4));
  CHECK_FALSE(u.demand_delivered({{"main", 4}}));
}

TEST_CASE("coverage: the publish_coverage hook is due once the durable entry covers the published capture, at most once per max_flush_age", "[core][coverage]") {
  coverage_tracker t(milliseconds(1000));
  const steady t0{};
  t.add(capture(100, 5));
  REQUIRE(t.publish({{"main", 5}}));
  CHECK_FALSE(t.hook_due({{"main", 4}}, t0));  // published through an entry not durable yet
  auto due = t.hook_due({{"main", 5}}, t0);
  REQUIRE(due);
  CHECK(due->time == 100);
  CHECK(due->positions == dix::positions{{"main", 5}});
  CHECK_FALSE(t.hook_due({{"main", 5}}, t0 + milliseconds(2000)));  // never twice for one time
  t.add(capture(200, 6));
  REQUIRE(t.publish({{"main", 6}}));
  CHECK_FALSE(t.hook_due({{"main", 6}}, t0 + milliseconds(999)));  // at most once per max_flush_age
  REQUIRE(t.hook_due({{"main", 6}}, t0 + milliseconds(1000)));
}

TEST_CASE("coverage: a durable write owes the hook a capture that reaches it, and a barrier is all it waits for once such a capture is published beyond the durable entry (decision 0051)", "[core][coverage]") {
  coverage_tracker t(milliseconds(1000));
  const steady t0{};
  t.add(capture(100, 5));
  REQUIRE(t.publish({{"main", 5}}));
  REQUIRE(t.hook_due({{"main", 5}}, t0));
  CHECK_FALSE(t.hook_waits_for_barrier({{"main", 5}}));  // nothing owed
  // A write at sequence 6 becomes durable; no capture after it is published yet.
  t.owe_hook({{"main", 6}});
  CHECK_FALSE(t.hook_waits_for_barrier({{"main", 6}}));  // a capture is missing, not a barrier
  // A system transaction at 7 is read (cursor-only, not durable) and a capture after it published.
  t.add(capture(200, 7));
  REQUIRE(t.publish({{"main", 7}}));
  CHECK_FALSE(t.hook_due({{"main", 6}}, t0 + milliseconds(5000)));  // the durable entry ends at 6
  CHECK(t.hook_waits_for_barrier({{"main", 6}}));
  // The barrier: the hook reaches the write and the debt is paid.
  auto due = t.hook_due({{"main", 7}}, t0 + milliseconds(5000));
  REQUIRE(due);
  CHECK(due->time == 200);
  t.add(capture(300, 8));
  REQUIRE(t.publish({{"main", 8}}));
  CHECK_FALSE(t.hook_waits_for_barrier({{"main", 7}}));  // unrelated progress alone owes nothing
}

TEST_CASE("runner: a write made durable before a capture certified it, then a system transaction: the publish_coverage hook reaches the write within a few max_flush_age with one barrier, not at the cursor-only timer (decision 0051)", "[core][coverage][runner]") {
  // What an index node's `wait` reader sees (decision 0043): the node admits by the hook alone. The
  // write's turn takes no capture (one was asked for just before), so the write's barrier hooks an
  // older capture; a system transaction read afterwards (another index's registration record)
  // leaves only cursor-only progress beyond the durable entry, and every later capture reaches it.
  ready_pipeline r;
  auto& p = r.p;
  p.backend.auto_barrier = true;
  const auto before = p.slot_coverage_time;
  for (int ms = 0; ms < 3000 && p.slot_coverage_time == before; ++ms) p.advance(milliseconds(1));
  REQUIRE(p.slot_coverage_time > before);  // an idle refresh turn captured just now
  const auto [seq, written] = p.commit({test::put(sim_table, "ryw", "1")});
  (void)seq;
  const auto wrote_at = p.time.steady_now();
  p.advance(milliseconds(999));  // the write is accepted; its age barrier is 1 ms away
  p.store.commit({test::fake_op{op_kind::put, 0, "registration/other", "x", true}}, header_flag::system, true);
  auto reached = [&] {
    return std::any_of(p.coverage_hooks.begin(), p.coverage_hooks.end(),
                       [&](const fx::publish_coverage& h) { return h.coverage_time >= written; });
  };
  const auto age_flushes = r.flushes(flush_reason::age);
  for (int ms = 0; ms < 30000 && !reached(); ms += 10) p.advance(milliseconds(10));
  CHECK(reached());
  CHECK(p.time.steady_now() - wrote_at <= milliseconds(4000));  // not the cursor-only timer's minutes
  CHECK(r.flushes(flush_reason::age) <= age_flushes + 2);  // the write's barrier (the hook's counts as coverage)
  CHECK(p.slot_coverage_time >= written);
  CHECK(p.runner->state() == runner_state::idle);
}

TEST_CASE("runner: progress over unrelated commits certifies coverage without a barrier", "[core][coverage][runner]") {
  ready_pipeline r;
  auto& p = r.p;
  const auto barriers = p.backend.barriers;
  p.advance(milliseconds(300));  // a capture is due at the next turn
  const auto [seq, time] = p.commit({test::put(2, "elsewhere", "x")});
  (void)seq;
  CHECK(p.slot_coverage_time > time);  // the capture after the commit, certified by cursor progress
  CHECK(p.backend.barriers == barriers);
  CHECK(r.flushes(flush_reason::coverage) == 0);
}

TEST_CASE("runner: an unrelated commit after a pending relevant write never moves coverage_time past that write before its barrier (behaviour 21)", "[core][coverage][runner]") {
  ready_pipeline r;
  auto& p = r.p;
  p.advance(milliseconds(300));
  const auto write = p.commit({test::put(sim_table, "b", "2")});  // accepted, not durable
  REQUIRE(p.runner->snapshot().accepted_mutations > 0);
  for (int i = 0; i < 5; ++i) {
    p.advance(milliseconds(300));  // each turn captures
    p.commit({test::put(2, "elsewhere", std::to_string(i))});
    CHECK(p.slot_coverage_time < write.second);
  }
  // A waiter for the last unrelated commit: a drain, flush(coverage), still nothing past the write.
  const auto last = p.commit({test::put(2, "elsewhere", "last")});
  p.demand_coverage(last.second);
  CHECK(r.flushes(flush_reason::coverage) == 1);
  CHECK(p.slot_coverage_time < write.second);
  CHECK(p.slot_coverage_demand == last.second);
  p.backend.barrier();
  p.run();
  CHECK(p.slot_coverage_time > last.second);  // the barrier made the write durable: certified past it
  CHECK(p.slot_coverage_demand == 0);         // the publication reached the demand and cleared it
}

TEST_CASE("runner: a coverage wake with non-durable work requests flush(coverage) and publishes after the barrier, before max_flush_age", "[core][coverage][runner]") {
  ready_pipeline r;
  auto& p = r.p;
  const auto age_flushes = r.flushes(flush_reason::age);  // the build's
  const auto write = p.commit({test::put(sim_table, "b", "2")});
  const auto asked = p.time.steady_now();
  p.demand_coverage(write.second);
  CHECK(r.flushes(flush_reason::coverage) == 1);
  CHECK(p.runner->snapshot().flushes[static_cast<std::size_t>(flush_reason::coverage)] == 1);
  CHECK(r.flushes(flush_reason::age) == age_flushes);
  CHECK(p.slot_coverage_time < write.second);
  p.demand_coverage(write.second);  // the watcher again, before the barrier: one request outstanding
  CHECK(r.flushes(flush_reason::coverage) == 1);
  p.backend.barrier();
  p.run();
  CHECK(p.slot_coverage_time > write.second);
  CHECK(p.time.steady_now() - asked < milliseconds(1000));
  CHECK(r.flushes(flush_reason::age) == age_flushes);
}

TEST_CASE("runner: a demand that a new waiter raises past the capture in flight at every turn still gets flush(coverage) at every delivery, not only at max_flush_age (decision 0026)", "[core][coverage][runner]") {
  ready_pipeline r;
  auto& p = r.p;
  p.backend.auto_barrier = true;  // every barrier completes when asked for
  // A steady writer with a waiter per commit: right after each capture a relevant commit, its
  // commit wake and its waiter's coverage wake, which reach the runner before the delivery's
  // answer and raise the demand above the capture being delivered. No time passes: no age
  // timer can flush.
  std::vector<index_time_t> demanded;
  std::vector<index_time_t> seen;  // the slot's coverage_time at each pull
  p.after_pull = [&] {
    seen.push_back(p.slot_coverage_time);
    if (demanded.size() > 20) return;
    const auto w = p.store.commit({test::put(sim_table, "k" + std::to_string(demanded.size()), "v")});
    demanded.push_back(w.second);
    p.wake(wake_flag::commit, false);
    p.demand_coverage(w.second, false);
  };
  const auto first = p.store.commit({test::put(sim_table, "k", "v")});
  demanded.push_back(first.second);
  p.demand_coverage(first.second);
  REQUIRE(seen.size() > 20);
  // The pull of turn k captures after the commit of turn k - 1; its delivery asks for the
  // barrier, whose durable answer publishes it two turns later at the latest.
  for (std::size_t k = 4; k <= 20; ++k) CHECK(seen[k] >= demanded[k - 4]);
  CHECK(r.flushes(flush_reason::coverage) >= 8);
  CHECK(p.slot_coverage_time >= demanded.back());
}

TEST_CASE("runner: an idle owner keeps coverage_time fresh without writes, and system commits wake no idle owner (behaviour 28)", "[core][coverage][runner]") {
  ready_pipeline r;
  auto& p = r.p;
  p.advance(milliseconds(1000));
  auto last = p.slot_coverage_time;
  REQUIRE(last > 0);
  const auto pulls_before = p.delivered.size();
  // A system transaction (as another runtime's epoch record) and its wake: ignored while idle.
  p.store.commit({test::fake_op{op_kind::put, 0, "epoch/other", "1", true}}, header_flag::system, true);
  p.wake(wake_flag::commit | wake_flag::system);
  CHECK(p.delivered.size() == pulls_before);
  CHECK(p.runner->state() == runner_state::idle);
  // Eleven minutes without writes: every max_flush_age a refresh turn captures and certifies.
  for (int second = 0; second < 660; ++second) {
    p.advance(milliseconds(1000));
    CHECK(p.slot_coverage_time > last);
    last = p.slot_coverage_time;
  }
  // The refresh read the system transaction: the durable cursor passes it with no barrier asked
  // for by a commit (the cursor-only progress has its own long timer).
  CHECK(p.runner->snapshot().logs.at(0).read_sequence == p.store.latest());
  CHECK(p.runner->state() == runner_state::idle);
}

TEST_CASE("runner: coverage is never published while the index is not ready, and a non-ready publication clears it", "[core][coverage][runner]") {
  ready_pipeline r;
  auto& p = r.p;
  p.advance(milliseconds(1000));
  REQUIRE(p.slot_coverage_time > 0);
  p.backend.auto_barrier = true;
  p.hold_barriers();  // the rebuild's end waits for the loop's first release
  p.store_rebuild_request();  // rebuilding: coverage_time 0 first, no coverage until ready again
  CHECK(p.slot_coverage_time == 0);
  CHECK(p.slot_readiness.state == readiness_state::rebuilding);
  bool rebuilt = false;
  for (int i = 0; i < 20 && !rebuilt; ++i) {
    const auto w = p.store.commit({test::put(sim_table, "c", std::to_string(i))});
    p.demand_coverage(w.second);
    for (const auto& x : p.publications) CHECK((x.state == readiness_state::ready || !x.coverage_time));
    if (p.slot_readiness.state != readiness_state::ready) CHECK(p.slot_coverage_time == 0);
    rebuilt = p.slot_readiness.state == readiness_state::ready;
    if (i == 2) p.release_barriers();
    p.advance(milliseconds(100));
  }
  CHECK(rebuilt);
  const auto w = p.commit({test::put(sim_table, "c", "after")});
  p.demand_coverage(w.second);
  CHECK(p.slot_coverage_time > w.second);  // ready again: certified under the rebuild's epoch
  CHECK(p.publications.back().epoch == p.runner->epoch());
}

TEST_CASE("runner: publishing ready asks for a capture at once, so coverage_time is certified at the instant of ready, not at the next refresh (decision 0019)", "[core][coverage][runner]") {
  sim_pipeline p;
  p.commit({test::put(sim_table, "a", "1")});
  const auto started = p.time.steady_now();
  while (p.slot_readiness.state != readiness_state::ready && p.time.steady_now() - started < milliseconds(5000)) {
    p.advance(milliseconds(1));
  }
  REQUIRE(p.slot_readiness.state == readiness_state::ready);  // built: scan, boundary, registration record
  p.run();                                                    // no time passes
  CHECK(p.slot_coverage_time > 0);
}
