// runner_core's machines (core/acquisition.hpp, core/drain_pipeline.hpp, core/rebuild_attempt.hpp,
// core/coverage_gate.hpp) and the public runner_state's steps (core/runner_lifecycle.hpp): every
// path of each diagram is legal, the steps the diagrams leave out are not, and an illegal step
// aborts (in a forked child) in every build.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "core/acquisition.hpp"
#include "core/coverage_gate.hpp"
#include "core/drain_pipeline.hpp"
#include "core/rebuild_attempt.hpp"
#include "core/runner_lifecycle.hpp"
#include "support/run_in_child.hpp"

namespace dix {
namespace {

using test::run_in_child;

TEST_CASE("acquisition: grant, mint, read, verify, acquired, and a release from any owned phase", "[core][machines]") {
  using a = acquisition::phase;
  acquisition m;
  CHECK_FALSE(m.owner());
  for (auto next : {a::minting, a::reading_meta, a::verifying, a::acquired}) {
    m.to(next);
    CHECK(m.current() == next);
    CHECK(m.owner());
  }
  m.to(a::unowned);
  CHECK_FALSE(m.owner());
  // A failed epoch write gives the lock up from minting; every owned phase may release.
  for (auto owned : {a::minting, a::reading_meta, a::verifying, a::acquired}) CHECK(acquisition::legal(owned, a::unowned));
  // No step is skipped, none goes back but to unowned, and nothing is owned without a grant.
  CHECK_FALSE(acquisition::legal(a::unowned, a::reading_meta));
  CHECK_FALSE(acquisition::legal(a::minting, a::verifying));
  CHECK_FALSE(acquisition::legal(a::reading_meta, a::acquired));
  CHECK_FALSE(acquisition::legal(a::acquired, a::minting));
  CHECK_FALSE(acquisition::legal(a::verifying, a::reading_meta));
  CHECK_FALSE(acquisition::legal(a::unowned, a::acquired));
}

TEST_CASE("acquisition: a stop deferred behind the epoch's write is kept once, with its registration count", "[core][machines]") {
  acquisition m;
  CHECK_FALSE(m.stop_deferred());
  CHECK_FALSE(m.take_deferred_stop().has_value());
  m.defer_stop(true);
  CHECK(m.stop_deferred());
  CHECK(m.take_deferred_stop() == std::optional<bool>(true));
  CHECK_FALSE(m.stop_deferred());  // taken once
  m.defer_stop(false);
  CHECK(m.take_deferred_stop() == std::optional<bool>(false));
}

TEST_CASE("drain pipeline: open, pull, deliver, answer, retry a deferred batch, and a discard from any phase", "[core][machines]") {
  using d = drain_pipeline::phase;
  drain_pipeline m;
  CHECK(m.current() == d::closed);
  m.to(d::open);
  m.to(d::pulling);
  auto b = std::make_shared<batch>();
  m.issue(b, dix::positions{});
  CHECK(m.current() == d::delivering);
  CHECK(m.in_flight == b);
  CHECK_FALSE(m.changed_since_issue());
  m.note_changed();  // a `changed` while the batch is with the backend
  CHECK(m.changed_since_issue());
  CHECK(m.answered() == b);
  CHECK(m.current() == d::open);
  CHECK(m.in_flight == nullptr);
  m.held = b;  // deferred: retried from open, without a pull
  m.issue(std::move(m.held), dix::positions{});
  CHECK_FALSE(m.changed_since_issue());  // counted from the new issue
  m.more = false;
  m.cut_open = true;
  m.age_timer_armed = true;
  m.discard();
  CHECK(m.current() == d::closed);
  CHECK(m.in_flight == nullptr);
  CHECK(m.more);
  CHECK_FALSE(m.cut_open);
  CHECK_FALSE(m.age_timer_armed);
  for (auto any : {d::closed, d::open, d::pulling, d::delivering}) CHECK(drain_pipeline::legal(any, d::closed));
  // One thing in flight at a time, and nothing pulled or delivered before the log is open.
  CHECK_FALSE(drain_pipeline::legal(d::closed, d::pulling));
  CHECK_FALSE(drain_pipeline::legal(d::closed, d::delivering));
  CHECK_FALSE(drain_pipeline::legal(d::delivering, d::pulling));
  CHECK_FALSE(drain_pipeline::legal(d::pulling, d::pulling));
  CHECK_FALSE(drain_pipeline::legal(d::delivering, d::delivering));
}

TEST_CASE("drain pipeline: one durable query at a time, a reconciliation asked for meanwhile runs after its answer", "[core][machines]") {
  using q = drain_pipeline::durable_query;
  CHECK(drain_pipeline::legal(q::none, q::asked));
  CHECK(drain_pipeline::legal(q::asked, q::asked_again));
  CHECK(drain_pipeline::legal(q::asked_again, q::asked_again));
  CHECK(drain_pipeline::legal(q::asked, q::none));
  CHECK(drain_pipeline::legal(q::asked_again, q::none));
  CHECK_FALSE(drain_pipeline::legal(q::none, q::asked_again));
  CHECK_FALSE(drain_pipeline::legal(q::asked, q::asked));
}

TEST_CASE("drain pipeline: the effective entry skips cursor-only entries, and non-durable work ignores them", "[core][machines]") {
  drain_pipeline m;
  const auto t0 = std::chrono::steady_clock::time_point{} + std::chrono::seconds(1);
  auto entry = [](std::uint64_t bytes, std::uint64_t mutations, bool cursor_only, std::chrono::steady_clock::time_point at) {
    return drain_pipeline::entry{*cursor::make({log_position{"main", "id", 1, 1}}), bytes, mutations, cursor_only, at, {}, false};
  };
  m.offered.push_back(entry(0, 0, true, t0));  // the durable entry
  m.offered.push_back(entry(0, 0, true, t0));  // cursor-only progress
  CHECK(m.effective_entry() == 1);
  CHECK_FALSE(m.non_durable_work());
  CHECK_FALSE(m.oldest_accepted_at().has_value());
  m.offered.push_back(entry(10, 1, false, t0 + std::chrono::seconds(1)));
  m.offered.push_back(entry(0, 0, true, t0 + std::chrono::seconds(2)));
  CHECK(m.effective_entry() == 1);  // the mutation stops it
  CHECK(m.non_durable_work());
  CHECK(m.oldest_accepted_at() == t0 + std::chrono::seconds(1));
  drain_pipeline n;
  n.unanchored_mutations = 1;  // accepted, no cursor of its own yet
  CHECK(n.non_durable_work());
}

TEST_CASE("rebuild attempt: backoff, quiesce, mint, reset, check, capture, scan, boundary pending, done", "[core][machines]") {
  using r = rebuild_attempt::phase;
  rebuild_attempt m;
  CHECK_FALSE(m.running());
  m.to(r::backoff);
  CHECK(m.waiting());
  CHECK_FALSE(m.running());
  for (auto next : {r::quiescing, r::minting, r::resetting, r::checking, r::capturing, r::scanning}) {
    m.to(next);
    CHECK(m.running());
  }
  m.to(r::boundary_pending);
  CHECK(m.boundary_pending());
  CHECK(m.running());  // faults still fail the attempt until the boundary is durable (§11.7)
  m.drop_boundary();
  CHECK(m.current() == r::none);
  m.drop_boundary();  // nothing pending: no step
  CHECK(m.current() == r::none);
  // An epoch already shut down skips quiescing; a held attempt starts when its child is back.
  CHECK(rebuild_attempt::legal(r::none, r::minting));
  CHECK(rebuild_attempt::legal(r::held, r::quiescing));
  CHECK(rebuild_attempt::legal(r::held, r::held));
  // Every phase fails to none or backoff.
  for (auto any : {r::quiescing, r::minting, r::resetting, r::checking, r::capturing, r::scanning, r::boundary_pending}) {
    CHECK(rebuild_attempt::legal(any, r::none));
    CHECK(rebuild_attempt::legal(any, r::backoff));
  }
  // No step of §11.4 is skipped, and the boundary is pending only after a scan.
  CHECK_FALSE(rebuild_attempt::legal(r::none, r::resetting));
  CHECK_FALSE(rebuild_attempt::legal(r::quiescing, r::resetting));
  CHECK_FALSE(rebuild_attempt::legal(r::minting, r::checking));
  CHECK_FALSE(rebuild_attempt::legal(r::resetting, r::capturing));
  CHECK_FALSE(rebuild_attempt::legal(r::checking, r::scanning));
  CHECK_FALSE(rebuild_attempt::legal(r::capturing, r::boundary_pending));
  CHECK_FALSE(rebuild_attempt::legal(r::none, r::boundary_pending));
  CHECK_FALSE(rebuild_attempt::legal(r::scanning, r::quiescing));
  CHECK_FALSE(rebuild_attempt::legal(r::boundary_pending, r::scanning));
}

TEST_CASE("coverage gate: a barrier asked once per reason until the durable advance", "[core][machines]") {
  using r = coverage_gate::reason;
  coverage_gate m(gate_policy{}, std::chrono::milliseconds(1000));
  CHECK_FALSE(m.coverage_asked());
  CHECK_FALSE(m.gate_asked());
  CHECK_FALSE(m.hook_asked());
  m.coverage_asks();
  CHECK(m.coverage_asked());
  CHECK_FALSE(m.gate_asked());
  m.gate_asks();
  m.hook_asks();
  CHECK((m.coverage_asked() && m.gate_asked() && m.hook_asked()));
  m.barrier_passed();
  CHECK(m.asks() == coverage_gate::none);
  m.hook_asks();
  CHECK(m.hook_asked());
  CHECK_FALSE(m.coverage_asked());
  const auto c = static_cast<coverage_gate::barrier>(r::coverage), g = static_cast<coverage_gate::barrier>(r::gate),
             h = static_cast<coverage_gate::barrier>(r::hook);
  CHECK(coverage_gate::legal(coverage_gate::none, c));
  CHECK(coverage_gate::legal(c, static_cast<coverage_gate::barrier>(c | h)));
  CHECK(coverage_gate::legal(static_cast<coverage_gate::barrier>(c | g | h), coverage_gate::none));
  CHECK_FALSE(coverage_gate::legal(c, c));  // asked twice before the advance
  CHECK_FALSE(coverage_gate::legal(g, g));
  CHECK_FALSE(coverage_gate::legal(coverage_gate::none, static_cast<coverage_gate::barrier>(c | g)));  // two at once
  CHECK_FALSE(coverage_gate::legal(static_cast<coverage_gate::barrier>(c | g), c));  // a reason forgotten
  CHECK_FALSE(coverage_gate::legal(coverage_gate::none, 8));  // no such reason
}

TEST_CASE("runner state: the steps of the lifecycle diagram are legal, the others are not", "[core][machines]") {
  using s = runner_state;
  // The acquisition and the drain.
  CHECK(runner_state_legal(s::dormant, s::waiting_lock));
  CHECK(runner_state_legal(s::waiting_lock, s::running));
  CHECK(runner_state_legal(s::running, s::idle));
  CHECK(runner_state_legal(s::idle, s::running));
  CHECK(runner_state_legal(s::running, s::deferred));
  CHECK(runner_state_legal(s::deferred, s::running));
  CHECK(runner_state_legal(s::running, s::waiting_durable));
  CHECK(runner_state_legal(s::waiting_durable, s::running));
  // Condemnation, rebuild and its end.
  CHECK(runner_state_legal(s::running, s::needs_rebuild));
  CHECK(runner_state_legal(s::needs_rebuild, s::rebuilding));
  CHECK(runner_state_legal(s::rebuilding, s::running));
  CHECK(runner_state_legal(s::rebuilding, s::needs_rebuild));
  // Latches, stops and parked runners woken for a rebuild.
  for (auto any : {s::dormant, s::waiting_lock, s::running, s::idle, s::deferred, s::waiting_durable, s::rebuilding,
                   s::needs_rebuild, s::releasing}) {
    CHECK(runner_state_legal(any, s::unavailable));
    CHECK(runner_state_legal(any, s::stopped));
  }
  CHECK(runner_state_legal(s::running, s::releasing));
  CHECK(runner_state_legal(s::releasing, s::stopped));
  CHECK(runner_state_legal(s::unavailable, s::waiting_lock));
  CHECK(runner_state_legal(s::needs_rebuild, s::waiting_lock));
  // Nothing leaves stopped; a stop's release never ends dormant or condemned; the drain's
  // states need the grant first; idle only after a pass of a draining owner.
  for (auto any : {s::dormant, s::waiting_lock, s::running, s::rebuilding, s::unavailable}) {
    CHECK_FALSE(runner_state_legal(s::stopped, any));
  }
  CHECK(runner_state_legal(s::stopped, s::stopped));
  CHECK_FALSE(runner_state_legal(s::releasing, s::dormant));
  CHECK_FALSE(runner_state_legal(s::releasing, s::needs_rebuild));
  CHECK_FALSE(runner_state_legal(s::releasing, s::running));
  CHECK_FALSE(runner_state_legal(s::dormant, s::running));
  CHECK_FALSE(runner_state_legal(s::dormant, s::rebuilding));
  CHECK_FALSE(runner_state_legal(s::waiting_lock, s::idle));
  CHECK_FALSE(runner_state_legal(s::needs_rebuild, s::idle));
  CHECK_FALSE(runner_state_legal(s::deferred, s::idle));
  CHECK_FALSE(runner_state_legal(s::dormant, s::releasing));
  // Ownership: what each state needs.
  CHECK(ownership_of(s::dormant) == state_ownership::unowned);
  CHECK(ownership_of(s::waiting_lock) == state_ownership::unowned);
  CHECK(ownership_of(s::running) == state_ownership::owned);
  CHECK(ownership_of(s::releasing) == state_ownership::owned);
  CHECK(ownership_of(s::needs_rebuild) == state_ownership::either);
}

TEST_CASE("runner machines: an illegal step aborts in every build, naming the machine and both states", "[core][machines]") {
  struct the_case {
    const char* text;
    void (*step)();
  };
  const the_case cases[] = {
    {"dix: illegal acquisition transition 0 -> 4", [] { acquisition{}.to(acquisition::phase::acquired); }},
    {"dix: illegal drain transition 0 -> 3",
     [] { drain_pipeline{}.issue(std::make_shared<batch>(), dix::positions{}); }},  // delivering with no log open
    {"dix: illegal durable query transition 0 -> 2", [] { drain_pipeline{}.to(drain_pipeline::durable_query::asked_again); }},
    {"dix: illegal rebuild attempt transition 0 -> 5", [] { rebuild_attempt{}.to(rebuild_attempt::phase::resetting); }},
    {"dix: illegal barrier asks transition 1 -> 1",
     [] {
       coverage_gate m(gate_policy{}, std::chrono::milliseconds(1000));
       m.coverage_asks();
       m.coverage_asks();  // twice before the durable advance
     }},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto d = run_in_child(c.step);
    CHECK(d.aborted);
    CHECK(d.stderr_text.find(c.text) != std::string::npos);
  }
  // runner_state (runner_core::set_state): an illegal step, a state whose ownership the runner
  // lacks, a stop's states without a stop.
  using s = runner_state;
  struct state_case {
    s from, to;
    bool owner, stopping;
  };
  for (const auto& c : {state_case{s::stopped, s::running, true, true}, state_case{s::dormant, s::idle, true, false},
                        state_case{s::waiting_lock, s::running, false, false}, state_case{s::running, s::dormant, true, false},
                        state_case{s::running, s::releasing, true, false}, state_case{s::dormant, s::stopped, false, false}}) {
    INFO(static_cast<int>(c.from) << " -> " << static_cast<int>(c.to) << " owner " << c.owner << " stopping " << c.stopping);
    auto d = run_in_child([c] { check_runner_step(c.from, c.to, c.owner, c.stopping); });
    CHECK(d.aborted);
    CHECK(d.stderr_text.find("dix: illegal runner_state transition " + std::to_string(static_cast<int>(c.from)) + " -> " +
                             std::to_string(static_cast<int>(c.to))) != std::string::npos);
  }
  CHECK_FALSE(run_in_child([] { check_runner_step(s::waiting_lock, s::running, true, false); }).aborted);
  CHECK_FALSE(run_in_child([] { check_runner_step(s::running, s::releasing, true, true); }).aborted);
  // The legal path of the same machine does not abort.
  CHECK_FALSE(run_in_child([] {
                acquisition m;
                m.to(acquisition::phase::minting);
              }).aborted);
}

}  // namespace
}  // namespace dix
