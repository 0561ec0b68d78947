// [actor] The supervisor (actors.md §3) on CAF's test coordinator: a crashed child is an exit
// message with reason `kill`, the restart delays are delayed messages moved by advance().
#include <catch2/catch.hpp>

#include "actors/backend_proxy_actor.hpp"
#include "actors/log_tailer_actor.hpp"
#include "actors/runner_actor.hpp"
#include "actors/supervisor_actor.hpp"
#include "adapters/process_lock_table.hpp"
#include "support/temp_dir.hpp"
#include "core/tailer_core.hpp"
#include "messages/errors.hpp"
#include "support/caf_fixture.hpp"
#include "support/fake_store.hpp"
#include "support/sim_backend.hpp"
#include "support/slot_host.hpp"

using namespace dix;
using namespace std::chrono_literals;

namespace {

runner_options fast_policy() {
  runner_options o;
  o.rebuild_backoff = 100ms;
  o.max_rebuild_attempts = 3;
  return o;
}

// One supervised id over a fake store and the simulated backend. The spawn functions remember
// the newest child of each kind, so a test can crash exactly the one the supervisor watches.
struct supervised : test::caf_fixture {
  test::fake_store store{"main", "id-main"};
  std::shared_ptr<test::fake_store::source> source = std::make_shared<test::fake_store::source>(store);
  std::shared_ptr<test::fake_store::reader> reader = std::make_shared<test::fake_store::reader>(store);
  std::shared_ptr<test::in_process_slot> slot = std::make_shared<test::in_process_slot>();
  test::slot_host host{slot};
  std::shared_ptr<test::sim_backend> backend = std::make_shared<test::sim_backend>();
  test::temp_dir home;  // the lock table's runner/<id>.lock files
  process_lock_table locks{home.path()};
  std::shared_ptr<snapshot_box> snapshot = std::make_shared<snapshot_box>();
  std::vector<std::uint64_t> persisted;
  int markers = 0;  // condemned/<id> writes
  supervisor_actor sup;
  log_tailer_actor tailer;
  backend_proxy_actor proxy;
  runner_actor runner;
  int tailers = 0, proxies = 0, runners = 0;
  std::optional<readiness_reason> last_start;

  explicit supervised(runner_options o = fast_policy()) {
    store.commit({test::fake_op{op_kind::put, 0, "format", "1", true}}, header_flag::system, true);
    backend->attach(host);
    auto deps = std::make_shared<tailer_deps>();
    deps->id = "idx";
    deps->sources = {source};
    deps->readers = {reader};
    deps->core = std::make_unique<tailer_core>(
        std::vector<tailer_log>{{source.get(), reader.get()}},
        std::map<table_ref, projection>{{table_ref{"main", 1}, [](std::string_view p, const record_info&) -> projection_result {
                                           return std::string(p);
                                         }}},
        std::vector<attached_log>{{store.log_name(), store.identity()}});
    deps->persist_epoch = [this](std::uint64_t e) -> result<void> {
      persisted.push_back(e);
      return {};
    };
    deps->write_marker = [this]() -> result<void> {
      ++markers;
      return {};
    };
    deps->time = &clock;
    auto spec = std::make_shared<supervised_spec>();
    spec->id = "idx";
    spec->options = o;
    spec->spawn_tailer = [this, deps] {
      ++tailers;
      return tailer = spawn_log_tailer(sys, deps, false);
    };
    spec->spawn_proxy = [this] {
      ++proxies;
      return proxy = spawn_backend_proxy(sys, backend, false);
    };
    spec->spawn_runner = [this, o](log_tailer_actor t, backend_proxy_actor x, std::optional<readiness_reason> condemned) {
      ++runners;
      last_start = condemned;
      runner_deps rd;
      rd.id = "idx";
      rd.config.options = o;
      rd.config.start_condemned = condemned;
      rd.config.generation_base = static_cast<std::uint64_t>(runners) << 32;
      rd.tailer = std::move(t);
      rd.proxy = std::move(x);
      rd.slot = slot;
      rd.lock = &locks;
      rd.requester = 1;
      rd.logs = {"main"};
      rd.snapshot = snapshot;
      return runner = spawn_runner(sys, rd);
    };
    spec->snapshot = snapshot;
    spec->slot = slot;
    spec->lock = &locks;
    spec->requester = 1;
    auto registry = std::make_shared<supervisor_registry>();
    registry->put(spec);
    sup = spawn_supervisor(sys, registry);
    caf::anon_send(sup, supervise{"idx"});
    run();
  }
  ~supervised() override {
    caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
    run();
  }

  void commit(const std::string& id, const std::string& value) {
    store.commit({test::put(1, id, value)});
    caf::anon_send(runner, dix::wake{wake_flag::commit});
    run();
  }
  template <class Handle>
  void crash(const Handle& h) {
    caf::anon_send_exit(h, caf::exit_reason::kill);
    run();
  }
  bool durable_has(const std::string& id) { return backend->durable_index().count(test::index_key("main", 1, id)) == 1; }
  // Whether another requester gets the lock at once (the id's entry is free).
  bool lock_free() {
    bool granted = false;
    locks.acquire("idx", 99, [&](result<void> r) { granted = static_cast<bool>(r); });
    if (!granted) locks.release("idx", 99);  // withdraw the wait
    return granted;
  }
  std::optional<stopped> unsupervise_now() {
    caf::scoped_actor self{sys};
    self->send(sup, unsupervise{"idx"});
    run();
    return test::caf_fixture::try_receive<stopped>(self);
  }
};

}  // namespace

TEST_CASE("supervision: a tailer crash is transient: no condemnation, readiness unchanged, the index continues from its durable cursor (behaviour 27)", "[actor][supervision]") {
  supervised p;
  p.commit("a", "1");
  p.advance(1000ms);
  REQUIRE(p.durable_has("a"));
  REQUIRE(p.slot->read().state == readiness_state::ready);
  const auto epoch = p.slot->read().owner_epoch;

  p.crash(p.tailer);
  CHECK(p.slot->read().state == readiness_state::ready);  // nothing published
  CHECK(p.snapshot->load().transient_faults == 1);
  CHECK(p.tailers == 1);  // respawned only after the policy's delay
  p.commit("b", "2");     // waits: no tailer yet
  p.advance(100ms);       // the replacement is up; the runner reinstalls its durable cursor
  CHECK(p.tailers == 2);
  p.advance(1000ms);      // and the age flush makes the new work durable
  CHECK(p.durable_has("b"));
  CHECK(p.slot->read().state == readiness_state::ready);
  CHECK(p.slot->read().owner_epoch == epoch);  // the same ownership: no reacquisition
  CHECK(p.persisted == std::vector<std::uint64_t>{epoch});
  CHECK(p.snapshot->load().last_fault == readiness_reason::none);
  CHECK(p.snapshot->load().transient_faults == 0);  // reset by the durable advance
  CHECK(p.runners == 1);
}

TEST_CASE("supervision: max_rebuild_attempts tailer crashes in a row escalate: unavailable, runner-failed, released, nothing restarted", "[actor][supervision]") {
  supervised p;  // max_rebuild_attempts = 3
  p.commit("a", "1");
  p.advance(1000ms);
  REQUIRE(p.slot->read().state == readiness_state::ready);
  p.crash(p.tailer);
  p.advance(100ms);  // first delay: rebuild_backoff
  REQUIRE(p.tailers == 2);
  p.crash(p.tailer);
  p.advance(200ms);  // second: doubled
  REQUIRE(p.tailers == 3);
  CHECK(p.slot->read().state == readiness_state::ready);
  p.crash(p.tailer);  // third in a row: escalate
  CHECK(p.slot->read().state == readiness_state::unavailable);
  CHECK(p.slot->read().reason == readiness_reason::runner_failed);
  CHECK(p.snapshot->load().state == runner_state::unavailable);
  CHECK(p.lock_free());
  p.advance(10s);
  CHECK(p.tailers == 3);
  auto s = p.unsupervise_now();
  REQUIRE(s);
  CHECK_FALSE(s->error);
}

TEST_CASE("supervision: a proxy crash condemns with backend-failed and the release goes through the replacement proxy", "[actor][supervision]") {
  supervised p;
  p.commit("a", "1");
  p.advance(1000ms);
  REQUIRE(p.slot->read().state == readiness_state::ready);
  p.crash(p.proxy);
  CHECK(p.slot->read().state == readiness_state::needs_rebuild);
  CHECK(p.slot->read().reason == readiness_reason::backend_failed);
  CHECK_FALSE(p.lock_free());  // the release waits for a proxy to quiesce the backend
  p.advance(100ms);
  CHECK(p.proxies == 2);
  CHECK(p.lock_free());  // flush(shutdown) → shutdown(epoch) → unlock, through the new proxy
  CHECK(p.snapshot->load().state == runner_state::needs_rebuild);
  CHECK_FALSE(p.snapshot->load().owner);
  auto delivered = p.backend->seen.size();
  p.commit("b", "2");  // parked: nothing is delivered until a rebuild
  CHECK(p.backend->seen.size() == delivered);
}

TEST_CASE("supervision: a runner crash: the supervisor quiesces the backend, publishes needs-rebuild, runner-failed, unlocks and respawns the runner parked", "[actor][supervision]") {
  supervised p;
  p.commit("a", "1");
  p.advance(1000ms);
  REQUIRE(p.slot->read().state == readiness_state::ready);
  p.commit("b", "2");  // accepted, not yet durable: the shutdown drops it
  CHECK(p.markers == 0);
  p.crash(p.runner);
  CHECK(p.markers == 1);  // the durable marker before the publication
  CHECK(p.slot->read().state == readiness_state::needs_rebuild);
  CHECK(p.slot->read().reason == readiness_reason::runner_failed);
  CHECK(p.lock_free());
  CHECK(p.runners == 1);
  p.advance(100ms);
  CHECK(p.runners == 2);
  REQUIRE(p.last_start);
  CHECK(*p.last_start == readiness_reason::runner_failed);
  CHECK(p.snapshot->load().state == runner_state::needs_rebuild);
  auto delivered = p.backend->seen.size();
  p.commit("c", "3");
  CHECK(p.backend->seen.size() == delivered);  // parked until a rebuild
  CHECK(p.slot->read().state == readiness_state::needs_rebuild);
}

TEST_CASE("supervision: a runner crash whose backend rejects the shutdown keeps the lock, and unregistering fails with backend_failed", "[actor][supervision]") {
  supervised p;
  p.commit("a", "1");
  p.advance(1000ms);
  p.backend->reject_shutdown = true;
  p.crash(p.runner);
  CHECK(p.slot->read().state == readiness_state::unavailable);
  CHECK(p.slot->read().reason == readiness_reason::shutdown_failed);
  CHECK_FALSE(p.lock_free());
  p.advance(10s);
  CHECK(p.runners == 1);  // nothing restarted over a held lock
  auto s = p.unsupervise_now();
  REQUIRE(s);
  CHECK(to_errc(s->error) == errc::backend_failed);
}

TEST_CASE("supervision: unsupervise releases the id and stops its actors; a down of a stopped child restarts nothing", "[actor][supervision]") {
  supervised p;
  p.commit("a", "1");
  auto s = p.unsupervise_now();
  REQUIRE(s);
  CHECK_FALSE(s->error);
  CHECK(p.durable_has("a"));  // flush(shutdown) made the accepted work durable
  CHECK(p.lock_free());
  p.advance(10s);
  CHECK(p.tailers == 1);
  CHECK(p.proxies == 1);
  CHECK(p.runners == 1);
}
