// Tests of the free-space rules and gate (decision 0013) with plain values and a fake clock.
#include <catch2/catch.hpp>

#include <chrono>

#include "core/clock.hpp"
#include "core/free_space.hpp"

using namespace dix;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t mib = 1ull << 20;
constexpr std::uint64_t gib = 1ull << 30;

}  // namespace

TEST_CASE("free space: the automatic reserve is 2 % of the filesystem, at least min(128 MiB, an eighth), at most 4 GiB", "[core][space]") {
  CHECK(automatic_reserve_bytes(64 * mib) == 8 * mib);       // a small tmpfs: an eighth
  CHECK(automatic_reserve_bytes(1 * gib) == 128 * mib);      // the floor
  CHECK(automatic_reserve_bytes(100 * gib) == 2 * gib);      // 2 %
  CHECK(automatic_reserve_bytes(10'000 * gib) == 4 * gib);   // the cap
  CHECK(automatic_reserve_bytes(0) == 0);
  CHECK(store_reserve_bytes(0, 100 * gib) == 2 * gib);
  CHECK(store_reserve_bytes(5 * mib, 100 * gib) == 5 * mib);  // configured wins
  CHECK(index_reserve_bytes(0, 100 * gib) == 1 * gib);        // half the store's automatic one
  CHECK(index_reserve_bytes(3 * mib, 100 * gib) == 3 * mib);
}

TEST_CASE("free space: the gate admits down to the floor, counting pending and charged bytes as used", "[core][space]") {
  manual_clock clock;
  space_gate gate(100ms);
  CHECK(gate.due(clock.steady_now(), 0, 0));  // nothing read yet
  gate.record({100 * mib, 1 * gib}, 20 * mib, clock.steady_now());
  CHECK(gate.free_bytes() == 80 * mib);
  CHECK(gate.capacity_bytes() == 1 * gib);
  CHECK(gate.admits(30 * mib, 50 * mib));
  CHECK_FALSE(gate.admits(30 * mib + 1, 50 * mib));
  gate.charge(30 * mib);
  CHECK(gate.free_bytes() == 50 * mib);
  CHECK(gate.admits(0, 50 * mib));
  CHECK_FALSE(gate.admits(1, 50 * mib));
  // More pending than available is no free space at all, not a wrap-around.
  gate.record({10 * mib, 1 * gib}, 20 * mib, clock.steady_now());
  CHECK(gate.free_bytes() == 0);
  CHECK(gate.admits(0, 0));
  CHECK_FALSE(gate.admits(0, 1));
}

TEST_CASE("free space: a reading serves until max_age, or until the writes since would use half the room above the floor", "[core][space]") {
  manual_clock clock;
  space_gate gate(100ms);
  const std::uint64_t floor = 10 * mib;
  gate.record({50 * mib, 1 * gib}, 0, clock.steady_now());  // 40 MiB of room
  CHECK_FALSE(gate.due(clock.steady_now(), 1 * mib, floor));
  CHECK_FALSE(gate.due(clock.steady_now(), 20 * mib, floor));
  CHECK(gate.due(clock.steady_now(), 20 * mib + 1, floor));
  gate.charge(15 * mib);
  CHECK_FALSE(gate.due(clock.steady_now(), 5 * mib, floor));
  CHECK(gate.due(clock.steady_now(), 5 * mib + 1, floor));
  clock.advance(99ms);
  CHECK_FALSE(gate.due(clock.steady_now(), 0, floor));
  clock.advance(1ms);
  CHECK(gate.due(clock.steady_now(), 0, floor));
  // At or below the floor every write reads again, so space that returns is seen at once.
  gate.record({10 * mib, 1 * gib}, 0, clock.steady_now());
  CHECK(gate.due(clock.steady_now(), 0, floor));
  gate.set_max_age(0ms);
  gate.record({500 * mib, 1 * gib}, 0, clock.steady_now());
  CHECK(gate.due(clock.steady_now(), 0, floor));  // max_age 0: a reading per write
}

TEST_CASE("free space: sizes are shown in MiB with the exact bytes, refusals in one shape", "[core][space]") {
  CHECK(describe_bytes(7549747) == "7.2 MiB (7549747 bytes)");
  CHECK(describe_bytes(0) == "0.0 MiB (0 bytes)");
  CHECK(describe_shortage("primary store /x", 3 * mib, "its free-space reserve of 8.0 MiB") ==
        "primary store /x: 3.0 MiB (3145728 bytes) free on its filesystem, below its free-space reserve of 8.0 MiB");
}
