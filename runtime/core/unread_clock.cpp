#include "core/unread_clock.hpp"

#include <algorithm>

namespace dix {

void unread_clock::commit_seen(steady_time now) {
  if (!since_) since_ = now;
  if (!stamped_) stamped_ = now;
}

void unread_clock::read(std::optional<steady_time> began, const std::vector<log_seen>& logs, bool end_of_log,
                        steady_time now) {
  if (end_of_log) {
    reset();
    return;
  }
  // The logs installed anew (another set of logs): the marks say nothing of them.
  if (!marks_.empty() && marks_.front().latest.size() != logs.size()) marks_.clear();
  const auto read_up_to = [&logs](const mark& m) {
    for (std::size_t i = 0; i < logs.size(); ++i) {
      if (logs[i].read < m.latest[i]) return false;
    }
    return true;
  };
  while (!marks_.empty() && read_up_to(marks_.front())) {
    since_ = since_ ? std::max(*since_, marks_.front().at) : marks_.front().at;
    marks_.pop_front();
  }
  const bool unread = std::any_of(logs.begin(), logs.end(), [](const log_seen& l) { return l.latest > l.read; });
  if (!unread) return;
  // Also a reader that has not reached the end since it started, which no commit wake marks.
  if (!since_) since_ = now;
  if (!stamped_) stamped_ = since_;
  if (!began || *began > now) return;
  mark m{*began, {}};
  m.latest.reserve(logs.size());
  for (const auto& l : logs) m.latest.push_back(l.latest);
  if (!marks_.empty() && (m.at < marks_.back().at + mark_spacing)) {
    // Closer than the spacing: replaces the newest (a later moment, sequences at least as high).
    for (std::size_t i = 0; i < logs.size(); ++i) m.latest[i] = std::max(m.latest[i], marks_.back().latest[i]);
    m.at = std::max(m.at, marks_.back().at);
    marks_.back() = std::move(m);
  } else if (marks_.size() < max_marks) {
    marks_.push_back(std::move(m));
  }
}

void unread_clock::reopened() noexcept {
  since_ = stamped_;
  marks_.clear();
}

void unread_clock::reset() noexcept {
  since_.reset();
  stamped_.reset();
  marks_.clear();
}

}  // namespace dix
