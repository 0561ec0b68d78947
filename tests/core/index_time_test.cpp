// Tests of the index-time counter (formats.md §1.4) and the manual clock used by core tests.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "core/clock.hpp"
#include "core/index_time.hpp"

TEST_CASE("index_time: strictly increasing while the wall clock stands still",
          "[core][index_time]") {
  dix::index_time_source source;
  CHECK(source.last() == 0);
  CHECK(source.next(1000) == 1000);
  CHECK(source.next(1000) == 1001);
  CHECK(source.next(1000) == 1002);
  CHECK(source.last() == 1002);
}

TEST_CASE("index_time: strictly increasing when the wall clock goes backwards",
          "[core][index_time]") {
  dix::index_time_source source;
  CHECK(source.next(5000) == 5000);
  CHECK(source.next(4000) == 5001);
  CHECK(source.next(1) == 5002);
  CHECK(source.next(0) == 5003);
}

TEST_CASE("index_time: equals the wall clock when it is ahead", "[core][index_time]") {
  dix::index_time_source source;
  CHECK(source.next(100) == 100);
  CHECK(source.next(200) == 200);
  CHECK(source.next(201) == 201);
  CHECK(source.next(201) == 202);
  CHECK(source.next(10'000) == 10'000);
}

TEST_CASE("index_time: 0 is never drawn", "[core][index_time]") {
  dix::index_time_source source;
  CHECK(source.next(0) == 1);
  CHECK(source.next(0) == 2);
}

TEST_CASE("index_time: raise_floor makes the next value exceed the floor", "[core][index_time]") {
  dix::index_time_source source;
  CHECK(source.next(100) == 100);
  source.raise_floor(5000);
  CHECK(source.last() == 5000);
  CHECK(source.next(100) == 5001);
  CHECK(source.next(5000) == 5002);
  // A lower floor never lowers the counter.
  source.raise_floor(10);
  CHECK(source.last() == 5002);
  CHECK(source.next(0) == 5003);
  // A wall clock past the floor wins.
  source.raise_floor(6000);
  CHECK(source.next(7000) == 7000);
}

TEST_CASE("index_time: test_reset forgets the floor", "[core][index_time]") {
  dix::index_time_source source;
  CHECK(source.next(9000) == 9000);
  source.test_reset();
  CHECK(source.last() == 0);
  CHECK(source.next(10) == 10);
  source.test_reset(50);
  CHECK(source.next(10) == 51);
}

TEST_CASE("index_time: the process-wide counter is one instance", "[core][index_time]") {
  CHECK(&dix::process_index_time() == &dix::process_index_time());
}

TEST_CASE("index_time: concurrent draws from 4 threads are all distinct", "[core][index_time]") {
  constexpr int threads = 4;
  constexpr int draws = 10000;
  dix::index_time_source source;
  std::vector<std::vector<std::uint64_t>> drawn(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&source, &drawn, t] {
      auto& mine = drawn[static_cast<std::size_t>(t)];
      mine.reserve(draws);
      // A wall clock standing still at 0 or 1: every value comes from the counter.
      const auto wall = static_cast<std::uint64_t>(t % 2);
      for (int i = 0; i < draws; ++i) mine.push_back(source.next(wall));
    });
  }
  for (auto& w : workers) w.join();

  std::vector<std::uint64_t> all;
  for (const auto& mine : drawn) {
    // Each thread sees its own draws strictly increasing.
    CHECK(std::adjacent_find(mine.begin(), mine.end(), [](std::uint64_t a, std::uint64_t b) {
            return b <= a;
          }) == mine.end());
    all.insert(all.end(), mine.begin(), mine.end());
  }
  REQUIRE(all.size() == static_cast<std::size_t>(threads * draws));
  std::sort(all.begin(), all.end());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
  CHECK(all.front() >= 1);
  CHECK(source.last() == all.back());
  // Distinct values with no wall clock ahead of the counter: exactly 1 … 40000.
  CHECK(all.back() == static_cast<std::uint64_t>(threads * draws));
}

TEST_CASE("manual_clock: advance moves steady and wall time together", "[core][clock]") {
  dix::manual_clock manual(1'000);
  const dix::clock& clock = manual;
  auto start = clock.steady_now();
  CHECK(clock.wall_now_ns() == 1'000);
  manual.advance(std::chrono::milliseconds(5));
  CHECK(clock.steady_now() - start == std::chrono::milliseconds(5));
  CHECK(clock.wall_now_ns() == 1'000 + 5'000'000);
  manual.advance(std::chrono::nanoseconds(1));
  CHECK(clock.wall_now_ns() == 5'001'001);
  CHECK(clock.steady_now() - start == std::chrono::nanoseconds(5'000'001));
}

TEST_CASE("manual_clock: set_wall_ns moves the wall clock alone, also backwards",
          "[core][clock]") {
  dix::manual_clock manual;
  CHECK(manual.wall_now_ns() == 1'000'000'000'000'000'000ull);
  auto steady = manual.steady_now();
  manual.set_wall_ns(42);
  CHECK(manual.wall_now_ns() == 42);
  CHECK(manual.steady_now() == steady);
  manual.set_wall_ns(7'000'000'000ull);
  CHECK(manual.wall_now_ns() == 7'000'000'000ull);
  CHECK(manual.steady_now() == steady);
}

TEST_CASE("manual_clock: drives the index-time counter deterministically", "[core][clock]") {
  dix::manual_clock manual(1'000);
  dix::index_time_source source;
  CHECK(source.next(manual.wall_now_ns()) == 1'000);
  manual.set_wall_ns(500);  // the wall clock jumps back
  CHECK(source.next(manual.wall_now_ns()) == 1'001);
  manual.advance(std::chrono::microseconds(1));
  CHECK(source.next(manual.wall_now_ns()) == 1'500);
}

TEST_CASE("system_clock: is one instance with a monotonic steady clock", "[core][clock]") {
  auto& a = dix::system_clock();
  CHECK(&a == &dix::system_clock());
  auto t0 = a.steady_now();
  auto t1 = a.steady_now();
  CHECK(t1 >= t0);
  CHECK(a.wall_now_ns() > 1'600'000'000'000'000'000ull);  // after September 2020
}
