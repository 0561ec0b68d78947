// One registration of the id "idx" for actor tests: its settings (actors/registration_record.hpp)
// wired by the production function wire_registration() (actors/id_wiring.hpp) over fakes that
// behave like the real things and the real things where they run on the test coordinator: a fake
// store (log "main", table 1, identity projection), the simulated backend, a real readiness
// segment in a temporary directory with the slot of "idx" claimed and a readiness publisher over
// it (spawned here, as the runtime actor spawns one per runtime; its observer records every
// publication as applied, for publications()), the real process lock table in the same
// directory, and a fake metadata store. The backend is attached to a host over the slot and
// subscribed through the registration's relay, as the runtime actor does.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "actors/id_wiring.hpp"
#include "actors/ownership.hpp"
#include "actors/state_change_relay.hpp"
#include "actors/readiness_publisher_actor.hpp"
#include "adapters/process_lock_table.hpp"
#include "adapters/readiness_segment.hpp"
#include "support/caf_fixture.hpp"
#include "support/fake_meta.hpp"
#include "support/fake_store.hpp"
#include "support/recorders.hpp"
#include "support/sim_backend.hpp"
#include "support/slot_host.hpp"
#include "support/temp_dir.hpp"

namespace dix::test {

struct wired_id : caf_fixture {
  fake_store store{"main", "id-main"};
  std::shared_ptr<fake_store::source> source = std::make_shared<fake_store::source>(store);
  std::shared_ptr<fake_store::reader> reader = std::make_shared<fake_store::reader>(store);
  temp_dir home;  // <home>/dix: the segment, the lock table's runner/<id>.lock files
  std::shared_ptr<readiness_segment> segment = readiness_segment::attach(home.path()).value();
  std::shared_ptr<segment_slot> slot = segment->claim("idx").value();
  caf::actor observer = sys.spawn(recording_observer);
  readiness_publisher_actor publisher = spawn_readiness_publisher(sys, segment, observer);
  slot_host host{slot};
  std::shared_ptr<sim_backend> backend = std::make_shared<sim_backend>();
  process_lock_table locks{home.path() / "dix"};
  std::shared_ptr<snapshot_box> snapshot = std::make_shared<snapshot_box>();
  std::shared_ptr<fake_meta> meta = std::make_shared<fake_meta>();
  std::shared_ptr<state_change_relay> relay = std::make_shared<state_change_relay>();
  subscription changes;

  wired_id() {
    store.commit({fake_op{op_kind::put, 0, "format", "1", true}}, header_flag::system, true);  // sequence 1
    backend->attach(host);
    changes = subscribe_state_changes(*backend, relay);
  }
  ~wired_id() override {
    caf::anon_send_exit(publisher, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(observer, caf::exit_reason::user_shutdown);
    run();
  }

  // The wiring the runtime actor would make for registration `token`. Without a fingerprint the
  // registration record is not modelled (no marker, no settle); with one, the runner writes the
  // marker before it condemns and the record (deleting the marker) before a rebuild's `ready`.
  std::shared_ptr<supervised_spec> wiring(const runner_options& o = {}, std::uint64_t token = 1,
                                          std::optional<std::uint64_t> fingerprint = std::nullopt) {
    return wire(unwired(o, token, fingerprint));
  }
  // The settings before wire_registration, for a test that replaces a part (the logs, say).
  registration_settings unwired(const runner_options& o = {}, std::uint64_t token = 1,
                                std::optional<std::uint64_t> fingerprint = std::nullopt) {
    registration_settings w;
    w.id = "idx";
    w.token = token;
    w.backend = backend;
    w.projections = {{table_ref{"main", 1}, [](std::string_view p, const record_info&) -> projection_result {
                        return std::string(p);
                      }}};
    w.logs = {wired_log{source, reader}};
    w.attached = {attached_log{store.log_name(), store.identity()}};
    w.meta = meta;
    w.time = &clock;
    w.runner.options = o;
    w.runner.fingerprint = fingerprint;
    w.runner.rebuildable = backend->supports_reset();
    w.slot = slot;
    w.publisher = publisher;
    w.lock = &locks;
    w.snapshot = snapshot;
    w.relay = relay;
    w.detached = false;  // the test coordinator runs them
    return w;
  }
  // wire_registration over `settings`, shared from here on.
  std::shared_ptr<supervised_spec> wire(registration_settings settings) {
    return wire_registration(sys, std::make_shared<const registration_settings>(std::move(settings)));
  }

  // How many publications changed the readiness read back (a coverage publication republishes
  // `ready` as it was: it changes none, protocol.md §12.3).
  std::size_t readiness_changes() {
    std::size_t n = 0;
    std::optional<dix::readiness> last;
    for (const auto& r : publications()) {
      if (!last || r.state != last->state || r.reason != last->reason || r.rebuild_attempts != last->rebuild_attempts ||
          r.owner_epoch != last->owner_epoch) {
        ++n;
      }
      last = r;
    }
    return n;
  }

  // Every publication of "idx" as the publisher applied it (the slot read right after), in order.
  std::vector<dix::readiness> publications() {
    std::vector<dix::readiness> out;
    for (const auto& o : state_of<observer_state>(observer).seen) out.push_back(o.readiness);
    return out;
  }
};

}  // namespace dix::test
