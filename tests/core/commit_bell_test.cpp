// core/commit_bell: commit wakes coalesced where they are made (protocol.md §8.2).
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "core/commit_bell.hpp"

using namespace dix;

TEST_CASE("commit bell: only the ring that finds it silent sends, and the take returns what rang and silences it", "[core][bell]") {
  commit_bell bell;
  CHECK(bell.take() == 0);
  CHECK(bell.ring(false));
  CHECK_FALSE(bell.ring(false));
  CHECK_FALSE(bell.ring(true));
  CHECK(bell.take() == wake_flag::commit);  // a non-system commit outranks the system one beside it
  CHECK(bell.take() == 0);
  CHECK(bell.ring(true));
  CHECK_FALSE(bell.ring(true));
  CHECK(bell.take() == (wake_flag::commit | wake_flag::system));  // system commits alone
  CHECK(bell.ring(false));  // silent again after the take
}

TEST_CASE("wake flags: merged, a non-system commit in either wake outranks a system commit in the other", "[core][bell]") {
  constexpr std::uint8_t system_commit = wake_flag::commit | wake_flag::system;
  CHECK(wake_flag::merge(wake_flag::commit, system_commit) == wake_flag::commit);  // the supervisor's wake and a rung system commit
  CHECK(wake_flag::merge(system_commit, wake_flag::commit) == wake_flag::commit);
  CHECK(wake_flag::merge(system_commit, system_commit) == system_commit);
  CHECK(wake_flag::merge(system_commit, 0) == system_commit);
  CHECK(wake_flag::merge(wake_flag::coverage, system_commit) == (wake_flag::coverage | system_commit));
  CHECK(wake_flag::merge(wake_flag::rebuild | wake_flag::commit, system_commit) == (wake_flag::rebuild | wake_flag::commit));
  CHECK(wake_flag::merge(0, 0) == 0);
}

TEST_CASE("commit bell: under concurrent rings every ring is either taken by a wake already sent or sends one, so none is lost", "[core][bell][threads]") {
  commit_bell bell;
  std::atomic<std::uint64_t> sent{0};
  std::atomic<bool> done{false};
  constexpr int writers = 4, rings = 50'000;
  std::uint64_t consumed = 0, taken_rings = 0;
  std::thread runner([&] {
    // The runner: handles each sent wake once, taking the bell.
    for (;;) {
      const bool finished = done.load(std::memory_order_acquire);
      if (consumed < sent.load(std::memory_order_acquire)) {
        ++consumed;
        if (bell.take() != 0) ++taken_rings;
      } else if (finished) {
        break;
      } else {
        std::this_thread::yield();
      }
    }
  });
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < rings; ++i) {
        if (bell.ring(((i + w) % 7) == 0)) sent.fetch_add(1, std::memory_order_acq_rel);
      }
    });
  }
  for (auto& t : threads) t.join();
  done.store(true, std::memory_order_release);
  runner.join();
  // Every wake sent was handled, and after the last one nothing rings unseen: a ring left
  // unseen here would be a commit no turn reads until some later wake.
  CHECK(consumed == sent.load());
  CHECK(bell.take() == 0);
  CHECK(sent.load() >= 1);
  CHECK(taken_rings <= sent.load());
}
