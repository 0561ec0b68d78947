// A home store directory whose readiness segment this process attached, with one claimed slot
// `idx` under a minted epoch: the owner's side of the segment, written directly (apply), for the
// tests of what readers in any process make of it (the free coverage readers, the query host).
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>

#include "adapters/readiness_segment.hpp"
#include "support/temp_dir.hpp"

namespace dix::test {

struct home_with_slot {
  temp_dir dir;
  std::filesystem::path home = dir / "db";
  std::shared_ptr<readiness_segment> segment;
  std::shared_ptr<segment_slot> slot;
  epoch_t epoch = 0;
  home_with_slot() {
    std::filesystem::create_directories(home);
    segment = readiness_segment::attach(home).value();
    slot = segment->claim("idx").value();
    epoch = slot->mint_epoch().value();
  }
  void ready(index_time_t coverage_time) {
    slot->apply(slot_publication{readiness_state::ready, readiness_reason::none, 0, coverage_time, std::nullopt});
  }
  void state(readiness_state s) { slot->apply(slot_publication{s, readiness_reason::none, 0, std::nullopt, std::nullopt}); }
};

// Waits (futex, no sleep) until `pred` holds for the slot, at most 20 s.
template <class Pred>
bool until_slot(const segment_slot& slot, Pred pred) {
  using namespace std::chrono_literals;
  auto deadline = std::chrono::steady_clock::now() + 20s;
  for (;;) {
    auto seen = slot.change_counter();
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    slot.wait_change(seen, 1000ms);
  }
}

}  // namespace dix::test
