// runner_core's writer gate (protocol.md §13.3, §13.4) driven through the deterministic
// sim_pipeline: the samples the runner takes, the value in the slot, inheritance across a
// handoff and every forced open. Budget: max_lag 1000 ms, max_flush_age 100 ms → B = 1000 ms,
// H = 500 ms, lag tick 250 ms; max_write_delay 100 ms → D = 100 000 µs.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/runner_core.hpp"
#include "support/sim_pipeline.hpp"

using namespace dix;
using dix::test::sim_pipeline;
using dix::test::sim_table;
using std::chrono::milliseconds;

namespace {

runner_options gate_options() {
  runner_options o;
  o.max_lag = milliseconds(1000);
  o.max_flush_age = milliseconds(100);
  return o;
}

// A pipeline whose index was built and is ready, caught up, gate open.
void make_ready(sim_pipeline& p) {
  p.commit({test::put(sim_table, "a", "1")});
  p.advance(milliseconds(1000));
  REQUIRE(p.publications.back().state == readiness_state::ready);
  REQUIRE(p.slot_gate == gate_open);
}

// Work the backend accepts but never makes durable: the oldest accepted age passes B.
void trip(sim_pipeline& p) {
  p.backend.auto_barrier = false;
  p.commit({test::put(sim_table, "slow", "x")});
  p.advance(milliseconds(1300));
  REQUIRE(p.slot_gate == gate_exceeded);
}

// Whether `value` was stored with the last publication of state `s` or just before it.
bool stored_before_publication(const sim_pipeline& p, std::uint32_t value, readiness_state s) {
  // The last publication of state `s`, and a store of `value` with it or before it, after the one before.
  auto pub = std::find_if(p.publications.rbegin(), p.publications.rend(), [s](const fx::publish& x) { return x.state == s; });
  if (pub == p.publications.rend()) return false;
  const auto index = static_cast<std::size_t>(p.publications.rend() - pub) - 1;
  return std::any_of(p.gate_stores.begin(), p.gate_stores.end(),
                     [&](const auto& g) { return g.first == value && g.second <= index && g.second + 1 >= index; });
}

}  // namespace

TEST_CASE("runner gate: behaviour 23 - open while caught up, a delay rising to max_write_delay past B/2, exceeded at B",
          "[core][runner][gate][behaviour-23]") {
  sim_pipeline p(gate_options());
  make_ready(p);
  // Commits made durable promptly: the gate never closes.
  for (int i = 0; i < 5; ++i) {
    p.commit({test::put(sim_table, "k" + std::to_string(i), "v")});
    p.advance(milliseconds(200));
    CHECK(p.slot_gate == gate_open);
  }
  // A backend that stops barriering: the gate throttles, then refuses.
  p.backend.auto_barrier = false;
  p.commit({test::put(sim_table, "slow", "x")});
  std::vector<std::uint32_t> seen;
  for (int i = 0; i < 30 && p.slot_gate != gate_exceeded; ++i) {
    p.advance(milliseconds(50));
    if (seen.empty() || seen.back() != p.slot_gate) seen.push_back(p.slot_gate);
  }
  REQUIRE(seen.size() >= 3);
  CHECK(seen.front() == gate_open);  // below H: no delay
  CHECK(seen.back() == gate_exceeded);
  for (std::size_t i = 1; i + 1 < seen.size(); ++i) {
    CHECK(seen[i] >= 1);
    CHECK(seen[i] <= 100'000);
    CHECK(seen[i] > seen[i - 1]);  // rising with the lag
  }
  auto m = p.runner->snapshot().metrics(p.time.steady_now());
  CHECK(m.lag_ms >= 1000);
  CHECK(p.runner->lag_ms(p.time.steady_now()) == m.lag_ms);
  // Time alone never reopens it; the barrier (a durable advance after the trip) does, the end of
  // the log having been reached since the acquisition.
  p.advance(milliseconds(500));
  CHECK(p.slot_gate == gate_exceeded);
  p.backend.auto_barrier = true;
  p.backend.barrier();
  p.run();
  CHECK(p.slot_gate == gate_open);
}

TEST_CASE("runner gate: an inherited throttle reads 1 us until the successor proved catch-up, then opens",
          "[core][runner][gate][behaviour-23]") {
  sim_pipeline p(gate_options());
  make_ready(p);
  p.restart_at_release();  // not the last registration: nothing forced
  p.slot_gate = 40'000;    // what the predecessor left
  p.wake();                // the successor acquires; ready from its durable cursor, caught up
  REQUIRE(p.runner->owner());
  CHECK(p.slot_gate == 1);  // rule 4: not cleared before a durable advance of its own
  p.advance(milliseconds(600));
  CHECK(p.slot_gate == 1);
  p.commit({test::put(sim_table, "b", "2")});
  p.advance(milliseconds(200));  // the age flush: a durable advance
  CHECK(p.slot_gate == gate_open);
}

TEST_CASE("runner gate: behaviour 24 - the gate survives an owner handoff until the successor proves catch-up",
          "[core][runner][gate][behaviour-24]") {
  sim_pipeline p(gate_options());
  make_ready(p);
  trip(p);
  p.restart_at_release();  // another registration of the id remains: no forced open
  CHECK(p.slot_gate == gate_exceeded);
  p.backend.auto_barrier = true;
  p.wake();  // the successor acquires, resumes from the durable cursor, reaches the end of the log
  REQUIRE(p.runner->owner());
  REQUIRE(p.publications.back().state == readiness_state::ready);
  p.advance(milliseconds(600));
  CHECK(p.slot_gate == gate_exceeded);  // lag 0, but no durable advance of this owner yet
  p.commit({test::put(sim_table, "b", "2")});
  p.advance(milliseconds(200));
  CHECK(p.slot_gate == gate_open);
}

TEST_CASE("runner gate: behaviour 24 - an exceeded gate whose caught-up owner holds only cursor-only progress asks for a barrier and opens without a new write",
          "[core][runner][gate][behaviour-24]") {
  sim_pipeline p(gate_options());
  make_ready(p);
  trip(p);
  p.restart_at_release();
  p.backend.auto_barrier = true;
  p.wake();  // the successor acquires, caught up: exceeded until a durable advance of its own
  REQUIRE(p.runner->owner());
  REQUIRE(p.slot_gate == gate_exceeded);
  // Only a system transaction follows (every gated write is refused): its cursor-only progress
  // would wait for the cursor-only flush timer, minutes away; the gate's sample asks for the
  // barrier instead, and the durable advance with the end of the log opens the gate.
  p.store.commit({test::fake_op{op_kind::put, 0, "registration/sim-index", "x", true}}, header_flag::system, true);
  p.wake(wake_flag::commit | wake_flag::system);
  p.advance(milliseconds(600));
  CHECK(p.slot_gate == gate_open);
}

TEST_CASE("runner gate: behaviour 24 - a rebuild's start forces the gate open until ready", "[core][runner][gate][behaviour-24]") {
  sim_pipeline p(gate_options());
  make_ready(p);
  trip(p);
  p.backend.auto_barrier = true;
  p.backend.barrier();  // lets the pending flush finish; the request below starts the rebuild
  p.run();
  p.slot_gate = gate_exceeded;  // as if the gate were still closed
  p.restart_runner();
  p.store_rebuild_request(false);
  const auto from = p.publications.size();
  p.commit({test::put(sim_table, "c", "3")});
  // The acquisition consumes the request: condemned (the marker first, the gate opened with it),
  // needs-rebuild, then the attempt's rebuilding.
  REQUIRE(p.publications.size() > from + 1);
  CHECK(p.publications[from].state == readiness_state::needs_rebuild);
  CHECK(p.publications[from + 1].state == readiness_state::rebuilding);
  CHECK(std::any_of(p.gate_stores.begin(), p.gate_stores.end(),
                    [from](const auto& g) { return g.first == gate_open && g.second == from; }));
  CHECK(p.slot_gate == gate_open);
  p.advance(milliseconds(1000));
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.slot_gate == gate_open);
}

TEST_CASE("runner gate: forced open at unavailable - a slot found unavailable at acquisition", "[core][runner][gate]") {
  sim_pipeline p(gate_options());
  make_ready(p);
  p.restart_runner();
  p.slot_readiness.state = readiness_state::unavailable;
  p.slot_readiness.reason = readiness_reason::rebuild_exhausted;
  p.slot_gate = gate_exceeded;
  p.wake();
  CHECK(p.runner->state() == runner_state::unavailable);
  CHECK(p.slot_gate == gate_open);
}

TEST_CASE("runner gate: forced open at a terminal needs-rebuild (a backend that cannot reset)", "[core][runner][gate]") {
  sim_pipeline p(gate_options());
  make_ready(p);
  p.rebuildable = false;
  p.restart_runner();
  p.commit({test::put(sim_table, "b", "2")});
  REQUIRE(p.publications.back().state == readiness_state::ready);
  trip(p);
  p.backend.fail_next_delivery = true;
  p.commit({test::put(sim_table, "c", "3")});
  REQUIRE(p.runner->state() == runner_state::needs_rebuild);
  CHECK(p.slot_gate == gate_open);
  CHECK(stored_before_publication(p, gate_open, readiness_state::needs_rebuild));
}

TEST_CASE("runner gate: forced open while a condemnation's publication waits for the marker write", "[core][runner][gate]") {
  sim_pipeline p(gate_options());
  make_ready(p);
  trip(p);
  const auto publications = p.publications.size();
  p.backend.fail_next_delivery = true;
  p.commit({test::put(sim_table, "c", "3")});
  // The marker is written before needs-rebuild is published (§10.4); the gate opened before both.
  REQUIRE(p.publications.size() > publications);
  CHECK(p.publications[publications].state == readiness_state::needs_rebuild);
  auto opened = std::find_if(p.gate_stores.begin(), p.gate_stores.end(), [](const auto& g) { return g.first == gate_open; });
  REQUIRE(opened != p.gate_stores.end());
  CHECK(opened->second == publications);  // stored alone, before the needs-rebuild publication
}

TEST_CASE("runner gate: forced open with the held lock after a rejected shutdown", "[core][runner][gate]") {
  sim_pipeline p(gate_options());
  make_ready(p);
  trip(p);
  p.backend.reject_shutdown = true;
  p.stop();
  p.backend.barrier();  // flush(shutdown) completes; the shutdown is rejected
  p.run();
  REQUIRE(p.stopped);
  CHECK(p.lock_held);
  CHECK(p.publications.back().state == readiness_state::unavailable);
  CHECK(p.publications.back().lag_gate == std::optional<std::uint32_t>{gate_open});
  CHECK(p.slot_gate == gate_open);
}

TEST_CASE("runner gate: behaviour 24 - stopping the last registration of the id in the process forces the gate open, another does not",
          "[core][runner][gate][behaviour-24]") {
  SECTION("last") {
    sim_pipeline p(gate_options());
    make_ready(p);
    trip(p);
    p.stop(true);
    CHECK(p.slot_gate == gate_open);  // before the release, which waits for a barrier here
    p.backend.barrier();
    p.run();
    CHECK_FALSE(p.lock_held);
  }
  SECTION("not the last") {
    sim_pipeline p(gate_options());
    make_ready(p);
    trip(p);
    p.stop(false);
    p.backend.barrier();
    p.run();
    CHECK_FALSE(p.lock_held);
    CHECK(p.slot_gate == gate_exceeded);
  }
}

TEST_CASE("runner gate: an owner without a policy stores 0 at acquisition and never closes the gate", "[core][runner][gate]") {
  sim_pipeline p;  // max_lag 0
  p.slot_gate = gate_exceeded;  // left by an earlier owner with a policy
  p.commit({test::put(sim_table, "a", "1")});
  CHECK(p.slot_gate == gate_open);
  p.backend.auto_barrier = false;
  p.commit({test::put(sim_table, "b", "2")});
  p.advance(milliseconds(10000));
  CHECK(p.slot_gate == gate_open);
  CHECK(p.timers_armed() < 10);  // no lag tick chain without a policy
}

TEST_CASE("runner lag: every component is 0 for an idle, caught-up owner (protocol 13.1)", "[core][runner][lag]") {
  sim_pipeline p(gate_options());
  make_ready(p);
  for (int i = 0; i < 3; ++i) p.commit({test::put(sim_table, "k" + std::to_string(i), "v")});
  p.advance(milliseconds(500));
  REQUIRE(p.runner->state() == runner_state::idle);
  auto m = p.runner->snapshot().metrics(p.time.steady_now());
  CHECK(m.cursor_lag_ms == 0);
  CHECK(m.stalled_ms == 0);
  CHECK(m.unread_age_ms == 0);
  CHECK(m.oldest_accepted_age_ms == 0);
  CHECK(m.lag_ms == 0);
}

TEST_CASE("runner lag: a deferring backend shows as stalled, one that never barriers as the oldest accepted age (protocol 13.1)",
          "[core][runner][lag]") {
  SECTION("deferred") {
    sim_pipeline p(gate_options());
    make_ready(p);
    p.backend.auto_barrier = false;
    p.backend.cap = 1;
    p.commit({test::put(sim_table, "a", "1")});
    p.commit({test::put(sim_table, "b", "2")});
    REQUIRE(p.runner->state() == runner_state::deferred);
    p.advance(milliseconds(300));
    auto m = p.runner->snapshot().metrics(p.time.steady_now());
    CHECK(m.stalled_ms >= 300);
    CHECK(m.lag_ms >= m.stalled_ms);
  }
  SECTION("never barriers") {
    sim_pipeline p(gate_options());
    make_ready(p);
    p.backend.auto_barrier = false;
    p.commit({test::put(sim_table, "a", "1")});
    p.advance(milliseconds(700));
    auto m = p.runner->snapshot().metrics(p.time.steady_now());
    CHECK(m.oldest_accepted_age_ms >= 700);
    CHECK(m.stalled_ms == 0);
    CHECK(m.lag_ms == m.oldest_accepted_age_ms);
  }
}

TEST_CASE("runner lag: a reader that has not reached the end since it acquired shows an unread age (protocol 13.1)", "[core][runner][lag]") {
  auto o = gate_options();
  o.max_transactions_per_turn = 1;  // one transaction per turn: the end is several turns away
  sim_pipeline p(o);
  make_ready(p);
  p.restart_runner();  // a new process: the next owner starts behind
  for (int i = 0; i < 6; ++i) p.store.commit({test::put(sim_table, "k" + std::to_string(i), "v")}, 0, false);
  p.wake(wake_flag::commit, false);
  // Step until the new owner read its first chunk, which is not the end of the log.
  bool behind = false;
  for (int i = 0; i < 200 && !behind; ++i) {
    REQUIRE(p.step());
    auto s = p.runner->snapshot();
    behind = s.owner && !s.logs.empty() && s.logs[0].latest_sequence > s.logs[0].read_sequence;
  }
  REQUIRE(behind);
  auto s = p.runner->snapshot();
  CHECK(s.unread_since.has_value());  // no commit wake marked it: the chunk did
  p.run();
  CHECK_FALSE(p.runner->snapshot().unread_since.has_value());  // the end reached
}

TEST_CASE("runner lag: a reader that keeps a turn behind a steady writer for seconds shows the age of what it has not read (decision 0065)",
          "[core][runner][lag][unread]") {
  auto o = gate_options();
  o.max_transactions_per_turn = 1;  // a transaction a turn: the writer's next one is always waiting
  sim_pipeline p(o);
  make_ready(p);
  // A transaction committed every ms, each between the runner's events: the reader never finds
  // the end of the log (checked), so §13.1's stamp alone would age by the whole run.
  bool left_the_end = false, reached_the_end_again = false;
  for (int ms = 0; ms < 5'000; ++ms) {
    p.commit({test::put(sim_table, "w" + std::to_string(ms), "v")}, false, false);
    for (int i = 0; i < 4 && p.step(); ++i) {
    }
    p.time.advance(milliseconds(1));
    const auto s = p.runner->snapshot();
    if (s.unread_since) left_the_end = true;
    else if (left_the_end) reached_the_end_again = true;
  }
  REQUIRE(left_the_end);
  REQUIRE_FALSE(reached_the_end_again);
  // The oldest unread transaction was committed `behind` ms ago (one a ms): the age is at least
  // that (nothing hides) and not much more, where the stamp alone said 5 s.
  const auto s = p.runner->snapshot();
  const auto behind = s.logs[0].latest_sequence - s.logs[0].read_sequence;
  const auto m = s.metrics(p.time.steady_now());
  CHECK(behind > 10);
  CHECK(m.unread_age_ms >= behind);
  CHECK(m.unread_age_ms <= behind + 10);
  // The writer stops: the reader reads to the end and the age is gone.
  p.run();
  CHECK_FALSE(p.runner->snapshot().unread_since.has_value());
}

TEST_CASE("runner lag: a transaction cut across chunks is not read past until its last part is cut (decision 0065)",
          "[core][runner][lag][unread]") {
  auto o = gate_options();
  o.max_transactions_per_turn = 1;  // a transaction a turn
  o.max_chunk_records = 4;          // and a large one cut in parts of 4
  sim_pipeline p(o);
  make_ready(p);
  const auto base = p.runner->snapshot().delivered_records;
  const auto delivered = [&] { return p.runner->snapshot().delivered_records - base; };
  const auto start = p.runner->snapshot().logs[0].read_sequence;
  // X, Y and Z; the first turn reads X and leaves the others unread: stamped then. Stopped once
  // X is read.
  p.commit({test::put(sim_table, "x", "1")}, false, false);
  p.commit({test::put(sim_table, "y", "1")}, false, false);
  p.commit({test::put(sim_table, "z", "1")}, false, false);
  for (int i = 0; i < 200 && p.runner->snapshot().logs[0].read_sequence < start + 1; ++i) REQUIRE(p.step());
  REQUIRE(p.runner->snapshot().unread_since.has_value());
  // B, 40 operations, 10 ms later. Z's turn, asked for after B's commit, sees B's end as the log's
  // end and marks it. The turns after it collect all of B at once (the tailer's read position is
  // past it) but cut it 4 operations a turn: until its last part is cut, B is unread, and the
  // stamp may not move past its commit — as it would by Z's mark if the clock went by the read
  // position.
  p.time.advance(milliseconds(10));
  const auto t_b = p.time.steady_now();
  std::vector<test::fake_op> big;
  for (int i = 0; i < 40; ++i) big.push_back(test::put(sim_table, "b" + std::to_string(i), "v"));
  p.commit(std::move(big), false, false);
  bool collected = false;
  for (int i = 0; i < 2'000 && p.step(); ++i) {
    p.time.advance(milliseconds(1));
    const auto s = p.runner->snapshot();
    // X, Y, Z and 36 of B accepted: B's last part (its 37th to 40th operations) is not cut yet.
    if (delivered() >= 3 && delivered() < 39) {
      collected = collected || s.logs[0].read_sequence == s.logs[0].latest_sequence;
      REQUIRE(s.unread_since.has_value());
      CHECK(*s.unread_since <= t_b);
    }
  }
  CHECK(collected);  // B was collected whole while parts of it were still to cut
  CHECK(delivered() == 43);
  CHECK_FALSE(p.runner->snapshot().unread_since.has_value());  // then the end
}

TEST_CASE("runner gate: a reader falling behind a backlog throttles at the forecast while the lag is still below H (decision 0027)",
          "[core][runner][gate][forecast]") {
  auto o = gate_options();
  o.max_transactions_per_turn = 1;    // one transaction read per turn
  o.max_accepted_batches_ahead = 1;   // and one more only after each barrier
  sim_pipeline p(o);
  make_ready(p);
  p.backend.auto_barrier = false;
  for (int i = 0; i < 200; ++i) p.commit({test::put(sim_table, "b" + std::to_string(i), "v")});
  p.run();
  // A barrier every 20 ms: the runner reads 50 transactions a second of a backlog of ~200, four
  // seconds of reading, while its lag (20 ms of accepted age, the unread age) is still small.
  for (int i = 0; i < 8; ++i) {
    p.advance(milliseconds(20));
    p.backend.barrier();
    p.run();
  }
  const auto lag = p.runner->lag_ms(p.time.steady_now());
  CHECK(lag < 500);                  // below H: the age alone would leave the gate open
  CHECK(p.slot_gate == 100'000u);    // the forecast is past B: throttled at D, not refused
  // Barriers on time again: once the backlog is read and durable, the gate opens.
  p.backend.auto_barrier = true;
  p.backend.barrier();
  for (int i = 0; i < 400 && p.slot_gate != gate_open; ++i) p.advance(milliseconds(100));
  CHECK(p.slot_gate == gate_open);
}
