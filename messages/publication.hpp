// runner → readiness publisher → observer (actors.md §1–§2, protocol.md §1.5), and runner →
// readiness publisher for the figures of the metrics segment (docs/formats-metrics.md). A runner's core
// decides what to publish and in which order; the publisher applies each publication to the
// slot of its backend id exactly in the order it receives them (coverage_time — 0 unless the
// state is ready —, lag_gate, then reason, rebuild_attempts, then state, then notifies), answers
// `published`, and tells its observer (the runtime, which fans it out) `readiness_observed`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>

#include <dix/readiness.hpp>
#include <dix/result.hpp>
#include <dix/status.hpp>

#include "messages/values.hpp"

namespace dix {

struct publication {
  std::string id;  // the backend id, naming the slot
  readiness_state state = readiness_state::unknown;
  readiness_reason reason = readiness_reason::none;
  std::uint32_t attempts = 0;                  // rebuild_attempts
  std::optional<index_time_t> coverage_time;   // absent: unchanged; only a `ready` one stores it
                                               // (any other state stores 0, whatever it carries)
  std::optional<std::uint32_t> lag_gate;       // absent: unchanged; 0xFFFFFFFF = exceeded
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, publication& x) {
  return f(caf::meta::type_name("dix.publication"), x.id, x.state, x.reason, x.attempts,
           wire::opt(x.coverage_time), wire::opt(x.lag_gate),
           caf::meta::load_callback([&x]() -> caf::error {
             if (auto err = wire::check_enum("dix.publication.state", x.state,
                                             readiness_state::unknown,
                                             readiness_state::unavailable))
               return err;
             return wire::check_enum("dix.publication.reason", x.reason,
                                     readiness_reason::none,
                                     last_readiness_reason);
           }));
}

inline bool operator==(const publication& a, const publication& b) {
  return a.id == b.id && a.state == b.state && a.reason == b.reason && a.attempts == b.attempts
         && a.coverage_time == b.coverage_time && a.lag_gate == b.lag_gate;
}
inline bool operator!=(const publication& a, const publication& b) { return !(a == b); }

// Reply: the publication is in the slot and notified. `change_counter` is the slot's change
// counter as this publication's bump left it; a reader that loads the slot's counter at least
// this high sees this publication (or a later change). A runner waits for it where an ordering
// obligation needs it (before a release hands the lock over). An id without a claimed slot is
// answered with the error not_registered instead.
struct published {
  std::string id;
  std::uint64_t change_counter = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, published& x) {
  return f(caf::meta::type_name("dix.published"), x.id, x.change_counter);
}

inline bool operator==(const published& a, const published& b) {
  return a.id == b.id && a.change_counter == b.change_counter;
}
inline bool operator!=(const published& a, const published& b) { return !(a == b); }

// Event, publisher or watcher → runtime: the slot of `id` as read after its change counter reached
// `change_counter` (the publisher: right after each publication, with the counter of
// `published`). Counters of one id only rise, so the runtime forwards it to the id's subscribers
// (readiness_changed) unless it already sent a value of a later counter, or the same value.
struct readiness_observed {
  std::string id;
  std::uint64_t change_counter = 0;
  dix::readiness readiness;  // validated on load as dix.readiness (enums in range)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, readiness_observed& x) {
  return f(caf::meta::type_name("dix.readiness_observed"), x.id, x.change_counter, x.readiness);
}

inline bool operator==(const readiness_observed& a, const readiness_observed& b) {
  return a.id == b.id && a.change_counter == b.change_counter && a.readiness == b.readiness;
}
inline bool operator!=(const readiness_observed& a, const readiness_observed& b) { return !(a == b); }

// The owner's figures for the metrics segment (docs/formats-metrics.md): the publisher stores them,
// stamped with its wall clock, in the block of the slot of `id`, under the block's seqlock. Today
// the progress of a rebuild's scan (core/progress_pacer.hpp decides when); issue 11 adds the lag
// figures. Sent like a publication, in order with them, so a release waits for it too.
struct metrics_publication {
  std::string id;  // the backend id, naming the slot and so the block
  rebuild_progress progress;
};

inline bool operator==(const metrics_publication& a, const metrics_publication& b) {
  return a.id == b.id && a.progress == b.progress;
}
inline bool operator!=(const metrics_publication& a, const metrics_publication& b) { return !(a == b); }

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rebuild_progress& x) {
  return f(caf::meta::type_name("dix.rebuild_progress"), x.epoch, x.rebuilt_records, x.estimated_records,
           x.scan_records_per_s, x.rebuild_eta_ms, x.scan_ended);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, metrics_publication& x) {
  return f(caf::meta::type_name("dix.metrics_publication"), x.id, x.progress);
}

// Reply: the block is written. `change_counter` is the metrics segment's change counter as this
// write left it. An id without a claimed slot is answered with the error not_registered.
struct metrics_published {
  std::string id;
  std::uint64_t change_counter = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, metrics_published& x) {
  return f(caf::meta::type_name("dix.metrics_published"), x.id, x.change_counter);
}

inline bool operator==(const metrics_published& a, const metrics_published& b) {
  return a.id == b.id && a.change_counter == b.change_counter;
}
inline bool operator!=(const metrics_published& a, const metrics_published& b) { return !(a == b); }

}  // namespace dix
