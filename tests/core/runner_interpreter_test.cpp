// [core] core/runner_interpreter.hpp (decision 0052): the order of a runner's effects — the
// publication fence in front of unlocks, stop answers, gate stores and mints; the figures behind
// the event's effects but never behind its unlock; the snapshot before everything; the commit
// bell's coalescing. Hand-made effect lists through a journaling ports double over a dormant
// core; the bell held through a pull over the simulation pipeline, whose runner is pulling.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/runner_interpreter.hpp"
#include "support/sim_pipeline.hpp"

using namespace dix;
using dix::test::sim_pipeline;
using dix::test::sim_table;

namespace {

using names = std::vector<std::string>;

std::string name_of(const effect& e) {
  static const char* const kinds[] = {"request_lock", "release_lock", "mint_epoch", "persist_epoch", "query_durable",
                                      "open_log", "pull", "deliver", "flush", "shutdown", "publish", "arm_timer",
                                      "stopped", "read_meta", "write_marker", "settle", "reset", "capture_boundary",
                                      "scan", "store_gate", "publish_coverage", "fence", "open_digest", "lift_fence",
                                      "start_verify", "verify_ended", "verify_refused"};
  static_assert(sizeof(kinds) / sizeof(kinds[0]) == std::variant_size_v<effect>);
  return kinds[e.index()];
}

// Journals what the interpreter asks for; publications land when the test says so.
struct journal_ports final : runner_ports {
  names steps;
  std::optional<rebuild_progress> progress;  // what the next store_snapshot returns
  std::optional<lag_figures> lag;            // due until taken
  std::optional<lag_figures> lag_at_mint;    // due once the mint's event stores its snapshot
  epoch_t slot_epoch = 7;
  bool rebuild_request = false;
  bool lock = false;
  index_time_t demand = 0;
  effects minted;  // what mint_epoch returns

  steady_time now() override { return steady_time{}; }
  std::optional<rebuild_progress> store_snapshot() override {
    steps.push_back("snapshot");
    return std::exchange(progress, std::nullopt);
  }
  std::optional<lag_figures> take_lag() override { return std::exchange(lag, std::nullopt); }
  void carry_out(effect& e) override { steps.push_back(name_of(e)); }
  effects mint_epoch() override {
    steps.push_back("mint");
    if (lag_at_mint) lag = std::exchange(lag_at_mint, std::nullopt);
    return std::exchange(minted, effects{});
  }
  void publish(const fx::publish& p) override {
    steps.push_back(std::string("publish ") + std::string(to_string(p.state)));
  }
  void publish_progress(const rebuild_progress&) override { steps.push_back("progress"); }
  void publish_lag(const lag_figures& l) override { steps.push_back("lag " + std::to_string(l.epoch)); }
  epoch_t owner_epoch() override { return slot_epoch; }
  bool owns_lock() override { return lock; }
  bool consume_rebuild_request() override { return std::exchange(rebuild_request, false); }
  index_time_t coverage_demand() override { return demand; }
  std::uint32_t lag_gate() override { return gate_open; }
  dix::readiness read_slot() override { return {}; }
  void acquired() override { steps.push_back("acquired"); }
};

fx::publish publication(readiness_state s) { return fx::publish{s, readiness_reason::none, 0}; }

struct fixture {
  runner_core core{runner_core::config{}};  // dormant: samples no gate, never pulling
  journal_ports ports;
  commit_bell bell;
  runner_interpreter interp{core, ports, &bell};
};

}  // namespace

TEST_CASE("runner interpreter: the snapshot is stored before any effect of the event, and effects run in the core's order", "[core][interpreter]") {
  fixture f;
  f.interp.apply({fx::read_meta{1}, fx::arm_timer{timer_kind::flush_age, std::chrono::milliseconds(5), 1}, fx::query_durable{2}});
  CHECK(f.ports.steps == names{"snapshot", "read_meta", "arm_timer", "query_durable"});
}

TEST_CASE("runner interpreter: an unlock waits until every publication before it landed, and what follows waits behind it", "[core][interpreter][fence]") {
  fixture f;
  f.interp.apply({publication(readiness_state::needs_rebuild), fx::release_lock{}, fx::request_lock{3}});
  CHECK(f.ports.steps == names{"snapshot", "publish needs-rebuild"});
  CHECK(f.interp.test_in_flight() == 1);
  // Another event meanwhile: its effects queue behind the waiting unlock, publications too.
  f.interp.apply({fx::query_durable{4}, publication(readiness_state::ready)});
  CHECK(f.ports.steps == names{"snapshot", "publish needs-rebuild", "snapshot"});
  f.interp.landed();
  CHECK(f.ports.steps ==
        names{"snapshot", "publish needs-rebuild", "snapshot", "release_lock", "request_lock", "query_durable", "publish ready"});
  CHECK(f.interp.test_in_flight() == 1);
}

TEST_CASE("runner interpreter: a stop answer, a gate store and a mint wait for the publications before them, and other effects do not", "[core][interpreter][fence]") {
  for (const effect& waiting : {effect{fx::stopped{result<void>{}}}, effect{fx::store_gate{gate_open}}, effect{fx::mint_epoch{}}}) {
    fixture f;
    f.ports.minted = {fx::persist_epoch{8, 5}};
    const auto what = name_of(waiting) == "mint_epoch" ? std::string("mint") : name_of(waiting);
    INFO(what);
    f.interp.apply({publication(readiness_state::rebuilding), fx::read_meta{1}, waiting, fx::read_meta{2}});
    CHECK(f.ports.steps == names{"snapshot", "publish rebuilding", "read_meta"});  // a plain effect passes the publication
    f.interp.landed();
    names expected{"snapshot", "publish rebuilding", "read_meta", what};
    // The mint's answer is an event of its own: its snapshot, then its effects, behind the rest.
    if (what == "mint") expected.insert(expected.end(), {"snapshot", "read_meta", "persist_epoch"});
    else expected.push_back("read_meta");
    CHECK(f.ports.steps == expected);
  }
}

TEST_CASE("runner interpreter: with no publication in flight an unlock runs at once", "[core][interpreter][fence]") {
  fixture f;
  f.interp.apply({fx::release_lock{}, fx::stopped{result<void>{}}});
  CHECK(f.ports.steps == names{"snapshot", "release_lock", "stopped"});
}

TEST_CASE("runner interpreter: a publication certifying coverage under an epoch the slot no longer holds is dropped whole", "[core][interpreter]") {
  fixture f;
  auto stale = publication(readiness_state::ready);
  stale.coverage_time = 100;
  stale.epoch = 6;  // the slot holds 7: another owner minted since
  auto current = stale;
  current.epoch = 7;
  auto uncertified = publication(readiness_state::ready);
  uncertified.epoch = 6;  // no coverage time: its epoch is not checked
  f.interp.apply({stale, fx::release_lock{}});
  CHECK(f.ports.steps == names{"snapshot", "release_lock"});  // nothing in flight holds the unlock
  f.interp.apply({current, uncertified});
  CHECK(f.ports.steps == names{"snapshot", "release_lock", "snapshot", "publish ready", "publish ready"});
  CHECK(f.interp.test_in_flight() == 2);
}

TEST_CASE("runner interpreter: the event's figures go behind its effects but never behind its unlock", "[core][interpreter][fence]") {
  SECTION("no unlock: after the effects") {
    fixture f;
    f.ports.progress = rebuild_progress{4, 10, 100, 1000, 90, false};  // a scan's figures (epoch 0 is a withdrawal)
    f.ports.lag = lag_figures{};
    f.interp.apply({fx::read_meta{1}, publication(readiness_state::ready)});
    CHECK(f.ports.steps == names{"snapshot", "read_meta", "publish ready", "progress", "lag 0"});
    CHECK(f.interp.test_in_flight() == 3);
  }
  SECTION("an unlock: before it, and it waits for them as for publications") {
    fixture f;
    f.ports.progress = rebuild_progress{4, 10, 100, 1000, 90, false};  // a scan's figures (epoch 0 is a withdrawal)
    f.ports.lag = lag_figures{};
    f.interp.apply({fx::read_meta{1}, fx::release_lock{}, fx::read_meta{2}});
    CHECK(f.ports.steps == names{"snapshot", "read_meta", "progress", "lag 0"});
    f.interp.landed();
    CHECK(f.ports.steps == names{"snapshot", "read_meta", "progress", "lag 0"});
    f.interp.landed();
    CHECK(f.ports.steps == names{"snapshot", "read_meta", "progress", "lag 0", "release_lock", "read_meta"});
  }
  SECTION("figures due outside an event keep the fence's order") {
    fixture f;
    f.interp.apply({publication(readiness_state::ready), fx::release_lock{}});
    f.ports.lag = lag_figures{};
    f.interp.publish_lag_due();
    CHECK(f.ports.steps == names{"snapshot", "publish ready"});
    f.interp.landed();
    CHECK(f.ports.steps == names{"snapshot", "publish ready", "release_lock", "lag 0"});
  }
}

TEST_CASE("runner interpreter: lag figures are taken when they are published, so a mint's newer ones are published once and nothing older after them", "[core][interpreter][fence]") {
  fixture f;
  f.ports.lag = lag_figures{};
  f.ports.lag->epoch = 1;
  f.ports.lag_at_mint = lag_figures{};
  f.ports.lag_at_mint->epoch = 2;  // the pacer publishes a new epoch's figures at once
  f.interp.apply({fx::mint_epoch{}, fx::read_meta{1}});
  // The mint runs at once (nothing in flight), its event stores its snapshot and publishes what is
  // due then (the newer figures replaced the older before anyone took them); the outer event
  // finds nothing left to publish.
  CHECK(f.ports.steps == names{"snapshot", "mint", "snapshot", "lag 2", "read_meta"});
}

TEST_CASE("runner interpreter: a wake takes what rang the bell, and the bell's own wake with nothing rung is nothing", "[core][interpreter][bell]") {
  fixture f;
  f.interp.on_wake(0);  // silent bell: an earlier wake took it
  CHECK(f.ports.steps.empty());
  CHECK(f.bell.ring(false));
  f.interp.on_wake(0);
  CHECK(f.ports.steps == names{"snapshot", "request_lock"});  // the dormant runner acquires
  CHECK_FALSE(f.bell.rung());
  CHECK(f.bell.ring(false));  // silent again: the next ring sends a wake of its own
}

TEST_CASE("runner interpreter: a rebuild wake consumes the slot's request only for the owner, and acquires for a dormant runner", "[core][interpreter]") {
  fixture f;
  f.ports.rebuild_request = true;
  f.interp.on_wake(wake_flag::rebuild);  // dormant, nobody owns the id: acquire, leave the flag
  CHECK(f.ports.steps == names{"snapshot", "request_lock"});
  CHECK(f.ports.rebuild_request);
}

TEST_CASE("runner interpreter: the bell's own wake during a pull is held, and taken just before the pull's answer", "[core][interpreter][bell]") {
  test::sim_shell shell;
  shell.bell = true;
  sim_pipeline p(runner_options{}, shell);
  p.backend.auto_barrier = true;
  p.commit({test::put(sim_table, "k0", "v")});
  p.advance(std::chrono::milliseconds(2000));
  REQUIRE(p.slot_readiness.state == readiness_state::ready);
  bool seen = false;
  p.after_pull = [&] {
    if (seen) return;
    seen = true;
    REQUIRE(p.runner->pulling());
    // A commit rings while the pull is on its way and its wake arrives first.
    p.store.commit({test::put(sim_table, "k1", "during the pull")}, 0, false);
    REQUIRE(p.bell->ring(false));
    p.interpreter->on_wake(0);
    CHECK(p.interpreter->test_bell_held());
    CHECK(p.bell->rung());  // left ringing: the commits rung now send no wake of their own
    CHECK_FALSE(p.bell->ring(false));
  };
  p.wake(wake_flag::commit);
  REQUIRE(seen);
  CHECK_FALSE(p.interpreter->test_bell_held());
  CHECK_FALSE(p.bell->rung());  // taken before the pull's answer …
  p.advance(std::chrono::milliseconds(2000));
  // … so the next turn read the commit the pull missed.
  CHECK(p.backend.durable_index().count(test::index_key("main", sim_table, "k1")) == 1);
}

TEST_CASE("runner interpreter: the withdrawal of the last scan's figures (epoch 0) goes ahead of the event's publications, other "
          "figures behind them (a review: a new attempt's rebuilding was read beside the previous scan's figures)",
          "[core][interpreter][fence]") {
  {
    fixture f;
    f.ports.progress = rebuild_progress{};  // epoch 0: the withdrawal
    f.interp.apply({publication(readiness_state::rebuilding), fx::read_meta{1}});
    CHECK(f.ports.steps == names{"snapshot", "progress", "publish rebuilding", "read_meta"});  // sent first, lands first
  }
  {
    fixture f;
    f.ports.progress = rebuild_progress{4, 10, 100, 1000, 90, false};  // a scan's figures
    f.interp.apply({publication(readiness_state::rebuilding), fx::read_meta{1}});
    CHECK(f.ports.steps == names{"snapshot", "publish rebuilding", "read_meta", "progress"});
  }
}
