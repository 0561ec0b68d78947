#include "core/backlog_forecast.hpp"

#include <algorithm>

namespace dix {

void backlog_forecast::observe(steady_time now, std::uint64_t read, std::uint64_t unread) {
  // A read position going back (the logs installed again) or a silence longer than the window (a
  // stall, a rebuild's scan: the lag's own ages cover it) says nothing of the coming rate.
  if (!readings_.empty() &&
      (read < readings_.back().second || now < readings_.back().first || now - readings_.back().first > window)) {
    readings_.clear();
  }
  // The busy run (decision 0065): the previous reading's position is what the index took by now.
  const bool continues = !readings_.empty();
  const std::uint64_t delivered = continues ? readings_.back().second : read;
  in_hand_ = read - delivered;
  if (!continues || unread < busy_entries) {
    busy_from_.reset();
    busy_mark_.reset();
  } else if (!busy_from_) {
    busy_from_ = busy_mark_ = std::pair{now, delivered};
  } else if (now - busy_mark_->first >= window / 2) {
    busy_from_ = busy_mark_;
    busy_mark_ = std::pair{now, delivered};
  }
  last_ = log_reading{now, read, unread};
  // Readings closer than 10 ms apart replace the newest one: at most ~100 readings per window.
  if (readings_.size() >= 2 && now - readings_[readings_.size() - 2].first < std::chrono::milliseconds(10)) {
    readings_.back() = {now, read};
  } else {
    readings_.emplace_back(now, read);
  }
  // Keep one reading at or beyond the window's start, so the span covers the whole window.
  while (readings_.size() > 2 && now - readings_[1].first >= window) readings_.pop_front();
}

void backlog_forecast::reset() noexcept {
  readings_.clear();
  last_.reset();
  in_hand_ = 0;
  busy_from_.reset();
  busy_mark_.reset();
}

std::optional<std::uint64_t> backlog_forecast::busy_rate() const {
  if (!busy_from_ || !last_) return std::nullopt;
  const auto span_us = std::chrono::duration_cast<std::chrono::microseconds>(last_->at - busy_from_->first).count();
  if (span_us < std::chrono::duration_cast<std::chrono::microseconds>(busy_min_span).count()) return std::nullopt;
  const std::uint64_t delivered = last_->read - in_hand_;
  return (delivered - busy_from_->second) * 1'000'000 / static_cast<std::uint64_t>(span_us);
}

std::optional<std::uint64_t> backlog_forecast::rate() const {
  if (readings_.size() < 2) return std::nullopt;
  const auto& [from, read_from] = readings_.front();
  const auto& [to, read_to] = readings_.back();
  const auto span_ms = std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
  if (span_ms < min_span.count()) return std::nullopt;
  return (read_to - read_from) * 1000 / static_cast<std::uint64_t>(span_ms);
}

namespace {

// unread × 1000 / rate in ms, at most cap_ms, without overflow for any realistic figure (unread < 2^44).
std::uint64_t reading_ms(std::uint64_t unread, std::uint64_t rate, std::uint64_t cap_ms) {
  if (rate == 0) return cap_ms;
  const auto ms = unread / rate * 1000 + unread % rate * 1000 / rate;
  return std::min(ms, cap_ms);
}

}  // namespace

std::uint64_t backlog_forecast::busy_drain_ms(std::uint64_t cap_ms) const {
  const auto busy = busy_rate();
  const std::uint64_t unread = last_ ? last_->unread : 0;
  if (!busy || *busy == 0 || unread == 0) return 0;
  return reading_ms(unread, *busy, cap_ms);
}

std::uint64_t backlog_forecast::drain_ms(std::uint64_t cap_ms) const {
  const std::uint64_t unread = last_ ? last_->unread : 0;
  if (unread == 0) return 0;
  const auto r = rate();
  if (!r) return 0;
  return reading_ms(unread, *r, cap_ms);
}

}  // namespace dix
