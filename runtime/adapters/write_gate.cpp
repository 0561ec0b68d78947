#include "adapters/write_gate.hpp"

#include <algorithm>
#include <iterator>
#include <mutex>
#include <thread>

#include "core/lag_gate.hpp"

namespace dix {

write_gate::write_gate() : sleep_([](std::chrono::microseconds d) { std::this_thread::sleep_for(d); }) {}

void write_gate::add(std::uint32_t table, entry e) {
  std::unique_lock g(mutex_);
  tables_[table].push_back(std::move(e));
  entries_.fetch_add(1, std::memory_order_release);
}

void write_gate::remove(std::uint64_t token) {
  std::unique_lock g(mutex_);
  for (auto it = tables_.begin(); it != tables_.end();) {
    auto& v = it->second;
    const auto before = v.size();
    v.erase(std::remove_if(v.begin(), v.end(), [token](const entry& e) { return e.token == token; }), v.end());
    entries_.fetch_sub(before - v.size(), std::memory_order_release);
    it = v.empty() ? tables_.erase(it) : std::next(it);
  }
}

bool write_gate::any_closed() const {
  if (empty()) return false;
  std::shared_lock g(mutex_);
  for (const auto& [table, entries] : tables_) {
    for (const auto& e : entries) {
      if (e.slot->lag_gate() > gate_open) return true;
    }
  }
  return false;
}

admission write_gate::admit(const std::vector<std::uint32_t>& tables, bool wake_on_reject) const {
  admission out{admit_kind::open, std::chrono::microseconds{0}, {}};
  std::uint32_t largest = gate_open;
  std::vector<std::function<void()>> wakes;
  {
    std::shared_lock g(mutex_);
    for (auto table : tables) {
      auto it = tables_.find(table);
      if (it == tables_.end()) continue;
      for (const auto& e : it->second) {
        const auto value = e.slot->lag_gate();
        if (value > largest) {
          largest = value;
          out.backend_id = e.id;
        }
      }
    }
    if (gate_refuses(largest) && wake_on_reject) {
      // The local runners of every refusing id, in every table written.
      for (auto table : tables) {
        auto it = tables_.find(table);
        if (it == tables_.end()) continue;
        for (const auto& e : it->second) {
          if (gate_refuses(e.slot->lag_gate()) && e.wake) wakes.push_back(e.wake);
        }
      }
    }
  }
  for (auto& w : wakes) w();
  if (gate_refuses(largest)) {
    out.kind = admit_kind::reject;
  } else if (largest != gate_open) {
    out.kind = admit_kind::delay;
    out.delay = std::chrono::microseconds{largest};
  }
  return out;
}

void write_gate::wait(std::chrono::microseconds delay) const {
  // A sleep shorter than a millisecond is not what it asks for: on a loaded machine a nanosleep of
  // 1–100 µs takes a few hundred, so a writer paced at 100 µs a commit made ~4 000 commits/s, not
  // 10 000, and nothing between that and unpaced could be asked for. Such delays are owed by the
  // committing thread and slept a millisecond at a time, so their average is what the gate asks
  // (decision 0060); one of a millisecond or more is slept at once. No sleep exceeds the delay
  // asked or 1 ms, so none exceeds max_write_delay.
  constexpr std::chrono::microseconds quantum{1000};
  thread_local std::chrono::microseconds owed{0};
  std::chrono::microseconds sleep{0};
  if (delay >= quantum) {
    sleep = delay;
  } else {
    owed += delay;
    if (owed < quantum) return;
    owed -= quantum;
    sleep = quantum;
  }
  sleeper s;
  {
    std::shared_lock g(mutex_);
    s = sleep_;
  }
  s(sleep);
}

void write_gate::set_sleeper(sleeper s) {
  std::unique_lock g(mutex_);
  sleep_ = std::move(s);
}

}  // namespace dix
