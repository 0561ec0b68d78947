#include "core/progress_pacer.hpp"

namespace dix {

std::optional<rebuild_progress> progress_pacer::next(const runner_snapshot& s, steady_time now) {
  if (!s.scan_started_at) {
    // No scan in the current attempt. A rebuild asked of a ready index publishes `rebuilding`
    // under the epoch of the scan told last, before it mints its own: those figures are not this
    // attempt's, and are withdrawn once by figures of epoch 0, which no reader shows (a reader
    // shows only the slot's current owner epoch, and an owner's is never 0).
    if (!last_ || last_->epoch == 0) return std::nullopt;  // nothing told, or withdrawn already
    last_->epoch = 0;
    return rebuild_progress{};
  }
  told current{*s.scan_started_at, s.epoch, s.rebuilt_records, s.estimated_records, s.scan_ended_at.has_value(), now};
  const bool new_scan = !last_ || last_->scan_started != current.scan_started || last_->epoch != current.epoch;
  if (!new_scan) {
    const bool same = last_->rebuilt_records == current.rebuilt_records &&
                      last_->estimated_records == current.estimated_records && last_->scan_ended == current.scan_ended;
    if (same) return std::nullopt;
    const bool ended_now = current.scan_ended && !last_->scan_ended;
    if (!ended_now && now - last_->at < min_interval) return std::nullopt;
  }
  last_ = current;
  // The rate and the time left as metrics() computes them; only the pacing is decided here.
  const auto m = s.metrics(now);
  return rebuild_progress{s.epoch, m.rebuilt_records, m.estimated_records, m.scan_records_per_s, m.rebuild_eta_ms,
                          current.scan_ended};
}

}  // namespace dix
