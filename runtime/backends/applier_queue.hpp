// What the shipped backends share around their applier queue (backends.md §0): the state-change
// callbacks, and the queued-bytes cap that defers deliveries and says when the `changed` a
// deferral is owed falls due. Standard library and the public API only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include <dix/backend.hpp>

namespace dix {

// The on_state_change callbacks of one backend. Thread-safe.
class state_listeners {
 public:
  // The subscription must not outlive this object.
  subscription add(std::function<void(state_change)> callback) {
    std::lock_guard lock(mutex_);
    const auto key = next_++;
    callbacks_.emplace(key, std::move(callback));
    return subscription([this, key] {
      std::lock_guard inner(mutex_);
      callbacks_.erase(key);
    });
  }
  // Calls every callback outside the lock, so a callback may subscribe or unsubscribe.
  void emit(state_change change) {
    std::vector<std::function<void(state_change)>> copy;
    {
      std::lock_guard lock(mutex_);
      for (auto& [key, fn] : callbacks_) copy.push_back(fn);
    }
    for (auto& fn : copy) fn(change);
  }

 private:
  std::mutex mutex_;
  std::map<std::uint64_t, std::function<void(state_change)>> callbacks_;
  std::uint64_t next_ = 1;
};

// The bytes of the batches an applier holds (queued, and the one in flight). Not thread-safe:
// the caller holds its queue's mutex for every call.
class queued_bytes_cap {
 public:
  explicit queued_bytes_cap(std::uint64_t cap) : cap_(cap) {}
  static std::uint64_t weight(const batch& b) { return std::max<std::uint64_t>(b.bytes, 1); }
  // Counts `b` in, or false (deferred, and a `changed` owed) at the cap. Soft: an empty queue
  // takes any single batch.
  bool admit(const batch& b, bool queue_empty) {
    if (!queue_empty && bytes_ >= cap_) {
      owed_ = true;
      return false;
    }
    bytes_ += weight(b);
    return true;
  }
  // `b` left the queue unapplied (shutdown, reset, a failure); an owed `changed` stays owed.
  void drop(const batch& b) { bytes_ -= weight(b); }
  // The applier finished `b`. True: the owed `changed` is due now (the bytes fell to half the cap).
  bool release(const batch& b) {
    bytes_ -= weight(b);
    if (owed_ && bytes_ <= cap_ / 2) {
      owed_ = false;
      return true;
    }
    return false;
  }
  std::uint64_t bytes() const noexcept { return bytes_; }

 private:
  std::uint64_t cap_;
  std::uint64_t bytes_ = 0;
  bool owed_ = false;  // a delivery was deferred: `changed` at half the cap
};

}  // namespace dix
