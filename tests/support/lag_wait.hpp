// Waits for the owner's lag figures of an id as any process reads them (segment_reader: attached,
// of the slot's epoch), for the system tests that read stall attribution: a futex wait on the
// metrics segment's change counter per round, 30 s failure bound, never a sleep.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include <catch2/catch.hpp>

#include <dix/activity.hpp>
#include <dix/segment.hpp>

#include "adapters/metrics_segment.hpp"

namespace dix::test {

// The figures once `want(figures)` holds; nullopt after the bound.
template <class Want>
std::optional<lag_figures> wait_lag(const std::filesystem::path& home, const std::string& id, Want want,
                                    std::chrono::seconds bound = std::chrono::seconds(30)) {
  using namespace std::chrono_literals;
  auto reader = segment_reader::open(home).value();
  REQUIRE(reader);
  auto metrics = metrics_segment::open(home / "dix", segment_layout::default_slot_count).value();
  REQUIRE(metrics);
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (;;) {
    const auto counter = metrics->change_counter();
    auto table = reader->read().value();
    for (const auto& e : table.entries) {
      if (e.id == id && e.lag && want(*e.lag)) return e.lag;
    }
    if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
    metrics->wait_change(counter, 1000ms);
  }
}

}  // namespace dix::test
