#include "core/commit_tail.hpp"

#include <new>
#include <utility>

namespace dix {

std::uint64_t commit_tail::charge(const wal_transaction& t) noexcept {
  return t.data_size + t.ops.size() * sizeof(wal_op) + entry_overhead;
}

std::vector<std::shared_ptr<const wal_transaction>> commit_tail::append(std::shared_ptr<const wal_transaction> t) {
  std::vector<std::shared_ptr<const wal_transaction>> dropped;
  if (!t || t->count == 0) return dropped;
  std::lock_guard lock(mutex_);
  if (!fits(t->data_size) || (next_sequence_ != 0 && t->sequence != next_sequence_)) {
    // A commit that was not appended lies between, or this one is not held: a new generation, so
    // no follower steps over either.
    dropped.reserve(held_.size());
    for (auto& h : held_) dropped.push_back(std::move(h));
    end_generation();
    if (!fits(t->data_size)) return dropped;  // its followers read it from the WAL
  }
  const auto end = t->end_sequence() + 1;
  const auto charged = charge(*t);
  held_.push_back(std::move(t));
  next_sequence_ = end;
  armed_.store(true, std::memory_order_release);
  bytes_ += charged;
  ++appended_;
  while (held_.size() > 1 && (held_.size() > limits_.max_transactions || bytes_ > limits_.max_bytes)) {
    bytes_ -= charge(*held_.front());
    dropped.push_back(std::move(held_.front()));
    held_.pop_front();
    ++first_;
    ++evicted_;
  }
  return dropped;
}

void commit_tail::end_generation() noexcept {
  ++generation_;
  ++resets_;
  first_ += held_.size();
  held_.clear();
  bytes_ = 0;
  next_sequence_ = 0;
  armed_.store(false, std::memory_order_release);
}

std::vector<std::shared_ptr<const wal_transaction>> commit_tail::take_all() {
  std::vector<std::shared_ptr<const wal_transaction>> dropped;
  std::lock_guard lock(mutex_);
  dropped.reserve(held_.size());
  for (auto& h : held_) dropped.push_back(std::move(h));
  end_generation();
  return dropped;
}

void commit_tail::reset() noexcept {
  std::lock_guard lock(mutex_);
  end_generation();
}

void commit_tail::missed() noexcept {
  if (armed_.load(std::memory_order_acquire)) reset();
}

void commit_tail::unfollow() noexcept {
  if (followers_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // The last follower left: what the tail holds serves nobody. Freed here, in the follower's
  // thread and outside the lock, rather than by the next commit under the store's commit mutex.
  try {
    std::deque<std::shared_ptr<const wal_transaction>> held;
    {
      std::lock_guard lock(mutex_);
      if (followers_.load(std::memory_order_acquire) != 0) return;  // another came meanwhile
      held.swap(held_);
      end_generation();
    }
  } catch (const std::bad_alloc&) {
    reset();
  }
}

const std::shared_ptr<const wal_transaction>* commit_tail::at(std::uint64_t p) const noexcept {
  if (p < first_ || p - first_ >= held_.size()) return nullptr;
  return &held_[static_cast<std::size_t>(p - first_)];
}

commit_tail::step commit_tail::next_after(place& where, std::uint64_t last_end) const {
  std::lock_guard lock(mutex_);
  if (where.generation != generation_ || where.next < first_) return {};
  if (const auto* t = at(where.next)) {
    // Consecutive within a generation; checked all the same, since a follower's place and its
    // last transaction are kept apart.
    if ((*t)->sequence != last_end + 1) return {};
    ++where.next;
    ++served_;
    return {answer::found, *t};
  }
  // Past the last held: the follower took the last one (its end is the next append's start).
  if (where.next == first_ + held_.size() && next_sequence_ == last_end + 1) return {answer::caught_up, nullptr};
  return {};
}

std::size_t commit_tail::index_of(std::uint64_t sequence) const noexcept {
  if (held_.empty() || sequence < held_.front()->sequence || sequence > held_.back()->sequence) return held_.size();
  // Consecutive sequences: search by sequence (operation counts vary, so not by arithmetic).
  std::size_t lo = 0, hi = held_.size();
  while (lo < hi) {
    const auto mid = lo + (hi - lo) / 2;
    if (held_[mid]->sequence < sequence) lo = mid + 1;
    else hi = mid;
  }
  return lo < held_.size() && held_[lo]->sequence == sequence ? lo : held_.size();
}

bool commit_tail::join_after(std::uint64_t sequence, std::uint64_t end, index_time_t time, place& where) const {
  std::lock_guard lock(mutex_);
  const auto i = index_of(sequence);
  if (i == held_.size()) return false;
  const auto& t = *held_[i];
  if (t.end_sequence() != end || (time != 0 && t.time != time)) return false;
  where = place{generation_, first_ + i + 1};
  return true;
}

std::shared_ptr<const wal_transaction> commit_tail::find(std::uint64_t sequence, index_time_t time, place& where) const {
  std::lock_guard lock(mutex_);
  const auto i = index_of(sequence);
  if (i == held_.size() || (time != 0 && held_[i]->time != time)) return nullptr;
  where = place{generation_, first_ + i + 1};
  ++served_;
  return held_[i];
}

commit_tail::counters commit_tail::stats() const {
  std::lock_guard lock(mutex_);
  return counters{appended_, served_, resets_, evicted_, held_.size(), bytes_};
}

tail_log_source::tail_log_source(std::unique_ptr<log_source> own, std::shared_ptr<commit_tail> tail)
    : own_(std::move(own)), tail_(std::move(tail)) {}

tail_log_source::~tail_log_source() { set_opened(false); }

void tail_log_source::set_opened(bool opened) noexcept {
  opened_ = opened;
  if (!opened) in_tail_ = false;
  if (!tail_ || following_ == opened) return;
  following_ = opened;
  if (opened) tail_->follow();
  else tail_->unfollow();
}

void tail_log_source::returned(const wal_transaction& t) noexcept {
  last_sequence_ = t.sequence;
  last_end_ = t.end_sequence();
  last_time_ = t.time;
}

void tail_log_source::try_join() noexcept {
  if (!tail_ || in_tail_) return;
  if (!tail_->join_after(last_sequence_, last_end_, last_time_, place_)) return;
  in_tail_ = true;
  own_stale_ = true;  // leaving the tail re-opens own_ after the last transaction returned
  own_->release();    // and until then it holds no WAL file open
}

result<wal_transaction> tail_log_source::open(std::uint64_t sequence, index_time_t time) {
  // Still following meanwhile (a re-open of the only follower must not end the tail's generation).
  opened_ = false;
  in_tail_ = false;
  own_stale_ = false;
  if (tail_ && sequence != 0) {
    if (auto held = tail_->find(sequence, time, place_)) {
      returned(*held);
      set_opened(true);
      in_tail_ = true;
      own_stale_ = true;  // own_ is not open here: leaving the tail opens it
      own_->release();
      return wal_transaction(*held);
    }
  }
  auto first = own_->open(sequence, time);
  if (!first) {
    set_opened(false);
    return first;
  }
  returned(*first);
  set_opened(true);
  try_join();
  return first;
}

result<std::optional<wal_transaction>> tail_log_source::leave() {
  // Where the tail left off: the transaction right after the last one returned, exactly, as the
  // re-open after a WAL switch (protocol.md §3.4). Only the file holding it must be retained —
  // not the one holding the last transaction, which the WAL may have purged while this source
  // read from memory. Not before the log holds it (a generation also ends without a commit).
  auto latest = own_->latest_sequence();
  if (!latest) {
    set_opened(false);
    return latest.error();
  }
  if (*latest <= last_end_) return std::optional<wal_transaction>{};
  auto first = own_->open(last_end_ + 1, 0);
  ++reopens_;
  if (!first) {
    set_opened(false);
    return first.error();
  }
  own_stale_ = false;
  returned(*first);
  try_join();
  return std::optional<wal_transaction>{std::move(*first)};
}

result<std::optional<wal_transaction>> tail_log_source::next() {
  if (!opened_) return own_->next();  // not open: the own source's own error
  if (in_tail_) {
    auto step = tail_->next_after(place_, last_end_);
    if (step.kind == commit_tail::answer::found) {
      returned(*step.txn);
      return std::optional<wal_transaction>{wal_transaction(*step.txn)};
    }
    if (step.kind == commit_tail::answer::caught_up) return std::optional<wal_transaction>{};
    in_tail_ = false;  // outside: read on from the own source
  }
  if (own_stale_) return leave();
  auto txn = own_->next();
  if (!txn) {
    set_opened(false);
    return txn;
  }
  if (*txn) returned(**txn);
  try_join();
  return txn;
}

}  // namespace dix
