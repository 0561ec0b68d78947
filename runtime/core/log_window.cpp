#include "core/log_window.hpp"

#include <algorithm>

namespace dix {

log_window::log_window(std::unique_ptr<log_source> feeder, limits l) : limits_(l), feeder_(std::move(feeder)) {}

void log_window::follow() noexcept {
  std::lock_guard hold(mutex_);
  ++followers_;
}

void log_window::unfollow() noexcept {
  std::lock_guard hold(mutex_);
  if (followers_ > 0) --followers_;
  if (followers_ < limits_.min_followers) drop();  // nobody to share with: free the memory
}

void log_window::drop() noexcept {
  seeded_ = false;
  window_.clear();
  bytes_ = 0;
}

void log_window::forget() {
  std::lock_guard hold(mutex_);
  drop();
}

std::uint64_t log_window::served() const {
  std::lock_guard hold(mutex_);
  return served_;
}

std::uint64_t log_window::fed() const {
  std::lock_guard hold(mutex_);
  return fed_;
}

result<bool> log_window::extend() {
  bool appended = false;
  for (std::size_t i = 0; i < limits_.read_ahead; ++i) {
    auto t = feeder_->next();
    if (!t) return t.error();
    if (!*t) break;
    bytes_ += (*t)->data_size;
    window_.push_back(std::make_shared<const wal_transaction>(std::move(**t)));
    ++fed_;
    appended = true;
  }
  return appended;
}

result<log_window::step> log_window::next_after(std::uint64_t last_sequence, std::uint64_t last_end, index_time_t last_time) {
  std::lock_guard hold(mutex_);
  step out;
  if (followers_ < limits_.min_followers || feeder_ == nullptr) return out;
  if (!seeded_ && seed_pause_ > 0) {
    --seed_pause_;  // a seed failed lately: not an open of the feeder per transaction read
    return out;
  }
  if (!seeded_) {
    // Seed at this follower's position: the feeder's exact open checks it is a transaction of the
    // log (sequence and header time), so the window continues exactly where the follower stands.
    auto anchor = feeder_->open(last_sequence, last_time);
    if (!anchor || anchor->end_sequence() != last_end) {
      seed_pause_ = 256;
      return out;  // its own source will tell
    }
    seeded_ = true;
    window_.clear();
    bytes_ = 0;
    seed_sequence_ = last_sequence;
    seed_end_ = last_end;
    seed_time_ = last_time;
  }
  const std::uint64_t want = last_end + 1;
  // The follower's transaction must be the window's: the one before `want` in it, or the one
  // before its first (the seed, or the last one evicted).
  auto is_before_front = [&] {
    return last_sequence == seed_sequence_ && last_end == seed_end_ && last_time == seed_time_;
  };
  if (!window_.empty() && want >= window_.front()->sequence && want <= window_.back()->end_sequence()) {
    auto it = std::lower_bound(window_.begin(), window_.end(), want,
                               [](const std::shared_ptr<const wal_transaction>& t, std::uint64_t s) { return t->sequence < s; });
    if (it == window_.end() || (*it)->sequence != want) return out;
    if (it == window_.begin()) {
      if (!is_before_front()) return out;
    } else {
      const auto& before = *std::prev(it);
      if (before->sequence != last_sequence || before->time != last_time || before->end_sequence() != last_end) return out;
    }
    out.kind = answer::found;
    out.txn = *it;
    ++served_;
    return out;
  }
  // At the window's end: read on.
  const bool at_end = window_.empty() ? is_before_front()
                                      : (window_.back()->sequence == last_sequence && window_.back()->time == last_time &&
                                         window_.back()->end_sequence() == last_end);
  if (!at_end) return out;
  const auto held = window_.size();
  auto more = extend();
  if (!more) {
    drop();
    return more.error();
  }
  if (!*more) {
    out.kind = answer::caught_up;
    return out;
  }
  out.kind = answer::found;
  out.txn = window_[held];
  ++served_;
  // Bounded: the oldest go first (never the one just handed out); the last evicted is what a
  // follower standing just before the new front must match.
  while (window_.size() > 1 && window_.front() != out.txn &&
         (window_.size() > limits_.max_transactions || bytes_ > limits_.max_bytes)) {
    const auto& f = *window_.front();
    seed_sequence_ = f.sequence;
    seed_end_ = f.end_sequence();
    seed_time_ = f.time;
    bytes_ -= f.data_size;
    window_.pop_front();
  }
  return out;
}

windowed_log_source::windowed_log_source(std::unique_ptr<log_source> own, std::shared_ptr<log_window> window)
    : own_(std::move(own)), window_(std::move(window)) {}

windowed_log_source::~windowed_log_source() { set_opened(false); }

void windowed_log_source::set_opened(bool opened) noexcept {
  opened_ = opened;
  // A follower of the window while open: not while it waits for open() after an error, nor
  // merely because it exists.
  if (!window_ || opened == following_) return;
  following_ = opened;
  opened ? window_->follow() : window_->unfollow();
}

void windowed_log_source::returned(const wal_transaction& t) noexcept {
  last_sequence_ = t.sequence;
  last_end_ = t.end_sequence();
  last_time_ = t.time;
}

result<wal_transaction> windowed_log_source::open(std::uint64_t sequence, index_time_t time) {
  set_opened(false);
  own_stale_ = false;
  auto r = own_->open(sequence, time);
  if (!r) return r;
  returned(*r);
  set_opened(true);
  return r;
}

result<std::optional<wal_transaction>> windowed_log_source::next() {
  if (!opened_) return error{errc::io_error, "log " + log_name() + " is not open (open() first)"};
  if (window_) {
    auto s = window_->next_after(last_sequence_, last_end_, last_time_);
    if (!s) {
      set_opened(false);  // as any source's error: open() again
      return s.error();
    }
    if (s->kind == log_window::answer::caught_up) return std::optional<wal_transaction>{};
    if (s->kind == log_window::answer::found) {
      returned(*s->txn);
      own_stale_ = true;
      return std::optional<wal_transaction>{*s->txn};
    }
  }
  if (own_stale_) {
    // Back on its own: open at the transaction returned last (exact resume), which is skipped.
    auto r = own_->open(last_sequence_, last_time_);
    if (!r) {
      set_opened(false);
      return r.error();
    }
    own_stale_ = false;
  }
  auto r = own_->next();
  if (!r) {
    set_opened(false);
    return r;
  }
  if (*r) returned(**r);
  return r;
}

}  // namespace dix
