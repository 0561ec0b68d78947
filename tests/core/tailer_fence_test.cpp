// tailer_core's verify fence (issue 31, decision 0056) over fake stores: fenced, the tailer reads
// nothing beyond the fence's snapshots and resolves at them, so an index that applied every chunk
// up to fence_reached holds exactly the projection of the snapshots, at through().
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <tuple>

#include "core/tailer_core.hpp"
#include "core/txn_header.hpp"  // decode_value
#include "support/fake_store.hpp"

using namespace dix;
using dix::test::fake_store;

namespace {

constexpr std::uint32_t products = 1;
constexpr std::uint32_t ignored = 2;  // a table no projection reads

// Echoes the payload; "skip" is unindexable, as a projection may decide.
projection echo() {
  return [](std::string_view payload, const record_info&) -> projection_result {
    if (payload == "skip") return unindexable{"skipped"};
    return std::string(payload);
  };
}

using entry_key = std::pair<std::string, std::string>;                // (log, record id)
using entries = std::map<entry_key, std::pair<std::uint64_t, std::string>>;  // version, projection

// What an index holds after applying `b` over `index` (absent and unindexable remove).
void apply(entries& index, const batch& b) {
  for (const auto& r : b.records) {
    entry_key key{r.log, r.record_id};
    if (r.state.kind == state_kind::record) index[key] = {r.state.version, r.state.projection};
    else index.erase(key);
  }
}

// The projection of `log`'s products table at `snapshot`.
void project_snapshot(store_snapshot& snapshot, const std::string& log, entries& out) {
  REQUIRE(snapshot.seek(products, {}));
  for (;;) {
    auto e = snapshot.next();
    REQUIRE(e);
    if (!*e) return;
    auto value = decode_value((*e)->value);
    REQUIRE(value);
    if (value->payload == "skip") continue;
    out[{log, std::string((*e)->id)}] = {value->version, std::string(value->payload)};
  }
}

struct two_logs {
  fake_store one{"one", "id-1"}, two{"two", "id-2"};
  fake_store::source s1{one}, s2{two};
  fake_store::reader r1{one}, r2{two};
  std::map<table_ref, projection> projections{{table_ref{"one", products}, echo()}, {table_ref{"two", products}, echo()}};
  tailer_core core{{{&s1, &r1}, {&s2, &r2}}, projections, {{"one", "id-1"}, {"two", "id-2"}}};
  manual_clock time;
  turn_budgets budget;
  entries index;  // what a backend applying every chunk holds

  two_logs() {
    one.commit({test::put(products, "seed", "1")}, 0, true);
    two.commit({test::put(products, "seed", "1")}, 0, true);
    const auto a = one.transactions().front(), b = two.transactions().front();
    REQUIRE_FALSE(core.install(cursor::make({log_position{"one", "id-1", a.sequence, a.time},
                                             log_position{"two", "id-2", b.sequence, b.time}})
                                   .value())
                      .fault);
    index[{"one", "seed"}] = {a.time, "1"};
    index[{"two", "seed"}] = {b.time, "1"};
  }
  tailer_chunk pull() {
    auto r = core.pull(budget, 1, time);
    if (r.fault) FAIL("unexpected fault: " << r.fault->text);
    if (r.chunk.delivery) apply(index, *r.chunk.delivery);
    return r.chunk;
  }
  // Pulls until the fence is reached (bounded: each pull makes progress or reaches it).
  void pull_to_fence() {
    for (int i = 0; i < 1000; ++i) {
      if (pull().fence_reached) return;
    }
    FAIL("the fence was never reached");
  }
  // The last transaction of `store` at or before `sequence`.
  static const wal_transaction& last_at(const fake_store& store, std::uint64_t sequence) {
    const wal_transaction* last = nullptr;
    for (const auto& t : store.transactions()) {
      if (t.sequence <= sequence) last = &t;
    }
    REQUIRE(last != nullptr);
    return *last;
  }
};

}  // namespace

TEST_CASE("tailer fence: fenced, a key changed after the fence is delivered with its value at the fence, and nothing beyond it is read until the fence is lifted", "[core][tailer][verify]") {
  two_logs h;
  auto [a1, ta1] = h.one.commit({test::put(products, "a", "v1")});
  auto fenced = h.core.fence();
  REQUIRE(fenced);
  CHECK(*fenced == std::vector<std::uint64_t>{h.one.latest(), h.two.latest()});
  CHECK(h.core.fenced());
  // Writers go on: "a" changes, "b" appears, in both logs.
  h.one.commit({test::put(products, "a", "v2"), test::put(products, "b", "v1")});
  h.two.commit({test::put(products, "c", "v1")});
  auto chunk = h.pull();
  REQUIRE(chunk.delivery);
  CHECK(chunk.fence_reached);
  CHECK_FALSE(chunk.end_of_log);  // commits wait beyond the fence
  REQUIRE(chunk.delivery->records.size() == 1);
  CHECK(chunk.delivery->records[0].state.projection == "v1");  // the latest is v2: read at the fence
  CHECK(chunk.delivery->records[0].state.version == ta1);
  CHECK(h.core.through()->find("one")->sequence == a1);
  // More pulls stay at the fence.
  auto again = h.pull();
  CHECK_FALSE(again.delivery);
  CHECK(again.fence_reached);
  CHECK_FALSE(again.end_of_log);
  CHECK(h.core.through()->find("one")->sequence == a1);
  // Lifted: the snapshots are handed over, and the tailer reads on.
  auto snapshots = h.core.lift_fence();
  CHECK(snapshots.size() == 2);
  CHECK_FALSE(h.core.fenced());
  CHECK(h.one.live_snapshots == 1);
  snapshots.clear();
  CHECK(h.one.live_snapshots == 0);
  auto after = h.pull();
  REQUIRE(after.delivery);
  CHECK_FALSE(after.fence_reached);
  CHECK(after.end_of_log);
  CHECK(h.index.at({"one", "a"}).second == "v2");
  CHECK(h.index.at({"one", "b"}).second == "v1");
  CHECK(h.index.at({"two", "c"}).second == "v1");
}

TEST_CASE("tailer fence: refused while not reading the logs, during a rebuild scan and when already fenced, and a fault of a pull lifts it", "[core][tailer][verify]") {
  fake_store store{"main", "id-main"};
  store.commit({test::put(ignored, "x", "1")}, 0, true);
  fake_store::source source{store};
  fake_store::reader reader{store};
  tailer_core core({{&source, &reader}}, {{table_ref{"main", products}, echo()}}, {{"main", "id-main"}});
  auto refused = core.fence();
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::invalid_argument);  // not installed
  REQUIRE_FALSE(core.install_from_start().fault);
  store.fail_reads = true;
  auto failed = core.fence();
  REQUIRE_FALSE(failed);
  CHECK(failed.error().value() == errc::io_error);
  CHECK_FALSE(core.fenced());
  store.fail_reads = false;
  store.commit({test::put(products, "a", "1")});
  REQUIRE(core.fence());
  auto twice = core.fence();
  REQUIRE_FALSE(twice);
  CHECK(twice.error().value() == errc::invalid_argument);
  CHECK(store.live_snapshots == 1);
  // A failing pull (its read at the snapshot) ends the reading, and the fence with it (its
  // snapshot released).
  store.fail_reads = true;
  manual_clock time;
  auto r = core.pull(turn_budgets{}, 1, time);
  CHECK(r.fault);
  CHECK_FALSE(core.fenced());
  CHECK(store.live_snapshots == 0);
  CHECK(core.lift_fence().empty());
  store.fail_reads = false;
  // A rebuild's scan: no fence until the logs are read again.
  REQUIRE_FALSE(core.capture_boundary("ix", 1, 1 << 20, time).fault);
  auto scanning = core.fence();
  REQUIRE_FALSE(scanning);
  CHECK(scanning.error().value() == errc::invalid_argument);
}

TEST_CASE("tailer fence: under random commits, cuts and fences in two logs, the index at fence_reached is exactly the projection of the fence's snapshots, at the last transaction of each at or before its snapshot", "[core][tailer][verify]") {
  int fences = 0;
  for (std::uint32_t seed = 1; seed <= 150; ++seed) {
    INFO("seed " << seed);
    std::mt19937 gen(seed);
    auto rng = [&gen] { return static_cast<std::uint32_t>(gen()); };
    two_logs h;
    // Small budgets: transactions cut across chunks, remainders carried into and out of fences.
    h.budget.max_chunk_records = 1 + rng() % 3;
    h.budget.max_transactions_per_turn = 1 + rng() % 4;
    std::vector<std::uint64_t> fence_at;
    for (int step = 0; step < 120; ++step) {
      const auto action = rng() % 10;
      if (action < 5) {
        auto& store = rng() % 2 ? h.one : h.two;
        std::vector<test::fake_op> ops;
        const auto n = 1 + rng() % 4;
        for (std::uint32_t i = 0; i < n; ++i) {
          const auto id = "r" + std::to_string(rng() % 6);
          const auto kind = rng() % 6;
          if (kind == 0) ops.push_back(test::del(products, id));
          else if (kind == 1) ops.push_back(test::put(products, id, "skip"));
          else if (kind == 2) ops.push_back(test::put(ignored, id, "x"));
          else ops.push_back(test::put(products, id, "p" + std::to_string(rng() % 100)));
        }
        store.commit(std::move(ops));
      } else if (action < 9) {
        const auto chunk = h.pull();
        if (!chunk.fence_reached) continue;
        ++fences;
        // The index stands exactly at the fence: through is each log's last transaction at or
        // before its snapshot, and the index holds the snapshots' projection.
        const auto& through = *h.core.through();
        CHECK(through.find("one")->sequence == two_logs::last_at(h.one, fence_at[0]).sequence);
        CHECK(through.find("two")->sequence == two_logs::last_at(h.two, fence_at[1]).sequence);
        auto snapshots = h.core.lift_fence();
        REQUIRE(snapshots.size() == 2);
        CHECK(snapshots[0]->sequence() == fence_at[0]);
        entries want;
        project_snapshot(*snapshots[0], "one", want);
        project_snapshot(*snapshots[1], "two", want);
        CHECK(h.index == want);
      } else if (!h.core.fenced()) {
        auto fenced = h.core.fence();
        REQUIRE(fenced);
        fence_at = *fenced;
      }
    }
    // Everything read in the end, fence or not: the index is the projection of the stores.
    h.core.lift_fence();
    for (int i = 0; i < 1000 && !h.pull().end_of_log; ++i) {
    }
    entries want;
    fake_store::reader r1{h.one}, r2{h.two};
    project_snapshot(*r1.snapshot().value(), "one", want);
    project_snapshot(*r2.snapshot().value(), "two", want);
    CHECK(h.index == want);
  }
  CHECK(fences > 300);  // the property was checked often
}

namespace {

// A log source that answers "nothing yet" for its next `stutters` calls, as the RocksDB one may
// around a WAL switch or a failed reopen, before it shows what its log holds.
class stuttering_source final : public log_source {
 public:
  explicit stuttering_source(fake_store& s) : inner_(s) {}
  int stutters = 0;
  const std::string& log_name() const noexcept override { return inner_.log_name(); }
  const std::string& identity() const noexcept override { return inner_.identity(); }
  result<wal_transaction> open(std::uint64_t sequence, index_time_t time) override { return inner_.open(sequence, time); }
  result<std::optional<wal_transaction>> next() override {
    if (stutters > 0) {
      --stutters;
      return std::optional<wal_transaction>{};
    }
    return inner_.next();
  }
  result<std::uint64_t> latest_sequence() const override { return inner_.latest_sequence(); }
  result<wal_retention> retention(std::uint64_t anchor, std::uint64_t now_ns) const override {
    return inner_.retention(anchor, now_ns);
  }
  std::uint64_t reopens() const noexcept override { return inner_.reopens(); }

 private:
  fake_store::source inner_;
};

// A reader whose snapshots claim one sequence less than they hold: what a store whose WAL shows a
// commit before its sequence is published would look like to the fence.
class lagging_reader final : public store_reader {
 public:
  explicit lagging_reader(fake_store& s) : inner_(s) {}
  result<std::optional<std::string>> read(std::uint32_t table, std::string_view id) override { return inner_.read(table, id); }
  result<std::uint64_t> latest_sequence() override { return inner_.latest_sequence(); }
  result<coverage_point> capture_coverage() override { return inner_.capture_coverage(); }
  std::uint64_t synced_sequence() const noexcept override { return inner_.synced_sequence(); }
  result<bool> sync_wal(std::uint64_t covering) override { return inner_.sync_wal(covering); }
  result<boundary_commit> commit_boundary(std::string_view id, epoch_t epoch) override {
    return inner_.commit_boundary(id, epoch);
  }
  result<std::unique_ptr<store_snapshot>> snapshot() override {
    auto s = inner_.snapshot();
    if (!s) return s.error();
    return std::unique_ptr<store_snapshot>(std::make_unique<lagging>(std::move(*s)));
  }
  result<table_estimate> estimate(std::uint32_t table) override { return inner_.estimate(table); }

 private:
  struct lagging final : store_snapshot {
    explicit lagging(std::unique_ptr<store_snapshot> s) : inner(std::move(s)) {}
    result<void> seek(std::uint32_t table, std::string_view after) override { return inner->seek(table, after); }
    result<std::optional<scan_entry>> next() override { return inner->next(); }
    std::uint64_t sequence() const noexcept override { return inner->sequence() - 1; }
    result<std::vector<std::optional<std::string>>> read_many(std::uint32_t table,
                                                              const std::vector<std::string_view>& ids) override {
      return inner->read_many(table, ids);
    }
    std::unique_ptr<store_snapshot> inner;
  };
  fake_store::reader inner_;
};

}  // namespace

TEST_CASE("tailer fence: a source that answers nothing yet before it has shown every transaction up to the snapshot does not reach the fence early", "[core][tailer][verify]") {
  fake_store store{"main", "id-main"};
  store.commit({test::put(products, "seed", "s")}, 0, true);
  stuttering_source source{store};
  fake_store::reader reader{store};
  tailer_core core({{&source, &reader}}, {{table_ref{"main", products}, echo()}}, {{"main", "id-main"}});
  const auto first = store.transactions().front();
  REQUIRE_FALSE(core.install(cursor::make({log_position{"main", "id-main", first.sequence, first.time}}).value()).fault);
  auto [a, ta] = store.commit({test::put(products, "a", "1")});
  REQUIRE(core.fence());
  source.stutters = 2;
  manual_clock time;
  for (int i = 0; i < 2; ++i) {
    auto r = core.pull(turn_budgets{}, 1, time);
    REQUIRE_FALSE(r.fault);
    CHECK_FALSE(r.chunk.delivery);
    CHECK_FALSE(r.chunk.fence_reached);  // "a" is not read yet
  }
  auto r = core.pull(turn_budgets{}, 1, time);
  REQUIRE_FALSE(r.fault);
  REQUIRE(r.chunk.delivery);
  CHECK(r.chunk.fence_reached);
  CHECK(core.through()->find("main")->sequence == a);
  (void)ta;
}

TEST_CASE("tailer fence: refused, and retryable, when the tailer already read a transaction its snapshot does not hold", "[core][tailer][verify]") {
  fake_store store{"main", "id-main"};
  store.commit({test::put(products, "seed", "s")}, 0, true);
  fake_store::source source{store};
  lagging_reader reader{store};
  tailer_core core({{&source, &reader}}, {{table_ref{"main", products}, echo()}}, {{"main", "id-main"}});
  const auto first = store.transactions().front();
  REQUIRE_FALSE(core.install(cursor::make({log_position{"main", "id-main", first.sequence, first.time}}).value()).fault);
  store.commit({test::put(products, "a", "1")});
  manual_clock time;
  REQUIRE_FALSE(core.pull(turn_budgets{}, 1, time).fault);  // read up to the latest sequence
  auto refused = core.fence();
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::io_error);
  CHECK_THAT(refused.error().message(), Catch::Contains("fence again later"));
  CHECK_FALSE(core.fenced());
  CHECK(store.live_snapshots == 0);
}
