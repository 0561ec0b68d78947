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
  fault_.reset();
  asks_ahead_ = 0;
  ++generation_;  // a feed in flight is not appended
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

log_window::place log_window::locate(std::uint64_t last_sequence, std::uint64_t last_end, index_time_t last_time,
                                     bool joining, step& out) {
  if (followers_ < limits_.min_followers) return place::outside;
  if (!seeded_) return place::unseeded;
  const std::uint64_t want = last_end + 1;
  // The follower's transaction must be the window's: the one before `want` in it, or the one
  // before its first (the seed, or the last one evicted).
  auto is_before_front = [&] {
    return last_sequence == seed_sequence_ && last_end == seed_end_ && last_time == seed_time_;
  };
  if (!window_.empty() && want >= window_.front()->sequence && want <= window_.back()->end_sequence()) {
    auto it = std::lower_bound(window_.begin(), window_.end(), want,
                               [](const std::shared_ptr<const wal_transaction>& t, std::uint64_t s) { return t->sequence < s; });
    if (it == window_.end() || (*it)->sequence != want) return place::outside;
    if (it == window_.begin()) {
      if (!is_before_front()) return place::outside;
    } else {
      const auto& before = *std::prev(it);
      if (before->sequence != last_sequence || before->time != last_time || before->end_sequence() != last_end) {
        return place::outside;
      }
    }
    // A follower reading on its own joins in the window's newer half only: one that trails by
    // about the window's length would otherwise leave and join again at every eviction, paying
    // an open of its own source each time.
    if (joining && static_cast<std::size_t>(it - window_.begin()) < window_.size() / 2) return place::outside;
    out.kind = answer::found;
    out.txn = *it;
    ++served_;
    return place::served;
  }
  const bool at_end = window_.empty() ? is_before_front()
                                      : (window_.back()->sequence == last_sequence && window_.back()->time == last_time &&
                                         window_.back()->end_sequence() == last_end);
  if (at_end) return place::at_end;
  // Ahead of the window, whose last reader stopped (a rebuild, a fence, a condemnation): after a
  // while it is dropped, and the next follower at its own end seeds it again.
  const std::uint64_t end = window_.empty() ? seed_end_ : window_.back()->end_sequence();
  if (want > end + 1 && ++asks_ahead_ > limits_.stale_asks) drop();
  return place::outside;
}

void log_window::evict() {
  while (window_.size() > 1 && (window_.size() > limits_.max_transactions || bytes_ > limits_.max_bytes)) {
    const auto& f = *window_.front();
    seed_sequence_ = f.sequence;
    seed_end_ = f.end_sequence();
    seed_time_ = f.time;
    bytes_ -= f.data_size;
    window_.pop_front();
  }
}

result<log_window::step> log_window::next_after(std::uint64_t last_sequence, std::uint64_t last_end, index_time_t last_time,
                                                bool joining) {
  step out;
  {
    std::lock_guard hold(mutex_);
    const auto where = locate(last_sequence, last_end, last_time, joining, out);
    if (where == place::served || where == place::outside) return out;
  }
  // At the window's end, or no window yet: read on. One follower at a time reads the feeder, and
  // without the window's mutex, so followers inside the window are served meanwhile.
  std::lock_guard feeding(feed_mutex_);
  bool seed = false;
  std::uint64_t generation = 0;
  {
    std::lock_guard hold(mutex_);
    const auto where = locate(last_sequence, last_end, last_time, joining, out);
    if (where == place::served || where == place::outside) return out;  // fed meanwhile
    if (where == place::unseeded && seed_pause_ > 0) {
      --seed_pause_;  // a seed failed lately: not an open of the feeder per transaction read
      return out;
    }
    if (where == place::at_end && fault_) {
      // What the last feed met after the transactions it kept: this follower reached it.
      auto e = *fault_;
      drop();
      return e;
    }
    seed = where == place::unseeded;
    generation = generation_;
  }
  if (seed) {
    // Seed at this follower's position: the feeder's exact open checks it is a transaction of the
    // log (sequence and header time), so the window continues exactly where the follower stands.
    auto anchor = feeder_->open(last_sequence, last_time);
    if (!anchor || anchor->end_sequence() != last_end) {
      std::lock_guard hold(mutex_);
      seed_pause_ = 256;
      return out;  // its own source will tell
    }
  }
  std::vector<std::shared_ptr<const wal_transaction>> read;
  std::optional<error> fault;
  std::uint64_t read_bytes = 0;
  while (read.size() < limits_.read_ahead && read_bytes < limits_.max_bytes) {
    auto t = feeder_->next();
    if (!t) {
      fault = t.error();
      break;
    }
    if (!*t) break;
    read_bytes += (*t)->data_size;
    read.push_back(std::make_shared<const wal_transaction>(std::move(**t)));
  }
  std::lock_guard hold(mutex_);
  if (generation != generation_) return out;  // dropped meanwhile (forgotten, or no followers)
  if (seed) {
    seeded_ = true;
    window_.clear();
    bytes_ = 0;
    seed_sequence_ = last_sequence;
    seed_end_ = last_end;
    seed_time_ = last_time;
  }
  if (read.empty()) {
    if (fault) {
      drop();
      return *fault;
    }
    out.kind = answer::caught_up;
    return out;
  }
  fault_ = std::move(fault);  // handed to whoever reaches it
  asks_ahead_ = 0;
  fed_ += read.size();
  bytes_ += read_bytes;
  out.kind = answer::found;
  out.txn = read.front();
  ++served_;
  for (auto& t : read) window_.push_back(std::move(t));
  evict();  // the follower stands at out.txn: if that goes too, it is the one before the front
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
  // Still a follower while it reopens (a reinstall): leaving would drop a window of two.
  opened_ = false;
  own_stale_ = false;
  own_read_ = false;
  auto r = own_->open(sequence, time);
  if (!r) {
    set_opened(false);
    return r;
  }
  returned(*r);
  set_opened(true);
  return r;
}

result<std::optional<wal_transaction>> windowed_log_source::next() {
  if (!opened_) return error{errc::io_error, "log " + log_name() + " is not open (open() first)"};
  if (window_) {
    auto s = window_->next_after(last_sequence_, last_end_, last_time_, !own_stale_ && own_read_);
    if (!s) {
      set_opened(false);  // as any source's error: open() again
      return s.error();
    }
    if (s->kind == log_window::answer::caught_up) return std::optional<wal_transaction>{};
    if (s->kind == log_window::answer::found) {
      returned(*s->txn);
      own_stale_ = true;
      own_read_ = false;
      return std::optional<wal_transaction>{*s->txn};
    }
  }
  if (own_stale_) {
    // Back on its own: open at the transaction returned last (exact resume), which is skipped.
    auto r = own_->open(last_sequence_, last_time_);
    ++reopens_;
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
  if (*r) {
    returned(**r);
    own_read_ = true;
  }
  return r;
}

}  // namespace dix
