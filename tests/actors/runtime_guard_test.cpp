// [adapter] dix::runtime_guard (<dix/caf.hpp>, actors/runtime_guard.cpp) in real actor systems:
// a real primary store, a real rocksdb_index_backend, the runtime's detached actors on real
// threads. What is shown: an actor system whose runtime only a guard stops ends at the end of
// its scope (before the guard it hung in ~actor_system), and the guard's stop is idempotent —
// after itself, after an explicit stop_runtime, after the runtime ended. Every wait is for an
// answer or a down message; the waits that could hang have a generous failure deadline.
#include <catch2/catch.hpp>

#include <caf/after.hpp>
#include <caf/scoped_actor.hpp>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/caf.hpp>

#include "adapters/test_support.hpp"
#include "support/quiet_config.hpp"

using namespace dix;
using namespace std::chrono_literals;
using dix::test::temp_dir;

namespace {

constexpr std::uint32_t table = 1;

// Registers a rocksdb index of the records by value, in dir/<id>; true when registered.
bool register_by_value(caf::actor_system& sys, const runtime_actor& rt, const std::filesystem::path& dir,
                       const std::string& id) {
  rocksdb_index_options o;
  o.path = dir / id;
  auto index = rocksdb_index_backend::create(id, o);
  if (!index) return false;
  registration r;
  r.backend = *index;
  r.projections[table_ref{"main", table}] = [](std::string_view payload, const record_info&) -> projection_result {
    return encode_keys({std::string(payload)});
  };
  caf::scoped_actor self{sys};
  bool registered = false;
  self->request(rt, 30s, register_index{std::move(r)}).receive([&](index_registered&) { registered = true; },
                                                                [](caf::error&) {});
  return registered;
}

// Whether `rt` has ended: a down message within 30 s of monitoring it.
bool ended(caf::actor_system& sys, const runtime_actor& rt) {
  caf::scoped_actor self{sys};
  self->monitor(rt);
  bool down = false;
  self->receive([&](caf::down_msg&) { down = true; }, caf::after(30s) >> [] {});
  return down;
}

}  // namespace

static_assert(!std::is_copy_constructible_v<runtime_guard> && !std::is_copy_assignable_v<runtime_guard>,
              "two guards of one runtime would both stop it");

TEST_CASE("runtime guard: an actor system whose runtime only a guard stops, with an index registered and written, ends at the end of its scope", "[adapter][runtime][guard]") {
  temp_dir dir;
  auto store = test::open_store(dir / "db");
  {
    test::quiet_config cfg;
    caf::actor_system sys{cfg};
    runtime_guard guard{dix::spawn_runtime(sys, {store}).value()};
    REQUIRE(register_by_value(sys, guard.get(), dir.path(), "by-value"));
    test::put_records(*store, "r", 3);
  }  // the guard stops the runtime, then ~actor_system finds no actor left: no hang
  // The index was released cleanly: a runtime of a new system registers it again over the same
  // index database, and its guard stops it too.
  {
    test::quiet_config cfg;
    caf::actor_system sys{cfg};
    runtime_guard guard{dix::spawn_runtime(sys, {store}).value()};
    REQUIRE(register_by_value(sys, guard.get(), dir.path(), "by-value"));
    CHECK_FALSE(guard.stop());
    CHECK_FALSE(guard);
  }
  REQUIRE(store->close());
}

TEST_CASE("runtime guard: stop is idempotent: after itself, after an explicit stop_runtime and after the runtime ended", "[adapter][runtime][guard]") {
  temp_dir dir;
  auto store = test::open_store(dir / "db");
  test::quiet_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};

  SECTION("stop twice") {
    runtime_guard guard{dix::spawn_runtime(sys, {store}).value()};
    const auto rt = guard.get();
    REQUIRE(register_by_value(sys, rt, dir.path(), "by-value"));
    CHECK_FALSE(guard.stop());
    CHECK_FALSE(guard);
    CHECK(ended(sys, rt));
    CHECK_FALSE(guard.stop());
  }
  SECTION("an explicit stop_runtime first: the guard's stop succeeds and ends the runtime") {
    runtime_guard guard{dix::spawn_runtime(sys, {store}).value()};
    const auto rt = guard.get();
    REQUIRE(register_by_value(sys, rt, dir.path(), "by-value"));
    bool stopped = false;
    self->request(rt, 60s, stop_runtime{}).receive([&](runtime_stopped&) { stopped = true; }, [](caf::error&) {});
    REQUIRE(stopped);
    CHECK_FALSE(guard.stop());
    CHECK(ended(sys, rt));
  }
  SECTION("the runtime ended already (stopped and sent its exit by the application)") {
    runtime_guard guard{dix::spawn_runtime(sys, {store}).value()};
    const auto rt = guard.get();
    bool stopped = false;
    self->request(rt, 60s, stop_runtime{}).receive([&](runtime_stopped&) { stopped = true; }, [](caf::error&) {});
    REQUIRE(stopped);
    self->send_exit(rt, caf::exit_reason::user_shutdown);
    REQUIRE(ended(sys, rt));
    CHECK_FALSE(guard.stop());
  }
  SECTION("moved: the moved-from guard is empty, assigning over a guard stops the runtime it held") {
    runtime_guard first{dix::spawn_runtime(sys, {store}).value()};
    const auto rt = first.get();
    runtime_guard second{std::move(first)};
    CHECK_FALSE(first);  // NOLINT(bugprone-use-after-move): the contract under test
    REQUIRE(second);
    CHECK(second.get() == rt);
    second = runtime_guard{};
    CHECK_FALSE(second);
    CHECK(ended(sys, rt));
  }
  SECTION("released: the guard gives the runtime up unstopped") {
    runtime_guard guard{dix::spawn_runtime(sys, {store}).value()};
    auto rt = guard.release();
    CHECK_FALSE(guard);
    runtime_guard again{rt};  // stopped by this one at the section's end
    CHECK(again.get() == rt);
  }
}
