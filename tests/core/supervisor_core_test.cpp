// supervisor_core (actors.md §3) with plain values: the effects for each down, respawn, answer and
// unsupervise of one registration.
#include <catch2/catch.hpp>

#include "core/supervisor_core.hpp"

using namespace dix;
using std::chrono::milliseconds;

namespace {

using phase = supervisor_core::phase;
using steady_time = supervisor_core::steady_time;

template <class T>
const T* find_fx(const supervision_effects& fx) {
  for (const auto& e : fx) {
    if (const auto* x = std::get_if<T>(&e)) return x;
  }
  return nullptr;
}

template <class T>
std::ptrdiff_t position(const supervision_effects& fx) {
  for (std::size_t i = 0; i < fx.size(); ++i) {
    if (std::holds_alternative<T>(fx[i])) return static_cast<std::ptrdiff_t>(i);
  }
  return -1;
}

struct supervised {
  supervisor_core core{[] {
    supervisor_core::config c;
    c.id = "idx";
    c.options.rebuild_backoff = milliseconds(100);
    c.options.max_rebuild_attempts = 3;
    return c;
  }()};
  steady_time now{};
  ownership_record owning{1, 7, true};
  supervised() { (void)core.start(); }
};

}  // namespace

TEST_CASE("supervisor core: start spawns tailer, proxy, then the runner, and wakes it", "[core][supervision]") {
  supervisor_core core({"idx", {}});
  auto fx = core.start();
  REQUIRE(fx.size() == 4);
  CHECK(std::get<sfx::spawn>(fx[0]).kind == child_kind::tailer);
  CHECK(std::get<sfx::spawn>(fx[1]).kind == child_kind::proxy);
  CHECK(std::get<sfx::spawn>(fx[2]).kind == child_kind::runner);
  CHECK_FALSE(std::get<sfx::spawn>(fx[2]).start_condemned);
  CHECK(std::holds_alternative<sfx::wake_runner>(fx[3]));
  CHECK(core.up(child_kind::runner));
}

TEST_CASE("supervisor core: a dead owning runner is quiesced, marked, published needs-rebuild/runner-failed, unlocked behind the publication and respawned parked", "[core][supervision]") {
  supervised s;
  auto fx = s.core.on_down(child_kind::runner, s.owning, s.now);
  CHECK(s.core.current() == phase::quiescing);
  const auto* flush = find_fx<sfx::flush>(fx);
  REQUIRE(flush);
  fx = s.core.on_flush_done(flush->round, error{errc::io_error, "flush failed"});  // only logged
  const auto* shutdown = find_fx<sfx::shutdown>(fx);
  REQUIRE(shutdown);
  CHECK(shutdown->epoch == 7);  // the epoch the ownership record holds
  fx = s.core.on_shutdown_done(shutdown->round, result<void>{});
  CHECK(find_fx<sfx::unlock>(fx) == nullptr);  // the marker first
  REQUIRE(find_fx<sfx::write_marker>(fx));
  CHECK(s.core.awaits_marker());
  fx = s.core.on_marker_written(result<void>{});
  const auto* pub = find_fx<sfx::publish>(fx);
  REQUIRE(pub);
  CHECK(pub->state == readiness_state::needs_rebuild);
  CHECK(pub->reason == readiness_reason::runner_failed);
  REQUIRE(position<sfx::unlock>(fx) > position<sfx::publish>(fx));  // the shell waits for `published`
  const auto* respawn = find_fx<sfx::respawn_after>(fx);
  REQUIRE(respawn);
  CHECK(respawn->kind == child_kind::runner);
  CHECK(respawn->delay == milliseconds(100));
  CHECK(s.core.current() == phase::supervising);
  fx = s.core.on_respawn(child_kind::runner);
  const auto* spawn = find_fx<sfx::spawn>(fx);
  REQUIRE(spawn);
  REQUIRE(spawn->start_condemned);
  CHECK(*spawn->start_condemned == readiness_reason::runner_failed);
  CHECK(find_fx<sfx::wake_runner>(fx));  // it acquires and rebuilds (a backend that cannot reset stays parked)
}

TEST_CASE("supervisor core: a dead runner whose epoch was quiesced already (its release shut it down, the unlock waited) is flushed, marked, published and unlocked without a second shutdown", "[core][supervision]") {
  supervised s;
  auto record = s.owning;
  record.quiesced = record.epoch;
  auto fx = s.core.on_down(child_kind::runner, record, s.now);
  CHECK(s.core.current() == phase::quiescing);
  const auto* flush = find_fx<sfx::flush>(fx);
  REQUIRE(flush);
  fx = s.core.on_flush_done(flush->round, result<void>{});
  CHECK(find_fx<sfx::shutdown>(fx) == nullptr);  // §9.6: at most one successful shutdown per epoch
  REQUIRE(find_fx<sfx::write_marker>(fx));
  fx = s.core.on_marker_written(result<void>{});
  REQUIRE(find_fx<sfx::publish>(fx));
  CHECK(position<sfx::unlock>(fx) > position<sfx::publish>(fx));
}

TEST_CASE("supervisor core: an earlier epoch quiesced does not skip the shutdown of the dead runner's epoch", "[core][supervision]") {
  supervised s;
  auto record = s.owning;
  record.quiesced = record.epoch - 1;
  auto fx = s.core.on_down(child_kind::runner, record, s.now);
  const auto* flush = find_fx<sfx::flush>(fx);
  REQUIRE(flush);
  fx = s.core.on_flush_done(flush->round, result<void>{});
  REQUIRE(find_fx<sfx::shutdown>(fx));
  CHECK(find_fx<sfx::shutdown>(fx)->epoch == record.epoch);
}

TEST_CASE("supervisor core: a dead runner that did not own the entry is unlocked and respawned without a release or a publication", "[core][supervision]") {
  supervised s;
  auto fx = s.core.on_down(child_kind::runner, ownership_record{1, 0, false}, s.now);
  CHECK(find_fx<sfx::flush>(fx) == nullptr);
  CHECK(find_fx<sfx::write_marker>(fx) == nullptr);
  CHECK(find_fx<sfx::publish>(fx) == nullptr);
  CHECK(find_fx<sfx::unlock>(fx));  // withdraws a pending request
  REQUIRE(find_fx<sfx::respawn_after>(fx));
  fx = s.core.on_respawn(child_kind::runner);
  REQUIRE(find_fx<sfx::spawn>(fx));
  CHECK_FALSE(find_fx<sfx::spawn>(fx)->start_condemned);
  CHECK(find_fx<sfx::wake_runner>(fx));
}

TEST_CASE("supervisor core: a rejected shutdown of a dead runner's epoch keeps the lock, publishes unavailable/shutdown-failed and fails unsupervise", "[core][supervision]") {
  supervised s;
  auto fx = s.core.on_down(child_kind::runner, s.owning, s.now);
  fx = s.core.on_flush_done(find_fx<sfx::flush>(fx)->round, result<void>{});
  fx = s.core.on_shutdown_done(find_fx<sfx::shutdown>(fx)->round, error{errc::backend_failed, "no"});
  const auto* pub = find_fx<sfx::publish>(fx);
  REQUIRE(pub);
  CHECK(pub->state == readiness_state::unavailable);
  CHECK(pub->reason == readiness_reason::shutdown_failed);
  CHECK(find_fx<sfx::unlock>(fx) == nullptr);
  CHECK(s.core.current() == phase::held);
  CHECK(s.core.on_respawn(child_kind::runner).empty());  // nothing restarted over a held lock
  fx = s.core.on_unsupervise();
  const auto* answer = find_fx<sfx::answer>(fx);
  REQUIRE(answer);
  REQUIRE_FALSE(answer->outcome);
  CHECK(answer->outcome.error().value() == errc::backend_failed);
  CHECK(find_fx<sfx::forget>(fx) == nullptr);
}

TEST_CASE("supervisor core: a dead runner's release waits for a proxy being respawned and restarts with it when the proxy dies mid-release", "[core][supervision]") {
  supervised s;
  auto fx = s.core.on_down(child_kind::proxy, {}, s.now);
  REQUIRE(find_fx<sfx::tell_down>(fx));
  REQUIRE(find_fx<sfx::respawn_after>(fx));
  fx = s.core.on_down(child_kind::runner, s.owning, s.now);
  CHECK(find_fx<sfx::flush>(fx) == nullptr);  // no proxy yet
  fx = s.core.on_respawn(child_kind::proxy);
  REQUIRE(find_fx<sfx::spawn>(fx));
  const auto* flush = find_fx<sfx::flush>(fx);
  REQUIRE(flush);
  const auto first_round = flush->round;
  fx = s.core.on_down(child_kind::proxy, {}, s.now);  // dies while flushing
  CHECK(find_fx<sfx::tell_down>(fx) == nullptr);     // no runner to tell
  CHECK(s.core.on_flush_done(first_round, result<void>{}).empty());  // the dead one's answer
  fx = s.core.on_respawn(child_kind::proxy);
  flush = find_fx<sfx::flush>(fx);
  REQUIRE(flush);
  CHECK(flush->round != first_round);
  fx = s.core.on_flush_done(flush->round, result<void>{});
  REQUIRE(find_fx<sfx::shutdown>(fx));
}

TEST_CASE("supervisor core: without a tailer the dead runner's index is published and unlocked without the marker", "[core][supervision]") {
  supervised s;
  (void)s.core.on_down(child_kind::tailer, {}, s.now);
  auto fx = s.core.on_down(child_kind::runner, s.owning, s.now);
  fx = s.core.on_flush_done(find_fx<sfx::flush>(fx)->round, result<void>{});
  fx = s.core.on_shutdown_done(find_fx<sfx::shutdown>(fx)->round, result<void>{});
  CHECK(find_fx<sfx::write_marker>(fx) == nullptr);
  REQUIRE(find_fx<sfx::publish>(fx));
  CHECK(find_fx<sfx::unlock>(fx));
}

TEST_CASE("supervisor core: the tailer dying while the marker is written counts as a failed write: published and unlocked", "[core][supervision]") {
  supervised s;
  auto fx = s.core.on_down(child_kind::runner, s.owning, s.now);
  fx = s.core.on_flush_done(find_fx<sfx::flush>(fx)->round, result<void>{});
  fx = s.core.on_shutdown_done(find_fx<sfx::shutdown>(fx)->round, result<void>{});
  REQUIRE(s.core.awaits_marker());
  fx = s.core.on_down(child_kind::tailer, {}, s.now);
  REQUIRE(find_fx<sfx::publish>(fx));
  CHECK(find_fx<sfx::unlock>(fx));
  CHECK(s.core.on_marker_written(result<void>{}).empty());
}

TEST_CASE("supervisor core: the max_rebuild_attempts-th runner crash in a row publishes unavailable/runner-failed, unlocks and restarts nothing", "[core][supervision]") {
  supervised s;
  for (int crash = 1; crash <= 3; ++crash) {
    auto fx = s.core.on_down(child_kind::runner, s.owning, s.now + milliseconds(crash));
    fx = s.core.on_flush_done(find_fx<sfx::flush>(fx)->round, result<void>{});
    fx = s.core.on_shutdown_done(find_fx<sfx::shutdown>(fx)->round, result<void>{});
    fx = s.core.on_marker_written(result<void>{});
    const auto* pub = find_fx<sfx::publish>(fx);
    REQUIRE(pub);
    if (crash < 3) {
      CHECK(pub->state == readiness_state::needs_rebuild);
      REQUIRE(find_fx<sfx::respawn_after>(fx));
      (void)s.core.on_respawn(child_kind::runner);
    } else {
      CHECK(pub->state == readiness_state::unavailable);
      CHECK(pub->reason == readiness_reason::runner_failed);
      CHECK(find_fx<sfx::unlock>(fx));
      CHECK(find_fx<sfx::respawn_after>(fx) == nullptr);
      CHECK(s.core.escalated());
    }
  }
  CHECK(s.core.on_respawn(child_kind::runner).empty());
}

TEST_CASE("supervisor core: tailer and proxy crashes are told to the runner and respawned after the backoff, escalation restarts nothing", "[core][supervision]") {
  supervised s;
  auto fx = s.core.on_down(child_kind::tailer, {}, s.now);
  const auto* down = find_fx<sfx::tell_down>(fx);
  REQUIRE(down);
  CHECK(down->kind == child_kind::tailer);
  CHECK_FALSE(down->escalated);
  REQUIRE(find_fx<sfx::respawn_after>(fx));
  CHECK(find_fx<sfx::respawn_after>(fx)->delay == milliseconds(100));
  fx = s.core.on_respawn(child_kind::tailer);
  REQUIRE(find_fx<sfx::spawn>(fx));
  REQUIRE(find_fx<sfx::tell_up>(fx));
  CHECK(s.core.on_respawn(child_kind::tailer).empty());  // up already
  (void)s.core.on_down(child_kind::tailer, {}, s.now + milliseconds(1));
  (void)s.core.on_respawn(child_kind::tailer);
  fx = s.core.on_down(child_kind::tailer, {}, s.now + milliseconds(2));
  REQUIRE(find_fx<sfx::tell_down>(fx));
  CHECK(find_fx<sfx::tell_down>(fx)->escalated);
  CHECK(find_fx<sfx::respawn_after>(fx) == nullptr);
  CHECK(s.core.escalated());
}

TEST_CASE("supervisor core: a rebuild request revives an escalated registration: history cleared, the missing children spawned, the runner last and woken (actors.md 3)", "[core][supervision][rebuild]") {
  SECTION("the runner escalated") {
    supervised s;
    CHECK(s.core.on_rebuild_request().empty());  // nothing escalated: nothing to do
    for (int crash = 1; crash <= 3; ++crash) {
      auto fx = s.core.on_down(child_kind::runner, s.owning, s.now + milliseconds(crash));
      fx = s.core.on_flush_done(find_fx<sfx::flush>(fx)->round, result<void>{});
      fx = s.core.on_shutdown_done(find_fx<sfx::shutdown>(fx)->round, result<void>{});
      fx = s.core.on_marker_written(result<void>{});
      if (crash < 3) (void)s.core.on_respawn(child_kind::runner);
    }
    REQUIRE(s.core.escalated());
    auto fx = s.core.on_rebuild_request();
    CHECK_FALSE(s.core.escalated());
    const auto* spawn = find_fx<sfx::spawn>(fx);
    REQUIRE(spawn);
    CHECK(spawn->kind == child_kind::runner);
    CHECK(find_fx<sfx::wake_runner>(fx));
    CHECK(s.core.up(child_kind::runner));
    CHECK(s.core.on_rebuild_request().empty());  // once
    // The history is cleared: the next crash is the first again, respawned after the backoff.
    fx = s.core.on_down(child_kind::runner, s.owning, s.now + milliseconds(10));
    fx = s.core.on_flush_done(find_fx<sfx::flush>(fx)->round, result<void>{});
    fx = s.core.on_shutdown_done(find_fx<sfx::shutdown>(fx)->round, result<void>{});
    fx = s.core.on_marker_written(result<void>{});
    REQUIRE(find_fx<sfx::publish>(fx));
    CHECK(find_fx<sfx::publish>(fx)->state == readiness_state::needs_rebuild);
    CHECK(find_fx<sfx::respawn_after>(fx));
  }
  SECTION("the proxy escalated") {
    supervised s;
    for (int crash = 0; crash < 3; ++crash) {
      (void)s.core.on_down(child_kind::proxy, {}, s.now + milliseconds(crash));
      if (crash < 2) (void)s.core.on_respawn(child_kind::proxy);
    }
    REQUIRE(s.core.escalated());
    REQUIRE_FALSE(s.core.up(child_kind::proxy));
    auto fx = s.core.on_rebuild_request();
    const auto* spawn = find_fx<sfx::spawn>(fx);
    REQUIRE(spawn);
    CHECK(spawn->kind == child_kind::proxy);
    REQUIRE(find_fx<sfx::tell_up>(fx));  // the runner is up: it hears of its new proxy
    CHECK(find_fx<sfx::tell_up>(fx)->kind == child_kind::proxy);
    CHECK(s.core.up(child_kind::proxy));
    CHECK_FALSE(s.core.escalated());
  }
}

TEST_CASE("supervisor core: unsupervise stops the runner and forgets the registration once it stopped, a failed stop keeps it", "[core][supervision]") {
  supervised s;
  auto fx = s.core.on_unsupervise();
  REQUIRE(find_fx<sfx::stop_runner>(fx));
  CHECK(s.core.on_unsupervise().empty());  // answered with the first
  fx = s.core.on_runner_stopped(error{errc::backend_failed, "rejected"});
  REQUIRE(find_fx<sfx::answer>(fx));
  CHECK(find_fx<sfx::forget>(fx) == nullptr);
  CHECK(s.core.current() == phase::supervising);
  fx = s.core.on_unsupervise();
  REQUIRE(find_fx<sfx::stop_runner>(fx));
  fx = s.core.on_runner_stopped(result<void>{});
  REQUIRE(find_fx<sfx::answer>(fx));
  CHECK(find_fx<sfx::answer>(fx)->outcome);
  CHECK(find_fx<sfx::forget>(fx));
  CHECK(s.core.current() == phase::gone);
}

TEST_CASE("supervisor core: unsupervise during a dead runner's release is answered when the release settles, and nothing is respawned", "[core][supervision]") {
  supervised s;
  auto fx = s.core.on_down(child_kind::runner, s.owning, s.now);
  const auto round = find_fx<sfx::flush>(fx)->round;
  CHECK(s.core.on_unsupervise().empty());
  fx = s.core.on_flush_done(round, result<void>{});
  fx = s.core.on_shutdown_done(find_fx<sfx::shutdown>(fx)->round, result<void>{});
  fx = s.core.on_marker_written(result<void>{});
  REQUIRE(find_fx<sfx::answer>(fx));
  CHECK(find_fx<sfx::answer>(fx)->outcome);
  CHECK(position<sfx::answer>(fx) > position<sfx::unlock>(fx));
  CHECK(find_fx<sfx::forget>(fx));
  CHECK(find_fx<sfx::respawn_after>(fx) == nullptr);
  CHECK(s.core.current() == phase::gone);
}

TEST_CASE("supervisor core: a runner that dies while it is being stopped is released by the supervisor, which then answers the stop", "[core][supervision]") {
  supervised s;
  (void)s.core.on_unsupervise();
  auto fx = s.core.on_down(child_kind::runner, s.owning, s.now);
  REQUIRE(find_fx<sfx::flush>(fx));
  CHECK(s.core.on_runner_stopped(error{errc::backend_failed, "late"}).empty());
  fx = s.core.on_flush_done(find_fx<sfx::flush>(fx)->round, result<void>{});
  fx = s.core.on_shutdown_done(find_fx<sfx::shutdown>(fx)->round, result<void>{});
  fx = s.core.on_marker_written(result<void>{});
  REQUIRE(find_fx<sfx::answer>(fx));
  CHECK(find_fx<sfx::forget>(fx));
}
