// dix::testing::deterministic_runtime and dix::testing::memory_backend (docs/testing.md): the real
// runtime actor under the test coordinator, driven only by the test, and the in-memory backend
// that completes on the calling thread. Every state an index passes through between its
// registration and `ready` (and after it) meets a wait_coverage and a `wait`-mode query_index,
// with the answer api.md §6.10 documents.
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <caf/actor_system_config.hpp>
#include <caf/after.hpp>
#include <caf/scoped_actor.hpp>

#include <dix/caf.hpp>
#include <dix/caf/messages.hpp>
#include <dix/primary_store.hpp>
#include <dix/testing/deterministic_runtime.hpp>
#include <dix/testing/memory_backend.hpp>

#include "messages/errors.hpp"
#include "support/caf_fixture.hpp"
#include "support/quiet_config.hpp"
#include "support/temp_dir.hpp"

namespace dix {
namespace {

using namespace std::chrono_literals;
using testing::deterministic_runtime;
using testing::memory_backend;

constexpr std::uint32_t table = 7;

struct fixture : test::caf_fixture {
  test::temp_dir dir;
  std::shared_ptr<primary_store> store;
  std::optional<deterministic_runtime> rt;
  caf::scoped_actor self{sys};

  fixture() {
    store_options so;
    so.log_name = "main";
    store = primary_store::open(dir / "db", so).value();
    REQUIRE(store->create_table(table));
    auto spawned = deterministic_runtime::spawn(sys, {store});
    REQUIRE(spawned);
    rt.emplace(std::move(*spawned));
  }
  ~fixture() override { rt.reset(); }

  // The index's projection: the payload itself.
  static register_index registration_of(std::shared_ptr<backend> b) {
    registration r;
    r.backend = std::move(b);
    r.projections[table_ref{"main", table}] = [](std::string_view payload, const record_info&) -> projection_result {
      return std::string(payload);
    };
    return register_index{std::move(r)};
  }

  // Sends `request`; after `step` (settle by default) returns the answer: a T, an error, or
  // nullopt when none came yet.
  template <class T>
  std::optional<result<T>> answer() {
    std::optional<result<T>> out;
    self->receive([&](T& x) { out = result<T>{std::move(x)}; },
                  [&](caf::error& err) { out = result<T>{to_dix_error(err)}; },
                  caf::after(std::chrono::seconds(0)) >> [] {});
    return out;
  }
  template <class T, class Request>
  result<T> ask(Request request) {
    self->send(rt->actor(), std::move(request));
    rt->settle();
    auto out = answer<T>();
    REQUIRE(out);
    return std::move(*out);
  }

  transaction_committed put(const std::string& id, const std::string& value) {
    commit_transaction c{"main", {}};
    c.put(table, id, value);
    auto done = ask<transaction_committed>(std::move(c));
    REQUIRE(done);
    return *done;
  }

  readiness_state state_of(const std::string& id) {
    auto r = ask<readiness_report>(query_readiness{id});
    REQUIRE(r);
    return r->value.state;
  }

  // `index` registered, `id` ← `value` written and covered; the write's commit.
  transaction_committed ready_with(const std::shared_ptr<memory_backend>& index, const std::string& id,
                                   const std::string& value) {
    REQUIRE(ask<index_registered>(registration_of(index)));
    auto written = put(id, value);
    REQUIRE(ask<coverage_reached>(wait_coverage{index->id(), written.time, 5000}));
    return written;
  }

  // A wait_coverage and a `wait`-mode lookup of `key` for the same write, sent without running.
  void send_waits(const std::string& key, index_time_t since, std::uint64_t timeout_ms) {
    self->send(rt->actor(), wait_coverage{"by-value", since, timeout_ms});
    self->send(rt->actor(), lookup_waiting("by-value", key, since, static_cast<std::int64_t>(timeout_ms)));
  }
  // Both waits of send_waits answered: the coverage reached, and the query's rows (how many).
  std::size_t waits_answered() {
    auto reached = answer<coverage_reached>();
    REQUIRE(reached);
    CHECK(*reached);
    auto rows = answer<index_rows>();
    REQUIRE(rows);
    REQUIRE(*rows);
    return (*rows)->rows.size();
  }
  // Both waits of send_waits failed with `code`.
  void waits_failed(errc code) {
    auto reached = answer<coverage_reached>();
    REQUIRE(reached);
    REQUIRE_FALSE(*reached);
    CHECK(reached->error().value() == code);
    auto rows = answer<index_rows>();
    REQUIRE(rows);
    REQUIRE_FALSE(*rows);
    CHECK(rows->error().value() == code);
  }

  static query_index lookup_waiting(const std::string& id, const std::string& key, index_time_t since,
                                    std::int64_t timeout_ms = 5000) {
    query_index q;
    q.id = id;
    q.kind = query_kind::lookup;
    q.text = key;
    q.mode = coverage_kind::wait;
    q.since = since;
    q.timeout_ms = timeout_ms;
    return q;
  }
};

TEST_CASE("deterministic runtime: an actor system that does not run on the test coordinator is refused",
          "[actor][deterministic]") {
  test::temp_dir dir;
  store_options so;
  so.log_name = "main";
  auto store = primary_store::open(dir / "db", so).value();
  test::quiet_config cfg{1};  // CAF's own scheduler
  caf::actor_system sys{cfg};
  auto rt = testing::deterministic_runtime::spawn(sys, {store});
  REQUIRE_FALSE(rt);
  CHECK(to_errc(rt.error()) == errc::invalid_argument);
  CHECK(to_string(rt.error()).find("test_coordinator") != std::string::npos);
}

TEST_CASE("deterministic runtime: a commit as a message reaches the memory index and a wait query reads it",
          "[actor][deterministic]") {
  fixture f;
  auto index = std::make_shared<memory_backend>("by-value");
  REQUIRE(f.ask<index_registered>(fixture::registration_of(index)));
  auto written = f.put("apple", "red");
  CHECK(written.log == "main");
  CHECK(written.sequence > 0);
  auto rows = f.ask<index_rows>(fixture::lookup_waiting("by-value", "red", written.time));
  REQUIRE(rows);
  REQUIRE(rows->rows.size() == 1);
  CHECK(rows->rows[0].record_id == "apple");
  CHECK(rows->rows[0].table == table);
  CHECK(f.state_of("by-value") == readiness_state::ready);
  // The wait asked for the write's coverage: it is durable in the index, with its cursor.
  auto durable = index->durable();
  REQUIRE(durable.size() == 1);
  CHECK(durable.begin()->second.projection == "red");
  CHECK(index->durable_cursor_now());
  // A delete goes the same way.
  commit_transaction del{"main", {}};
  del.del(table, "apple");
  auto deleted = f.ask<transaction_committed>(std::move(del));
  REQUIRE(deleted);
  auto none = f.ask<index_rows>(fixture::lookup_waiting("by-value", "red", deleted->time));
  REQUIRE(none);
  CHECK(none->rows.empty());
}

TEST_CASE("deterministic runtime: a wait sent with the registration, before the index has a state, is answered once it is built",
          "[actor][deterministic][coverage]") {
  fixture f;
  auto before = f.put("pear", "green");  // written before the index exists: the first build scans it
  auto index = std::make_shared<memory_backend>("by-value");
  // Nothing runs between the three requests: the waits meet the index before its runner ran.
  f.self->send(f.rt->actor(), fixture::registration_of(index));
  f.self->send(f.rt->actor(), wait_coverage{"by-value", before.time, 5000});
  f.self->send(f.rt->actor(), fixture::lookup_waiting("by-value", "green", before.time));
  f.rt->settle();
  f.rt->advance(2s);  // flush timers, if the build's barrier waits for one
  std::optional<result<index_registered>> registered = f.answer<index_registered>();
  REQUIRE(registered);
  CHECK(*registered);
  auto reached = f.answer<coverage_reached>();
  REQUIRE(reached);
  REQUIRE(*reached);
  CHECK((*reached)->since == before.time);
  auto rows = f.answer<index_rows>();
  REQUIRE(rows);
  REQUIRE(*rows);
  REQUIRE((*rows)->rows.size() == 1);
  CHECK((*rows)->rows[0].record_id == "pear");
}

TEST_CASE("deterministic runtime: waits wait through rebuilding and are answered when the build is durable",
          "[actor][deterministic][coverage]") {
  fixture f;
  auto before = f.put("plum", "purple");
  auto index = std::make_shared<memory_backend>("by-value");
  index->hold_deliveries(true);  // the first build cannot go on: the index stays rebuilding
  REQUIRE(f.ask<index_registered>(fixture::registration_of(index)));
  f.rt->advance(1s);
  CHECK(f.state_of("by-value") == readiness_state::rebuilding);
  f.send_waits("purple", before.time, 5000);
  f.rt->advance(2s);
  CHECK_FALSE(f.answer<coverage_reached>());  // still waiting, within their timeouts
  index->hold_deliveries(false);
  f.rt->settle();
  f.rt->advance(1s);
  CHECK(f.state_of("by-value") == readiness_state::ready);
  CHECK(f.waits_answered() == 1);
}

TEST_CASE("deterministic runtime: at the deadline a build still running answers rebuilding, a lagging ready index index_lagging",
          "[actor][deterministic][coverage]") {
  fixture f;
  auto before = f.put("fig", "brown");
  auto index = std::make_shared<memory_backend>("by-value");
  index->hold_deliveries(true);
  REQUIRE(f.ask<index_registered>(fixture::registration_of(index)));
  f.send_waits("brown", before.time, 1000);
  f.rt->advance(1500ms);
  f.waits_failed(errc::rebuilding);

  // Built and ready; then it lags: a write it does not take.
  index->hold_deliveries(false);
  f.rt->advance(1s);
  REQUIRE(f.state_of("by-value") == readiness_state::ready);
  index->hold_deliveries(true);
  auto later = f.put("fig", "black");
  f.send_waits("black", later.time, 1000);
  f.rt->advance(1500ms);
  f.waits_failed(errc::index_lagging);
  index->hold_deliveries(false);
  f.rt->advance(1s);
  auto caught_up = f.ask<index_rows>(fixture::lookup_waiting("by-value", "black", later.time, 1000));
  REQUIRE(caught_up);
  CHECK(caught_up->rows.size() == 1);
}

TEST_CASE("deterministic runtime: a failed index is rebuilt and waits sent meanwhile are answered when it is ready",
          "[actor][deterministic][coverage]") {
  fixture f;
  auto index = std::make_shared<memory_backend>("by-value");
  f.ready_with(index, "kiwi", "green");
  const auto built = index->resets();  // the first build's
  index->fail_next_delivery();
  auto second = f.put("lime", "green");  // its delivery fails: the index is condemned, then rebuilt
  f.send_waits("green", second.time, 10000);
  f.rt->advance(5s);
  CHECK(f.waits_answered() == 2);
  CHECK(index->resets() == built + 1);
  CHECK(f.state_of("by-value") == readiness_state::ready);
}

TEST_CASE("deterministic runtime: an index that needs a rebuild its backend cannot make answers waits unavailable at once",
          "[actor][deterministic][coverage]") {
  fixture f;
  auto first = f.put("kiwi", "green");
  // A new index without reset has no way to its first build: it parks in needs-rebuild.
  auto index = std::make_shared<memory_backend>("by-value", /*resettable=*/false);
  REQUIRE(f.ask<index_registered>(fixture::registration_of(index)));
  CHECK(f.state_of("by-value") == readiness_state::needs_rebuild);
  auto reached = f.ask<coverage_reached>(wait_coverage{"by-value", first.time, 10000});  // no time moves
  REQUIRE_FALSE(reached);
  CHECK(reached.error().value() == errc::unavailable);
  auto rows = f.ask<index_rows>(fixture::lookup_waiting("by-value", "green", first.time, 10000));
  REQUIRE_FALSE(rows);
  CHECK(rows.error().value() == errc::unavailable);
  CHECK(index->resets() == 0);
}

TEST_CASE("deterministic runtime: lost applied work is replayed from the durable cursor",
          "[actor][deterministic]") {
  fixture f;
  auto index = std::make_shared<memory_backend>("by-value");
  auto first = f.ready_with(index, "a", "x");
  f.put("b", "x");  // applied, not yet durable
  f.rt->settle();
  CHECK(index->applied().size() == 2);
  index->lose_applied_work();
  CHECK(index->applied().size() == 1);
  f.rt->advance(2s);
  auto rows = f.ask<index_rows>(fixture::lookup_waiting("by-value", "x", first.time));
  REQUIRE(rows);
  CHECK(rows->rows.size() == 2);
  CHECK(index->durable().size() == 2);
}

TEST_CASE("deterministic runtime: ending it releases the index, and the same backend object is taken up again by a new one",
          "[actor][deterministic]") {
  fixture f;
  auto index = std::make_shared<memory_backend>("by-value");
  f.ready_with(index, "a", "x");
  const auto built = index->resets();  // the first build's
  f.rt.reset();  // exit message, settled: released
  auto second = f.store->begin();
  second.put(table, "b", "x");
  auto committed = second.commit();
  REQUIRE(committed);
  auto again = deterministic_runtime::spawn(f.sys, {f.store});
  REQUIRE(again);
  f.rt.emplace(std::move(*again));
  REQUIRE(f.ask<index_registered>(fixture::registration_of(index)));
  f.rt->advance(2s);
  auto rows = f.ask<index_rows>(fixture::lookup_waiting("by-value", "x", committed->time));
  REQUIRE(rows);
  CHECK(rows->rows.size() == 2);
  CHECK(index->resets() == built);  // resumed from its durable cursor, not rebuilt
}

}  // namespace
}  // namespace dix

namespace dix {
namespace {

TEST_CASE("deterministic runtime: a negative timeout, a limit of 0 and a kind the index does not answer are refused at once, and beyond 4096 waiting queries one is told to retry",
          "[actor][deterministic][coverage]") {
  fixture f;
  auto index = std::make_shared<memory_backend>("by-value");
  index->hold_deliveries(true);  // the first build never ends: every wait keeps waiting
  REQUIRE(f.ask<index_registered>(fixture::registration_of(index)));
  auto written = f.put("plum", "purple");
  auto negative = f.ask<index_rows>(fixture::lookup_waiting("by-value", "purple", written.time, -1));
  REQUIRE_FALSE(negative);
  CHECK(negative.error().value() == errc::invalid_argument);
  query_index search;  // a kind the memory index does not answer
  search.id = "by-value";
  search.kind = query_kind::search;
  search.text = "purple";
  auto unsupported = f.ask<index_rows>(search);
  REQUIRE_FALSE(unsupported);
  CHECK(unsupported.error().value() == errc::not_supported);
  query_index too_many = fixture::lookup_waiting("by-value", "purple", written.time);
  too_many.limit = 0;
  auto zero = f.ask<index_rows>(too_many);
  REQUIRE_FALSE(zero);
  CHECK(zero.error().value() == errc::invalid_argument);
  for (int i = 0; i < 4096; ++i) f.self->send(f.rt->actor(), fixture::lookup_waiting("by-value", "purple", written.time, 20000));
  f.rt->settle();
  CHECK_FALSE(f.answer<index_rows>());  // all 4096 wait
  auto refused = f.ask<index_rows>(fixture::lookup_waiting("by-value", "purple", written.time, 20000));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::timeout);
  index->hold_deliveries(false);  // built: every waiting query is answered once
  f.rt->advance(std::chrono::seconds(1));
  int answered = 0;
  while (auto rows = f.answer<index_rows>()) {
    REQUIRE(*rows);
    CHECK((*rows)->rows.size() == 1);
    ++answered;
  }
  CHECK(answered == 4096);
}

}  // namespace
}  // namespace dix
