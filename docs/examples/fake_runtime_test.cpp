// Testing a dix application at the actor level (docs/testing.md): an application actor — it
// registers an index, subscribes to it, writes, waits until the index covers the write, asks for
// the index's status and stops the runtime, and asks for a rebuild when its index needs one — run
// under CAF's test coordinator against the fake runtime actor of <dix/testing/fake_runtime.hpp>,
// with CAF 0.17's test DSL: expect((type), from(a).to(b).with(values)) checks the next message of
// `b`, compares it with `values` by operator== (every dix message has one) and runs it.
//
// A program of CAF's own unit-test framework (caf/test/unit_test_impl.hpp brings its main();
// ctest runs it with no argument). Nothing here touches a disk or starts a thread: the
// application's write is a function the test hands it.
#define CAF_SUITE fake_runtime
#include <caf/test/dsl.hpp>
#include <caf/test/unit_test_impl.hpp>

#include <functional>
#include <memory>
#include <string>

#include <caf/all.hpp>

#include <dix/caf.hpp>
#include <dix/testing/fake_runtime.hpp>

namespace {

constexpr std::uint32_t fruit_table = 1;
constexpr const char* index_id = "by-colour";
constexpr std::uint64_t wait_ms = 5000;
constexpr int max_lagging_waits = 3;

// -- the application under test -----------------------------------------------------------------

// The index object the application registers. The fake only reads its id; the real runtime would
// drive it (docs/backends.md).
class stub_backend final : public dix::backend {
 public:
  explicit stub_backend(std::string id) : id_(std::move(id)) {}
  const std::string& id() const noexcept override { return id_; }
  std::string_view kind() const noexcept override { return "stub"; }
  void attach(dix::backend_host&) override {}
  dix::result<std::optional<dix::cursor>> durable_cursor() override { return std::optional<dix::cursor>{}; }
  dix::delivery_result deliver(std::shared_ptr<const dix::batch>) override { return dix::delivery_result::accepted; }
  void flush(dix::flush_reason, dix::completion done) override { std::move(done)(dix::result<void>{}); }
  void shutdown(dix::epoch_t, dix::completion done) override { std::move(done)(dix::result<void>{}); }
  dix::subscription on_state_change(std::function<void(dix::state_change)>) override { return {}; }

 private:
  std::string id_;
};

struct app_state {
  dix::runtime_actor runtime;
  std::shared_ptr<dix::backend> index;
  std::function<dix::index_time_t()> write;  // commits the application's records; their index time
  dix::index_time_t written = 0;
  int lagging_waits = 0;
  dix::readiness readiness;
  static inline const char* name = "fruit_app";
};

using app_actor = caf::stateful_actor<app_state>;

void stop(app_actor* self) {
  self->request(self->state.runtime, caf::infinite, dix::stop_runtime{})
    .then([self](dix::runtime_stopped) { self->quit(); }, [self](caf::error& err) { self->quit(err); });
}

// Read-your-writes: wait until the index covers the write, retrying while it lags; then look at
// the index's status and stop.
void wait_for_write(app_actor* self) {
  self->request(self->state.runtime, caf::infinite, dix::wait_coverage{index_id, self->state.written, wait_ms})
    .then(
      [self](dix::coverage_reached&) {
        self->request(self->state.runtime, caf::infinite, dix::query_status{index_id})
          .then([self](dix::status_report&) { stop(self); }, [self](caf::error& err) { self->quit(err); });
      },
      [self](caf::error& err) {
        if (dix::to_errc(err) == dix::errc::index_lagging && ++self->state.lagging_waits < max_lagging_waits) {
          wait_for_write(self);
          return;
        }
        self->quit(err);
      });
}

caf::behavior fruit_app(app_actor* self, dix::runtime_actor runtime, std::shared_ptr<dix::backend> index,
                        std::function<dix::index_time_t()> write) {
  self->state.runtime = runtime;
  self->state.index = std::move(index);
  self->state.write = std::move(write);
  dix::registration r;
  r.backend = self->state.index;
  r.projection_version = "colour-v1";
  r.projections[dix::table_ref{"main", fruit_table}] = [](std::string_view payload,
                                                          const dix::record_info&) -> dix::projection_result {
    return std::string(payload);  // the stub index stores nothing
  };
  self->request(runtime, caf::infinite, dix::register_index{std::move(r)})
    .then(
      [self](dix::index_registered&) {
        self->request(self->state.runtime, caf::infinite, dix::subscribe{index_id})
          .then(
            [self](dix::subscribed& s) {
              self->state.readiness = s.readiness;
              self->state.written = self->state.write();
              wait_for_write(self);
            },
            [self](caf::error& err) { self->quit(err); });
      },
      [self](caf::error& err) { self->quit(err); });
  return {
    // An index that needs a rebuild gets one asked for (the answer is not waited for).
    [self](dix::readiness_changed& e) {
      self->state.readiness = e.readiness;
      if (e.readiness.state == dix::readiness_state::needs_rebuild) {
        self->request(self->state.runtime, caf::infinite, dix::rebuild_index{e.id}).then([](dix::rebuild_requested&) {});
      }
    },
    [](dix::runner_state_changed&) {},
  };
}

// -- the tests -------------------------------------------------------------------------------------

struct dix_config : caf::actor_system_config {
  dix_config() { dix::configure(*this); }
};

struct fixture : test_coordinator_fixture<dix_config> {
  dix::testing::fake_runtime rt{sys};
  std::shared_ptr<dix::backend> index = std::make_shared<stub_backend>(index_id);
  int writes = 0;
  caf::actor app;

  fixture() {
    run();  // the fake starts
    app = sys.spawn(fruit_app, rt.actor(), index, [this] {
      ++writes;
      return dix::index_time_t{42};
    });
    sched.run_once();  // the application starts: it sends register_index
  }

  // What the application sends to register: the same backend object, the fruit table, colour-v1.
  // (operator== on register_index compares those, not the projection function.)
  dix::register_index expected_registration() const {
    dix::registration r;
    r.backend = index;
    r.projection_version = "colour-v1";
    r.projections[dix::table_ref{"main", fruit_table}] = nullptr;
    return dix::register_index{std::move(r)};
  }

  static dix::readiness ready() {
    return dix::readiness{dix::readiness_state::ready, dix::readiness_reason::none, 0, 1};
  }

  // The registration and the subscription, as the fake answers them by default.
  void expect_registered_and_subscribed() {
    expect((dix::register_index), from(app).to(rt.actor()).with(expected_registration()));
    expect((dix::index_registered), from(rt.actor()).to(app).with(dix::index_registered{index_id}));
    expect((dix::subscribe), from(app).to(rt.actor()).with(dix::subscribe{index_id}));
    expect((dix::subscribed), from(rt.actor()).to(app).with(dix::subscribed{
                                                                index_id, ready(),
                                                                dix::runner_status{dix::runner_state::idle,
                                                                                   dix::readiness_reason::none, 1, ""}}));
  }
};

}  // namespace

CAF_TEST_FIXTURE_SCOPE(fake_runtime_tests, fixture)

CAF_TEST(the application registers subscribes writes waits for its write and stops) {
  expect_registered_and_subscribed();
  CAF_CHECK_EQUAL(writes, 1);
  expect((dix::wait_coverage), from(app).to(rt.actor()).with(dix::wait_coverage{index_id, 42, wait_ms}));
  expect((dix::coverage_reached), from(rt.actor()).to(app).with(dix::coverage_reached{index_id, 42}));
  expect((dix::query_status), from(app).to(rt.actor()).with(dix::query_status{index_id}));
  expect((dix::status_report), from(rt.actor()).to(app).with(_));
  expect((dix::stop_runtime), from(app).to(rt.actor()).with(dix::stop_runtime{}));
  expect((dix::runtime_stopped), from(rt.actor()).to(app).with(dix::runtime_stopped{}));
  run();
  CAF_CHECK(rt.stopped());
  CAF_CHECK(rt.registered().empty());
  CAF_CHECK_EQUAL(rt.requests().size(), 5u);
  CAF_CHECK_EQUAL(rt.requests_of<dix::wait_coverage>().size(), 1u);
}

CAF_TEST(a lagging index makes the application wait again) {
  rt.script<dix::wait_coverage>(dix::error{dix::errc::index_lagging, "coverage deadline passed"});
  expect_registered_and_subscribed();
  expect((dix::wait_coverage), from(app).to(rt.actor()).with(dix::wait_coverage{index_id, 42, wait_ms}));
  // The scripted failure, with the real runtime's error value.
  expect((caf::error), from(rt.actor()).to(app).with(dix::make_error(dix::errc::index_lagging, "coverage deadline passed")));
  expect((dix::wait_coverage), from(app).to(rt.actor()).with(dix::wait_coverage{index_id, 42, wait_ms}));
  expect((dix::coverage_reached), from(rt.actor()).to(app).with(dix::coverage_reached{index_id, 42}));
  run();
  CAF_CHECK_EQUAL(rt.requests_of<dix::wait_coverage>().size(), 2u);
  CAF_CHECK_EQUAL(writes, 1);  // waiting again is not writing again
  CAF_CHECK(rt.stopped());
}

CAF_TEST(a registration the runtime refuses ends the application with the error) {
  rt.script<dix::register_index>(dix::error{dix::errc::segment_full, "no free slot"});
  expect((dix::register_index), from(app).to(rt.actor()).with(expected_registration()));
  expect((caf::error), from(rt.actor()).to(app).with(dix::make_error(dix::errc::segment_full, "no free slot")));
  run();
  CAF_CHECK_EQUAL(writes, 0);
  CAF_CHECK(rt.requests_of<dix::subscribe>().empty());
  CAF_CHECK(rt.registered().empty());  // a scripted answer leaves the model alone
}

CAF_TEST(the application asks for a rebuild when its index needs one) {
  expect_registered_and_subscribed();
  CAF_CHECK_EQUAL(rt.subscriber_count(index_id), 1u);
  // Let the wait and the status query through, but not the stop: the index breaks meanwhile.
  expect((dix::wait_coverage), from(app).to(rt.actor()).with(_));
  expect((dix::coverage_reached), from(rt.actor()).to(app).with(_));
  const dix::readiness broken{dix::readiness_state::needs_rebuild, dix::readiness_reason::log_corrupt, 0, 1};
  CAF_CHECK_EQUAL(rt.emit_readiness(index_id, broken), 1u);
  // The event is sent anonymously, as the real runtime sends it; no from().
  expect((dix::readiness_changed), to(app).with(dix::readiness_changed{index_id, broken}));
  CAF_CHECK_EQUAL(deref<app_actor>(app).state.readiness, broken);
  expect((dix::query_status), from(app).to(rt.actor()).with(dix::query_status{index_id}));
  expect((dix::rebuild_index), from(app).to(rt.actor()).with(dix::rebuild_index{index_id}));
  run();
  CAF_CHECK_EQUAL(rt.requests_of<dix::rebuild_index>().size(), 1u);
  CAF_CHECK(rt.stopped());
}

CAF_TEST_FIXTURE_SCOPE_END()
