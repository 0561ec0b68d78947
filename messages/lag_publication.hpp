// Runner → readiness publisher: the owner's lag figures for the metrics segment's lag part
// (docs/formats-metrics.md §2; core/lag_pacer.hpp decides when; decision 0021). The publisher
// keeps the block's rebuild progress and replaces its lag part, stamped as the figures say. Sent
// like a publication, in the fence's order, so a release waits for it too. Also the runner's own
// `lag_due`: a publication the pacer held back is due now.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>

#include <dix/activity.hpp>

#include "messages/values.hpp"

namespace dix {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_lag_figures& x) {
  return f(caf::meta::type_name("dix.log_lag_figures"), x.sequence_lag, x.read_per_s, x.retention_headroom_ms, x.log,
           x.verified_sequence);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, link_figures& x) {
  return f(caf::meta::type_name("dix.link_figures"), x.address, x.connected, x.round_trip_us, x.window_batches,
           x.window_bytes, x.durable_sequence, x.connects);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lag_figures& x) {
  return f(caf::meta::type_name("dix.lag_figures"), x.epoch, x.taken_wall_ns, x.state, x.lag_ms, x.cursor_lag_ms,
           x.stalled_ms, x.unread_age_ms, x.oldest_accepted_age_ms, x.stalled_growing, x.unread_growing,
           x.oldest_accepted_growing, x.accepted_batches, x.max_accepted_batches_ahead, x.max_flush_age_ms, x.lag_gate,
           x.transient_faults, x.last_fault, x.log_count, x.logs, wire::opt(x.link), x.verifying, x.verified,
           x.verified_records, x.verified_age_ms, x.verify_failures, x.verify_read_entries,
           x.verify_expected_entries, x.verify_eta_ms, caf::meta::load_callback([&x]() -> caf::error {
             if (auto err = wire::check_enum("dix.lag_figures.state", x.state, runner_state::dormant, runner_state::stopped))
               return err;
             return wire::check_enum("dix.lag_figures.last_fault", x.last_fault, readiness_reason::none,
                                     last_readiness_reason);
           }));
}

struct lag_publication {
  std::string id;  // the backend id, naming the slot and so the block
  lag_figures lag;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lag_publication& x) {
  return f(caf::meta::type_name("dix.lag_publication"), x.id, x.lag);
}

inline bool operator==(const lag_publication& a, const lag_publication& b) {
  return a.id == b.id && a.lag == b.lag;
}
inline bool operator!=(const lag_publication& a, const lag_publication& b) { return !(a == b); }

// Runner → itself: the lag pacer's held-back publication is due (armed once at a time).
struct lag_due {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lag_due&) {
  return f(caf::meta::type_name("dix.lag_due"));
}

inline bool operator==(const lag_due&, const lag_due&) noexcept { return true; }
inline bool operator!=(const lag_due&, const lag_due&) noexcept { return false; }

}  // namespace dix
