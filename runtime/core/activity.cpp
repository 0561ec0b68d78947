#include <dix/activity.hpp>

#include <algorithm>

namespace dix {
namespace {

std::string seconds(std::uint64_t ms) {
  const auto tenths = (ms + 50) / 100;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " s";
}

activity_report stalled(stall_cause cause, std::uint64_t lag_ms, std::string words) {
  activity_report out;
  out.activity = index_activity::stalled;
  out.cause = cause;
  out.lag_ms = lag_ms;
  out.words = "stalled (" + std::string(to_string(cause)) + "): " + std::move(words);
  return out;
}

// The log furthest behind, by sequence lag; nullptr when none is behind.
const log_lag_figures* furthest_behind(const lag_figures& lag) {
  const log_lag_figures* worst = nullptr;
  for (const auto& l : lag.logs) {
    if (l.sequence_lag > 0 && (worst == nullptr || l.sequence_lag > worst->sequence_lag)) worst = &l;
  }
  return worst;
}

std::string gate_words(std::uint32_t gate) {
  if (gate == lag_gate_exceeded) return "the writer gate is exceeded: commits to its tables are refused (index_lagging)";
  return "the writer gate throttles commits to its tables by " + std::to_string(gate) + " us each";
}

}  // namespace

lag_figures lag_figures::aged_at(std::uint64_t now_wall_ns) const {
  lag_figures out = *this;
  const std::uint64_t passed_ms = now_wall_ns > taken_wall_ns ? (now_wall_ns - taken_wall_ns) / 1'000'000 : 0;
  if (stalled_growing) out.stalled_ms += passed_ms;
  if (unread_growing) out.unread_age_ms += passed_ms;
  if (oldest_accepted_growing) out.oldest_accepted_age_ms += passed_ms;
  if (verified) out.verified_age_ms += passed_ms;
  out.lag_ms = std::max({out.lag_ms, out.cursor_lag_ms, out.stalled_ms, out.unread_age_ms, out.oldest_accepted_age_ms});
  return out;
}

lag_figures lag_figures_of(const runner_metrics& m, runner_state state, const runner_options& options) {
  lag_figures l;
  l.epoch = m.epoch;
  l.state = state;
  l.lag_ms = m.lag_ms;
  l.cursor_lag_ms = m.cursor_lag_ms;
  l.stalled_ms = m.stalled_ms;
  l.unread_age_ms = m.unread_age_ms;
  l.oldest_accepted_age_ms = m.oldest_accepted_age_ms;
  l.stalled_growing = m.stalled_ms > 0;
  l.unread_growing = m.unread_age_ms > 0;
  l.oldest_accepted_growing = m.oldest_accepted_age_ms > 0;
  l.accepted_batches = static_cast<std::uint32_t>(std::min<std::uint64_t>(m.accepted_batches, UINT32_MAX));
  l.max_accepted_batches_ahead = options.max_accepted_batches_ahead;
  l.max_flush_age_ms = static_cast<std::uint32_t>(std::clamp<std::int64_t>(options.max_flush_age.count(), 0, UINT32_MAX));
  l.lag_gate = m.lag_gate;
  l.transient_faults = m.transient_faults;
  l.last_fault = m.last_fault;
  l.log_count = static_cast<std::uint32_t>(m.logs.size());
  for (const auto& g : m.logs) l.logs.push_back(log_lag_figures{g.sequence_lag, 0, -1, g.log, g.verified_sequence});
  l.verifying = m.verifying;
  l.verified = m.verified;
  l.verified_records = m.verified_records;
  l.verified_age_ms = m.verified_age_ms;
  l.verify_failures = m.verify_failures;
  l.verify_read_entries = m.verify_read_entries;
  l.verify_expected_entries = m.verify_expected_entries;
  l.verify_eta_ms = m.verify_eta_ms;
  return l;
}

std::string log_label(const lag_figures& lag, std::size_t position) {
  if (position < lag.logs.size() && !lag.logs[position].log.empty()) return lag.logs[position].log;
  return std::to_string(position);
}

std::string_view to_string(index_activity a) noexcept {
  switch (a) {
    case index_activity::unknown: return "unknown";
    case index_activity::idle: return "idle";
    case index_activity::following: return "following";
    case index_activity::catching_up: return "catching-up";
    case index_activity::stalled: return "stalled";
  }
  return "unknown";
}

std::string_view to_string(stall_cause c) noexcept {
  switch (c) {
    case stall_cause::none: return "none";
    case stall_cause::backend_deferred: return "backend-deferred";
    case stall_cause::barrier: return "barrier";
    case stall_cause::accepted_cap: return "accepted-cap";
    case stall_cause::log_unreadable: return "log-unreadable";
    case stall_cause::rebuild: return "rebuild";
    case stall_cause::gate: return "gate";
    case stall_cause::unavailable: return "unavailable";
  }
  return "none";
}

std::uint64_t stuck_limit_ms(const lag_figures& lag, const attribution_options& options) {
  return std::max<std::uint64_t>(options.stuck_after_ms, 2 * std::uint64_t{lag.max_flush_age_ms});
}

std::uint64_t following_limit_ms(const lag_figures& lag, const attribution_options& options) {
  if (lag.max_flush_age_ms == 0) return options.following_lag_ms;
  return std::max(options.following_lag_ms, lag.max_flush_age_ms + options.following_margin_ms);
}

activity_report attribute(const readiness& r, const std::optional<lag_figures>& lag, const attribution_options& options) {
  const std::uint64_t lag_ms = lag ? lag->lag_ms : 0;
  // A ready slot outranks figures that still say rebuilding: the owner publishes `ready` before
  // the figures of the same event, so those are the older (a new user's trial: ready beside a
  // stall for the rebuild).
  if (r.state == readiness_state::rebuilding ||
      (lag && lag->state == runner_state::rebuilding && r.state != readiness_state::ready)) {
    return stalled(stall_cause::rebuild, lag_ms, "the index is being rebuilt; it serves queries again once ready");
  }
  if (r.state == readiness_state::needs_rebuild) {
    return stalled(stall_cause::rebuild, lag_ms,
                   "the index needs a rebuild (" + std::string(to_string(r.reason)) + "); nothing is applied until it runs");
  }
  if (r.state == readiness_state::unavailable) {
    return stalled(stall_cause::unavailable, lag_ms,
                   "the index is unavailable (" + std::string(to_string(r.reason)) + "); an operator must act");
  }
  if (!lag) {
    activity_report out;
    out.words = "no lag figures: no owner has published any under the current epoch";
    return out;
  }
  const auto& l = *lag;
  const bool at_cap = l.max_accepted_batches_ahead > 0 && l.accepted_batches >= l.max_accepted_batches_ahead;
  const auto stuck_ms = stuck_limit_ms(l, options);
  const bool accepted_stuck = l.oldest_accepted_growing && l.oldest_accepted_age_ms >= stuck_ms;
  // Waiting for durability is the pipeline's rhythm under load (the next flush is not due yet):
  // it holds the index only once it lasts.
  const bool waiting_stuck = l.state == runner_state::waiting_durable && l.stalled_ms >= stuck_ms;
  if (l.state == runner_state::deferred) {
    return stalled(stall_cause::backend_deferred, lag_ms,
                   "the backend defers deliveries; parked for " + seconds(l.stalled_ms));
  }
  if ((waiting_stuck || accepted_stuck) && at_cap) {
    return stalled(stall_cause::accepted_cap, lag_ms,
                   "the accepted-ahead cap is reached (" + std::to_string(l.accepted_batches) + " of " +
                       std::to_string(l.max_accepted_batches_ahead) + " batches) and none became durable for " +
                       seconds(std::max(l.stalled_ms, l.oldest_accepted_age_ms)));
  }
  if (waiting_stuck || accepted_stuck) {
    return stalled(stall_cause::barrier, lag_ms,
                   "a barrier does not complete: the oldest accepted batch is not durable after " +
                       seconds(l.oldest_accepted_age_ms));
  }
  const auto* behind = furthest_behind(l);
  const bool no_reads = behind == nullptr || behind->read_per_s == 0;
  if ((l.unread_growing && l.unread_age_ms >= stuck_ms && no_reads) || l.transient_faults > 0) {
    std::string words = "the log is not read: committed work waits unread for " + seconds(l.unread_age_ms);
    if (l.transient_faults > 0) {
      words += ", " + std::to_string(l.transient_faults) + " transient fault(s) in a row (last " +
               std::string(to_string(l.last_fault)) + ")";
    }
    return stalled(stall_cause::log_unreadable, lag_ms, std::move(words));
  }
  if (l.lag_gate != 0) return stalled(stall_cause::gate, lag_ms, gate_words(l.lag_gate));
  activity_report out;
  out.lag_ms = lag_ms;
  // protocol.md §13.1: every component is 0 for a caught-up owner and none can hide a stall,
  // so lag 0 is idle even while the durable cursor trails the log's end by work the backend
  // already has (it becomes durable with the next flush) or by batches the index ignores.
  if (lag_ms == 0) {
    out.activity = index_activity::idle;
    out.words = "idle: caught up";
    return out;
  }
  out.read_per_s = behind != nullptr ? behind->read_per_s : 0;
  if (behind != nullptr && behind->read_per_s > 0) out.eta_ms = behind->sequence_lag * 1000 / behind->read_per_s;
  // No stall cause holds, so the durable position advances (a stuck age would have been one):
  // a lag within a flush interval is the pipeline's rhythm behind a steady writer, unless the
  // backlog read so far says it takes longer than that to reach the log's end.
  const auto limit = following_limit_ms(l, options);
  if (lag_ms <= limit && (!out.eta_ms || *out.eta_ms <= limit)) {
    out.activity = index_activity::following;
    out.words = "following the log, lag " + seconds(lag_ms);
    return out;
  }
  out.activity = index_activity::catching_up;
  out.words = "catching up: lag " + seconds(lag_ms);
  if (behind != nullptr) {
    out.words += ", " + std::to_string(behind->sequence_lag) + " sequences behind";
    if (out.eta_ms) {
      out.words += " at " + std::to_string(behind->read_per_s) + " sequences/s, ETA " + seconds(*out.eta_ms);
    }
  }
  return out;
}

}  // namespace dix
