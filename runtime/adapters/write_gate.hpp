// write_gate: a primary store's admission check (protocol.md §13.5). Per table it keeps the
// readiness slots of the registrations projecting it (registered by the runtime at §2.2, removed
// after the release settled, §2.4); a commit's admission reads their lag_gate and takes the
// largest: exceeded refuses the commit (index_lagging) and wakes the local runners of the id as
// a non-system commit would (so a dormant registration acquires and re-evaluates the gate),
// throttled makes the committing thread wait that many µs — outside the commit mutex — then
// commit; open admits. A table nobody projects is never gated, and a store without entries pays
// one atomic load per commit.
//
// Thread safety: every method may be called from any thread; admit() takes a shared lock, add
// and remove an exclusive one. Wakes run after the lock is released.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include <dix/primary_store.hpp>

#include "ports/ownership.hpp"

namespace dix {

class write_gate {
 public:
  using sleeper = std::function<void(std::chrono::microseconds)>;
  struct entry {
    std::string id;
    std::uint64_t token = 0;  // the registration (its lock-table requester), for remove()
    std::shared_ptr<const readiness_slot> slot;
    std::function<void()> wake;  // wakes the registration's runner as a non-system commit
  };

  write_gate();
  void add(std::uint32_t table, entry e);
  void remove(std::uint64_t token);  // every table's entries of the registration
  bool empty() const noexcept { return entries_.load(std::memory_order_acquire) == 0; }
  // Whether any entry of any table is not open now (a commit to some table may wait or be
  // refused). One atomic load when the gate is empty; a shared lock and a look at every entry
  // otherwise.
  bool any_closed() const;

  // The admission of a commit writing `tables` (protocol.md §13.5). `wake_on_reject`: a refusal
  // wakes the runners of every refusing id (a commit's admission); a bare check does not.
  admission admit(const std::vector<std::uint32_t>& tables, bool wake_on_reject) const;
  // Waits `delay` on the calling thread (std::this_thread::sleep_for unless a test set another);
  // a delay under 1 ms is owed by the thread and slept 1 ms at a time once its debts add up.
  void wait(std::chrono::microseconds delay) const;
  // Tests: records or shortens the throttle's wait, so that a test asserts the delay asked for.
  void set_sleeper(sleeper s);

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::uint32_t, std::vector<entry>> tables_;
  std::atomic<std::size_t> entries_{0};
  sleeper sleep_;
};

}  // namespace dix
