// What dix exposes to Prometheus (docs/operations.md "Prometheus metrics", decision 0021): the
// readiness, the lag figures and the stall attribution of each index, labelled `index` (and `log`
// per log), written with the kit's text-format writer. Two sources: the shared segments, which
// any process can read (`dix status --prometheus`: readiness, the owner's lag figures, the
// activity), and a runtime's own runner_metrics (`dix serve --metrics-listen`: all of them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <dix/activity.hpp>
#include <dix/segment.hpp>
#include <dix/status.hpp>

#include "tool/prometheus.hpp"

namespace dix::cli {

// From the segments: readiness, and the owner's lag figures aged to `now_wall_ns` when present.
// `log` is the log's name, as add_runner_metrics gives it (log_label: the position only for an
// older owner's layout-1 metrics segment, which stored no names; decision 0030).
void add_segment_metrics(tool::metrics_text& out, const readiness_entry& e, std::uint64_t now_wall_ns);

// From the owning runtime: readiness, status, every runner_metrics field, per log by its name.
// `published` is the index's entry in the segments as `dix status` reads it (null: not readable).
// runner_metrics carries no read rate (the lag pacer measures it between publications), so each
// log's rate, and with it the catch-up ETA, is taken from the lag figures this owner last
// published in the metrics segment (readiness_entry::lag); a log whose rate is not published
// under the runner's epoch has no rate sample. A pending rebuild request is the slot's alone
// (readiness_entry::rebuild_requested), so it is exported only with `published`.
void add_runner_metrics(tool::metrics_text& out, const std::string& id, const runner_status& status,
                        const runner_metrics& m, const runner_options& options,
                        const readiness_entry* published);

}  // namespace dix::cli
