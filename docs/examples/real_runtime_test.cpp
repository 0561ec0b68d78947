// Testing a dix application against the *real* runtime, deterministically (docs/testing.md): the
// application actor — it registers an index, writes a fruit as a commit_transaction message, then
// reads its own write back with a `wait`-mode query and stops the runtime — runs under CAF's test
// coordinator against dix::testing::deterministic_runtime (the runtime actor of <dix/caf.hpp>,
// scheduled by the coordinator, its watcher's looks and its clock in the test's hands) with the
// in-memory index dix::testing::memory_backend, which completes on the calling thread.
//
// CAF 0.17's test DSL checks the application's own requests with expect(...).with(...); between
// them the runtime does its internal work (tailer, runner, backend proxy), which the test lets run
// with settle() and advance() instead of naming each of its messages. A program of CAF's own
// unit-test framework; ctest runs it with no argument. It writes a store in a temporary directory.
#define CAF_SUITE real_runtime
#include <caf/test/dsl.hpp>
#include <caf/test/unit_test_impl.hpp>

#include <stdlib.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <caf/all.hpp>

#include <dix/caf.hpp>
#include <dix/primary_store.hpp>
#include <dix/testing/deterministic_runtime.hpp>
#include <dix/testing/memory_backend.hpp>

namespace {

constexpr std::uint32_t fruit_table = 1;
constexpr const char* index_id = "by-colour";

// -- the application under test -----------------------------------------------------------------

// Records are "name" → "colour"; the index maps each colour to its fruits.
struct app_outcome {
  std::vector<std::string> red_fruits;  // what the application read back
  caf::error failure;
};

struct app_state {
  dix::runtime_actor runtime;
  std::shared_ptr<app_outcome> outcome;  // shared with the test: it outlives the actor
  static inline const char* name = "fruit_app";
};

using app_actor = caf::stateful_actor<app_state>;

dix::register_index colour_index(std::shared_ptr<dix::backend> index) {
  dix::registration r;
  r.backend = std::move(index);
  r.projection_version = "colour-v1";
  r.projections[dix::table_ref{"main", fruit_table}] = [](std::string_view colour,
                                                          const dix::record_info&) -> dix::projection_result {
    return std::string(colour);
  };
  return dix::register_index{std::move(r)};
}

dix::commit_transaction apple_is_red() {
  dix::commit_transaction c{"main", {}};
  c.put(fruit_table, "apple", "red");
  return c;
}

dix::query_index red_fruits_since(dix::index_time_t since) {
  dix::query_index q;
  q.id = index_id;
  q.kind = dix::query_kind::lookup;
  q.text = "red";
  q.mode = dix::coverage_kind::wait;  // read-your-writes: waits until the index covers `since`
  q.since = since;
  q.timeout_ms = 5000;
  return q;
}

void fail(app_actor* self, caf::error err) {
  self->state.outcome->failure = err;
  self->quit(std::move(err));
}

caf::behavior fruit_app(app_actor* self, dix::runtime_actor runtime, std::shared_ptr<dix::backend> index,
                        std::shared_ptr<app_outcome> outcome) {
  self->state.runtime = runtime;
  self->state.outcome = std::move(outcome);
  self->request(runtime, caf::infinite, colour_index(std::move(index)))
    .then(
      [self](dix::index_registered&) {
        self->request(self->state.runtime, caf::infinite, apple_is_red())
          .then(
            [self](dix::transaction_committed& written) {
              self->request(self->state.runtime, caf::infinite, red_fruits_since(written.time))
                .then(
                  [self](dix::index_rows& rows) {
                    for (auto& row : rows.rows) self->state.outcome->red_fruits.push_back(row.record_id);
                    self->request(self->state.runtime, caf::infinite, dix::stop_runtime{})
                      .then([self](dix::runtime_stopped) { self->quit(); },
                            [self](caf::error& err) { fail(self, err); });
                  },
                  [self](caf::error& err) { fail(self, err); });
            },
            [self](caf::error& err) { fail(self, err); });
      },
      [self](caf::error& err) { fail(self, err); });
  return {[](const std::string&) {}};  // it asks; it is told nothing
}

// -- the tests -------------------------------------------------------------------------------------

struct dix_config : caf::actor_system_config {
  dix_config() { dix::configure(*this); }  // test_coordinator_fixture sets scheduler.policy = testing
};

// A directory of its own (mkdtemp: a new name, mode 0700) for the store the test makes in it,
// `db`. At the end only that store is removed, then the directory if nothing else is left in it:
// a file anyone else put there stays, and so does the directory.
struct scratch_dir {
  std::filesystem::path path;
  scratch_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "dix-real-runtime-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
    path = pattern;
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  ~scratch_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path / "db", ignored);  // the store the test made
    std::filesystem::remove(path, ignored);             // not recursive: fails if anything else is there
  }
};

struct fixture : test_coordinator_fixture<dix_config> {
  scratch_dir dir;
  std::shared_ptr<dix::primary_store> store;
  std::optional<dix::testing::deterministic_runtime> rt;
  std::shared_ptr<dix::testing::memory_backend> index = std::make_shared<dix::testing::memory_backend>(index_id);
  std::shared_ptr<app_outcome> outcome = std::make_shared<app_outcome>();
  caf::actor app;

  fixture() {
    dix::store_options options;
    options.log_name = "main";
    store = dix::primary_store::open(dir.path / "db", options).value();
    if (!store->create_table(fruit_table)) CAF_FAIL("create_table failed");
    auto spawned = dix::testing::deterministic_runtime::spawn(sys, {store});
    if (!spawned) CAF_FAIL("spawn: " << to_string(spawned.error()));
    rt.emplace(std::move(*spawned));
    app = sys.spawn(fruit_app, rt->actor(), index, outcome);
    sched.run_once();  // the application starts: it sends register_index
  }

  ~fixture() {
    rt.reset();  // ends the runtime if a test left it running
  }
};

}  // namespace

CAF_TEST_FIXTURE_SCOPE(real_runtime_tests, fixture)

CAF_TEST(the application reads its own write back through the real runtime) {
  // The application's requests, checked as they arrive at the runtime.
  expect((dix::register_index), from(app).to(rt->actor()).with(colour_index(index)));
  // Everything that follows without time moving: the registration, the index's first build (an
  // empty table), the application's commit, its delivery to the index, the query's wait — which
  // asks the runner for a barrier at once (a coverage demand) — and the answer.
  rt->settle();
  CAF_CHECK_EQUAL(outcome->failure, caf::error{});
  CAF_CHECK_EQUAL(outcome->red_fruits, std::vector<std::string>{"apple"});
  CAF_CHECK_EQUAL(index->durable().size(), 1u);
}

CAF_TEST(a write the index cannot take yet keeps the query waiting until it can) {
  index->hold_deliveries(true);  // the index defers: it lags behind the write
  expect((dix::register_index), from(app).to(rt->actor()).with(_));
  rt->advance(std::chrono::seconds(3));  // within the query's 5 s
  CAF_CHECK(outcome->red_fruits.empty());
  CAF_CHECK_EQUAL(outcome->failure, caf::error{});
  index->hold_deliveries(false);
  rt->advance(std::chrono::seconds(1));
  CAF_CHECK_EQUAL(outcome->red_fruits, std::vector<std::string>{"apple"});
}

CAF_TEST(a query that outlives its timeout reaches the application as a retryable error) {
  index->hold_deliveries(true);
  expect((dix::register_index), from(app).to(rt->actor()).with(_));
  rt->advance(std::chrono::seconds(6));  // past the query's 5 s, the index still lagging
  CAF_CHECK(outcome->red_fruits.empty());
  // The first build never finished (its scan was deferred): `rebuilding`, retryable.
  CAF_CHECK_EQUAL(dix::to_errc(outcome->failure), dix::errc::rebuilding);
}

CAF_TEST_FIXTURE_SCOPE_END()

// The cleanup removes only what the test made: a file planted beside the store survives it.
CAF_TEST(the scratch directory keeps a file it did not make) {
  std::filesystem::path kept;
  {
    scratch_dir dir;
    kept = dir.path;
    std::filesystem::create_directories(dir.path / "db" / "inside");  // as the store would
    std::ofstream(dir.path / "foreign.txt") << "not the test's";
  }
  CAF_CHECK(!std::filesystem::exists(kept / "db"));
  CAF_CHECK(std::filesystem::exists(kept / "foreign.txt"));
  std::filesystem::remove(kept / "foreign.txt");  // this test's own plant
  std::filesystem::remove(kept);
}
