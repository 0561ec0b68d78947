// runner_core (protocol.md §5–§10 subset) driven through the deterministic sim_pipeline, plus a
// few event sequences fed to the core by hand.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/runner_core.hpp"
#include "support/sim_pipeline.hpp"

using namespace dix;
using dix::test::sim_pipeline;
using dix::test::sim_table;

namespace {

using std::chrono::milliseconds;

// The primary's projection (payload) of every present key, as the index should hold it.
test::index_map expected_index(test::fake_store& store) {
  test::index_map out;
  for (const auto& [id, stored] : store.table(sim_table)) {
    if (!stored) continue;
    auto v = decode_value(*stored);
    out[test::index_key("main", sim_table, id)] = test::index_entry{v->version, std::string(v->payload)};
  }
  return out;
}

bool published(const sim_pipeline& p, readiness_state s, readiness_reason r) {
  for (const auto& x : p.publications) {
    if (x.state == s && x.reason == r) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("runner: a fresh index is condemned cursor-missing, reset, scanned, and ready once its boundary is durable", "[core][runner][rebuild]") {
  sim_pipeline p;
  p.hold_barriers();  // the boundary stays pending until the barrier below
  p.commit({test::put(sim_table, "a", "books"), test::put(sim_table, "b", "toys")});
  REQUIRE(p.publications.size() >= 2);
  // The marker first, then needs-rebuild; then attempt 1 publishes rebuilding (§10.3, §11.4).
  CHECK(p.publications[0].state == readiness_state::needs_rebuild);
  CHECK(p.publications[0].reason == readiness_reason::cursor_missing);
  CHECK(p.publications[1].state == readiness_state::rebuilding);
  CHECK(p.publications[1].reason == readiness_reason::cursor_missing);
  CHECK(p.publications[1].attempts == 1);
  CHECK(p.meta.condemned);
  CHECK(p.backend.resets == 1);
  // The acquisition's epoch 1 is shut down; the reset and the scan run under epoch 2.
  CHECK(p.runner->epoch() == 2);
  CHECK(p.persisted_epoch == 2);
  REQUIRE_FALSE(p.delivered.empty());
  for (std::size_t i = 0; i + 1 < p.delivered.size() && p.delivered[i]->rebuild; ++i) CHECK_FALSE(p.delivered[i]->through);
  CHECK(p.runner->state() == runner_state::rebuilding);  // boundary pending
  CHECK(p.publications.back().state == readiness_state::rebuilding);
  // The boundary chunk's acceptance asked for the barrier at once, not at max_flush_age.
  CHECK(p.flush_requests == std::vector<flush_reason>{flush_reason::threshold});
  CHECK(p.backend.flushes_waiting() == 1);
  p.release_barriers();  // the barrier makes the boundary durable (run() fires no timer)
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.publications.back().attempts == 0);
  CHECK(p.backend.durable_index() == expected_index(p.store));
  REQUIRE(p.backend.durable());
  CHECK(p.backend.durable()->logs()[0].sequence == p.store.latest());  // the boundary: the last commit
  CHECK_FALSE(p.meta.condemned);  // deleted with the registration record, before `ready`
  CHECK(p.meta.fingerprint == sim_pipeline::sim_fingerprint);
  CHECK(p.runner->state() == runner_state::idle);
  auto m = p.runner->snapshot().metrics(p.time.steady_now());
  CHECK(m.rebuilt_records == 2);
  CHECK(m.estimated_records == 2);
  CHECK(m.rebuild_eta_ms == 0);
}

TEST_CASE("runner: each delivery of a rebuild asks for one barrier at most, the boundary's included, and a reader waiting at the first build asks none of its own (decision 0062)", "[core][runner][rebuild][flush]") {
  SECTION("every chunk crosses the threshold: the boundary asks nothing more") {
    runner_options o;
    o.max_chunk_records = 1;
    o.flush_after_mutations = 1;
    sim_pipeline p(o);
    p.hold_barriers();
    p.commit({test::put(sim_table, "a", "1"), test::put(sim_table, "b", "2")});
    const auto rebuild_batches = static_cast<std::size_t>(
        std::count_if(p.delivered.begin(), p.delivered.end(), [](const auto& b) { return b->rebuild; }));
    REQUIRE(rebuild_batches >= 2);
    CHECK(p.flush_requests == std::vector<flush_reason>(rebuild_batches, flush_reason::threshold));
    REQUIRE(p.publications.back().state == readiness_state::rebuilding);
    p.release_barriers();
    CHECK(p.publications.back().state == readiness_state::ready);
  }
  SECTION("a reader waits at the first build: the boundary's barrier serves it") {
    sim_pipeline p;
    p.hold_barriers();
    const auto w = p.store.commit({test::put(sim_table, "a", "1")});
    p.demand_coverage(w.second);
    REQUIRE(p.publications.back().state == readiness_state::rebuilding);
    CHECK(p.flush_requests == std::vector<flush_reason>{flush_reason::threshold});
    CHECK(p.backend.flushes_waiting() == 1);
    p.release_barriers();
    CHECK(p.publications.back().state == readiness_state::ready);
    CHECK(p.slot_coverage_time >= w.second);
  }
}

TEST_CASE("runner: a rebuild's barrier that completes before its logs open at the boundary publishes ready only once they opened, opens them once, and owes the coverage hook their ends (decision 0062)", "[core][runner][rebuild][coverage]") {
  runner_options o;
  o.max_chunk_records = 1;
  o.flush_after_mutations = 1;  // a barrier per scan chunk: several flush answers around the boundary
  sim_pipeline p(o);
  p.slow_log_open = true;  // the boundary's barrier completes before log_opened arrives
  SECTION("flush answers at once") {}
  SECTION("flush answers late: a scan chunk's answer comes after the boundary's") { p.slow_flush_done = true; }
  p.store.commit({test::put(sim_table, "a", "1")});
  const auto written = p.store.commit({test::put(sim_table, "b", "2")}).second;
  p.wake(wake_flag::commit, false);
  bool ready_seen = false, in_window = false;
  while (!ready_seen && p.step()) {
    const bool opening = p.log_opens > p.logs_opened;
    if (opening) CHECK(p.settles_carried == 0);  // the settle waits for the opening's answer
    if (opening && !in_window && p.backend.durable() && p.backend.durable()->logs()[0].sequence == p.store.latest()) {
      // The boundary durable, its logs still opening: only cursor-only progress will follow (a
      // system transaction), so nothing but the owed hook asks for a barrier that reaches it.
      in_window = true;
      p.store.commit({test::fake_op{op_kind::put, 0, "registration/other", "x", true}}, header_flag::system, true);
    }
    for (const auto& x : p.publications) ready_seen = ready_seen || x.state == readiness_state::ready;
    if (ready_seen) CHECK(p.logs_opened == p.log_opens);
  }
  REQUIRE(in_window);
  REQUIRE(ready_seen);
  CHECK(p.log_opens == 1);  // the boundary's opening only: later flush answers opened nothing more
  CHECK(p.backend.durable_index() == expected_index(p.store));
  const auto ready_at = p.time.steady_now();
  auto reached = [&] {
    return std::any_of(p.coverage_hooks.begin(), p.coverage_hooks.end(),
                       [&](const fx::publish_coverage& h) { return h.coverage_time >= written; });
  };
  for (int ms = 0; ms < 30000 && !reached(); ms += 10) p.advance(milliseconds(10));
  CHECK(reached());
  CHECK(p.time.steady_now() - ready_at <= milliseconds(4000));
}

TEST_CASE("runner: one barrier answering every flush of a rebuild while its logs open at the boundary: the durable answers after the first open nothing more (decision 0062)", "[core][runner][rebuild]") {
  runner_options o;
  o.max_chunk_records = 1;
  o.flush_after_mutations = 1;  // each scan chunk asks for a barrier, and so does the boundary
  sim_pipeline p(o);
  p.backend.auto_barrier = false;
  p.slow_log_open = true;
  p.store.commit({test::put(sim_table, "a", "1"), test::put(sim_table, "b", "2")});
  p.wake(wake_flag::commit, false);
  // Until the boundary chunk is accepted and its logs are opening: several flushes wait.
  while (!(p.log_opens == 1 && p.logs_opened == 0) && p.step()) {}
  REQUIRE(p.log_opens == 1);
  REQUIRE(p.backend.flushes_waiting() >= 2);
  p.backend.barrier();  // answers them all: a durable query, then asked again
  p.backend.auto_barrier = true;
  p.run();
  CHECK(p.log_opens == 1);  // no second opening taken for an acquisition's
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.backend.durable_index() == expected_index(p.store));
  CHECK(p.violation.empty());
}

TEST_CASE("runner: a restarted runner resumes from the durable cursor and publishes ready only after verifying it (behaviour 5)", "[core][runner]") {
  sim_pipeline p;
  p.commit({test::put(sim_table, "a", "1")});
  p.advance(milliseconds(1000));
  REQUIRE(p.backend.durable());
  p.restart_runner();
  p.publications.clear();
  p.delivered.clear();
  p.commit({test::put(sim_table, "b", "2")});
  REQUIRE_FALSE(p.publications.empty());
  CHECK(p.publications.front().state == readiness_state::ready);
  CHECK(p.runner->epoch() == 3);  // 1: the first acquisition, 2: its rebuild, 3: this one
  // Nothing durable is delivered again: the first batch holds only "b".
  REQUIRE_FALSE(p.delivered.empty());
  CHECK(p.delivered.front()->records.size() == 1);
  CHECK(p.delivered.front()->records[0].record_id == "b");

  // The anchor purged: exact resume fails and `ready` is never published.
  p.advance(milliseconds(1000));
  p.store.purge_before(p.store.latest() + 1);
  p.restart_runner();
  p.publications.clear();
  p.hold_barriers();
  p.commit({test::put(sim_table, "c", "3")});
  CHECK(published(p, readiness_state::needs_rebuild, readiness_reason::log_retention));
  // Condemned, then rebuilt from a scan (the purged log is not needed): `ready` only after the
  // boundary is durable.
  CHECK(published(p, readiness_state::rebuilding, readiness_reason::log_retention));
  CHECK(p.publications.back().state == readiness_state::rebuilding);
  p.release_barriers();
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.backend.durable_index() == expected_index(p.store));
  CHECK(p.lock_held);
}

TEST_CASE("runner: after deferred, commits cause no redelivery, a changed redelivers the identical batch (behaviour 9)", "[core][runner][deferred]") {
  runner_options o;
  o.max_flush_age = milliseconds(1000);
  sim_pipeline p(o);
  p.backend.auto_barrier = false;
  p.backend.cap = 1;
  p.commit({test::put(sim_table, "a", "1")});  // accepted, queued
  p.commit({test::put(sim_table, "b", "2")});  // deferred: the queue is at its cap
  REQUIRE(p.runner->state() == runner_state::deferred);
  auto deferred_batch = p.delivered.back();
  auto deliveries = p.delivered.size();
  p.commit({test::put(sim_table, "c", "3")});
  p.commit({test::put(sim_table, "d", "4")});
  CHECK(p.delivered.size() == deliveries);  // commit wakes never retry
  p.backend.apply_queue();                   // room: the backend emits `changed`
  p.run();
  REQUIRE(p.delivered.size() >= deliveries + 1);  // then draining continues with c and d
  CHECK(p.delivered[deliveries] == deferred_batch);  // the identical batch object, same epoch
  CHECK(p.delivered[deliveries]->epoch == deferred_batch->epoch);
}

TEST_CASE("runner: without any changed, the max_flush_age timer retries a deferred batch (behaviour 9)", "[core][runner][deferred]") {
  runner_options o;
  o.max_flush_age = milliseconds(500);
  sim_pipeline p(o);
  p.backend.auto_barrier = false;
  p.backend.cap = 1;
  p.commit({test::put(sim_table, "a", "1")});
  p.commit({test::put(sim_table, "b", "2")});
  REQUIRE(p.runner->state() == runner_state::deferred);
  auto deliveries = p.delivered.size();
  p.backend.cap = 100;  // room appears silently (a misbehaving backend): only the timer helps
  p.advance(milliseconds(499));
  CHECK(p.delivered.size() == deliveries);
  p.advance(milliseconds(1));
  CHECK(p.delivered.size() == deliveries + 1);
}

TEST_CASE("runner: a changed that arrives before the deferred result is counted and retries at once (behaviour 9)", "[core][runner][deferred]") {
  // Fed by hand: deliver issued, then a `changed`, then the deferred result.
  runner_core::config c;
  runner_core core(c);
  steady_time now{};
  auto out = core.on_wake(wake_flag::commit, now);
  out = core.on_lock_acquired(core.generation(), now);
  out = core.on_epoch_minted(1, now);
  auto gen = core.generation();
  out = core.on_epoch_persisted(gen, result<void>{}, now);
  auto start = cursor::make({log_position{"main", "id", 1, 10}}).value();
  out = core.on_durable(gen, std::optional<cursor>{start}, now);
  out = core.on_log_opened(gen, std::nullopt, start, now);
  auto b = std::make_shared<batch>();
  b->epoch = 1;
  b->through = cursor::make({log_position{"main", "id", 2, 11}}).value();
  b->records.push_back(record_entry{"main", 1, "a", 11, {state_kind::absent, 0, {}, {}}});
  pull_outcome chunk;
  chunk.chunk.delivery = b;
  out = core.on_chunk(gen, chunk, now);
  REQUIRE(std::holds_alternative<fx::deliver>(out.back()));
  out = core.on_state_change({state_change_kind::changed, 0}, now);
  out = core.on_delivery(gen, delivery_result::deferred, now);
  REQUIRE_FALSE(out.empty());
  auto* retry = std::get_if<fx::deliver>(&out.back());
  REQUIRE(retry);
  CHECK(retry->b == b);
}

TEST_CASE("runner: a durable cursor mixing two offered cursors is cursor-unoffered (behaviour 10)", "[core][runner]") {
  runner_core core(runner_core::config{});
  steady_time now{};
  (void)core.on_wake(wake_flag::commit, now);
  (void)core.on_lock_acquired(core.generation(), now);
  (void)core.on_epoch_minted(1, now);
  auto gen = core.generation();
  (void)core.on_epoch_persisted(gen, result<void>{}, now);
  auto c0 = cursor::make({log_position{"a", "ia", 1, 10}, log_position{"b", "ib", 1, 10}}).value();
  auto c1 = cursor::make({log_position{"a", "ia", 2, 11}, log_position{"b", "ib", 1, 10}}).value();
  auto c2 = cursor::make({log_position{"a", "ia", 2, 11}, log_position{"b", "ib", 2, 12}}).value();
  auto mixed = cursor::make({log_position{"a", "ia", 1, 10}, log_position{"b", "ib", 2, 12}}).value();
  (void)core.on_durable(gen, std::optional<cursor>{c0}, now);
  (void)core.on_log_opened(gen, std::nullopt, c0, now);
  for (const auto& through : {c1, c2}) {
    auto b = std::make_shared<batch>();
    b->epoch = 1;
    b->through = through;
    b->records.push_back(record_entry{"a", 1, "k", 11, {state_kind::absent, 0, {}, {}}});
    pull_outcome chunk;
    chunk.chunk.delivery = b;
    (void)core.on_chunk(gen, chunk, now);
    (void)core.on_delivery(gen, delivery_result::accepted, now);
  }
  auto out = core.on_durable(gen, std::optional<cursor>{mixed}, now);
  bool condemned = false;
  for (auto& e : out) {
    if (auto* pub = std::get_if<fx::publish>(&e)) {
      condemned = pub->state == readiness_state::needs_rebuild && pub->reason == readiness_reason::cursor_unoffered;
    }
  }
  CHECK(condemned);
  CHECK(core.state() == runner_state::needs_rebuild);
}

TEST_CASE("runner: waiting-durable is never entered while a transaction is cut open (behaviour 11)", "[core][runner]") {
  runner_options o;
  o.max_accepted_batches_ahead = 1;
  o.max_chunk_records = 1;
  sim_pipeline p(o);
  p.backend.auto_barrier = false;  // nothing becomes durable
  p.commit({test::put(sim_table, "a", "1"), test::put(sim_table, "b", "2"), test::put(sim_table, "c", "3")});
  // Three chunks of the cut transaction were delivered although the cap is 1.
  std::size_t with_records = 0;
  for (auto& b : p.delivered) with_records += b->records.empty() ? 0 : 1;
  CHECK(with_records == 3);
  // Once it completed, the cap applies.
  p.commit({test::put(sim_table, "d", "4")});
  CHECK(p.runner->state() == runner_state::waiting_durable);
  auto before = p.delivered.size();
  p.commit({test::put(sim_table, "e", "5")});
  CHECK(p.delivered.size() == before);
  p.backend.barrier();  // durable advance: below the cap again
  p.run();
  CHECK(p.delivered.size() > before);
}

TEST_CASE("runner: reaching the accepted-ahead cap with work to make durable asks for a barrier at once, not at the age",
          "[core][runner]") {
  runner_options o;
  o.max_accepted_batches_ahead = 2;
  o.max_flush_age = std::chrono::milliseconds(1000);
  sim_pipeline p(o);
  p.backend.auto_barrier = false;  // the barrier happens when the test says
  p.commit({test::put(sim_table, "a", "1")});
  p.backend.barrier();
  p.run();
  p.flush_requests.clear();
  p.commit({test::put(sim_table, "b", "2")});
  CHECK(p.flush_requests.empty());  // below the cap: the age decides
  p.commit({test::put(sim_table, "c", "3")});
  REQUIRE(p.runner->state() == runner_state::waiting_durable);
  // Without advancing the clock: the cap asked for the barrier (a threshold), the reader waits on it.
  CHECK(p.flush_requests == std::vector<flush_reason>{flush_reason::threshold});
  p.backend.barrier();
  p.run();
  CHECK(p.runner->state() != runner_state::waiting_durable);
}

TEST_CASE("runner: after accepted-work-lost the next batch starts right after the durable cursor (behaviour 12)", "[core][runner]") {
  sim_pipeline p;
  p.backend.auto_barrier = false;
  p.commit({test::put(sim_table, "a", "1")});
  p.backend.barrier();
  p.run();
  auto durable = *p.backend.durable();
  p.commit({test::put(sim_table, "b", "2")});
  p.commit({test::put(sim_table, "c", "3")});
  auto before = p.delivered.size();
  p.backend.lose_accepted(p.runner->epoch());
  p.run();
  REQUIRE(p.delivered.size() > before);
  const auto& replay = *p.delivered[before];
  REQUIRE_FALSE(replay.transactions.empty());
  CHECK(replay.transactions.front().sequence == durable.logs()[0].sequence + 1);
  p.backend.barrier();
  p.run();
  CHECK(p.backend.durable_index() == expected_index(p.store));
}

TEST_CASE("runner: flush triggers are the mutation threshold and the age timer, the end of log requests none", "[core][runner][flush]") {
  runner_options o;
  o.flush_after_mutations = 3;
  o.max_flush_age = milliseconds(200);
  sim_pipeline p(o);
  p.commit({test::put(sim_table, "a", "1")});  // the fresh index's rebuild: its end asks for a barrier at once
  REQUIRE(p.publications.back().state == readiness_state::ready);
  CHECK(p.flush_requests == std::vector<flush_reason>{flush_reason::threshold});
  p.flush_requests.clear();
  p.backend.auto_barrier = false;
  p.commit({test::put(sim_table, "a", "2"), test::put(sim_table, "b", "1")});
  CHECK(p.flush_requests.empty());  // caught up, 2 mutations: no flush yet
  p.commit({test::put(sim_table, "c", "1")});
  REQUIRE(p.flush_requests.size() == 1);
  CHECK(p.flush_requests[0] == flush_reason::threshold);
  p.commit({test::put(sim_table, "d", "1")});
  p.advance(milliseconds(199));
  CHECK(p.flush_requests.size() == 1);
  p.advance(milliseconds(1));
  REQUIRE(p.flush_requests.size() == 2);
  CHECK(p.flush_requests[1] == flush_reason::age);
}

TEST_CASE("runner: stop flushes with reason shutdown, shuts the epoch down and releases the lock", "[core][runner][stop]") {
  sim_pipeline p;
  p.commit({test::put(sim_table, "a", "1")});
  p.stop();
  REQUIRE(p.stopped);
  CHECK(p.stopped->has_value());
  CHECK(p.flush_requests.back() == flush_reason::shutdown);
  CHECK_FALSE(p.lock_held);
  CHECK(p.runner->state() == runner_state::stopped);
  CHECK(p.backend.durable_index() == expected_index(p.store));
}

TEST_CASE("runner: a rejected shutdown keeps the lock and publishes unavailable/shutdown-failed", "[core][runner][stop]") {
  sim_pipeline p;
  p.commit({test::put(sim_table, "a", "1")});
  p.backend.reject_shutdown = true;
  p.stop();
  REQUIRE(p.stopped);
  REQUIRE_FALSE(p.stopped->has_value());
  CHECK(p.stopped->error().value() == errc::backend_failed);
  CHECK(p.lock_held);
  CHECK(published(p, readiness_state::unavailable, readiness_reason::shutdown_failed));
  p.stopped.reset();
  p.stop();  // stop again: no second outcome (the actor returns the same future)
  CHECK_FALSE(p.stopped);
}

TEST_CASE("runner: transient faults back off and retry, max_rebuild_attempts in a row condemn", "[core][runner][transient]") {
  runner_options o;
  o.rebuild_backoff = milliseconds(100);
  o.max_rebuild_attempts = 3;
  sim_pipeline p(o);
  p.commit({test::put(sim_table, "a", "1")});
  p.advance(milliseconds(1000));
  p.restart_runner();
  p.backend.durable_error = true;
  p.commit({test::put(sim_table, "b", "2")});
  CHECK(p.runner->state() == runner_state::running);
  CHECK(p.publications.back().state == readiness_state::ready);  // readiness unchanged
  p.advance(milliseconds(100));  // retry 1 fails again
  CHECK(p.runner->state() == runner_state::running);
  p.advance(milliseconds(200));  // retry 2: the third consecutive fault condemns
  CHECK(p.runner->state() == runner_state::needs_rebuild);
  CHECK(p.publications.back().reason == readiness_reason::backend_failed);
}

TEST_CASE("runner: a transient fault that clears resumes from the durable cursor without condemning", "[core][runner][transient]") {
  runner_options o;
  o.rebuild_backoff = milliseconds(50);
  sim_pipeline p(o);
  p.commit({test::put(sim_table, "a", "1")});
  p.advance(milliseconds(1000));
  p.store.fail_reads = true;
  p.commit({test::put(sim_table, "b", "2")});
  CHECK(p.runner->state() == runner_state::running);
  p.store.fail_reads = false;
  p.advance(milliseconds(50));
  p.advance(milliseconds(1000));
  CHECK(p.backend.durable_index() == expected_index(p.store));
  CHECK_FALSE(published(p, readiness_state::needs_rebuild, readiness_reason::runner_failed));
}

TEST_CASE("runner: a failed delivery condemns with backend-failed and rebuilds", "[core][runner][rebuild]") {
  sim_pipeline p;
  p.commit({test::put(sim_table, "a", "1")});
  p.advance(milliseconds(1000));
  REQUIRE(p.publications.back().state == readiness_state::ready);
  p.backend.fail_next_delivery = true;
  p.commit({test::put(sim_table, "b", "2")});
  CHECK(published(p, readiness_state::needs_rebuild, readiness_reason::backend_failed));
  CHECK(published(p, readiness_state::rebuilding, readiness_reason::backend_failed));
  CHECK(p.backend.resets == 2);
  p.advance(milliseconds(1000));
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.backend.durable_index() == expected_index(p.store));
}

TEST_CASE("runner: a backend that cannot reset is condemned, released and parked", "[core][runner]") {
  sim_pipeline p;
  p.commit({test::put(sim_table, "a", "1")});
  p.advance(milliseconds(1000));
  p.rebuildable = false;
  p.restart_runner();
  p.commit({test::put(sim_table, "b", "2")});
  REQUIRE(p.publications.back().state == readiness_state::ready);
  p.backend.fail_next_delivery = true;
  p.commit({test::put(sim_table, "c", "3")});
  CHECK(published(p, readiness_state::needs_rebuild, readiness_reason::backend_failed));
  CHECK(p.runner->state() == runner_state::needs_rebuild);
  CHECK_FALSE(p.lock_held);
  auto before = p.delivered.size();
  p.commit({test::put(sim_table, "d", "4")});  // parked: commits do nothing
  CHECK(p.delivered.size() == before);
}

TEST_CASE("runner: a dormant runner ignores system commits and starts on a non-system one", "[core][runner]") {
  sim_pipeline p;
  p.wake(wake_flag::commit | wake_flag::system);
  CHECK(p.runner->state() == runner_state::dormant);
  CHECK_FALSE(p.lock_held);
  p.wake(wake_flag::backend);
  CHECK(p.runner->state() == runner_state::dormant);
  p.wake(wake_flag::commit);
  CHECK(p.lock_held);
}

TEST_CASE("runner: an OS crash losing the unsynced primary tail leaves no stale key (behaviour 26)", "[core][runner][crash]") {
  sim_pipeline p;
  p.commit({test::put(sim_table, "a", "old")}, true);
  p.advance(milliseconds(1000));
  p.commit({test::put(sim_table, "a", "new")});  // not synced by the writer
  p.advance(milliseconds(1000));                   // delivered (after a WAL sync) and made durable
  CHECK(p.store.syncs() >= 1);
  p.store.crash();                                 // loses only what was never synced: nothing here
  p.backend.crash();
  p.restart_runner();
  p.commit({test::put(sim_table, "z", "1")});
  p.advance(milliseconds(1000));
  CHECK(p.backend.durable_index() == expected_index(p.store));
}

// ---- supervision events (actors.md §3), fed to the core by hand ---------------------------------

namespace {

template <class T>
const T* find_fx(const effects& fx) {
  for (const auto& e : fx) {
    if (const auto* x = std::get_if<T>(&e)) return x;
  }
  return nullptr;
}

// A runner that owns the lock with epoch 1 persisted and a durable query outstanding.
struct owning_core {
  static runner_core::config make_config(bool rebuildable) {
    runner_core::config c;
    c.options.rebuild_backoff = milliseconds(100);
    c.rebuildable = rebuildable;
    return c;
  }
  runner_core::config config;
  runner_core core;
  steady_time now{};
  explicit owning_core(bool rebuildable = false) : config(make_config(rebuildable)), core(config) {
    core.on_wake(wake_flag::commit, now);
    core.on_lock_acquired(core.generation(), now);
    auto fx = core.on_epoch_minted(1, now);
    REQUIRE(find_fx<fx::persist_epoch>(fx));
    fx = core.on_epoch_persisted(find_fx<fx::persist_epoch>(fx)->gen, result<void>{}, now);
    REQUIRE(find_fx<fx::read_meta>(fx));
    fx = core.on_meta_state(find_fx<fx::read_meta>(fx)->gen, meta_records{}, dix::readiness{}, now);
    REQUIRE(find_fx<fx::query_durable>(fx));
  }
};

}  // namespace

TEST_CASE("runner: a tailer lost while the epoch is being persisted persists it again once the replacement is up", "[core][runner][supervision]") {
  runner_core::config c;
  c.options.rebuild_backoff = milliseconds(100);
  runner_core r(c);
  steady_time now{};
  r.on_wake(wake_flag::commit, now);
  r.on_lock_acquired(r.generation(), now);
  REQUIRE(find_fx<fx::persist_epoch>(r.on_epoch_minted(1, now)));
  auto fx = r.on_child_down(child_kind::tailer, false, now);
  const auto* retry = find_fx<fx::arm_timer>(fx);
  REQUIRE(retry);
  CHECK(retry->kind == timer_kind::transient_retry);
  CHECK(find_fx<fx::publish>(fx) == nullptr);  // transient: readiness unchanged
  CHECK(r.on_timer(timer_kind::transient_retry, retry->gen, now + milliseconds(100)).empty());  // no tailer yet
  fx = r.on_child_up(child_kind::tailer, now + milliseconds(150));
  const auto* persist = find_fx<fx::persist_epoch>(fx);
  REQUIRE(persist);
  CHECK(persist->epoch == 1);  // the same epoch, never used unpersisted
}

TEST_CASE("runner: a stop while the acquisition's epoch is being persisted waits for the write: no backend call under it, no unlock, before it is durable (protocol 9.2 step 2, 9.3)", "[core][runner][supervision]") {
  runner_core::config c;
  runner_core r(c);
  steady_time now{};
  r.on_wake(wake_flag::commit, now);
  r.on_lock_acquired(r.generation(), now);
  auto fx = r.on_epoch_minted(7, now);
  const auto persist = *find_fx<fx::persist_epoch>(fx);
  SECTION("the write succeeds: then the release, under the durable epoch") {
    fx = r.stop(now, true);
    CHECK(find_fx<fx::flush>(fx) == nullptr);
    CHECK(find_fx<fx::shutdown>(fx) == nullptr);
    CHECK(find_fx<fx::release_lock>(fx) == nullptr);  // a successor's later epoch could land under it
    CHECK(find_fx<fx::stopped>(fx) == nullptr);
    fx = r.on_epoch_persisted(persist.gen, result<void>{}, now);
    const auto* flush = find_fx<fx::flush>(fx);
    REQUIRE(flush);
    CHECK(flush->reason == flush_reason::shutdown);
    fx = r.on_flush_done(flush->gen, result<void>{}, now);
    REQUIRE(find_fx<fx::shutdown>(fx));
    CHECK(find_fx<fx::shutdown>(fx)->epoch == 7);
    fx = r.on_shutdown_done(7, result<void>{}, now);
    CHECK(find_fx<fx::release_lock>(fx));
    REQUIRE(find_fx<fx::stopped>(fx));
    CHECK(find_fx<fx::stopped>(fx)->outcome);
  }
  SECTION("the write fails: the lock is given up without any backend call, and stop succeeds") {
    fx = r.stop(now, true);
    fx = r.on_epoch_persisted(persist.gen, error{errc::io_error, "epoch write failed (test)"}, now);
    CHECK(find_fx<fx::flush>(fx) == nullptr);
    CHECK(find_fx<fx::shutdown>(fx) == nullptr);
    CHECK(find_fx<fx::release_lock>(fx));
    REQUIRE(find_fx<fx::stopped>(fx));
    CHECK(find_fx<fx::stopped>(fx)->outcome);
    CHECK(r.state() == runner_state::stopped);
  }
  SECTION("the tailer is lost meanwhile: the replacement persists the epoch again, then the release") {
    fx = r.stop(now, true);
    fx = r.on_child_down(child_kind::tailer, false, now);
    CHECK(find_fx<fx::flush>(fx) == nullptr);
    fx = r.on_child_up(child_kind::tailer, now);
    const auto* again = find_fx<fx::persist_epoch>(fx);
    REQUIRE(again);
    CHECK(again->epoch == 7);
    fx = r.on_epoch_persisted(again->gen, result<void>{}, now);
    CHECK(find_fx<fx::flush>(fx));
  }
}

TEST_CASE("runner: a proxy lost during the release restarts the release with the replacement", "[core][runner][supervision]") {
  owning_core o;
  auto fx = o.core.stop(o.now);
  REQUIRE(find_fx<fx::flush>(fx));
  fx = o.core.on_child_down(child_kind::proxy, false, o.now);
  CHECK(fx.empty());
  fx = o.core.on_child_up(child_kind::proxy, o.now);
  const auto* flush = find_fx<fx::flush>(fx);
  REQUIRE(flush);
  CHECK(flush->reason == flush_reason::shutdown);
  fx = o.core.on_flush_done(flush->gen, result<void>{}, o.now);
  REQUIRE(find_fx<fx::shutdown>(fx));
  CHECK(find_fx<fx::shutdown>(fx)->epoch == 1);
  fx = o.core.on_shutdown_done(1, result<void>{}, o.now);
  CHECK(find_fx<fx::release_lock>(fx));
  REQUIRE(find_fx<fx::stopped>(fx));
  CHECK(find_fx<fx::stopped>(fx)->outcome);
}

TEST_CASE("runner: a proxy that escalated releases without backend calls, publishes unavailable, and stop fails", "[core][runner][supervision]") {
  owning_core o;
  auto fx = o.core.on_child_down(child_kind::proxy, true, o.now);
  const auto* pub = find_fx<fx::publish>(fx);
  REQUIRE(pub);
  CHECK(pub->state == readiness_state::unavailable);
  CHECK(pub->reason == readiness_reason::backend_failed);
  CHECK(find_fx<fx::release_lock>(fx));
  CHECK(find_fx<fx::flush>(fx) == nullptr);
  CHECK(find_fx<fx::shutdown>(fx) == nullptr);
  CHECK(o.core.state() == runner_state::unavailable);
  CHECK(o.core.on_wake(wake_flag::commit, o.now).empty());  // nothing restarts
  fx = o.core.stop(o.now);
  REQUIRE(find_fx<fx::stopped>(fx));
  CHECK(find_fx<fx::stopped>(fx)->outcome.error().value() == errc::backend_failed);
}

TEST_CASE("runner: a proxy lost while owning condemns with backend-failed and the release waits for the replacement", "[core][runner][supervision]") {
  owning_core o;
  auto fx = o.core.on_child_down(child_kind::proxy, false, o.now);
  const auto* pub = find_fx<fx::publish>(fx);
  REQUIRE(pub);
  CHECK(pub->state == readiness_state::needs_rebuild);
  CHECK(pub->reason == readiness_reason::backend_failed);
  CHECK(find_fx<fx::flush>(fx) == nullptr);  // no proxy to talk to
  CHECK(o.core.on_child_down(child_kind::proxy, false, o.now).empty());  // told twice: once
  fx = o.core.on_child_up(child_kind::proxy, o.now);
  REQUIRE(find_fx<fx::flush>(fx));
  CHECK(find_fx<fx::flush>(fx)->reason == flush_reason::shutdown);
}

TEST_CASE("runner: a rebuild due while the proxy is down starts once the replacement is up, with nothing sent to the dead one", "[core][runner][supervision][rebuild]") {
  owning_core o(true);  // a backend that can reset: the proxy's crash ends in a rebuild
  auto fx = o.core.on_child_down(child_kind::proxy, false, o.now);
  const auto* pub = find_fx<fx::publish>(fx);
  REQUIRE(pub);
  CHECK(pub->state == readiness_state::needs_rebuild);
  CHECK(pub->reason == readiness_reason::backend_failed);
  CHECK(find_fx<fx::shutdown>(fx) == nullptr);  // the attempt's first step needs a proxy
  CHECK(o.core.state() == runner_state::needs_rebuild);
  fx = o.core.on_child_up(child_kind::proxy, o.now + milliseconds(100));
  pub = find_fx<fx::publish>(fx);
  REQUIRE(pub);
  CHECK(pub->state == readiness_state::rebuilding);
  CHECK(pub->attempts == 1);
  REQUIRE(find_fx<fx::shutdown>(fx));
  CHECK(find_fx<fx::shutdown>(fx)->epoch == 1);  // step 1, through the replacement
  CHECK(o.core.state() == runner_state::rebuilding);
}

TEST_CASE("runner: a rebuild request while the attempt waits for a respawned proxy is consumed without a second hold, and the attempt starts once the proxy is up", "[core][runner][supervision][rebuild]") {
  owning_core o(true);
  auto fx = o.core.on_child_down(child_kind::proxy, false, o.now);  // backend-failed: the attempt is held
  REQUIRE(o.core.state() == runner_state::needs_rebuild);
  REQUIRE(o.core.takes_rebuild_request());
  // Consumed (attempts back to 0), and still held: the process used to abort here (held → held).
  fx = o.core.on_rebuild_requested(o.now + milliseconds(10));
  CHECK(find_fx<fx::shutdown>(fx) == nullptr);
  CHECK(o.core.state() == runner_state::needs_rebuild);
  fx = o.core.on_child_up(child_kind::proxy, o.now + milliseconds(100));
  const auto* pub = find_fx<fx::publish>(fx);
  REQUIRE(pub);
  CHECK(pub->state == readiness_state::rebuilding);
  CHECK(pub->reason == readiness_reason::rebuild_requested);
  CHECK(pub->attempts == 1);
  REQUIRE(find_fx<fx::shutdown>(fx));
}

TEST_CASE("runner: a system commit seen while running with nothing in flight is read by a turn, so the idle pass still comes", "[core][runner]") {
  sim_pipeline p;
  p.commit({test::put(sim_table, "a", "1")});
  p.advance(milliseconds(1000));
  REQUIRE(p.publications.back().state == readiness_state::ready);
  p.commit({test::put(sim_table, "b", "2")});  // accepted, not yet durable: running, nothing in flight
  REQUIRE(p.runner->state() == runner_state::running);
  // What the settle commit after a rebuild's boundary is: a system transaction of the home store.
  p.store.commit({test::fake_op{op_kind::put, 0, "registration/sim-index", "x", true}}, header_flag::system, true);
  p.wake(static_cast<std::uint8_t>(wake_flag::commit | wake_flag::system));
  p.advance(milliseconds(1000));  // the age flush makes b durable
  CHECK(p.runner->state() == runner_state::idle);
  CHECK(p.backend.durable_index() == expected_index(p.store));
}

TEST_CASE("runner: lag components (protocol 13.1): stalled while deferred, unread age of a commit not read, lag the largest", "[core][runner][metrics]") {
  runner_options o;
  o.max_flush_age = milliseconds(1000);
  sim_pipeline p(o);
  p.backend.auto_barrier = false;
  p.backend.cap = 1;
  p.commit({test::put(sim_table, "a", "1")});
  auto idle = p.runner->snapshot().metrics(p.time.steady_now());
  CHECK(idle.unread_age_ms == 0);
  CHECK(idle.stalled_ms == 0);
  p.commit({test::put(sim_table, "b", "2")});  // deferred: stalled from now
  REQUIRE(p.runner->state() == runner_state::deferred);
  p.advance(milliseconds(300));
  p.commit({test::put(sim_table, "c", "3")});  // no turn while deferred: read later
  p.advance(milliseconds(200));
  auto s = p.runner->snapshot().metrics(p.time.steady_now());
  CHECK(s.stalled_ms == 500);
  CHECK(s.unread_age_ms == 200);
  CHECK(s.lag_ms == std::max({s.cursor_lag_ms, s.stalled_ms, s.unread_age_ms, s.oldest_accepted_age_ms}));
  CHECK(s.lag_ms >= 500);
  // Once everything is read and durable, every component is 0 again.
  p.backend.auto_barrier = true;
  p.backend.cap = 1000;
  p.backend.apply_queue();
  p.run();
  p.advance(milliseconds(2000));
  auto caught_up = p.runner->snapshot().metrics(p.time.steady_now());
  CHECK(caught_up.stalled_ms == 0);
  CHECK(caught_up.unread_age_ms == 0);
  CHECK(caught_up.cursor_lag_ms == 0);
  CHECK(caught_up.lag_ms == 0);
}

TEST_CASE("runner: a rebuild request makes the owner condemn with rebuild-requested, marker first, then reset once and rebuild, a request during the rebuild is absorbed", "[core][runner][rebuild]") {
  sim_pipeline p;
  p.commit({test::put(sim_table, "a", "1")});
  p.advance(milliseconds(1000));
  REQUIRE(p.publications.back().state == readiness_state::ready);
  REQUIRE(p.runner->takes_rebuild_request());
  p.publications.clear();
  p.hold_barriers();
  p.store_rebuild_request();
  CHECK_FALSE(p.slot_rebuild_request);  // consumed
  CHECK(p.meta.condemned);              // the marker, before the publication
  REQUIRE_FALSE(p.publications.empty());
  CHECK(p.publications.front().state == readiness_state::needs_rebuild);
  CHECK(p.publications.front().reason == readiness_reason::rebuild_requested);
  CHECK(published(p, readiness_state::rebuilding, readiness_reason::rebuild_requested));
  CHECK(p.runner->state() == runner_state::rebuilding);
  CHECK(p.lock_held);
  CHECK(p.backend.resets == 2);  // the fresh index's, and this one
  // During the rebuild (its boundary not yet durable) a request is consumed and absorbed.
  p.commit({test::put(sim_table, "b", "2")});
  REQUIRE(p.runner->takes_rebuild_request());
  p.store_rebuild_request();
  CHECK_FALSE(p.slot_rebuild_request);
  CHECK(p.backend.resets == 2);
  p.release_barriers();
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.backend.durable_index() == expected_index(p.store));
  CHECK(p.backend.resets == 2);
}

TEST_CASE("runner: a request stored while nothing ran is consumed by the next acquisition (steps 3-4), and a dormant runner acquires for it without a commit", "[core][runner][rebuild]") {
  sim_pipeline p;
  p.commit({test::put(sim_table, "a", "1")});
  p.advance(milliseconds(1000));
  REQUIRE(p.backend.durable());

  // Stored while no runner ran (say by `dix rebuild` between two processes): the restarted
  // runner consumes it at its acquisition, before it would verify the cursor.
  p.restart_runner();
  p.store_rebuild_request(false);
  p.publications.clear();
  p.hold_barriers();  // the rebuild's end waits: `ready` not yet
  p.commit({test::put(sim_table, "b", "2")});
  CHECK_FALSE(p.slot_rebuild_request);
  CHECK(published(p, readiness_state::needs_rebuild, readiness_reason::rebuild_requested));
  CHECK_FALSE(published(p, readiness_state::ready, readiness_reason::none));

  // A dormant runner woken by the watcher acquires without any commit and consumes it.
  sim_pipeline q;
  q.commit({test::put(sim_table, "a", "1")});
  q.advance(milliseconds(1000));
  q.restart_runner();
  REQUIRE(q.runner->state() == runner_state::dormant);
  q.publications.clear();
  q.store_rebuild_request();
  CHECK_FALSE(q.slot_rebuild_request);
  CHECK(published(q, readiness_state::needs_rebuild, readiness_reason::rebuild_requested));
}

TEST_CASE("runner: a backend that cannot reset leaves the request alone and stays ready", "[core][runner][rebuild]") {
  sim_pipeline p;
  p.commit({test::put(sim_table, "a", "1")});
  p.advance(milliseconds(1000));  // built while the backend could reset
  p.rebuildable = false;
  p.restart_runner();
  p.commit({test::put(sim_table, "a", "2")});
  p.advance(milliseconds(1000));
  REQUIRE(p.publications.back().state == readiness_state::ready);
  CHECK_FALSE(p.runner->takes_rebuild_request());
  p.store_rebuild_request();
  CHECK(p.slot_rebuild_request);  // not consumed
  CHECK(p.runner->state() == runner_state::idle);
  CHECK(p.lock_held);
  // An acquisition consumes it anyway (§9.2 step 3 consumes, step 4 needs a rebuildable
  // backend): the index stays ready.
  p.restart_runner();
  p.commit({test::put(sim_table, "b", "2")});
  CHECK_FALSE(p.slot_rebuild_request);
  CHECK(p.publications.back().state == readiness_state::ready);
}

TEST_CASE("runner: after a failed epoch write, wakes (a rebuild wake included) wait for the backoff", "[core][runner][rebuild]") {
  runner_core::config c;
  c.rebuildable = true;
  runner_core core(c);
  steady_time now{};
  auto out = core.on_wake(wake_flag::commit, now);
  out = core.on_lock_acquired(core.generation(), now);
  out = core.on_epoch_minted(1, now);
  out = core.on_epoch_persisted(core.generation(), error{errc::io_error, "epoch write failed (test)"}, now);
  REQUIRE(std::any_of(out.begin(), out.end(), [](const effect& e) { return std::holds_alternative<fx::release_lock>(e); }));
  auto* timer = std::get_if<fx::arm_timer>(&out.back());
  REQUIRE(timer);
  CHECK(timer->kind == timer_kind::transient_retry);
  // The watcher's wake (the mint changed the slot) must not start another acquisition at once.
  CHECK(core.on_rebuild_wake(false) == runner_core::rebuild_wake::ignore);
  CHECK(core.on_wake(wake_flag::rebuild, now).empty());
  CHECK(core.on_wake(wake_flag::commit, now).empty());
  // The timer does.
  out = core.on_timer(timer_kind::transient_retry, timer->gen, now + c.options.rebuild_backoff);
  REQUIRE_FALSE(out.empty());
  CHECK(std::holds_alternative<fx::request_lock>(out.back()));
}

TEST_CASE("runner: a lock grant of an earlier request is dropped, the grant of the current one is taken", "[core][runner]") {
  runner_core::config c;
  c.options.rebuild_backoff = milliseconds(100);
  runner_core core(c);
  steady_time now{};
  auto out = core.on_wake(wake_flag::commit, now);
  REQUIRE(find_fx<fx::request_lock>(out));
  const auto first = find_fx<fx::request_lock>(out)->gen;
  out = core.on_lock_failed(first, error{errc::io_error, "flock held (test)"}, true, now);
  REQUIRE(find_fx<fx::arm_timer>(out));
  out = core.on_timer(timer_kind::transient_retry, find_fx<fx::arm_timer>(out)->gen, now + c.options.rebuild_backoff);
  REQUIRE(find_fx<fx::request_lock>(out));
  const auto second = find_fx<fx::request_lock>(out)->gen;
  REQUIRE(second != first);
  CHECK(core.on_lock_acquired(first, now).empty());  // stale: no mint, no hand-back
  CHECK_FALSE(core.owner());
  CHECK(core.state() == runner_state::waiting_lock);
  CHECK(core.on_lock_failed(first, error{errc::io_error, "late (test)"}, true, now).empty());
  out = core.on_lock_acquired(second, now);
  CHECK(find_fx<fx::mint_epoch>(out));
  CHECK(core.owner());
}

TEST_CASE("runner: a lock file that cannot be used is a counted transient fault with the doubling backoff, and the max_rebuild_attempts-th in a row condemns locally without publishing (issue 12)", "[core][runner][transient]") {
  runner_core::config c;
  c.options.rebuild_backoff = milliseconds(100);
  c.options.max_rebuild_attempts = 3;
  runner_core core(c);
  steady_time now{};
  const error unusable{errc::io_error, "runner lock: open /home/db/dix/runner/idx.lock: Is a directory"};
  auto out = core.on_wake(wake_flag::commit, now);
  std::vector<milliseconds> delays;
  for (std::uint32_t n = 1; n < c.options.max_rebuild_attempts; ++n) {
    REQUIRE(find_fx<fx::request_lock>(out));
    out = core.on_lock_failed(find_fx<fx::request_lock>(out)->gen, unusable, false, now);
    REQUIRE(find_fx<fx::arm_timer>(out));
    CHECK(find_fx<fx::publish>(out) == nullptr);  // readiness unchanged (§10.5)
    delays.push_back(find_fx<fx::arm_timer>(out)->delay);
    auto s = core.snapshot();
    CHECK(s.transient_faults == n);
    CHECK(s.state == runner_state::waiting_lock);
    CHECK_THAT(s.message, Catch::Contains("/home/db/dix/runner/idx.lock") && Catch::Contains("Is a directory"));
    CHECK(core.on_wake(wake_flag::commit, now).empty());  // the backoff holds the next attempt
    now += delays.back();
    out = core.on_timer(timer_kind::transient_retry, find_fx<fx::arm_timer>(out)->gen, now);
  }
  CHECK(delays == std::vector<milliseconds>{milliseconds(100), milliseconds(200)});
  REQUIRE(find_fx<fx::request_lock>(out));
  out = core.on_lock_failed(find_fx<fx::request_lock>(out)->gen, unusable, false, now);
  CHECK(out.empty());  // no timer, no publication: the slot is an owner's to publish
  auto s = core.snapshot();
  CHECK(s.state == runner_state::needs_rebuild);
  CHECK(s.reason == readiness_reason::runner_failed);
  CHECK(s.last_fault == readiness_reason::runner_failed);
  CHECK(s.transient_faults == 3);
  CHECK_THAT(s.message, Catch::StartsWith("too many consecutive transient faults") && Catch::Contains("idx.lock"));
  CHECK_FALSE(core.owner());
  CHECK(core.on_wake(wake_flag::commit | wake_flag::coverage, now).empty());  // parked: the lock is not probed again
  CHECK(core.on_rebuild_wake(false) == runner_core::rebuild_wake::ignore);
}

TEST_CASE("runner: a flock held by another process is no fault: retried after rebuild_backoff however often, never counted", "[core][runner]") {
  runner_core::config c;
  c.options.rebuild_backoff = milliseconds(100);
  c.options.max_rebuild_attempts = 2;
  runner_core core(c);
  steady_time now{};
  auto out = core.on_wake(wake_flag::commit, now);
  for (int i = 0; i < 5; ++i) {
    REQUIRE(find_fx<fx::request_lock>(out));
    out = core.on_lock_failed(find_fx<fx::request_lock>(out)->gen,
                              error{errc::io_error, "runner lock /x/idx.lock is held by another process"}, true, now);
    REQUIRE(find_fx<fx::arm_timer>(out));
    CHECK(find_fx<fx::arm_timer>(out)->delay == milliseconds(100));
    CHECK(core.snapshot().transient_faults == 0);
    now += milliseconds(100);
    out = core.on_timer(timer_kind::transient_retry, find_fx<fx::arm_timer>(out)->gen, now);
  }
  CHECK(core.state() == runner_state::waiting_lock);
}

TEST_CASE("runner: the grant of a request withdrawn by an escalation is dropped, not handed back (the withdrawal let the entry go)", "[core][runner][supervision]") {
  runner_core core(runner_core::config{});
  steady_time now{};
  auto out = core.on_wake(wake_flag::commit, now);
  REQUIRE(find_fx<fx::request_lock>(out));
  const auto gen = find_fx<fx::request_lock>(out)->gen;
  out = core.on_child_down(child_kind::tailer, true, now);
  REQUIRE(find_fx<fx::release_lock>(out));  // the withdrawal
  CHECK(core.on_lock_acquired(gen, now).empty());
  CHECK_FALSE(core.owner());
}

TEST_CASE("runner: a refused mint (an epoch that cannot be incremented) uses no epoch: it unlocks, keeps the message and retries after the backoff", "[core][runner][epoch]") {
  runner_core::config c;
  runner_core core(c);
  steady_time now{};
  auto out = core.on_wake(wake_flag::commit, now);
  REQUIRE(find_fx<fx::request_lock>(out));
  out = core.on_lock_acquired(find_fx<fx::request_lock>(out)->gen, now);
  REQUIRE(std::holds_alternative<fx::mint_epoch>(out.back()));
  out = core.on_epoch_minted(error{errc::record_corrupt, "slot 0 (idx) holds owner_epoch 2^64-1 (test)"}, now);
  CHECK(std::none_of(out.begin(), out.end(), [](const effect& e) { return std::holds_alternative<fx::persist_epoch>(e); }));
  REQUIRE(std::any_of(out.begin(), out.end(), [](const effect& e) { return std::holds_alternative<fx::release_lock>(e); }));
  auto* timer = std::get_if<fx::arm_timer>(&out.back());
  REQUIRE(timer);
  CHECK(timer->kind == timer_kind::transient_retry);
  CHECK_FALSE(core.owner());
  CHECK(core.state() == runner_state::waiting_lock);
  CHECK(core.snapshot().epoch == 0);  // nothing minted is kept
  CHECK_THAT(core.snapshot().message, Catch::Contains("2^64-1"));
}

TEST_CASE("runner: a request during the build from sequence 1 is absorbed by it", "[core][runner][rebuild]") {
  sim_pipeline p;
  p.hold_barriers();
  p.commit({test::put(sim_table, "a", "1")});
  REQUIRE(p.publications.back().state == readiness_state::rebuilding);
  p.store_rebuild_request();
  CHECK_FALSE(p.slot_rebuild_request);  // consumed, and nothing else
  p.release_barriers();
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK_FALSE(p.meta.condemned);
}

// -- rebuild (protocol.md §11; behaviours 17–19) -----------------------------------------------

TEST_CASE("runner: a cursorless index that holds entries is reset before anything is delivered and ends equal to the projection of the store", "[core][runner][rebuild]") {
  sim_pipeline p;
  p.backend.plant(test::index_key("main", sim_table, "ghost"), test::index_entry{7, "never in the store"});
  p.hold_barriers();
  p.commit({test::put(sim_table, "a", "1")});
  CHECK(p.backend.resets == 1);
  CHECK(p.backend.seen_before_first_reset == 0);
  CHECK(published(p, readiness_state::needs_rebuild, readiness_reason::cursor_missing));
  CHECK_FALSE(published(p, readiness_state::ready, readiness_reason::none));
  p.release_barriers();
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.backend.durable_index() == expected_index(p.store));
}

TEST_CASE("runner: after reset the durable cursor is absent, ready only after the boundary chunk is durable, and a crash in between rebuilds again on restart (behaviour 17)", "[core][runner][rebuild]") {
  sim_pipeline p;
  p.commit({test::put(sim_table, "a", "1")});
  p.advance(milliseconds(1000));
  REQUIRE(p.publications.back().state == readiness_state::ready);
  p.backend.auto_barrier = false;  // no barrier: the boundary chunk stays non-durable
  p.store_rebuild_request();
  CHECK(p.backend.resets == 2);
  CHECK_FALSE(p.backend.durable());  // absent after the reset
  p.advance(milliseconds(5000));     // flushes are asked for, none completes
  CHECK(p.publications.back().state == readiness_state::rebuilding);
  CHECK_FALSE(p.backend.durable());
  // The process dies before the boundary is durable: the next owner finds no cursor (and the
  // marker) and rebuilds again.
  p.backend.crash();
  p.reset_segment();
  p.restart_runner();
  p.backend.auto_barrier = true;
  p.wake();
  CHECK(p.backend.resets == 3);
  p.advance(milliseconds(1000));
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.backend.durable_index() == expected_index(p.store));
}

TEST_CASE("runner: a write committed during the scan ends up as the primary holds it, and a reload before the boundary causes no second rebuild (behaviour 18)", "[core][runner][rebuild]") {
  runner_options o;
  o.max_chunk_records = 1;  // one record per scan chunk
  sim_pipeline p(o);
  p.commit({test::put(sim_table, "a", "1"), test::put(sim_table, "b", "2"), test::put(sim_table, "c", "3")});
  p.advance(milliseconds(1000));
  REQUIRE(p.publications.back().state == readiness_state::ready);
  // Hold the scan after its first chunk: the backend defers the second.
  p.backend.auto_barrier = false;
  p.backend.cap = 1;
  p.store_rebuild_request();
  REQUIRE(p.runner->state() == runner_state::deferred);
  const auto scanned = p.runner->snapshot().rebuilt_records;
  CHECK(scanned == 1);
  // Written after the snapshot: not in the scan, replayed from the boundary.
  p.commit({test::put(sim_table, "a", "changed"), test::del(sim_table, "c"), test::put(sim_table, "d", "4")});
  p.backend.cap = 1u << 30;
  p.backend.auto_barrier = true;
  p.backend.apply_queue();  // room: `changed`
  p.run();
  p.advance(milliseconds(2000));
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.backend.durable_index() == expected_index(p.store));
  CHECK(p.backend.resets == 2);

  // A reload condemns (reason reload); the rebuild's boundary lies after it, so the drain from
  // the boundary never reads it again: one rebuild, not two.
  p.store.commit({test::put(sim_table, "b", "reloaded")}, header_flag::reload, true);
  p.wake();
  CHECK(published(p, readiness_state::needs_rebuild, readiness_reason::reload));
  p.advance(milliseconds(2000));
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.backend.resets == 3);
  p.commit({test::put(sim_table, "e", "5")});
  p.advance(milliseconds(2000));
  CHECK(p.backend.resets == 3);
  CHECK(p.backend.durable_index() == expected_index(p.store));
}

namespace {

// After eight failed attempts (rebuild-exhausted, released): the backend recovers, a request
// restores the budget, the acquisition consumes it and the index is rebuilt (behaviour 19).
void request_restores_budget(sim_pipeline& p) {
  p.backend.fail_reset = false;
  p.hold_barriers();  // the attempt's end waits: its count is still 1
  p.store_rebuild_request();
  CHECK(p.lock_held);
  CHECK_FALSE(p.slot_rebuild_request);  // consumed by the acquisition
  CHECK(p.backend.resets == 9);
  CHECK(p.slot_readiness.rebuild_attempts == 1);
  p.release_barriers();
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.slot_readiness.rebuild_attempts == 0);
  CHECK(p.backend.durable_index() == expected_index(p.store));
}

}  // namespace

TEST_CASE("runner: eight failed attempts give unavailable/rebuild-exhausted after doubling backoffs, a later owner does not reset, a request restores the budget (behaviour 19)", "[core][runner][rebuild]") {
  sim_pipeline p;  // max_rebuild_attempts 8, rebuild_backoff 1 s, max_rebuild_backoff 300 s
  p.backend.fail_reset = true;
  p.commit({test::put(sim_table, "a", "1")});
  CHECK(p.backend.resets == 1);
  CHECK(p.slot_readiness.rebuild_attempts == 1);
  // Attempt n + 1 waits min(1 s × 2^(n−1), 300 s) after attempt n failed.
  for (std::uint64_t n = 1; n < 8; ++n) {
    const auto wait = milliseconds(1000LL << (n - 1));
    p.advance(wait - milliseconds(1));
    CHECK(p.backend.resets == n);  // not yet
    p.advance(milliseconds(1));
    CHECK(p.backend.resets == n + 1);
    CHECK(p.slot_readiness.rebuild_attempts == n + 1);
  }
  CHECK(p.slot_readiness.state == readiness_state::unavailable);
  CHECK(p.slot_readiness.reason == readiness_reason::rebuild_exhausted);
  CHECK(p.runner->state() == runner_state::unavailable);
  CHECK_FALSE(p.lock_held);
  CHECK(p.runner->snapshot().last_fault == readiness_reason::backend_failed);
  // A later owner finds unavailable in the slot and leaves the index alone.
  p.restart_runner();
  p.commit({test::put(sim_table, "b", "2")});
  p.advance(milliseconds(600000));
  CHECK(p.backend.resets == 8);
  CHECK(p.slot_readiness.state == readiness_state::unavailable);
  p.restart_runner();
  request_restores_budget(p);
}

TEST_CASE("runner: after rebuild-exhausted, a request in the same runtime acquires again, restores the budget and rebuilds (behaviour 19, no restart)", "[core][runner][rebuild]") {
  sim_pipeline p;
  p.backend.fail_reset = true;
  p.commit({test::put(sim_table, "a", "1")});
  for (std::uint64_t n = 1; n < 8; ++n) p.advance(milliseconds(1000LL << (n - 1)));
  REQUIRE(p.backend.resets == 8);
  REQUIRE(p.slot_readiness.reason == readiness_reason::rebuild_exhausted);
  REQUIRE_FALSE(p.lock_held);
  request_restores_budget(p);  // the same runner, released and parked, acquires
}

namespace {

// A ready index, then a requested rebuild whose reset fails before it removes the cursor (a reset
// that cannot open its database): needs-rebuild, the backoff armed, the condemned cursor still
// there; the backend works again for the next attempt. The resets before the request.
std::uint64_t fail_attempt_keeping_cursor(sim_pipeline& p) {
  p.commit({test::put(sim_table, "a", "1")});
  p.advance(milliseconds(1000));
  REQUIRE(p.publications.back().state == readiness_state::ready);
  const std::uint64_t resets = p.backend.resets;
  p.backend.fail_reset = true;
  p.backend.keep_cursor_on_reset = true;
  p.store_rebuild_request();
  REQUIRE(p.backend.resets == resets + 1);
  REQUIRE(p.slot_readiness.state == readiness_state::needs_rebuild);
  REQUIRE(p.backend.durable_cursor().value());
  p.backend.fail_reset = false;
  p.backend.keep_cursor_on_reset = false;
  return resets;
}

}  // namespace

TEST_CASE("runner: a tailer crash while a failed attempt waits for its backoff keeps the rebuild: the condemned cursor is never reinstalled", "[core][runner][rebuild][supervision]") {
  sim_pipeline p;
  const auto resets = fail_attempt_keeping_cursor(p);
  p.commit({test::put(sim_table, "b", "2")});
  p.child_respawned(child_kind::tailer);  // during the backoff
  CHECK(p.slot_readiness.state == readiness_state::needs_rebuild);
  p.advance(milliseconds(1000));  // the backoff: the second attempt resets
  CHECK(p.backend.resets == resets + 2);
  p.advance(milliseconds(1000));
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.backend.durable_index() == expected_index(p.store));
  for (const auto& pub : p.publications) {  // never ready between the request and the reset
    if (pub.state == readiness_state::ready) CHECK((pub.attempts == 0));
  }
}

TEST_CASE("runner: lost accepted work reported while a failed attempt waits for its backoff is no replay: the condemned cursor is never reinstalled", "[core][runner][rebuild]") {
  sim_pipeline p;
  const auto resets = fail_attempt_keeping_cursor(p);
  p.backend.lose_accepted(p.slot_epoch);  // during the backoff, naming the current epoch
  p.run();
  CHECK(p.slot_readiness.state == readiness_state::needs_rebuild);
  p.advance(milliseconds(1000));
  CHECK(p.backend.resets == resets + 2);
  p.advance(milliseconds(1000));
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.backend.durable_index() == expected_index(p.store));
  CHECK(p.violation.empty());
}

TEST_CASE("runner: a condemnation while the settle that deletes the marker is in flight writes the marker again, behind it", "[core][runner][rebuild]") {
  sim_pipeline p;
  p.slow_settle = true;
  p.hold_barriers();
  p.commit({test::put(sim_table, "a", "1")});  // cursor-missing: marker, reset, scan, boundary
  p.backend.release_work_barriers();  // the boundary durable: what follows it is stepped
  // Run until the settle is carried out (the marker deleted), its answer still on the way.
  while (!p.meta.fingerprint) REQUIRE(p.step());
  REQUIRE_FALSE(p.meta.condemned);
  p.child_respawned(child_kind::proxy);  // suspect: backend-failed, before the settle's answer
  CHECK(p.slot_readiness.state != readiness_state::ready);
  CHECK(p.meta.condemned);  // without it, a restart before the reset would trust the cursor
  p.advance(milliseconds(2000));
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.backend.durable_index() == expected_index(p.store));
}

TEST_CASE("runner: a tailer crash after the rebuild's settle was sent, its answer dropped, publishes ready only after the settle sent again is answered", "[core][runner][rebuild]") {
  // Found by the simulation's racing writer (seeds 107, 371, 874): the reinstall's log opening
  // published `ready` at once, before the registration record and the marker delete (§10.4).
  sim_pipeline p;
  p.slow_settle = true;
  p.hold_barriers();
  p.commit({test::put(sim_table, "a", "1")});  // cursor-missing: marker, reset, scan, boundary
  p.backend.release_work_barriers();  // the boundary durable: what follows it is stepped
  while (!p.meta.fingerprint) REQUIRE(p.step());  // the settle carried out, its answer on the way
  REQUIRE(p.slot_readiness.state != readiness_state::ready);
  REQUIRE(p.settles_carried == 1);
  // Transient: progress discarded, so the settle's answer is stale, and — a real tailer's crash —
  // the settle may have gone with it. The retry reinstalls the durable (rebuilt) cursor.
  p.child_respawned(child_kind::tailer);
  std::size_t seen = p.publications.size();
  std::size_t ready_at = 0;  // how many settles were carried out when `ready` was published
  // Step through the retry (timers included) until `ready` is published, noting the settles.
  for (int ms = 0; ms < 3000 && ready_at == 0; ++ms) {
    for (int i = 0; i < 1000 && ready_at == 0 && p.step(); ++i) {
      for (; seen < p.publications.size() && ready_at == 0; ++seen) {
        if (p.publications[seen].state == readiness_state::ready) ready_at = p.settles_carried;
      }
    }
    if (ready_at == 0) p.advance(milliseconds(1));
  }
  CHECK(ready_at == 2);  // the settle sent again first, then `ready` (after its answer)
  CHECK(p.violation.empty());
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.meta.fingerprint);
  CHECK_FALSE(p.meta.condemned);
  CHECK(p.backend.durable_index() == expected_index(p.store));
}

TEST_CASE("runner: a peer's request while the owner is deferred, busy or idle gives exactly one reset, then ready", "[core][runner][rebuild]") {
  sim_pipeline p;
  p.commit({test::put(sim_table, "a", "1")});
  p.advance(milliseconds(1000));
  REQUIRE(p.runner->state() == runner_state::idle);
  const auto before = p.backend.resets;
  p.hold_barriers();  // the rebuild's end waits for release_barriers(): the second request falls inside it
  SECTION("idle") { p.store_rebuild_request(); }
  SECTION("busy: work accepted, not durable") {
    p.backend.auto_barrier = false;
    p.commit({test::put(sim_table, "b", "2")});
    REQUIRE(p.runner->snapshot().accepted_batches > 0);
    p.store_rebuild_request();
    p.backend.auto_barrier = true;
  }
  SECTION("deferred") {
    p.backend.auto_barrier = false;
    p.backend.cap = 1;
    p.commit({test::put(sim_table, "b", "2")});
    p.commit({test::put(sim_table, "c", "3")});
    REQUIRE(p.runner->state() == runner_state::deferred);
    p.store_rebuild_request();
    p.backend.cap = 1u << 30;
    p.backend.auto_barrier = true;
    p.backend.apply_queue();
    p.run();
  }
  p.store_rebuild_request();  // a second request during the rebuild: absorbed
  p.release_barriers();
  p.advance(milliseconds(2000));
  CHECK(p.backend.resets == before + 1);
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.backend.durable_index() == expected_index(p.store));
}

TEST_CASE("runner: a crash after any step of a rebuild (marker, epoch, inside reset, mid-scan, boundary chunk, before ready) is never trusted: the next owner ends ready and equal to the projection", "[core][runner][rebuild]") {
  // Count the mailbox events of one whole rebuild, then crash after each prefix of them.
  auto prepared = [](runner_options o) {
    auto p = std::make_unique<sim_pipeline>(o);
    p->commit({test::put(sim_table, "a", "1"), test::put(sim_table, "b", "2"), test::put(sim_table, "c", "3")});
    p->advance(milliseconds(1000));
    return p;
  };
  runner_options o;
  o.max_chunk_records = 1;
  // The events from the request until `ready` is published again.
  auto steps_to_ready = [](sim_pipeline& p, std::size_t limit) {
    const auto first = p.publications.size();
    auto ready_again = [&] {
      for (auto i = first; i < p.publications.size(); ++i) {
        if (p.publications[i].state == readiness_state::ready) return true;
      }
      return false;
    };
    std::size_t n = 0;
    while (n < limit && !ready_again() && p.step()) ++n;
    return n;
  };
  std::size_t events = 0;
  {
    auto p = prepared(o);
    p->store_rebuild_request(true, false);
    events = steps_to_ready(*p, 100000);
    REQUIRE(p->publications.back().state == readiness_state::ready);
  }
  REQUIRE(events > 10);
  for (std::size_t k = 0; k <= events; ++k) {
    INFO("crash after event " << k << " of " << events);
    auto p = prepared(o);
    p->store_rebuild_request(true, false);
    steps_to_ready(*p, k);
    p->store.crash();
    p->backend.crash();
    p->reset_segment();
    p->restart_runner();
    p->wake();
    p->advance(milliseconds(5000));
    CHECK(p->publications.back().state == readiness_state::ready);
    CHECK(p->backend.durable_index() == expected_index(p->store));
    CHECK(p->violation.empty());
  }
}

TEST_CASE("runner: request_rebuild on a registered id whose shutdown was rejected re-quiesces the held epoch and resets under a larger one (behaviour 16, rebuild half)", "[core][runner][rebuild]") {
  sim_pipeline p;
  p.commit({test::put(sim_table, "a", "1")});
  p.advance(milliseconds(1000));
  REQUIRE(p.publications.back().state == readiness_state::ready);
  const auto held_epoch = p.runner->epoch();
  // The rebuild's first step, shutdown(current epoch), is rejected: unavailable, lock kept.
  p.backend.reject_shutdown = true;
  p.store_rebuild_request();
  CHECK(p.publications.back().state == readiness_state::unavailable);
  CHECK(p.publications.back().reason == readiness_reason::shutdown_failed);
  CHECK(p.lock_held);
  CHECK(p.runner->epoch() == held_epoch);
  const auto resets = p.backend.resets;
  p.commit({test::put(sim_table, "b", "2")});  // a latched runner does nothing
  CHECK(p.backend.resets == resets);
  // The backend recovers; a request revives the runner: the same epoch is shut down again (the
  // backend accepts it this time), then the index is reset under a larger epoch.
  p.backend.reject_shutdown = false;
  REQUIRE(p.runner->takes_rebuild_request());
  p.store_rebuild_request();
  CHECK(p.record.quiesced == held_epoch);
  CHECK(p.backend.resets == resets + 1);
  CHECK(p.runner->epoch() > held_epoch);
  p.advance(milliseconds(1000));
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.backend.durable_index() == expected_index(p.store));
}

TEST_CASE("runner: an epoch a rebuild quiesced whose mint then failed is released without a second shutdown, as the supervisor would release it", "[core][runner][rebuild][stop]") {
  runner_options o;
  o.rebuild_backoff = milliseconds(100);
  sim_pipeline p(o);
  p.commit({test::put(sim_table, "a", "1")});
  p.advance(milliseconds(1000));
  REQUIRE(p.publications.back().state == readiness_state::ready);
  const auto held_epoch = p.runner->epoch();
  // The rebuild's first step quiesces the epoch; the mint then reads an epoch that went back (a
  // slot re-created under us): the attempt fails, the lock and the quiesced epoch are kept.
  p.next_mint = held_epoch;
  p.store_rebuild_request();
  CHECK(p.backend.shutdowns_accepted[held_epoch] == 1);
  CHECK(p.record.quiesced == held_epoch);
  CHECK(p.runner->epoch() == held_epoch);
  REQUIRE(p.lock_held);
  // The release flushes and unlocks: no second successful shutdown of the epoch (§9.6).
  const auto flushes = p.flush_requests.size();
  p.stop();
  REQUIRE(p.stopped);
  CHECK(p.stopped->has_value());
  CHECK_FALSE(p.lock_held);
  REQUIRE(p.flush_requests.size() == flushes + 1);
  CHECK(p.flush_requests.back() == flush_reason::shutdown);
  CHECK(p.backend.shutdowns_accepted[held_epoch] == 1);
  CHECK(p.backend.violation.empty());
}

TEST_CASE("runner: a failed attempt's next attempt does not shut down again the epoch the first one quiesced", "[core][runner][rebuild]") {
  runner_options o;
  o.rebuild_backoff = milliseconds(100);
  sim_pipeline p(o);
  p.commit({test::put(sim_table, "a", "1")});
  p.advance(milliseconds(1000));
  REQUIRE(p.publications.back().state == readiness_state::ready);
  const auto held_epoch = p.runner->epoch();
  p.next_mint = held_epoch;
  p.store_rebuild_request();
  REQUIRE(p.backend.shutdowns_accepted[held_epoch] == 1);
  // After the backoff the next attempt mints at once, over the quiesced epoch, and rebuilds.
  p.advance(milliseconds(2000));
  CHECK(p.runner->epoch() > held_epoch);
  CHECK(p.backend.shutdowns_accepted[held_epoch] == 1);
  CHECK(p.backend.violation.empty());
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.backend.durable_index() == expected_index(p.store));
}

TEST_CASE("runner: a durable answer that overtakes the log's opening at the boundary is a reconciliation, not a lost rebuild", "[core][runner][rebuild]") {
  // Found by dix bench rebuild: a scan chunk's threshold flush completed after the boundary chunk
  // was accepted and before the tailer's log_opened; its reconciliation's durable_cursor()
  // answer (absent: the barrier covered scan chunks only) was taken for a reinstall's, and the
  // attempt failed ("the backend lost the rebuild before its boundary was durable").
  runner_options o;
  o.max_chunk_records = 1;
  o.flush_after_mutations = 1;  // every scan chunk asks for a barrier
  sim_pipeline p(o);
  p.backend.auto_barrier = false;
  p.slow_log_open = true;
  p.slow_flush_done = true;
  p.store.commit({test::put(sim_table, "a", "1"), test::put(sim_table, "b", "2")});
  p.wake(wake_flag::commit, false);
  // Both records are delivered; the barrier now completes the scan's flushes (no cursor yet),
  // and the completions arrive after the boundary chunk is accepted.
  while (p.runner->snapshot().rebuilt_records < 2 && p.step()) {}
  REQUIRE(p.runner->snapshot().rebuilt_records == 2);
  p.backend.barrier();
  p.run();
  CHECK_FALSE(published(p, readiness_state::needs_rebuild, readiness_reason::rebuild_failed));
  p.backend.auto_barrier = true;
  p.advance(milliseconds(2000));
  CHECK(p.backend.resets == 1);
  CHECK(p.publications.back().state == readiness_state::ready);
  CHECK(p.backend.durable_index() == expected_index(p.store));
}
