// What the shipped backends' appliers share (backends.md §0): the items of the FIFO queue between
// the runtime's calls and the applier thread with flush's barrier coalescing (rocksdb_index_backend,
// xapian_backend), the list of on_state_change callbacks (all three), and the queued-bytes cap
// that defers deliveries and says when the `changed` a deferral is owed falls due (hnsw_backend).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <variant>
#include <vector>

#include <dix/backend.hpp>
#include <dix/batch.hpp>

namespace dix {

struct barrier_item {
  std::vector<completion> done;  // every flush request the barrier answers
};
struct control_item {
  enum class kind { shutdown, reset } what;
  epoch_t epoch;
  completion done;
};
using queue_item = std::variant<std::shared_ptr<const batch>, barrier_item, control_item>;

// Queues a barrier after everything queued; a request made while a barrier is still queued joins
// it. Caller holds the queue's mutex.
inline void queue_barrier(std::deque<queue_item>& queue, completion done) {
  if (!queue.empty()) {
    if (auto* pending = std::get_if<barrier_item>(&queue.back())) {
      pending->done.push_back(std::move(done));
      return;
    }
  }
  barrier_item item;
  item.done.push_back(std::move(done));
  queue.emplace_back(std::move(item));
}

// flush, shutdown and reset of a backend whose impl has `queue_mutex`, `queue`, `queue_cv` and
// `drop_queued(epoch)` (which removes the epoch's queued batches and fixes its counts): a
// barrier after everything queued; a shutdown or reset after the batch in flight, the epoch's
// queued batches dropped (backends.md §0).
template <class Impl>
void enqueue_barrier(Impl& p, completion done) {
  {
    std::lock_guard lock(p.queue_mutex);
    queue_barrier(p.queue, std::move(done));
  }
  p.queue_cv.notify_one();
}
template <class Impl>
void enqueue_control(Impl& p, control_item::kind what, epoch_t epoch, completion done) {
  {
    std::lock_guard lock(p.queue_mutex);
    p.drop_queued(epoch);
    p.queue.emplace_back(control_item{what, epoch, std::move(done)});
  }
  p.queue_cv.notify_one();
}

// The on_state_change callbacks of one backend. Thread-safe; emit calls them outside the lock, so
// a callback may subscribe or unsubscribe. The list must outlive the subscriptions it hands out.
class state_callbacks {
 public:
  subscription subscribe(std::function<void(state_change)> callback) {
    std::lock_guard g(mutex_);
    auto key = next_++;
    callbacks_.emplace(key, std::move(callback));
    return subscription([this, key] {
      std::lock_guard g2(mutex_);
      callbacks_.erase(key);
    });
  }
  void emit(state_change change) {
    std::vector<std::function<void(state_change)>> copy;
    {
      std::lock_guard g(mutex_);
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
