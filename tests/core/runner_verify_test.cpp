// The runner's verify (issue 31, core/verify_attempt.hpp), driven through the deterministic
// sim_pipeline: the tailer's fence, the barrier at it, the backend's digest view, the lift and the
// scan, with a writer racing every step; planted drift found and condemned (or only reported);
// the refusals, the deadline, and the ends a fault or a broken backend gives it.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "core/runner_core.hpp"
#include "support/sim_pipeline.hpp"

using namespace dix;
using dix::test::sim_pipeline;
using dix::test::sim_table;
using std::chrono::milliseconds;
using kind = verify_outcome::kind;

namespace {

bool published(const sim_pipeline& p, readiness_state s, readiness_reason r) {
  for (const auto& x : p.publications) {
    if (x.state == s && x.reason == r) return true;
  }
  return false;
}

// A ready, caught-up index of `n` records.
void build(sim_pipeline& p, int n) {
  std::vector<test::fake_op> ops;
  for (int i = 0; i < n; ++i) ops.push_back(test::put(sim_table, "r" + std::to_string(i), "v" + std::to_string(i)));
  p.commit(std::move(ops));
  p.advance(milliseconds(1000));
  REQUIRE(p.publications.back().state == readiness_state::ready);
}

std::string key(const std::string& id) { return test::index_key("main", sim_table, id); }

}  // namespace

TEST_CASE("runner verify: a ready index is proven equal to the store's projection at its durable cursor", "[core][runner][verify]") {
  sim_pipeline p;
  build(p, 5);
  p.request_verify();
  REQUIRE(p.verify_outcomes.size() == 1);
  const auto& o = p.verify_outcomes[0];
  INFO(o.message);
  CHECK(o.what == kind::verified);
  REQUIRE(o.through);
  CHECK(o.through == p.backend.durable());
  CHECK(o.records == 5);
  CHECK(o.differences == 0);
  CHECK(p.backend.digest_opens == 1);
  CHECK_FALSE(p.tailer_fenced());
  CHECK(p.runner->verify_phase() == verify_attempt::phase::none);
  auto snap = p.runner->snapshot();
  CHECK_FALSE(snap.verifying);
  CHECK(snap.verified == o.through);
  CHECK(snap.verify_failures == 0);
  // The drain goes on afterwards.
  p.commit({test::put(sim_table, "late", "x")});
  p.advance(milliseconds(1000));
  CHECK(p.backend.durable_index().count(key("late")) == 1);
}

TEST_CASE("runner verify: work accepted but not durable is made durable at the fence first", "[core][runner][verify]") {
  sim_pipeline p;
  build(p, 3);
  p.backend.auto_barrier = false;
  p.commit({test::put(sim_table, "r0", "new"), test::del(sim_table, "r1")});  // accepted, not durable
  REQUIRE(p.backend.durable_index().at(key("r0")).projection == "v0");
  p.request_verify();
  CHECK(p.verify_outcomes.empty());  // at the barrier
  CHECK(p.runner->verify_phase() == verify_attempt::phase::barrier);
  CHECK(p.flush_requests.back() == flush_reason::coverage);
  p.commit({test::put(sim_table, "r9", "beyond the fence")});  // no pull meanwhile
  p.backend.barrier();
  p.run();
  REQUIRE(p.verify_outcomes.size() == 1);
  INFO(p.verify_outcomes[0].message);
  CHECK(p.verify_outcomes[0].what == kind::verified);
  CHECK(p.verify_outcomes[0].records == 2);
  // The commit beyond the fence is read once it is lifted.
  p.backend.barrier();
  p.run();
  CHECK(p.backend.durable_index().count(key("r9")) == 1);
}

TEST_CASE("runner verify: under a writer racing every step, no verify finds a difference", "[core][runner][verify][sim]") {
  int verified = 0, timeouts = 0, seeds = 0;
  for (std::uint32_t seed = 1; seed <= 60; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);  // 32-bit results
    auto small = [&rng](std::uint32_t n) { return static_cast<std::uint32_t>(rng() % n); };
    runner_options o;
    o.max_flush_age = milliseconds(200);
    o.flush_after_mutations = 1 + small(8);
    // Small turns and chunks: reaching the fence takes several, with commits beyond it meanwhile.
    o.max_transactions_per_turn = 1 + small(3);
    o.max_chunk_records = 1 + small(3);
    o.max_accepted_batches_ahead = 2 + small(6);
    sim_pipeline p(o);
    build(p, 4);
    p.backend.auto_barrier = rng() % 2 == 0;
    for (int i = 0; i < 800; ++i) {
      // A writer at a fifth of the events.
      switch (rng() % 20) {
        case 0: case 1: case 2: case 3: {
          const auto id = "r" + std::to_string(rng() % 12);
          if (rng() % 4 == 0) p.commit({test::del(sim_table, id)}, false, false);
          else p.commit({test::put(sim_table, id, "v" + std::to_string(rng()))}, false, false);
          break;
        }
        case 4: p.request_verify({rng() % 2 == 0, 0, 100, milliseconds(5000)}, false); break;
        case 5: p.backend.barrier(); break;
        case 6: p.advance(milliseconds(rng() % 300)); break;
        default: p.step(); break;
      }
    }
    p.backend.auto_barrier = true;
    p.backend.barrier();
    p.advance(milliseconds(10000));
    for (const auto& v : p.verify_outcomes) {
      INFO(v.message);
      CHECK(v.what != kind::drift);
      // Failed only when the index lagged the writer past the deadline (few barriers, a small
      // accepted-ahead cap): a verify needs the index at its fence, not a writer that waits.
      if (v.what == kind::failed) CHECK(v.code == errc::timeout);
      if (v.what == kind::verified) ++verified;
      if (v.what == kind::failed) ++timeouts;
    }
    CHECK(p.publications.back().state == readiness_state::ready);
    CHECK_FALSE(p.tailer_fenced());
    CHECK(p.violation.empty());
    ++seeds;
  }
  CHECK(verified > seeds * 3);  // the test proves something: most requests ran to the end
  CHECK(timeouts < verified / 4);
}

TEST_CASE("runner verify: planted drift is named and condemns the index, unless report-only", "[core][runner][verify]") {
  sim_pipeline p;
  build(p, 6);
  const auto durable = p.backend.durable_index();
  p.backend.plant_drift(key("r0"), std::nullopt);                                                   // missing
  p.backend.plant_drift(key("zz"), test::index_entry{7, "extra"});                                 // extra
  p.backend.plant_drift(key("r1"), test::index_entry{durable.at(key("r1")).version + 1, "v1"});    // stale
  p.backend.plant_drift(key("r2"), test::index_entry{durable.at(key("r2")).version, "wrong"});     // wrong projection

  p.request_verify({true, 0, 100, milliseconds(5000)});
  REQUIRE(p.verify_outcomes.size() == 1);
  CHECK(p.verify_outcomes[0].what == kind::drift);
  CHECK(p.verify_outcomes[0].differences == 4);
  CHECK_FALSE(p.verify_outcomes[0].condemned);
  REQUIRE(p.last_drift.drifts.size() == 4);
  CHECK(p.last_drift.drifts[0].record_id == "r0");
  CHECK(p.last_drift.drifts[0].kind == drift_kind::missing);
  CHECK(p.last_drift.drifts[1].kind == drift_kind::stale);
  CHECK(p.last_drift.drifts[2].kind == drift_kind::wrong_projection);
  CHECK(p.last_drift.drifts[3].record_id == "zz");
  CHECK(p.last_drift.drifts[3].kind == drift_kind::extra);
  CHECK(p.publications.back().state == readiness_state::ready);  // report-only: nothing condemned
  CHECK(p.runner->snapshot().verify_failures == 1);

  p.hold_barriers();  // the rebuild that follows ends at release_barriers()
  p.request_verify();
  REQUIRE(p.verify_outcomes.size() == 2);
  CHECK(p.verify_outcomes[1].what == kind::drift);
  CHECK(p.verify_outcomes[1].condemned);
  CHECK(published(p, readiness_state::needs_rebuild, readiness_reason::verify_failed));
  CHECK(p.meta.condemned);
  // The rebuild that follows makes the index equal again.
  p.release_barriers();
  p.advance(milliseconds(5000));
  REQUIRE(p.publications.back().state == readiness_state::ready);
  p.request_verify();
  REQUIRE(p.verify_outcomes.size() == 3);
  INFO(p.verify_outcomes[2].message);
  CHECK(p.verify_outcomes[2].what == kind::verified);
  CHECK(p.verify_outcomes[2].records == 6);
}

TEST_CASE("runner verify: runner_options::verify_every verifies in the background at its pace, once a turn, skips a turn while the index is not ready, and a difference it finds condemns the index, which a later turn proves rebuilt", "[core][runner][verify]") {
  runner_options o;
  o.verify_every = milliseconds(10000);
  o.verify_entries_per_s = 1234;
  sim_pipeline p(o);
  build(p, 5);
  CHECK(p.verify_outcomes.empty());  // not due before verify_every
  p.advance(milliseconds(9500));
  REQUIRE(p.verify_outcomes.size() == 1);
  CHECK(p.verify_outcomes[0].what == kind::verified);
  CHECK(p.verify_outcomes[0].records == 5);
  REQUIRE(p.verify_starts.size() == 1);
  CHECK(p.verify_starts[0].entries_per_s == 1234);
  CHECK_FALSE(p.verify_starts[0].report_only);  // a scheduled verify condemns
  CHECK(p.runner->snapshot().verified == p.verify_outcomes[0].through);
  // Writes go on; the next turn proves a later cursor.
  p.commit({test::put(sim_table, "r7", "v7")});
  p.advance(milliseconds(10000));
  REQUIRE(p.verify_outcomes.size() == 2);
  CHECK(p.verify_outcomes[1].what == kind::verified);
  CHECK(p.verify_outcomes[1].records == 6);
  CHECK(p.verify_outcomes[1].through != p.verify_outcomes[0].through);
  // Drift planted between turns: the next turn finds it and condemns the index.
  p.backend.plant_drift(key("r1"), std::nullopt);
  p.advance(milliseconds(10000));
  REQUIRE(p.verify_outcomes.size() == 3);
  CHECK(p.verify_outcomes[2].what == kind::drift);
  CHECK(p.verify_outcomes[2].condemned);
  CHECK(published(p, readiness_state::needs_rebuild, readiness_reason::verify_failed));
  CHECK(p.runner->snapshot().verify_failures == 1);
  // Rebuilt under a new ownership, whose own chain verifies it again.
  p.advance(milliseconds(5000));
  REQUIRE(p.publications.back().state == readiness_state::ready);
  const auto before = p.verify_outcomes.size();
  p.advance(milliseconds(20000));
  REQUIRE(p.verify_outcomes.size() > before);
  for (auto i = before; i < p.verify_outcomes.size(); ++i) {
    INFO(p.verify_outcomes[i].message);
    CHECK(p.verify_outcomes[i].what == kind::verified);
    CHECK(p.verify_outcomes[i].records == 6);
  }
  // One a turn, none skipped while the index was ready: three before the rebuild (the third found
  // the drift), then the new ownership's two turns of its 20 s.
  CHECK(p.verify_starts.size() == 5);
}

TEST_CASE("runner verify: with verify_every off no verify ever starts by itself", "[core][runner][verify]") {
  sim_pipeline p;
  build(p, 3);
  p.advance(milliseconds(600000));
  CHECK(p.verify_outcomes.empty());
  CHECK(p.verify_starts.empty());
}

TEST_CASE("runner verify: refused while not ready or rebuilding, joined when asked again alike", "[core][runner][verify]") {
  sim_pipeline p;
  // A fresh index is rebuilt: its boundary waits for a barrier.
  p.hold_barriers();
  p.commit({test::put(sim_table, "a", "1")});
  REQUIRE(p.runner->state() == runner_state::rebuilding);
  p.request_verify();
  REQUIRE(p.verify_outcomes.size() == 1);
  CHECK(p.verify_outcomes[0].what == kind::refused);
  CHECK(p.verify_outcomes[0].code == errc::rebuilding);
  p.release_barriers();
  REQUIRE(p.publications.back().state == readiness_state::ready);

  p.request_verify({}, false);
  p.request_verify({}, false);                                   // joins the first
  p.request_verify({true, 0, 100, milliseconds(5000)}, false);  // asks otherwise: refused
  p.request_verify({false, 0, 100, milliseconds(0)}, false);    // joins too (the deadline is the first's)
  p.run();
  REQUIRE(p.verify_outcomes.size() == 3);
  CHECK(p.verify_outcomes[1].what == kind::refused);
  CHECK(p.verify_outcomes[1].code == errc::invalid_argument);
  CHECK(p.verify_outcomes[2].what == kind::verified);
  CHECK(p.backend.digest_opens == 1);

  p.request_verify({false, 0, 100, milliseconds(0)});
  CHECK(p.verify_outcomes.back().code == errc::invalid_argument);

  p.stop();
  p.request_verify();
  CHECK(p.verify_outcomes.back().what == kind::refused);
  CHECK(p.verify_outcomes.back().code == errc::stopped);
}

TEST_CASE("runner verify: a barrier that does not come ends it at the deadline, the fence lifted and the drain going on", "[core][runner][verify]") {
  sim_pipeline p;
  build(p, 2);
  p.backend.auto_barrier = false;
  p.commit({test::put(sim_table, "r0", "new")});
  p.request_verify({false, 0, 100, milliseconds(3000)});
  REQUIRE(p.runner->verify_phase() == verify_attempt::phase::barrier);
  CHECK(p.tailer_fenced());
  p.commit({test::put(sim_table, "r5", "after")});
  const auto delivered = p.delivered.size();
  p.advance(milliseconds(3000));
  REQUIRE(p.verify_outcomes.size() == 1);
  CHECK(p.verify_outcomes[0].what == kind::failed);
  CHECK(p.verify_outcomes[0].code == errc::timeout);
  // The index was not behind its log when the verify began: the message names no backlog.
  CHECK(p.verify_outcomes[0].message.find("within 3000 ms") != std::string::npos);
  CHECK(p.verify_outcomes[0].message.find("behind") == std::string::npos);
  CHECK_FALSE(p.tailer_fenced());
  CHECK(p.delivered.size() > delivered);  // the commit beyond the fence was read after the lift
  CHECK(p.publications.back().state == readiness_state::ready);  // a failed verify proves nothing either way
  p.backend.barrier();
  p.run();
  CHECK(p.backend.durable_index().count(key("r5")) == 1);
}

TEST_CASE("runner verify: lost work interrupts it and a broken digest fails it, the fence lifted each time", "[core][runner][verify]") {
  sim_pipeline p;
  build(p, 2);

  SECTION("lost work at the barrier") {
    p.backend.auto_barrier = false;
    p.commit({test::put(sim_table, "r0", "new")});
    p.request_verify();
    REQUIRE(p.runner->verify_phase() == verify_attempt::phase::barrier);
    p.backend.lose_accepted(p.runner->epoch());  // the runner discards its progress and reinstalls
    p.run();
    REQUIRE(p.verify_outcomes.size() == 1);
    CHECK(p.verify_outcomes[0].what == kind::interrupted);
    CHECK_FALSE(p.tailer_fenced());
    p.backend.auto_barrier = true;
    p.advance(milliseconds(2000));
    p.request_verify();
    CHECK(p.verify_outcomes.back().what == kind::verified);
  }
  SECTION("a backend without a digest") {
    p.backend.digest_error = error{errc::not_supported, "no digest here"};
    p.request_verify();
    REQUIRE(p.verify_outcomes.size() == 1);
    CHECK(p.verify_outcomes[0].what == kind::failed);
    CHECK(p.verify_outcomes[0].code == errc::not_supported);
    CHECK_FALSE(p.tailer_fenced());
  }
  SECTION("a view at another cursor") {
    p.backend.digest_cursor_skew = true;
    p.request_verify();
    REQUIRE(p.verify_outcomes.size() == 1);
    CHECK(p.verify_outcomes[0].what == kind::failed);
    CHECK(p.verify_outcomes[0].code == errc::backend_failed);
    CHECK_FALSE(p.tailer_fenced());
  }
  CHECK(p.publications.back().state == readiness_state::ready);
  p.commit({test::put(sim_table, "z", "1")});
  p.advance(milliseconds(2000));
  CHECK(p.backend.durable_index().count(key("z")) == 1);
}
