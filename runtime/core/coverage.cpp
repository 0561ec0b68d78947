#include "core/coverage.hpp"

#include <algorithm>

namespace dix {

bool covers(const dix::positions& anchor_ends, const coverage_capture& c) noexcept {
  for (const auto& [log, position] : c.positions) {
    if (position == 0) continue;  // no write in that log yet: nothing to cover
    auto it = anchor_ends.find(log);
    if (it == anchor_ends.end() || it->second < position) return false;
  }
  return true;
}

coverage_tracker::coverage_tracker(std::chrono::milliseconds max_flush_age) : max_flush_age_(max_flush_age) {}

bool coverage_tracker::wants_capture(steady_time now) const noexcept {
  if (demand_open()) return true;
  return !last_request_ || now - *last_request_ >= max_flush_age_ / 4;
}

void coverage_tracker::add(coverage_capture c) {
  if (c.time <= published_) return;  // certifies nothing new
  // Times rise in capture order; a capture that does not (a reply overtaken) only replaces
  // nothing: keeping the list ordered keeps "newest covered" a scan from the back.
  if (!captures_.empty() && captures_.back().capture.time >= c.time) return;
  captures_.push_back(held_capture{std::move(c), asked_for_});
}

void coverage_tracker::demand(index_time_t since) noexcept { demand_ = since; }

bool coverage_tracker::demand_delivered(const dix::positions& ends) const noexcept {
  if (!demand_open()) return false;
  for (const auto& [c, asked_for] : captures_) {
    const bool serves = c.time >= demand_ || (asked_for > published_ && c.time >= asked_for);
    if (serves && covers(ends, c)) return true;
  }
  return false;
}

std::optional<index_time_t> coverage_tracker::publish(const dix::positions& ends) {
  // Positions rise with capture order, so the covered captures are a prefix of the list.
  std::size_t covered = 0;
  while (covered < captures_.size() && covers(ends, captures_[covered].capture)) ++covered;
  if (covered == 0) return std::nullopt;
  auto chosen = std::move(captures_[covered - 1].capture);
  captures_.erase(captures_.begin(), captures_.begin() + static_cast<std::ptrdiff_t>(covered));
  if (chosen.time <= published_) return std::nullopt;
  published_ = chosen.time;
  if (demand_ != 0 && demand_ <= published_) demand_ = 0;  // served; the publisher clears the slot's
  last_published_ = std::move(chosen);
  return published_;
}

std::optional<coverage_capture> coverage_tracker::hook_due(const dix::positions& durable_ends, steady_time now) {
  if (!last_published_ || last_published_->time <= hooked_time_) return std::nullopt;
  if (hooked_at_ && now - *hooked_at_ < max_flush_age_) return std::nullopt;
  if (!covers(durable_ends, *last_published_)) return std::nullopt;
  hooked_time_ = last_published_->time;
  hooked_at_ = now;
  if (!owed_.empty() && covers(last_published_->positions, coverage_capture{0, owed_})) owed_.clear();
  return last_published_;
}

void coverage_tracker::owe_hook(const dix::positions& durable_ends) {
  for (const auto& [log, end] : durable_ends) {
    if (end == 0) continue;  // nothing written in that log: nothing to reach
    auto& owed = owed_[log];
    owed = std::max(owed, end);
  }
}

bool coverage_tracker::hook_waits_for_barrier(const dix::positions& durable_ends) const noexcept {
  if (owed_.empty() || !last_published_ || last_published_->time <= hooked_time_) return false;
  // A capture that does not reach the owed write yet needs a capture first (the next turn's).
  if (!covers(last_published_->positions, coverage_capture{0, owed_})) return false;
  return !covers(durable_ends, *last_published_);
}

}  // namespace dix
