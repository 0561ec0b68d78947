// When the owner publishes a rebuild's progress for other processes (the metrics segment,
// docs/formats-metrics.md): at the start of each scan, then whenever the figures changed but at
// most every min_interval, and once when the scan ends. A watcher so sees the figures move a few
// times a second and always sees the final ones, and a scan of millions of records costs a few
// publications a second, not one per chunk. Pure: the runner actor feeds it each event's snapshot
// and the actor clock's time.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include <dix/status.hpp>

#include "core/runner_core.hpp"

namespace dix {

class progress_pacer {
 public:
  static constexpr std::chrono::milliseconds min_interval{250};

  // The progress to publish after an event whose snapshot is `s`, at `now` (figures as
  // s.metrics(now) gives them, under s.epoch); once a new attempt dropped the scan told last,
  // figures of epoch 0 that withdraw it (runner_interpreter sends those ahead of the event's
  // publications); nullopt when nothing is to be published: no scan ran in the current attempt
  // (and none is to be withdrawn), the figures are those published last, or the last
  // publication is younger than min_interval and neither a new scan nor the scan's end is to be
  // told.
  std::optional<rebuild_progress> next(const runner_snapshot& s, steady_time now);
  // Whether `p` is such a withdrawal (figures of epoch 0: an owner's epoch is never 0).
  static bool withdraws(const rebuild_progress& p) noexcept { return p.epoch == 0; }

 private:
  struct told {
    steady_time scan_started;  // which scan
    epoch_t epoch = 0;
    std::uint64_t rebuilt_records = 0, estimated_records = 0;
    bool scan_ended = false;
    steady_time at;  // when
  };
  std::optional<told> last_;
};

}  // namespace dix
