#include "core/lag_pacer.hpp"

#include <algorithm>

namespace dix {

bool lag_pacer::shape::operator==(const shape& o) const {
  return epoch == o.epoch && state == o.state && cursor_lag_ms == o.cursor_lag_ms &&
         oldest_accepted_at == o.oldest_accepted_at && stalled_since == o.stalled_since &&
         unread_since == o.unread_since && accepted_batches == o.accepted_batches &&
         transient_faults == o.transient_faults && last_fault == o.last_fault && sequence_lags == o.sequence_lags &&
         verifying == o.verifying && verified_at == o.verified_at && verify_failures == o.verify_failures &&
         verify_read == o.verify_read;
}

lag_pacer::decision lag_pacer::next(const runner_snapshot& s, const runner_options& options, steady_time now,
                                    std::uint64_t wall_ns) {
  if (!s.owner) return {};
  const auto m = s.metrics(now);
  shape current{s.epoch, s.state, s.cursor_lag_ms, s.oldest_accepted_at, s.stalled_since, s.unread_since,
                s.accepted_batches, s.transient_faults, s.last_fault, {}, s.verifying, s.verified_at, s.verify_failures, s.verify_read};
  std::vector<std::uint64_t> read_sequences;
  for (const auto& l : m.logs) {
    current.sequence_lags.push_back(l.sequence_lag);
    read_sequences.push_back(l.read_sequence);
  }
  // The read positions count as a change too: they move the rate, and so the ETA.
  if (last_ && last_->what == current && last_->read_sequences == read_sequences) return {};
  // A rebuild's start or end is told at once, as a new epoch is: the readiness segment says it in
  // the same event (core/activity.cpp also lets a ready slot outrank figures still rebuilding).
  const auto rebuilding = [](const shape& k) { return k.state == runner_state::rebuilding; };
  const bool rebuild_turned = last_ && rebuilding(last_->what) != rebuilding(current);
  if (last_ && last_->what.epoch == current.epoch && !rebuild_turned && now - last_->at < min_interval) {
    return {std::nullopt, std::chrono::duration_cast<std::chrono::milliseconds>(min_interval - (now - last_->at))};
  }
  // The rate of each log over the window: from the oldest publication of this epoch in it (the
  // first figures of an epoch know no rate).
  if (!last_ || last_->what.epoch != current.epoch) history_.clear();
  while (history_.size() > 1 && now - history_[1].at >= rate_window) history_.pop_front();
  std::vector<std::uint64_t> rates(read_sequences.size(), 0);
  if (!history_.empty() && history_.front().read_sequences.size() == read_sequences.size()) {
    const auto& from = history_.front();
    const auto passed_ms = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(now - from.at).count());
    for (std::size_t i = 0; i < rates.size(); ++i) {
      const auto read = read_sequences[i] > from.read_sequences[i] ? read_sequences[i] - from.read_sequences[i] : 0;
      rates[i] = passed_ms > 0 ? read * 1000 / passed_ms : 0;
    }
  }
  history_.push_back(position{now, read_sequences});
  // The snapshot knows exactly which ages grow (their moments are set), and the pacer the rates.
  lag_figures out = lag_figures_of(m, s.state, options);
  out.taken_wall_ns = wall_ns;
  out.stalled_growing = s.stalled_since.has_value();
  out.unread_growing = s.unread_since.has_value();
  out.oldest_accepted_growing = s.oldest_accepted_at.has_value();
  out.lag_gate = 0;  // the publisher writes the slot's
  out.logs.resize(std::min(out.logs.size(), lag_log_slots));
  for (std::size_t i = 0; i < out.logs.size(); ++i) out.logs[i].read_per_s = rates[i];
  last_ = told{std::move(current), now, std::move(read_sequences)};
  return {std::move(out), std::nullopt};
}

}  // namespace dix
