// tailer_core (protocol.md §3, §4) over fake stores: collection, resolution, chunk cut,
// `through`, cursor-only batches, faults and the sync before delivery.
#include <catch2/catch.hpp>

#include <random>
#include <stdexcept>

#include "core/tailer_core.hpp"
#include "support/fake_store.hpp"

using namespace dix;
using dix::test::fake_store;

namespace {

constexpr std::uint32_t products = 1;
constexpr std::uint32_t other = 2;

projection echo() {
  return [](std::string_view payload, const record_info&) -> projection_result { return std::string(payload); };
}

struct harness {
  fake_store store{"main", "id-main"};
  fake_store::source source{store};
  fake_store::reader reader{store};
  manual_clock time;
  turn_budgets budget;
  std::map<table_ref, projection> projections{{table_ref{"main", products}, echo()}};
  std::vector<attached_log> attached{{"main", "id-main"}};  // the runtime's stores
  std::unique_ptr<tailer_core> core;

  harness() { store.commit({test::put(products, "seed", "s")}, 0, true); }

  cursor anchor() {
    const auto& first = store.transactions().front();
    return cursor::make({log_position{"main", "id-main", first.sequence, first.time}}).value();
  }
  void install(const cursor& c) {
    core = std::make_unique<tailer_core>(std::vector<tailer_log>{{&source, &reader}}, projections, attached);
    auto r = core->install(c);
    REQUIRE_FALSE(r.fault);
  }
  tailer_chunk pull() {
    auto r = core->pull(budget, 7, time);
    if (r.fault) FAIL("unexpected fault: " << r.fault->text);
    return r.chunk;
  }
};

const record_entry* find(const batch& b, const std::string& id) {
  for (const auto& r : b.records) {
    if (r.record_id == id) return &r;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("tailer: a turn delivers the record view, its transactions and the advanced cursor", "[core][tailer]") {
  harness h;
  h.install(h.anchor());
  auto [s1, t1] = h.store.commit({test::put(products, "a", "A1"), test::put(products, "b", "B1")});
  auto [s2, t2] = h.store.commit({test::del(products, "b")});
  auto chunk = h.pull();
  REQUIRE(chunk.delivery);
  const auto& b = *chunk.delivery;
  CHECK(b.epoch == 7);
  REQUIRE(b.transactions.size() == 2);
  CHECK(b.transactions[0].sequence == s1);
  CHECK(b.transactions[0].mutations.size() == 2);
  CHECK(b.transactions[1].sequence == s2);
  REQUIRE(b.records.size() == 2);
  CHECK(b.records[0].record_id == "a");
  CHECK(b.records[0].state.kind == state_kind::record);
  CHECK(b.records[0].state.projection == "A1");
  CHECK(b.records[0].state.version == t1);
  CHECK(b.records[1].state.kind == state_kind::absent);
  CHECK(b.records[1].log_version == t2);
  REQUIRE(b.through);
  CHECK(b.through->logs()[0].sequence == s2);
  CHECK(b.through->logs()[0].time == t2);
  CHECK(chunk.end_of_log);
  CHECK_FALSE(chunk.cut_open);
  CHECK(chunk.logs[0].read_sequence == s2);
  CHECK(b.bytes > 0);
  // Nothing new: nothing to deliver.
  auto idle = h.pull();
  CHECK_FALSE(idle.delivery);
  CHECK(idle.end_of_log);
}

TEST_CASE("tailer: a turn reads up to the log's latest sequence as it began, and leaves what is committed meanwhile to the next", "[core][tailer]") {
  harness h;
  h.install(h.anchor());
  h.store.commit({test::put(products, "a", "A1")});
  auto [s2, t2] = h.store.commit({test::put(products, "b", "B1")});
  // A writer commits once more while the turn reads the log: at its first read, and then again
  // at the next turn's first read.
  std::uint64_t during = 0;
  h.store.before_log_next = [&] {
    if (during == 0) during = h.store.commit({test::put(products, "c", "C1")}).first;
  };
  auto first = h.pull();
  REQUIRE(first.delivery);
  CHECK(first.delivery->through->find("main")->sequence == s2);
  CHECK(first.delivery->records.size() == 2);
  CHECK(find(*first.delivery, "c") == nullptr);
  CHECK(first.end_of_log);  // caught up with the log as the turn began
  REQUIRE(first.logs.size() == 1);
  CHECK(first.logs[0].read_sequence == s2);
  CHECK(first.logs[0].latest_sequence == during);  // the sync and the lag see the commit
  h.store.before_log_next = nullptr;
  auto second = h.pull();
  REQUIRE(second.delivery);
  CHECK(second.delivery->through->find("main")->sequence == during);
  REQUIRE(find(*second.delivery, "c") != nullptr);
  CHECK(second.end_of_log);
}

TEST_CASE("tailer: a key written in the first and third transaction is read once, after the third (behaviour 7)", "[core][tailer]") {
  harness h;
  h.install(h.anchor());
  h.store.commit({test::put(products, "k", "v1")});
  h.store.commit({test::put(products, "j", "x")});
  auto [s3, t3] = h.store.commit({test::put(products, "k", "v3")});
  auto reads_before = h.store.reads();
  auto chunk = h.pull();
  REQUIRE(chunk.delivery);
  CHECK(h.store.reads() - reads_before == 2);  // k and j, once each
  const auto* k = find(*chunk.delivery, "k");
  REQUIRE(k);
  CHECK(k->state.projection == "v3");
  CHECK(k->log_version == t3);
  CHECK(chunk.delivery->records.size() == 2);
  CHECK(chunk.delivery->records[0].record_id == "k");  // first-occurrence order
  (void)s3;
}

TEST_CASE("tailer: only unrelated commits give one cursor-only batch per turn, no primary read (behaviour 8)", "[core][tailer]") {
  harness h;
  h.install(h.anchor());
  h.store.commit({test::put(other, "x", "1")});
  auto [s2, t2] = h.store.commit({test::put(other, "y", "2")});
  auto reads_before = h.store.reads();
  auto chunk = h.pull();
  REQUIRE(chunk.delivery);
  CHECK(chunk.delivery->transactions.empty());
  CHECK(chunk.delivery->records.empty());
  REQUIRE(chunk.delivery->through);
  CHECK(chunk.delivery->through->logs()[0].sequence == s2);
  CHECK(h.store.reads() == reads_before);
  CHECK_FALSE(h.pull().delivery);
  (void)t2;
}

TEST_CASE("tailer: a transaction over max_chunk_records spans chunks and only the last advances through (behaviour 6)", "[core][tailer]") {
  harness h;
  h.budget.max_chunk_records = 2;
  auto start = h.anchor();
  h.install(start);
  auto [big, big_time] = h.store.commit({test::put(products, "a", "1"), test::put(products, "b", "2"),
                                         test::put(products, "c", "3"), test::put(products, "d", "4"),
                                         test::put(products, "e", "5")});
  auto first = h.pull();
  REQUIRE(first.delivery);
  CHECK(first.cut_open);
  CHECK(first.delivery->records.size() == 2);
  CHECK(*first.delivery->through == start);  // a cut chunk does not advance
  REQUIRE(first.delivery->transactions.size() == 1);
  CHECK(first.delivery->transactions[0].sequence == big);
  CHECK(first.delivery->transactions[0].mutations.size() == 2);

  auto second = h.pull();
  REQUIRE(second.delivery);
  CHECK(second.cut_open);
  CHECK(second.delivery->records[0].record_id == "c");
  CHECK(*second.delivery->through == start);

  auto third = h.pull();
  REQUIRE(third.delivery);
  CHECK_FALSE(third.cut_open);
  CHECK(third.delivery->records.size() == 1);
  CHECK(third.delivery->records[0].record_id == "e");
  CHECK(third.delivery->through->logs()[0].sequence == big);

  // A crash after the first chunk was durable: its cursor is still `start`, so the whole
  // transaction is redelivered from its first operation.
  h.install(start);
  auto again = h.pull();
  REQUIRE(again.delivery);
  CHECK(again.delivery->records[0].record_id == "a");
  CHECK(again.cut_open);
  (void)big_time;
}

TEST_CASE("tailer: max_chunk_bytes stops resolution and carries the rest", "[core][tailer]") {
  harness h;
  h.budget.max_chunk_bytes = 1024;
  h.install(h.anchor());
  std::string big(300, 'x');  // estimate per key: 1 + (8 + 300) + 300 bytes
  h.store.commit({test::put(products, "a", big)});
  auto [s2, t2] = h.store.commit({test::put(products, "b", big)});
  auto first = h.pull();
  REQUIRE(first.delivery);
  CHECK(first.delivery->records.size() == 2);  // the estimate reaches the cap only after b
  h.store.commit({test::put(products, "c", big)});
  h.store.commit({test::put(products, "d", big)});
  h.store.commit({test::put(products, "e", big)});
  auto second = h.pull();
  REQUIRE(second.delivery);
  CHECK(second.delivery->records.size() == 2);
  CHECK_FALSE(second.end_of_log);
  auto third = h.pull();
  REQUIRE(third.delivery);
  CHECK(third.delivery->records.size() == 1);
  CHECK(third.delivery->records[0].record_id == "e");
  CHECK(third.end_of_log);
  (void)s2;
  (void)t2;
}

TEST_CASE("tailer: max_transactions_per_turn stops between transactions", "[core][tailer]") {
  harness h;
  h.budget.max_transactions_per_turn = 2;
  h.install(h.anchor());
  for (int i = 0; i < 5; ++i) h.store.commit({test::put(products, "k" + std::to_string(i), "v")});
  CHECK(h.pull().delivery->transactions.size() == 2);
  CHECK(h.pull().delivery->transactions.size() == 2);
  auto last = h.pull();
  CHECK(last.delivery->transactions.size() == 1);
  CHECK(last.end_of_log);
}

namespace {

// A clock that moves 1 ms every time it is read, so the turn's time budget runs out.
class ticking_clock final : public clock {
 public:
  steady_time steady_now() const noexcept override { return now_ += std::chrono::milliseconds(1); }
  std::uint64_t wall_now_ns() const noexcept override { return 1; }

 private:
  mutable steady_time now_{};
};

}  // namespace

TEST_CASE("tailer: the time budget is checked every 16 operations and may cut a transaction", "[core][tailer]") {
  harness h;
  h.budget.max_milliseconds_per_turn = std::chrono::milliseconds(1);
  h.install(h.anchor());
  std::vector<test::fake_op> ops;
  for (int i = 0; i < 40; ++i) ops.push_back(test::put(products, "k" + std::to_string(100 + i), "v"));
  h.store.commit(ops);
  ticking_clock time;
  auto r = h.core->pull(h.budget, 1, time);
  REQUIRE_FALSE(r.fault);
  REQUIRE(r.chunk.delivery);
  CHECK(r.chunk.delivery->records.size() == 16);
  CHECK(r.chunk.cut_open);
}

TEST_CASE("tailer: unindexable projections and corrupt stored values are delivered as unindexable (behaviour 25)", "[core][tailer]") {
  harness h;
  h.projections[table_ref{"main", products}] = [](std::string_view payload, const record_info&) -> projection_result {
    if (payload == "bad") return unindexable{"no category"};  // not a valid code: normalised
    if (payload == "skip") return unindexable{"missing_field"};
    return std::string(payload);
  };
  h.install(h.anchor());
  h.store.commit({test::put(products, "a", "bad"), test::put(products, "b", "skip"), test::put(products, "c", "ok")});
  h.store.poke(products, "c", std::string(3, 'x'));  // shorter than the version: record-corrupt
  auto chunk = h.pull();
  REQUIRE(chunk.delivery);
  const auto& b = *chunk.delivery;
  CHECK(find(b, "a")->state.kind == state_kind::unindexable);
  CHECK(find(b, "a")->state.reason == "invalid-reason");
  CHECK(find(b, "b")->state.reason == "missing_field");
  CHECK(find(b, "c")->state.reason == "record-corrupt");
  CHECK(find(b, "c")->state.version == 0);
  CHECK(chunk.unindexable == 3);
  CHECK(b.through->logs()[0].sequence == h.store.latest() - 2);  // the cursor still advances
}

TEST_CASE("tailer: a throwing projection is runner-failed (behaviour 25)", "[core][tailer]") {
  harness h;
  h.projections[table_ref{"main", products}] = [](std::string_view, const record_info&) -> projection_result {
    throw std::runtime_error("boom");
  };
  h.install(h.anchor());
  h.store.commit({test::put(products, "a", "1")});
  auto r = h.core->pull(h.budget, 1, h.time);
  REQUIRE(r.fault);
  CHECK_FALSE(r.fault->transient);
  CHECK(r.fault->reason == readiness_reason::runner_failed);
}

TEST_CASE("tailer: a reload of a projected table is fault reload, of another table progress", "[core][tailer]") {
  harness h;
  h.install(h.anchor());
  h.store.commit({test::put(other, "x", "1")}, header_flag::reload);
  auto fine = h.pull();
  REQUIRE(fine.delivery);
  CHECK(fine.delivery->records.empty());
  h.store.commit({test::put(products, "x", "1")}, header_flag::reload);
  auto r = h.core->pull(h.budget, 1, h.time);
  REQUIRE(r.fault);
  CHECK(r.fault->reason == readiness_reason::reload);
}

TEST_CASE("tailer: system transactions are progress only", "[core][tailer]") {
  harness h;
  h.install(h.anchor());
  test::fake_op meta{op_kind::put, 0, "epoch/x", "12345678", true};
  auto [s, t] = h.store.commit({meta}, header_flag::system, true);
  auto chunk = h.pull();
  REQUIRE(chunk.delivery);
  CHECK(chunk.delivery->records.empty());
  CHECK(chunk.delivery->through->logs()[0].sequence == s);
  (void)t;
}

TEST_CASE("tailer: install verifies the cursor's logs, identities and anchors", "[core][tailer]") {
  harness h;
  auto good = h.anchor();
  tailer_core core({{&h.source, &h.reader}}, h.projections, {{"main", "id-main"}, {"aux", "id-aux"}});
  auto other_identity = cursor::make({log_position{"main", "someone-else", good.logs()[0].sequence, good.logs()[0].time}}).value();
  auto r = core.install(other_identity);
  REQUIRE(r.fault);
  CHECK(r.fault->reason == readiness_reason::log_missing);
  auto other_log = cursor::make({log_position{"aux", "id-aux", 1, 1}}).value();
  CHECK(core.install(other_log).fault->reason == readiness_reason::registration_changed);
  auto wrong_time = cursor::make({log_position{"main", "id-main", good.logs()[0].sequence, 5}}).value();
  CHECK(core.install(wrong_time).fault->reason == readiness_reason::log_retention);
  auto ok = core.install(good);
  REQUIRE_FALSE(ok.fault);
  CHECK(ok.anchor_ends == std::vector<std::uint64_t>{good.logs()[0].sequence});
}

TEST_CASE("tailer: a cursor naming a log that is not attached is log-missing, whatever the registration reads", "[core][tailer]") {
  harness h;
  auto good = h.anchor();
  tailer_core core({{&h.source, &h.reader}}, h.projections, h.attached);
  // Only `main` is attached: `aux` fails the per-entry check of protocol.md §3.1 before the
  // entries are compared with the registration's logs.
  auto only_aux = cursor::make({log_position{"aux", "id-aux", 1, 1}}).value();
  auto r = core.install(only_aux);
  REQUIRE(r.fault);
  CHECK(r.fault->reason == readiness_reason::log_missing);
  auto main_and_aux = cursor::make({good.logs()[0], log_position{"aux", "id-aux", 1, 1}}).value();
  auto both = core.install(main_and_aux);
  REQUIRE(both.fault);
  CHECK(both.fault->reason == readiness_reason::log_missing);
}

TEST_CASE("tailer: a cursor naming an attached log the registration does not read is registration-changed", "[core][tailer]") {
  harness h;
  auto good = h.anchor();
  // `aux` is attached (another store of the runtime) but holds none of the registration's tables.
  tailer_core core({{&h.source, &h.reader}}, h.projections, {{"main", "id-main"}, {"aux", "id-aux"}});
  auto only_aux = cursor::make({log_position{"aux", "id-aux", 1, 1}}).value();
  auto r = core.install(only_aux);
  REQUIRE(r.fault);
  CHECK(r.fault->reason == readiness_reason::registration_changed);
  auto main_and_aux = cursor::make({good.logs()[0], log_position{"aux", "id-aux", 1, 1}}).value();
  auto both = core.install(main_and_aux);
  REQUIRE(both.fault);
  CHECK(both.fault->reason == readiness_reason::registration_changed);
  REQUIRE_FALSE(core.install(good).fault);
}

TEST_CASE("tailer: a cursor entry with another identity than its attached store is log-missing, before the logs are compared", "[core][tailer]") {
  harness h;
  auto good = h.anchor();
  tailer_core core({{&h.source, &h.reader}}, h.projections, {{"main", "id-main"}, {"aux", "id-aux"}});
  // An entry the registration does not read, with the wrong identity: the entry's own check
  // comes first, so log-missing rather than registration-changed.
  auto stale_aux = cursor::make({good.logs()[0], log_position{"aux", "someone-else", 1, 1}}).value();
  auto r = core.install(stale_aux);
  REQUIRE(r.fault);
  CHECK(r.fault->reason == readiness_reason::log_missing);
  // The registration's own log with the wrong identity.
  auto stale_main = cursor::make({log_position{"main", "someone-else", good.logs()[0].sequence, good.logs()[0].time}}).value();
  auto m = core.install(stale_main);
  REQUIRE(m.fault);
  CHECK(m.fault->reason == readiness_reason::log_missing);
}

TEST_CASE("tailer: a failed primary read is a transient fault", "[core][tailer]") {
  harness h;
  h.install(h.anchor());
  h.store.commit({test::put(products, "a", "1")});
  h.store.fail_reads = true;
  auto r = h.core->pull(h.budget, 1, h.time);
  REQUIRE(r.fault);
  CHECK(r.fault->transient);
}

TEST_CASE("tailer: a batch is delivered only once the WAL it read is synced (protocol §4.8)", "[core][tailer][sync]") {
  harness h;
  h.install(h.anchor());
  h.store.commit({test::put(products, "a", "1")});  // not synced
  CHECK(h.store.synced() < h.store.latest());
  auto chunk = h.pull();
  REQUIRE(chunk.delivery);
  CHECK(chunk.wal_syncs == 1);
  CHECK(h.store.synced() == h.store.latest());
  h.store.commit({test::put(products, "b", "1")}, 0, true);  // a sync commit: nothing to do
  auto synced = h.pull();
  REQUIRE(synced.delivery);
  CHECK(synced.wal_syncs == 0);
  h.store.commit({test::put(products, "c", "1")});
  h.store.fail_sync = true;
  auto r = h.core->pull(h.budget, 1, h.time);
  REQUIRE(r.fault);
  CHECK(r.fault->transient);  // a failed SyncWAL: nothing delivered, retry later
}

TEST_CASE("tailer: two logs interleave by header time and each advances its own cursor entry", "[core][tailer]") {
  fake_store one{"one", "id-1"}, two{"two", "id-2"};
  one.commit({test::put(products, "seed", "1")}, 0, true);
  two.commit({test::put(products, "seed", "1")}, 0, true);
  fake_store::source s1{one}, s2{two};
  fake_store::reader r1{one}, r2{two};
  std::map<table_ref, projection> projections{{table_ref{"one", products}, echo()}, {table_ref{"two", products}, echo()}};
  tailer_core core({{&s1, &r1}, {&s2, &r2}}, projections, {{"one", "id-1"}, {"two", "id-2"}});
  auto a = one.transactions().front(), b = two.transactions().front();
  auto start = cursor::make({log_position{"one", "id-1", a.sequence, a.time}, log_position{"two", "id-2", b.sequence, b.time}}).value();
  REQUIRE_FALSE(core.install(start).fault);
  auto [x1, tx1] = one.commit({test::put(products, "x", "1")});
  auto [y1, ty1] = two.commit({test::put(products, "y", "1")});
  manual_clock time;
  auto r = core.pull(turn_budgets{}, 1, time);
  REQUIRE_FALSE(r.fault);
  REQUIRE(r.chunk.delivery);
  const auto& batch = *r.chunk.delivery;
  REQUIRE(batch.transactions.size() == 2);
  CHECK(batch.transactions[0].log == "one");
  CHECK(batch.transactions[1].log == "two");
  CHECK(batch.through->find("one")->sequence == x1);
  CHECK(batch.through->find("two")->sequence == y1);
  (void)tx1;
  (void)ty1;
}

namespace {

void check_same(const tailer_chunk& kept, const tailer_chunk& again) {
  CHECK(kept.cut_open == again.cut_open);
  CHECK(kept.end_of_log == again.end_of_log);
  CHECK(kept.transactions_read == again.transactions_read);
  CHECK(kept.bytes_read == again.bytes_read);
  CHECK(kept.primary_reads == again.primary_reads);
  CHECK(kept.unindexable == again.unindexable);
  REQUIRE(bool(kept.delivery) == bool(again.delivery));
  if (!kept.delivery) return;
  const auto& a = *kept.delivery;
  const auto& b = *again.delivery;
  CHECK(a.epoch == b.epoch);
  CHECK(a.bytes == b.bytes);
  CHECK(a.through == b.through);
  REQUIRE(a.transactions.size() == b.transactions.size());
  for (std::size_t i = 0; i < a.transactions.size(); ++i) {
    const auto& x = a.transactions[i];
    const auto& y = b.transactions[i];
    CHECK(x.log == y.log);
    CHECK(x.sequence == y.sequence);
    CHECK(x.time == y.time);
    REQUIRE(x.mutations.size() == y.mutations.size());
    for (std::size_t m = 0; m < x.mutations.size(); ++m) {
      CHECK(x.mutations[m].record == y.mutations[m].record);
      CHECK(x.mutations[m].log_version == y.mutations[m].log_version);
    }
  }
  REQUIRE(a.records.size() == b.records.size());
  for (std::size_t i = 0; i < a.records.size(); ++i) {
    const auto& x = a.records[i];
    const auto& y = b.records[i];
    CHECK(x.log == y.log);
    CHECK(x.table == y.table);
    CHECK(x.record_id == y.record_id);
    CHECK(x.log_version == y.log_version);
    CHECK(x.state.kind == y.state.kind);
    CHECK(x.state.version == y.state.version);
    CHECK(x.state.projection == y.state.projection);
    CHECK(x.state.reason == y.state.reason);
  }
}

}  // namespace

TEST_CASE("tailer: continuing the kept collection delivers exactly what collecting the remainder again would", "[core][tailer]") {
  // Two cores over one store, with the same budgets and clocks that tick on every read: one keeps
  // what it collected beyond each chunk, the other forgets it before every turn. Small chunk and
  // time budgets cut collection and resolution everywhere, also inside transactions, and keys
  // recur, also keys already delivered in the previous chunk.
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    INFO("seed " << seed);
    std::mt19937 random(seed);
    auto pick = [&](std::uint32_t low, std::uint32_t high) {
      return std::uniform_int_distribution<std::uint32_t>(low, high)(random);
    };
    fake_store store{"main", "id-main"};
    store.commit({test::put(products, "seed", "s")}, 0, true);
    fake_store::source keeps_source{store}, forgets_source{store};
    fake_store::reader keeps_reader{store}, forgets_reader{store};
    std::map<table_ref, projection> projections{{table_ref{"main", products}, echo()}};
    const std::vector<attached_log> attached{{"main", "id-main"}};
    tailer_core keeps({{&keeps_source, &keeps_reader}}, projections, attached);
    tailer_core forgets({{&forgets_source, &forgets_reader}}, projections, attached);
    const auto& first = store.transactions().front();
    auto start = cursor::make({log_position{"main", "id-main", first.sequence, first.time}}).value();
    REQUIRE_FALSE(keeps.install(start).fault);
    REQUIRE_FALSE(forgets.install(start).fault);
    ticking_clock keeps_time, forgets_time;
    std::size_t cut = 0;
    for (int turn = 0; turn < 150; ++turn) {
      for (auto n = pick(0, 2); n > 0; --n) {
        std::vector<test::fake_op> ops;
        for (auto size = pick(1, pick(0, 3) == 0 ? 120 : 12); size > 0; --size) {
          auto id = "k" + std::to_string(pick(0, 40));
          switch (pick(0, 5)) {
            case 0: ops.push_back(test::del(products, id)); break;
            case 1: ops.push_back(test::put(other, id, "o")); break;
            default: ops.push_back(test::put(products, id, std::string(pick(1, 100), 'v'))); break;
          }
        }
        store.commit(ops);
      }
      turn_budgets budget;
      budget.max_chunk_records = pick(1, 40);
      budget.max_milliseconds_per_turn = std::chrono::milliseconds(pick(1, 8));
      budget.max_transactions_per_turn = pick(1, 6);
      if (pick(0, 3) == 0) budget.max_chunk_bytes = 1024;
      forgets.test_forget_collection();
      auto a = keeps.pull(budget, 3, keeps_time);
      auto b = forgets.pull(budget, 3, forgets_time);
      REQUIRE_FALSE(a.fault);
      REQUIRE_FALSE(b.fault);
      check_same(a.chunk, b.chunk);
      if (a.chunk.cut_open) ++cut;
    }
    CHECK(cut > 0);  // the seeds do cut transactions
  }
}

TEST_CASE("tailer: the rebuild's retention fit fails log-retention when the scan would outlast the WAL TTL, or when the WAL written meanwhile would pass the size limit's headroom (protocol 11.5)", "[core][tailer][rebuild]") {
  harness h;
  for (int i = 0; i < 10; ++i) h.store.commit({test::put(products, "p" + std::to_string(i), std::string(98, 'x'))}, 0, true);
  // 11 live records of about 100 bytes: at 1 byte/s the scan is estimated at about 1 100 s.
  auto capture = [&](std::uint64_t ttl_s) {
    tailer_core core(std::vector<tailer_log>{{&h.source, &h.reader, ttl_s}}, h.projections, h.attached);
    return core.capture_boundary("idx", 3, 1, h.time);
  };
  auto fits = capture(0);
  REQUIRE_FALSE(fits.fault);
  CHECK(fits.found.estimated_bytes >= 1000);

  auto ttl = capture(600);  // a 10-minute TTL against a ~18-minute scan
  REQUIRE(ttl.fault);
  CHECK(ttl.fault->reason == readiness_reason::log_retention);
  CHECK_THAT(ttl.fault->text, Catch::Contains("longer than the WAL TTL of 600 s"));

  // The size half: 800 WAL bytes/s for ~1 100 s (~880 kB) against 1 MB of headroom fits ...
  h.store.retention_figures.retention_headroom_bytes = 1'000'000;
  h.store.retention_figures.wal_write_bytes_per_s = 800;
  REQUIRE_FALSE(capture(0).fault);
  // ... against 500 kB it does not; unlimited (−1) or an unknown rate (0) never fails.
  h.store.retention_figures.retention_headroom_bytes = 500'000;
  auto size = capture(0);
  REQUIRE(size.fault);
  CHECK(size.fault->reason == readiness_reason::log_retention);
  CHECK_THAT(size.fault->text, Catch::Contains("800 WAL bytes/s and its WAL size limit leaves 500000 bytes"));
  h.store.retention_figures.wal_write_bytes_per_s = 0;
  CHECK_FALSE(capture(0).fault);
  h.store.retention_figures.wal_write_bytes_per_s = 800;
  h.store.retention_figures.retention_headroom_bytes = -1;
  CHECK_FALSE(capture(0).fault);
}

TEST_CASE("tailer: an install after an abandoned scan releases the scan's snapshots", "[core][tailer][rebuild]") {
  harness h;
  for (int i = 0; i < 5; ++i) h.store.commit({test::put(products, "p" + std::to_string(i), "v")}, 0, true);
  tailer_core core(std::vector<tailer_log>{{&h.source, &h.reader}}, h.projections, h.attached);
  auto boundary = core.capture_boundary("idx", 3, 0, h.time);
  REQUIRE_FALSE(boundary.fault);
  REQUIRE(boundary.found.boundary);
  turn_budgets one = h.budget;
  one.max_chunk_records = 1;
  auto chunk = core.scan(one, 3, h.time);
  REQUIRE_FALSE(chunk.fault);
  REQUIRE_FALSE(chunk.step.last);
  CHECK(h.store.live_snapshots == 1);  // the scan holds it
  // The attempt failed elsewhere (a delivery, the backend): the runner reinstalls a cursor.
  auto installed = core.install(*boundary.found.boundary);
  REQUIRE_FALSE(installed.fault);
  CHECK(h.store.live_snapshots == 0);
}

TEST_CASE("tailer: tailers sharing a store's reads take each other's values only when read after the last occurrence", "[core][tailer]") {
  // Decision 0061: two registrations' tailers on one store; the second resolves from the first's
  // reads, and reads for itself what changed after them; its batches are the ones it would have cut alone.
  fake_store store{"main", "id-main"};
  store.share_reads(shared_reads::limits{});
  store.commit({test::put(products, "seed", "s")}, 0, true);
  const auto& first = store.transactions().front();
  const auto start = cursor::make({log_position{"main", "id-main", first.sequence, first.time}}).value();
  std::map<table_ref, projection> projections{{table_ref{"main", products}, echo()}};
  std::vector<attached_log> attached{{"main", "id-main"}};
  manual_clock time;
  turn_budgets budget;
  struct follower {
    fake_store::source source;
    fake_store::reader reader;
    tailer_core core;
    follower(fake_store& s, const std::map<table_ref, projection>& p, const std::vector<attached_log>& a)
      : source(s), reader(s), core(std::vector<tailer_log>{{&source, &reader}}, p, a) {}
  };
  follower one(store, projections, attached), two(store, projections, attached);
  REQUIRE_FALSE(one.core.install(start).fault);
  REQUIRE_FALSE(two.core.install(start).fault);
  REQUIRE(store.shares()->active());
  auto pull = [&](follower& f) {
    auto r = f.core.pull(budget, 7, time);
    REQUIRE_FALSE(r.fault);
    return r.chunk;
  };

  store.commit({test::put(products, "a", "A1"), test::put(products, "b", "B1")});
  auto c1 = pull(one);
  CHECK(c1.primary_reads == 1);
  const auto reads = store.reads();
  auto c2 = pull(two);
  CHECK(c2.primary_reads == 0);  // both values from the first tailer's read
  CHECK(store.reads() == reads);
  REQUIRE(c2.delivery);
  CHECK(c2.delivery->records == c1.delivery->records);
  CHECK(store.shares()->count().hits == 2);

  // `a` changes after the first tailer's read: the second reads it for itself, `b` is still shared.
  store.commit({test::put(products, "a", "A2"), test::put(products, "b", "B1")});
  store.commit({test::put(products, "a", "A3")});
  auto c3 = pull(one);  // reads a and b after both commits
  store.commit({test::put(products, "a", "A4")});
  auto c4 = pull(two);  // a's last occurrence (A4) is after one's read: read again; b is not
  REQUIRE(c4.delivery);
  CHECK(c4.primary_reads == 1);
  const auto* a = find(*c4.delivery, "a");
  const auto* b = find(*c4.delivery, "b");
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->state.projection == "A4");
  CHECK(b->state.projection == "B1");
  CHECK(store.shares()->count().hits == 3);
  (void)c3;
}

TEST_CASE("tailer: a fenced tailer resolves at its snapshot even when a newer shared read is there", "[core][tailer]") {
  // Decision 0061: the verify fence (decision 0056) resolves at its snapshot; another tailer's
  // read of the latest state must not stand in for it.
  fake_store store{"main", "id-main"};
  store.share_reads(shared_reads::limits{1u << 20, 1});
  store.commit({test::put(products, "seed", "s")}, 0, true);
  const auto& first = store.transactions().front();
  std::map<table_ref, projection> projections{{table_ref{"main", products}, echo()}};
  fake_store::source source{store};
  fake_store::reader reader{store};
  tailer_core core(std::vector<tailer_log>{{&source, &reader}}, projections, {{"main", "id-main"}});
  REQUIRE_FALSE(core.install(cursor::make({log_position{"main", "id-main", first.sequence, first.time}}).value()).fault);
  manual_clock time;
  store.commit({test::put(products, "a", "A1")});
  REQUIRE(core.fence());
  store.commit({test::put(products, "a", "A2")});
  // Another tailer read `a` after both commits and recorded it.
  std::vector<std::string_view> ids{"a"};
  store.shares()->record(products, ids, {store.value(products, "a")}, store.latest());
  auto r = core.pull(turn_budgets{}, 7, time);
  REQUIRE_FALSE(r.fault);
  REQUIRE(r.chunk.delivery);
  const auto* a = find(*r.chunk.delivery, "a");
  REQUIRE(a);
  CHECK(a->state.projection == "A1");
  CHECK(r.chunk.fence_reached);
  CHECK(store.shares()->count().hits == 0);
}
