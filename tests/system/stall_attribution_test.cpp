// Stall attribution end to end (decision 0021): a runtime of this process over a real store and a
// real RocksDB index whose backend is made to defer every delivery; the owner's runner publishes
// its lag figures in the metrics segment, and `dix status --json` in another process reads them
// and names the cause. Real threads and real time: the waits are futex waits on the metrics
// segment's change counter, bounded by a failure timeout, never sleeps.
#include <catch2/catch.hpp>

#include <chrono>

#include <dix/runtime.hpp>
#include <dix/segment.hpp>

#include "adapters/metrics_segment.hpp"
#include "adapters/readiness_segment.hpp"
#include "adapters/test_support.hpp"
#include "cli/dix_cli.hpp"
#include "support/index_registration.hpp"
#include "support/wrapped_backend.hpp"

using namespace dix;
using namespace std::chrono_literals;
using dix::test::index_registration;
using dix::test::temp_dir;

namespace {

// Waits until the owner's lag figures of `id` (as segment_reader gives them: attached, of the
// slot's epoch) satisfy `want`: a futex wait on the metrics segment's change counter per round.
template <class Want>
std::optional<lag_figures> wait_lag(const std::filesystem::path& home, const std::string& id, Want want) {
  auto reader = segment_reader::open(home).value();
  REQUIRE(reader);
  auto metrics = metrics_segment::open(home / "dix", segment_layout::default_slot_count).value();
  REQUIRE(metrics);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  for (;;) {
    const auto counter = metrics->change_counter();
    auto table = reader->read().value();
    for (const auto& e : table.entries) {
      if (e.id == id && e.lag && want(*e.lag)) return e.lag;
    }
    if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
    metrics->wait_change(counter, 1000ms);
  }
}

}  // namespace

TEST_CASE("stall attribution: a backend that defers every delivery is reported by dix status --json as stalled by backend-deferred, and caught up again once it accepts",
          "[system][lag][activity]") {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  auto rt = runtime::create({store}).value();
  auto deferring = std::make_shared<test::wrapped_backend>(test::make_index_at(dir / "index"));
  rt->register_index(index_registration(deferring)).value();
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
