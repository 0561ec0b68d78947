// Stall attribution end to end (decision 0021): a runtime of this process over a real store and a
// real RocksDB index whose backend is made to defer every delivery; the owner's runner publishes
// its lag figures in the metrics segment, and `dix status --json` in another process reads them
// and names the cause. Real threads and real time: the waits are futex waits on the metrics
// segment's change counter, bounded by a failure timeout, never sleeps.
#include <catch2/catch.hpp>

#include <chrono>

#include <dix/runtime.hpp>
#include <dix/segment.hpp>

#include "adapters/readiness_segment.hpp"
#include "adapters/test_support.hpp"
#include "cli/dix_cli.hpp"
#include "support/index_registration.hpp"
#include "support/lag_wait.hpp"
#include "support/wrapped_backend.hpp"

using namespace dix;
using namespace std::chrono_literals;
using dix::test::index_registration;
using dix::test::temp_dir;
using dix::test::wait_lag;


TEST_CASE("stall attribution: a backend that defers every delivery is reported by dix status --json as stalled by backend-deferred, and caught up again once it accepts",
          "[system][lag][activity]") {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  auto rt = runtime::create({store}).value();
  auto deferring = std::make_shared<test::wrapped_backend>(test::make_index_at(dir / "index"));
  auto r = index_registration(deferring);
  // The deferral is retried every max_flush_age (protocol.md §7), each retry leaving `deferred`
  // for a moment: at 5 s none falls between the park and the two status reads below, however
  // slow the build (the default 1 s did under ASan, and status read "following the log").
  r.options = runner_options{};
  r.options->max_flush_age = 5s;
  rt->register_index(std::move(r)).value();
  test::put_records(*store, "k", 5);
  REQUIRE(test::wait_readiness(home, "by-value", test::is_ready));

  deferring->defer_deliveries = true;
  test::put_records(*store, "m", 5);
  auto parked = wait_lag(home, "by-value", [](const lag_figures& l) { return l.state == runner_state::deferred; });
  REQUIRE(parked);
  CHECK(parked->stalled_growing);

  auto json = test::dix_cli(dir, {"status", "--db", home.string(), "--json"});
  INFO(json.out << json.err);
  CHECK(json.exit_code == 0);
  CHECK_THAT(json.out, Catch::Contains("\"id\":\"by-value\"") &&
                           Catch::Contains("\"activity\":\"stalled\",\"stall_cause\":\"backend-deferred\"") &&
                           Catch::Contains("\"runner_state\":\"deferred\""));
  auto plain = test::dix_cli(dir, {"status", "--db", home.string()});
  CHECK_THAT(plain.out, Catch::Contains("activity by-value: stalled (backend-deferred): the backend defers deliveries"));

  // The backend accepts again: the deferral retry delivers, and the figures say idle.
  deferring->defer_deliveries = false;
  REQUIRE(wait_lag(home, "by-value", [](const lag_figures& l) { return l.state == runner_state::idle && l.lag_ms == 0; }));
  auto after = test::dix_cli(dir, {"status", "--db", home.string(), "--json"});
  CHECK_THAT(after.out, Catch::Contains("\"activity\":\"idle\",\"stall_cause\":\"none\",\"lag_ms\":0"));
  REQUIRE(rt->stop().get());
}

namespace {

std::uint64_t wall_now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

// Past activity_options::stuck_after_ms (2000 by default, what dix status uses), with room.
constexpr std::uint64_t stuck_ms = 2500;

// An owner over a real store and a real RocksDB index whose barriers the test holds.
struct held_barriers {
  temp_dir dir;
  std::filesystem::path home = dir / "db";
  std::shared_ptr<primary_store> store = test::open_store(home);
  std::unique_ptr<runtime> rt = runtime::create({store}).value();
  std::shared_ptr<test::wrapped_backend> index;

  explicit held_barriers(std::optional<runner_options> options = std::nullopt) {
    rocksdb_index_options o;
    o.path = dir / "index";
    index = std::make_shared<test::wrapped_backend>(rocksdb_index_backend::create("by-value", o).value());
    auto r = index_registration(index);
    r.options = options;
    rt->register_index(std::move(r)).value();
    test::put_records(*store, "k", 5);
    REQUIRE(test::wait_readiness(home, "by-value", test::is_ready));
    index->hold_flushes = true;
  }
  std::string status_json() {
    auto json = test::dix_cli(dir, {"status", "--db", home.string(), "--json"});
    INFO(json.out << json.err);
    CHECK(json.exit_code == 0);
    return json.out;
  }
  // Barriers resume: the figures say idle again.
  void release() {
    index->release_flushes();
    REQUIRE(wait_lag(home, "by-value", [](const lag_figures& l) { return l.state == runner_state::idle && l.lag_ms == 0; }));
    REQUIRE(rt->stop().get());
  }
};

}  // namespace

// The age must pass stuck_after_ms of wall time: the wait re-reads the published figures, aged to
// now, at each metrics change and at least every second (a failure bound of 30 s).
TEST_CASE("stall attribution: a barrier that does not complete is reported by dix status --json as stalled by barrier, below the accepted-ahead cap",
          "[system][lag][activity]") {
  held_barriers h;
  test::put_records(*h.store, "m", 3);
  REQUIRE(wait_lag(h.home, "by-value", [](const lag_figures& l) {
    const auto aged = l.aged_at(wall_now_ns());
    return aged.oldest_accepted_growing && aged.oldest_accepted_age_ms >= stuck_ms && aged.accepted_batches >= 1 &&
           aged.accepted_batches < aged.max_accepted_batches_ahead;
  }));
  CHECK_THAT(h.status_json(), Catch::Contains("\"id\":\"by-value\"") &&
                                  Catch::Contains("\"activity\":\"stalled\",\"stall_cause\":\"barrier\""));
  h.release();
}

TEST_CASE("stall attribution: an owner at the accepted-ahead cap whose barrier does not complete is reported by dix status --json as stalled by accepted-cap",
          "[system][lag][activity]") {
  runner_options capped;
  capped.max_accepted_batches_ahead = 1;
  held_barriers h(capped);
  test::put_records(*h.store, "m", 3);  // accepted: the cap is reached
  REQUIRE(wait_lag(h.home, "by-value", [](const lag_figures& l) { return l.accepted_batches == 1; }));
  test::put_records(*h.store, "n", 3);  // cannot be offered until the first is durable
  REQUIRE(wait_lag(h.home, "by-value", [](const lag_figures& l) {
    const auto aged = l.aged_at(wall_now_ns());
    return aged.state == runner_state::waiting_durable && aged.stalled_ms >= stuck_ms;
  }));
  CHECK_THAT(h.status_json(), Catch::Contains("\"activity\":\"stalled\",\"stall_cause\":\"accepted-cap\"") &&
                                  Catch::Contains("\"runner_state\":\"waiting-durable\"") &&
                                  Catch::Contains("\"accepted_batches\":1,\"max_accepted_batches_ahead\":1"));
  h.release();
}

TEST_CASE("stall attribution: a log the owner cannot read (its store closed under the running index) is reported by dix status --json as stalled by log-unreadable",
          "[system][lag][activity]") {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  auto rt = runtime::create({store}).value();
  rocksdb_index_options o;
  o.path = dir / "index";
  rt->register_index(index_registration(rocksdb_index_backend::create("by-value", o).value())).value();
  test::put_records(*store, "k", 5);
  REQUIRE(test::wait_readiness(home, "by-value", test::is_ready));
  REQUIRE(store->close());
  rt->wake();  // as a commit: the owner's next turn reads the closed log, a transient fault (§10.5)
  REQUIRE(wait_lag(home, "by-value", [](const lag_figures& l) { return l.transient_faults > 0; }));
  auto json = test::dix_cli(dir, {"status", "--db", home.string(), "--json"});
  INFO(json.out << json.err);
  CHECK(json.exit_code == 0);
  CHECK_THAT(json.out, Catch::Contains("\"activity\":\"stalled\",\"stall_cause\":\"log-unreadable\"") &&
                           Catch::Contains("\"state\":\"ready\""));  // a transient fault changes no readiness
  REQUIRE(rt->stop().get());
}
