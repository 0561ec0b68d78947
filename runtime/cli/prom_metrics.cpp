#include "prom_metrics.hpp"

#include <array>
#include <vector>

namespace dix::cli {
namespace {

using tool::metric_labels;
using tool::metric_type;

constexpr std::array<readiness_state, 5> all_states{readiness_state::unknown, readiness_state::ready,
                                                    readiness_state::rebuilding, readiness_state::needs_rebuild,
                                                    readiness_state::unavailable};
constexpr std::array<index_activity, 5> all_activities{index_activity::unknown, index_activity::idle,
                                                       index_activity::following, index_activity::catching_up,
                                                       index_activity::stalled};

double seconds(std::uint64_t ms) { return static_cast<double>(ms) / 1000.0; }

metric_labels with(const std::string& id, const char* name, std::string value) {
  return {{"index", id}, {name, std::move(value)}};
}

void add_readiness(tool::metrics_text& out, const std::string& id, const readiness& r) {
  for (auto s : all_states) {
    out.add("dix_readiness_state", metric_type::gauge, "1 for the readiness state the index's slot holds, 0 for the others",
            with(id, "state", std::string(to_string(s))), r.state == s ? 1 : 0);
  }
  out.add("dix_readiness_reason", metric_type::gauge, "1 for the reason code the index's slot holds",
          with(id, "reason", std::string(to_string(r.reason))), 1);
  out.add("dix_rebuild_attempts", metric_type::gauge, "The slot's rebuild attempts in a row", {{"index", id}},
          r.rebuild_attempts);
  out.add("dix_owner_epoch", metric_type::gauge, "The slot's owner epoch", {{"index", id}},
          static_cast<double>(r.owner_epoch));
}

void add_activity(tool::metrics_text& out, const std::string& id, const activity_report& a) {
  for (auto s : all_activities) {
    out.add("dix_index_activity", metric_type::gauge,
            "1 for what the index is doing (idle, following, catching-up, stalled, unknown), 0 for the others",
            with(id, "activity", std::string(to_string(s))), a.activity == s ? 1 : 0);
  }
  if (a.activity == index_activity::stalled) {
    out.add("dix_index_stalled", metric_type::gauge, "1 while the index is stalled, labelled with what holds it",
            with(id, "cause", std::string(to_string(a.cause))), 1);
  }
  if (a.eta_ms) {
    out.add("dix_index_catch_up_eta_seconds", metric_type::gauge,
            "Time to the end of the log at the current read rate, while catching up", {{"index", id}}, seconds(*a.eta_ms));
  }
}

// The lag figures of protocol.md §13.1 and the per-log part, each log labelled by its name; a
// log's read rate only where `rate_known` says it is (all of them when it is empty).
void add_lag(tool::metrics_text& out, const std::string& id, const lag_figures& l, const std::vector<bool>& rate_known = {}) {
  const metric_labels index{{"index", id}};
  out.add("dix_lag_seconds", metric_type::gauge, "The index's lag: the largest of the four components (protocol.md 13.1)",
          index, seconds(l.lag_ms));
  out.add("dix_cursor_lag_seconds", metric_type::gauge, "Newest header time read minus the effective entry's anchor time",
          index, seconds(l.cursor_lag_ms));
  out.add("dix_stalled_seconds", metric_type::gauge, "Time parked in deferred or waiting-durable", index,
          seconds(l.stalled_ms));
  out.add("dix_unread_age_seconds", metric_type::gauge, "How long committed work has waited unread", index,
          seconds(l.unread_age_ms));
  out.add("dix_oldest_accepted_age_seconds", metric_type::gauge, "Age of the oldest accepted work not yet durable", index,
          seconds(l.oldest_accepted_age_ms));
  out.add("dix_accepted_batches", metric_type::gauge, "Offered entries beyond the durable one", index, l.accepted_batches);
  out.add("dix_max_accepted_batches_ahead", metric_type::gauge, "The accepted-ahead cap", index,
          l.max_accepted_batches_ahead);
  out.add("dix_gate_exceeded", metric_type::gauge, "1 while the writer gate refuses commits (index_lagging)", index,
          l.lag_gate == lag_gate_exceeded ? 1 : 0);
  out.add("dix_gate_delay_seconds", metric_type::gauge, "The delay the writer gate puts on each gated commit (0: open)",
          index, l.lag_gate == lag_gate_exceeded ? 0 : static_cast<double>(l.lag_gate) / 1e6);
  out.add("dix_transient_faults", metric_type::gauge, "Consecutive transient faults", index, l.transient_faults);
  for (std::size_t i = 0; i < l.logs.size(); ++i) {
    const auto& g = l.logs[i];
    const metric_labels log{{"index", id}, {"log", log_label(l, i)}};
    out.add("dix_log_sequence_lag", metric_type::gauge, "Latest minus durable sequence of the log", log,
            static_cast<double>(g.sequence_lag));
    if (rate_known.empty() || rate_known[i]) {
      out.add("dix_log_read_sequences_per_second", metric_type::gauge, "Sequences read per second, the rate of the ETA",
              log, static_cast<double>(g.read_per_s));
    }
    if (g.retention_headroom_ms >= 0) {
      out.add("dix_log_retention_headroom_seconds", metric_type::gauge,
              "Time before the WAL file holding the durable anchor ages out (protocol.md 13.2)", log,
              static_cast<double>(g.retention_headroom_ms) / 1000.0);
    }
    if (l.verified && g.verified_sequence > 0) {
      out.add("dix_verified_sequence", metric_type::gauge,
              "The log's sequence the last successful verify proved the index equal to its projection at", log,
              static_cast<double>(g.verified_sequence));
    }
  }
  // The verify (issue 31): failures count since the owner registered the index.
  out.add("dix_verify_failures_total", metric_type::counter, "Verifies that found the index different from its projection",
          index, static_cast<double>(l.verify_failures));
  out.add("dix_verify_running", metric_type::gauge, "1 while a verify of the index runs", index, l.verifying ? 1 : 0);
  if (l.verified) {
    out.add("dix_verified_records", metric_type::gauge, "Records the last successful verify proved", index,
            static_cast<double>(l.verified_records));
    out.add("dix_verified_age_seconds", metric_type::gauge, "Time since the last successful verify ended", index,
            seconds(l.verified_age_ms));
  }
  if (l.link) {
    // A remote backend's link to its index node (issue 28).
    const auto& k = *l.link;
    out.add("dix_remote_connected", metric_type::gauge, "1 while a session with the index node is open",
            metric_labels{{"index", id}, {"address", k.address}}, k.connected ? 1 : 0);
    if (k.round_trip_us > 0) {
      out.add("dix_remote_round_trip_seconds", metric_type::gauge, "The last ping's round trip to the index node", index,
              static_cast<double>(k.round_trip_us) / 1e6);
    }
    out.add("dix_remote_window_batches", metric_type::gauge, "Batches sent to the index node, not yet acknowledged",
            index, k.window_batches);
    out.add("dix_remote_window_bytes", metric_type::gauge, "Bytes of those batches", index,
            static_cast<double>(k.window_bytes));
    out.add("dix_remote_durable_sequence", metric_type::gauge,
            "The first log's anchor in the durable cursor the index node last reported", index,
            static_cast<double>(k.durable_sequence));
    out.add("dix_remote_sessions_total", metric_type::counter, "Sessions opened with the index node", index,
            static_cast<double>(k.connects));
  }
}

// The runner_metrics figures exported one per index, each as a name, its type and help, and how
// it is read (in base units: seconds, not ms; seconds since the epoch for a time).
struct runner_figure {
  const char* name;
  metric_type type;
  const char* help;
  double (*value)(const runner_metrics&);
};

template <class T>
double number(T v) { return static_cast<double>(v); }

const std::array<runner_figure, 14> runner_figures{{
  {"dix_accepted_bytes", metric_type::gauge, "Unanchored plus non-durable offered bytes",
   [](const runner_metrics& m) { return number(m.accepted_bytes); }},
  {"dix_accepted_mutations", metric_type::gauge, "Unanchored plus non-durable offered mutations",
   [](const runner_metrics& m) { return number(m.accepted_mutations); }},
  {"dix_deferred_bytes", metric_type::gauge, "Bytes of the batch held after deferred",
   [](const runner_metrics& m) { return number(m.deferred_bytes); }},
  {"dix_quiescence_age_seconds", metric_type::gauge, "How long the current shutdown has been pending",
   [](const runner_metrics& m) { return seconds(m.quiescence_age_ms); }},
  // index_time_t is ns since the Unix epoch; Prometheus timestamps are seconds since it.
  {"dix_coverage_timestamp_seconds", metric_type::gauge,
   "The slot's published coverage time, seconds since the Unix epoch (0: none)",
   [](const runner_metrics& m) { return number(m.coverage_time) / 1e9; }},
  {"dix_delivered_batches_total", metric_type::counter, "Batches delivered since registration",
   [](const runner_metrics& m) { return number(m.delivered_batches); }},
  {"dix_delivered_records_total", metric_type::counter, "Records delivered since registration",
   [](const runner_metrics& m) { return number(m.delivered_records); }},
  {"dix_wal_syncs_total", metric_type::counter, "SyncWAL calls made before delivery (protocol.md 4.8)",
   [](const runner_metrics& m) { return number(m.wal_syncs); }},
  {"dix_unindexable_records_total", metric_type::counter, "Projection, record-corrupt and backend skips",
   [](const runner_metrics& m) { return number(m.unindexable_records); }},
  {"dix_log_reopens_total", metric_type::counter, "Tailer re-opens after WAL switches",
   [](const runner_metrics& m) { return number(m.log_reopens); }},
  {"dix_rebuilt_records", metric_type::gauge, "Records the last rebuild's scan delivered",
   [](const runner_metrics& m) { return number(m.rebuilt_records); }},
  {"dix_rebuild_estimated_records", metric_type::gauge, "The projected tables' estimated records",
   [](const runner_metrics& m) { return number(m.estimated_records); }},
  {"dix_rebuild_records_per_second", metric_type::gauge, "The rebuild scan's rate",
   [](const runner_metrics& m) { return number(m.scan_records_per_s); }},
  {"dix_rebuild_eta_seconds", metric_type::gauge, "Time left of the rebuild scan at its rate",
   [](const runner_metrics& m) { return seconds(m.rebuild_eta_ms); }},
}};

void add_rebuild_requested(tool::metrics_text& out, const std::string& id, bool requested) {
  out.add("dix_rebuild_requested", metric_type::gauge, "1 while a rebuild request waits in the slot for an owner to take it",
          {{"index", id}}, requested ? 1 : 0);
}

}  // namespace

void add_segment_metrics(tool::metrics_text& out, const readiness_entry& e, std::uint64_t now_wall_ns) {
  add_readiness(out, e.id, e.readiness);
  add_rebuild_requested(out, e.id, e.rebuild_requested);
  std::optional<lag_figures> lag;
  if (e.lag) lag = e.lag->aged_at(now_wall_ns);
  add_activity(out, e.id, attribute(e.readiness, lag));
  if (lag) add_lag(out, e.id, *lag);
}

void add_runner_metrics(tool::metrics_text& out, const std::string& id, const runner_status& status,
                        const runner_metrics& m, const runner_options& options,
                        const readiness_entry* published) {
  add_readiness(out, id, m.readiness);
  if (published) add_rebuild_requested(out, id, published->rebuild_requested);
  auto lag = lag_figures_of(m, status.state, options);
  std::vector<bool> rate_known(lag.logs.size(), false);
  if (published && published->lag && published->lag->epoch == m.epoch) {
    const auto& figures = *published->lag;
    lag.link = figures.link;
    for (std::size_t i = 0; i < lag.logs.size(); ++i) {
      for (std::size_t j = 0; j < figures.logs.size(); ++j) {
        // By name; by position only in figures that carry no names (a layout-1 segment's).
        const auto& p = figures.logs[j];
        if (p.log.empty() ? j == i : p.log == lag.logs[i].log) {
          lag.logs[i].read_per_s = p.read_per_s;
          rate_known[i] = true;
          break;
        }
      }
    }
  }
  add_activity(out, id, attribute(m.readiness, m.owner ? std::optional<lag_figures>(lag) : std::nullopt));
  const metric_labels index{{"index", id}};
  out.add("dix_runner_state", metric_type::gauge, "1 for the runner's local state (protocol.md 14.1)",
          with(id, "state", std::string(to_string(status.state))), 1);
  out.add("dix_owner", metric_type::gauge, "1 while this runtime's runner owns the index", index, m.owner ? 1 : 0);
  out.add("dix_epoch", metric_type::gauge, "The runner's current owner epoch", index, static_cast<double>(m.epoch));
  add_lag(out, id, lag, rate_known);
  for (const auto& f : runner_figures) out.add(f.name, f.type, f.help, index, f.value(m));
  constexpr std::array<const char*, 4> reasons{"age", "threshold", "shutdown", "coverage"};
  for (std::size_t i = 0; i < reasons.size(); ++i) {
    out.add("dix_flushes_total", metric_type::counter, "Flush requests by reason", with(id, "reason", reasons[i]),
            static_cast<double>(m.flushes[i]));
  }
  for (const auto& g : m.logs) {
    const metric_labels log{{"index", id}, {"log", g.log}};
    out.add("dix_log_read_sequence", metric_type::gauge, "End of the last transaction the tailer read", log,
            static_cast<double>(g.read_sequence));
    out.add("dix_log_durable_sequence", metric_type::gauge, "The durable cursor's anchor sequence", log,
            static_cast<double>(g.durable_sequence));
    out.add("dix_log_latest_sequence", metric_type::gauge, "The store's latest sequence at the last turn", log,
            static_cast<double>(g.latest_sequence));
  }
}

}  // namespace dix::cli
