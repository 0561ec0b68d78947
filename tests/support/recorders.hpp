// For actor tests: stateful actors that stand in for a message's receiver and record what they
// are sent, in arrival order, for the test to read with caf_fixture::state_of after run().
//
//   recording_observer   the runtime actor as the publisher's and the watcher's observer
//                        (readiness_observed)
//   recording_runner     a runner as the watcher and the registry wake it (wake); cast it with
//                        caf::actor_cast<runner_actor> where a runner handle is wanted
//   recording_supervisor the supervisor as the watcher tells it of rebuild requests (revive)
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "messages/publication.hpp"
#include "messages/runner.hpp"

namespace dix::test {

struct observer_state {
  std::vector<readiness_observed> seen;
};

inline caf::behavior recording_observer(caf::stateful_actor<observer_state>* self) {
  return {[self](readiness_observed& o) { self->state.seen.push_back(std::move(o)); }};
}

struct runner_state {
  std::vector<std::uint8_t> wakes;  // the flags of every wake
};

inline caf::behavior recording_runner(caf::stateful_actor<runner_state>* self) {
  return {[self](wake& w) { self->state.wakes.push_back(w.flags); }};
}

struct supervisor_state {
  std::vector<std::uint64_t> revived;  // the token of every revive
};

inline caf::behavior recording_supervisor(caf::stateful_actor<supervisor_state>* self) {
  return {[self](revive& r) { self->state.revived.push_back(r.token); }};
}

}  // namespace dix::test
