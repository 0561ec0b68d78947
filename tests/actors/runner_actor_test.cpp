// [actor] The runner, tailer and backend proxy actors wired together on CAF's test coordinator
// (no detached actors, no sleeps): message flows the cores cannot show on their own.
#include <catch2/catch.hpp>

#include "actors/backend_proxy_actor.hpp"
#include "actors/log_tailer_actor.hpp"
#include "actors/runner_actor.hpp"
#include "adapters/process_lock_table.hpp"
#include "support/temp_dir.hpp"
#include "core/tailer_core.hpp"
#include "support/caf_fixture.hpp"
#include "support/fake_store.hpp"
#include "support/sim_backend.hpp"
#include "support/slot_host.hpp"

using namespace dix;
using namespace std::chrono_literals;

namespace {

struct pipeline : test::caf_fixture {
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
  log_tailer_actor tailer;
  backend_proxy_actor proxy;
  runner_actor runner;

  explicit pipeline(runner_options o = {}) {
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
    deps->time = &clock;
    tailer = spawn_log_tailer(sys, deps, false);
    proxy = spawn_backend_proxy(sys, backend, false);
    runner_deps rd;
    rd.id = "idx";
    rd.config.options = o;
    rd.tailer = tailer;
    rd.proxy = proxy;
    rd.slot = slot;
    rd.lock = &locks;
    rd.requester = 1;
    rd.logs = {"main"};
    rd.snapshot = snapshot;
    runner = spawn_runner(sys, rd);
  }
  ~pipeline() override {
    caf::anon_send_exit(runner, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(proxy, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(tailer, caf::exit_reason::user_shutdown);
    run();
  }

  void commit(const std::string& id, const std::string& value) {
    store.commit({test::put(1, id, value)});
    caf::anon_send(runner, dix::wake{wake_flag::commit});
    run();
  }
  runner_state state() { return snapshot->load().state; }
};

}  // namespace

TEST_CASE("actors: a fresh index is acquired, built from sequence 1 and made durable by the age flush", "[actor]") {
  pipeline p;
  p.commit("a", "1");
  CHECK(p.persisted == std::vector<std::uint64_t>{1});  // the epoch is written before it is used
  CHECK(p.slot->read().state == readiness_state::rebuilding);
  p.advance(1000ms);
  REQUIRE(p.backend->durable());
  CHECK(p.backend->durable_index().count(test::index_key("main", 1, "a")) == 1);
  CHECK(p.slot->read().state == readiness_state::ready);
  CHECK(p.state() == runner_state::idle);
}

TEST_CASE("actors: after deferred, commits do not redeliver, a changed redelivers the identical batch", "[actor][deferred]") {
  pipeline p;
  p.backend->auto_barrier = false;
  p.backend->cap = 1;
  p.commit("a", "1");
  p.commit("b", "2");
  REQUIRE(p.state() == runner_state::deferred);
  auto deferred_batch = p.backend->seen.back();
  auto calls = p.backend->seen.size();
  p.commit("c", "3");
  p.commit("d", "4");
  CHECK(p.backend->seen.size() == calls);
  p.backend->apply_queue();  // room: `changed`, from outside the actors (an applier thread)
  p.run();
  REQUIRE(p.backend->seen.size() > calls);
  CHECK(p.backend->seen[calls] == deferred_batch);  // the same batch object: same contents, same epoch
}

TEST_CASE("actors: a changed raised synchronously inside deliver reaches the runner after the result", "[actor][deferred]") {
  pipeline p;
  p.backend->auto_barrier = false;
  p.backend->cap = 1;
  p.backend->changed_inside_deliver = true;
  p.commit("a", "1");
  p.commit("b", "2");  // deferred, with a `changed` emitted inside that deliver
  // The proxy queued the change behind the deferred result, so the runner counted it after the
  // result and retried at once: no timer was needed.
  REQUIRE(p.backend->seen.size() >= 3);
  CHECK(p.backend->seen[1] == p.backend->seen[2]);
  CHECK(p.state() != runner_state::deferred);
}

TEST_CASE("actors: stop answers every request with the same outcome", "[actor][stop]") {
  pipeline p;
  p.commit("a", "1");
  caf::scoped_actor self{p.sys};
  self->send(p.runner, dix::stop{});
  self->send(p.runner, dix::stop{});
  p.run();
  auto first = test::caf_fixture::try_receive<dix::stopped>(self);
  auto second = test::caf_fixture::try_receive<dix::stopped>(self);
  REQUIRE(first);
  REQUIRE(second);
  CHECK_FALSE(first->error);
  CHECK_FALSE(second->error);
  CHECK(p.state() == runner_state::stopped);
  self->send(p.runner, dix::stop{});  // a later stop: the same, settled outcome
  p.run();
  auto third = test::caf_fixture::try_receive<dix::stopped>(self);
  REQUIRE(third);
  CHECK_FALSE(third->error);
}

TEST_CASE("actors: a rejected shutdown makes every stop fail with backend_failed and keeps the lock", "[actor][stop]") {
  pipeline p;
  p.commit("a", "1");
  p.backend->reject_shutdown = true;
  caf::scoped_actor self{p.sys};
  self->send(p.runner, dix::stop{});
  self->send(p.runner, dix::stop{});
  p.run();
  auto first = test::caf_fixture::try_receive<dix::stopped>(self);
  auto second = test::caf_fixture::try_receive<dix::stopped>(self);
  REQUIRE(first);
  REQUIRE(second);
  CHECK(to_errc(first->error) == errc::backend_failed);
  CHECK(to_errc(second->error) == errc::backend_failed);
  CHECK(p.slot->read().state == readiness_state::unavailable);
  CHECK(p.slot->read().reason == readiness_reason::shutdown_failed);
}

TEST_CASE("actors: a store that cannot be read is a transient fault: no marker, readiness unchanged, the index continues (behaviour 27)", "[actor][transient]") {
  runner_options o;
  o.rebuild_backoff = std::chrono::milliseconds(100);
  pipeline p(o);
  p.commit("a", "1");
  p.advance(1000ms);
  REQUIRE(p.slot->read().state == readiness_state::ready);
  p.store.fail_reads = true;  // what a closed or failing primary store answers: io_error
  p.commit("b", "2");
  CHECK(p.slot->read().state == readiness_state::ready);  // no condemnation, no new publication
  CHECK(p.snapshot->load().transient_faults == 1);
  p.advance(100ms);  // the retry fails again
  CHECK(p.snapshot->load().transient_faults == 2);
  p.store.fail_reads = false;
  p.advance(200ms);   // the next retry resumes from the newest accepted cursor
  p.advance(1000ms);  // and the age flush makes it durable
  CHECK(p.backend->durable_index().count(test::index_key("main", 1, "b")) == 1);
  CHECK(p.slot->read().state == readiness_state::ready);
  CHECK(p.snapshot->load().transient_faults == 0);  // reset by the durable advance
  CHECK(p.snapshot->load().last_fault == readiness_reason::none);
}
