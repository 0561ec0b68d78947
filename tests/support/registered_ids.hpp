// For the tests of what reads a runtime's registrations (the registry itself, the watcher): a
// runtime_registry of hand-made entries over a real readiness segment in a temporary directory,
// each with its claimed slot and, as its runner, a recording actor on CAF's test coordinator
// (support/recorders.hpp) whose wakes the test reads after run(). No runner_actor, no runtime
// actor: only the fields the readers use (id, token, slot, runner) are filled in.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "actors/coverage_waiters.hpp"
#include "actors/runtime_registry.hpp"
#include "adapters/readiness_segment.hpp"
#include "support/caf_fixture.hpp"
#include "support/recorders.hpp"
#include "support/temp_dir.hpp"

namespace dix::test {

struct registered_ids : caf_fixture {
  temp_dir home;
  std::shared_ptr<readiness_segment> segment = readiness_segment::attach(home.path()).value();
  std::shared_ptr<runtime_registry> registry = std::make_shared<runtime_registry>();
  std::uint64_t next_token = 1;
  std::vector<caf::actor> runners;

  ~registered_ids() override {
    for (const auto& r : runners) caf::anon_send_exit(r, caf::exit_reason::user_shutdown);
    run();
  }

  caf::actor spawn_runner() { return runners.emplace_back(sys.spawn(recording_runner)); }

  std::shared_ptr<segment_slot> slot_of(const std::string& id) { return segment->claim(id).value(); }

  // Puts a record for `id` with `token` and its claimed slot, without a runner yet.
  std::shared_ptr<registration_record> put(const std::string& id, std::uint64_t token) {
    auto s = std::make_shared<registration_settings>();
    s->id = id;
    s->token = token;
    s->slot = slot_of(id);
    s->proof = std::make_shared<coverage_proof_box>();
    auto e = std::make_shared<registration_record>(std::move(s));
    registry->put(e);
    return e;
  }

  // Registers `id` (with `token`, or the next one) and a recording runner; returns the runner.
  caf::actor add(const std::string& id, std::uint64_t token) {
    auto runner = spawn_runner();
    put(id, token)->set_runner(caf::actor_cast<runner_actor>(runner));
    return runner;
  }
  caf::actor add(const std::string& id) { return add(id, next_token++); }

  std::vector<std::uint8_t>& wakes_of(const caf::actor& runner) { return state_of<runner_state>(runner).wakes; }
};

}  // namespace dix::test
