// [actor] The runtime's registrations (actors/runtime_registry.hpp): current records by id,
// detached ones by token until the runtime actor takes them, wakes to every current runner, and
// metrics_of. Hand-made entries over a real readiness segment with recording runners on CAF's
// test coordinator (support/registered_ids.hpp).
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "actors/backend_host_impl.hpp"
#include "actors/runtime_registry.hpp"
#include "support/registered_ids.hpp"

using namespace dix;

namespace {

std::vector<std::string> ids_of(const std::vector<std::shared_ptr<registration_record>>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e->id());
  return out;
}

}  // namespace

TEST_CASE("runtime registry: find names the current entry of an id, all lists every current entry in id order, and put replaces an id's entry", "[actor][registry]") {
  test::registered_ids f;
  CHECK(f.registry->find("idx") == nullptr);
  CHECK(f.registry->all().empty());
  auto beta = f.put("beta", 1);
  auto alpha = f.put("alpha", 2);
  CHECK(f.registry->find("alpha") == alpha);
  CHECK(f.registry->find("beta") == beta);
  CHECK(f.registry->find("gamma") == nullptr);
  CHECK(ids_of(f.registry->all()) == std::vector<std::string>{"alpha", "beta"});
  auto again = f.put("alpha", 3);
  CHECK(f.registry->find("alpha") == again);
  CHECK(f.registry->all().size() == 2);
}

TEST_CASE("runtime registry: detach takes the id out at once and keeps the entry by its token, a second detach, or one with another token, fails", "[actor][registry][detach]") {
  test::registered_ids f;
  auto e = f.put("idx", 5);
  f.put("other", 6);
  CHECK_FALSE(f.registry->detach("idx", 6));  // not idx's token: nothing moves
  CHECK(f.registry->find("idx") == e);
  REQUIRE(f.registry->detach("idx", 5));
  CHECK(f.registry->find("idx") == nullptr);  // protocol.md §2.4: gone before its release settles
  CHECK(ids_of(f.registry->all()) == std::vector<std::string>{"other"});
  CHECK_FALSE(f.registry->detach("idx", 5));
  CHECK_FALSE(f.registry->detach("nobody", 5));
  CHECK(f.registry->take_detached(6) == nullptr);  // "other" is current, not detached
  CHECK(f.registry->take_detached(5) == e);
  CHECK(f.registry->take_detached(5) == nullptr);  // taken already
}

TEST_CASE("runtime registry: a replacement registered while the old entry is detached is the current one, and the old token cannot detach it", "[actor][registry][detach]") {
  test::registered_ids f;
  auto old = f.put("idx", 1);
  REQUIRE(f.registry->detach("idx", 1));
  auto replacement = f.put("idx", 2);
  CHECK(f.registry->find("idx") == replacement);
  CHECK_FALSE(f.registry->detach("idx", 1));
  CHECK(f.registry->find("idx") == replacement);
  CHECK(f.registry->take_detached(1) == old);
  CHECK(f.registry->take_detached(2) == nullptr);
  REQUIRE(f.registry->detach("idx", 2));
  CHECK(f.registry->take_detached(2) == replacement);
}

TEST_CASE("runtime registry: take_all_detached hands over every detached entry once and leaves the current ones", "[actor][registry][detach]") {
  test::registered_ids f;
  f.put("alpha", 1);
  f.put("beta", 2);
  f.put("gamma", 3);
  REQUIRE(f.registry->detach("alpha", 1));
  REQUIRE(f.registry->detach("beta", 2));
  auto taken = f.registry->take_all_detached();
  REQUIRE(taken.size() == 2);
  CHECK(ids_of(taken) == std::vector<std::string>{"alpha", "beta"});  // in token order
  CHECK(f.registry->take_all_detached().empty());
  CHECK(f.registry->take_detached(1) == nullptr);
  CHECK(ids_of(f.registry->all()) == std::vector<std::string>{"gamma"});
}

TEST_CASE("runtime registry: wake_all reaches the runner (without a bell) of every current entry with a commit wake, and no detached one", "[actor][registry][wake]") {
  test::registered_ids f;
  auto a = f.add("alpha");
  auto b = f.add("beta");
  auto c = f.add("gamma", 9);
  f.put("pending", 10);  // registered, its runner not spawned yet: skipped
  REQUIRE(f.registry->detach("gamma", 9));
  f.registry->wake_all(wake_flag::commit);
  f.run();
  CHECK(f.wakes_of(a) == std::vector<std::uint8_t>{wake_flag::commit});
  CHECK(f.wakes_of(b) == std::vector<std::uint8_t>{wake_flag::commit});
  CHECK(f.wakes_of(c).empty());
  auto d = f.add("delta");  // registered after the first wake: the next one reaches it
  constexpr std::uint8_t system_commit = wake_flag::commit | wake_flag::system;
  f.registry->wake_all(system_commit);
  f.run();
  CHECK(f.wakes_of(a) == std::vector<std::uint8_t>{wake_flag::commit, system_commit});
  CHECK(f.wakes_of(d) == std::vector<std::uint8_t>{system_commit});
  CHECK(f.wakes_of(c).empty());
}

TEST_CASE("runtime registry: commit wakes ring a runner's bell and send one wake while it rings, and what rang goes with the runner's take (protocol 8.2)", "[actor][registry][wake][bell]") {
  test::registered_ids f;
  auto runner = f.spawn_runner();
  auto bell = std::make_shared<commit_bell>();
  f.put("idx", 1)->set_runner(caf::actor_cast<runner_actor>(runner), bell);
  for (int i = 0; i < 1000; ++i) f.registry->wake_all(wake_flag::commit);
  f.registry->wake_all(wake_flag::commit | wake_flag::system);
  f.run();
  CHECK(f.wakes_of(runner) == std::vector<std::uint8_t>{0});  // one message: the runner takes the bell
  CHECK(bell->take() == wake_flag::commit);  // the non-system commits outrank the system one
  CHECK(bell->take() == 0);
  f.registry->wake_all(wake_flag::commit);  // silent again: the next commit sends again
  f.run();
  CHECK(f.wakes_of(runner) == std::vector<std::uint8_t>{0, 0});
  SECTION("a respawned runner has a bell of its own: a bell the dead one left ringing holds no wake back") {
    auto second = f.spawn_runner();
    auto fresh = std::make_shared<commit_bell>();
    f.registry->find("idx")->set_runner(caf::actor_cast<runner_actor>(second), fresh);
    f.registry->wake_all(wake_flag::commit);
    f.run();
    CHECK(f.wakes_of(second) == std::vector<std::uint8_t>{0});
    CHECK(fresh->take() == wake_flag::commit);
    CHECK(f.wakes_of(runner).size() == 2);
  }
}

TEST_CASE("runtime registry: wake reaches the runner of the one current entry of the id, and nobody for an unknown or detached id", "[actor][registry][wake]") {
  test::registered_ids f;
  auto a = f.add("alpha", 1);
  auto b = f.add("beta", 2);
  f.registry->wake("beta", wake_flag::rebuild);
  f.registry->wake("nobody", wake_flag::rebuild);
  f.run();
  CHECK(f.wakes_of(a).empty());
  CHECK(f.wakes_of(b) == std::vector<std::uint8_t>{wake_flag::rebuild});
  REQUIRE(f.registry->detach("beta", 2));
  f.registry->wake("beta", wake_flag::rebuild);
  f.run();
  CHECK(f.wakes_of(b).size() == 1);
}

TEST_CASE("runtime registry: a respawned runner replaces the entry's runner, and wakes reach the new one only", "[actor][registry][wake]") {
  test::registered_ids f;
  auto first = f.add("idx", 1);
  auto second = f.spawn_runner();
  f.registry->find("idx")->set_runner(caf::actor_cast<runner_actor>(second));  // the supervisor respawned it
  f.registry->wake_all(wake_flag::commit);
  f.registry->wake("idx", wake_flag::timer);
  f.run();
  CHECK(f.wakes_of(first).empty());
  CHECK(f.wakes_of(second) == std::vector<std::uint8_t>{wake_flag::commit, wake_flag::timer});
}

TEST_CASE("runtime registry: metrics_of reads the slot's fields now and adds the host's unindexable count to the runner's", "[actor][registry][metrics]") {
  test::registered_ids f;
  auto e = f.put("idx", 1);
  e->host = std::make_shared<backend_host_impl>(e->slot(), nullptr);
  REQUIRE(e->slot()->mint_epoch());
  segment_slot& slot = *e->slot();
  slot_publication p;
  p.state = readiness_state::ready;
  p.attempts = 2;
  p.coverage_time = 77;
  p.lag_gate = 5;
  slot.apply(p);
  e->host->note_unindexable("too long");
  e->host->note_unindexable("bad vector");
  auto m = metrics_of(*e, f.clock.steady_now(), 77 + 2'500'000);
  CHECK(m.readiness.state == readiness_state::ready);
  CHECK(m.readiness.owner_epoch == 1);
  CHECK(m.rebuild_attempts == 2);
  CHECK(m.lag_gate == 5);
  CHECK(m.coverage_time == 77);
  CHECK(m.coverage_age_ms == 2);  // its wall age, in whole ms
  CHECK(metrics_of(*e, f.clock.steady_now(), 10).coverage_age_ms == 0);  // a wall clock behind it: 0, never negative
  CHECK(m.unindexable_records == 2);  // the runner's own count is 0 before its first snapshot
  slot.publish(readiness_state::rebuilding, readiness_reason::rebuild_requested, 3);
  m = metrics_of(*e, f.clock.steady_now(), 77);
  CHECK(m.readiness.state == readiness_state::rebuilding);
  CHECK(m.rebuild_attempts == 3);
  CHECK(m.coverage_time == 77);  // publish() leaves coverage alone; apply() of a non-ready state clears it
}
