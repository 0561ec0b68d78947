// runner → readiness publisher (actors.md §1–§2, protocol.md §1.5). A runner's core decides
// what to publish and in which order; the publisher applies each publication to the id's slot
// exactly in the order it receives them (stores coverage_time and lag_gate when present, then
// reason, rebuild_attempts, then state, then notifies) and answers `published`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>

#include <dix/readiness.hpp>
#include <dix/result.hpp>

#include "messages/values.hpp"

namespace dix {

struct publication {
  std::string id;  // the backend id, naming the slot
  readiness_state state = readiness_state::unknown;
  readiness_reason reason = readiness_reason::none;
  std::uint32_t attempts = 0;                  // rebuild_attempts
  std::optional<index_time_t> coverage_time;   // absent: unchanged
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
                                     readiness_reason::registration_changed);
           }));
}

// Reply: the publication is in the slot and notified. The table lists no fields: an
// acknowledgement the runner can wait for (e.g. before a release hands the lock over).
struct published {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, published&) {
  return f(caf::meta::type_name("dix.published"));
}

// publisher or watcher → runtime: the slot of `id` as read after its change counter reached
// `change_counter`. The runtime forwards it to the id's subscribers (readiness_changed) unless it
// already sent a value of a later counter or the same value.
struct readiness_observed {
  std::string id;
  std::uint64_t change_counter = 0;
  dix::readiness readiness;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, readiness_observed& x) {
  return f(caf::meta::type_name("dix.readiness_observed"), x.id, x.change_counter, x.readiness);
}

}  // namespace dix
