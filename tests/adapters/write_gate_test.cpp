// adapters/write_gate: the writer gate's enforcement in primary_store::transaction::commit
// (protocol.md §13.5) over a real RocksDB store and real readiness-segment slots. The throttle's
// wait is injected (write_gate::set_sleeper), so the tests assert the delay asked for instead of
// measuring time.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <vector>

#include "adapters/primary_store_impl.hpp"
#include "adapters/readiness_segment.hpp"
#include "adapters/test_support.hpp"
#include "core/lag_gate.hpp"

using namespace dix;
using dix::test::temp_dir;
using std::chrono::microseconds;

namespace {

struct gated_store {
  temp_dir dir;
  std::shared_ptr<primary_store> store = test::open_store(dir / "db");
  std::shared_ptr<readiness_segment> segment = readiness_segment::attach(dir / "db", 8).value();
  std::vector<microseconds> waited;
  std::atomic<int> woken{0};

  gated_store() {
    REQUIRE(store->create_table(2));
    gate_of(*store).set_sleeper([this](microseconds d) { waited.push_back(d); });
  }
  // Registers `id` as projecting `table`; its slot's gate is returned for the test to set.
  std::shared_ptr<segment_slot> project(const std::string& id, std::uint32_t table, std::uint64_t token) {
    auto slot = segment->claim(id).value();
    gate_of(*store).add(table, write_gate::entry{id, token, slot, [this] { ++woken; }});
    return slot;
  }
  result<commit_info> put(std::uint32_t table, const std::string& key, txn_flags flags = txn_flags::none) {
    auto t = store->begin(flags);
    t.put(table, key, "v");
    return t.commit();
  }
};

}  // namespace

TEST_CASE("write gate: a writer hitting a throttled table waits the published delay and then commits", "[adapter][gate]") {
  gated_store g;
  auto slot = g.project("by-name", 1, 1);
  slot->set_lag_gate(2500);
  auto before = latest_sequence(*g.store);
  auto done = g.put(1, "a");
  REQUIRE(done);
  REQUIRE(g.waited.size() == 1);
  CHECK(g.waited[0] == microseconds{2500});
  CHECK(latest_sequence(*g.store) > before);
  CHECK(g.store->get(1, "a").value().has_value());
  CHECK(g.woken == 0);
}

TEST_CASE("write gate: the largest gate of the ids projecting the tables written decides", "[adapter][gate]") {
  gated_store g;
  auto a = g.project("a", 1, 1);
  auto b = g.project("b", 1, 2);
  auto c = g.project("c", 2, 3);
  a->set_lag_gate(1000);
  b->set_lag_gate(7000);
  c->set_lag_gate(9000);
  auto t = g.store->begin();
  t.put(1, "k", "v");
  t.put(2, "k", "v");
  REQUIRE(t.commit());
  REQUIRE(g.waited.size() == 1);
  CHECK(g.waited[0] == microseconds{9000});
  CHECK(g.store->admit(1).delay == microseconds{7000});
  CHECK(g.store->admit(1).backend_id == "b");
}

TEST_CASE("write gate: delays under a millisecond are owed by the committing thread and slept a millisecond at a time (decision 0060)",
          "[adapter][gate]") {
  gated_store g;
  g.project("a", 1, 1)->set_lag_gate(900);
  // Whatever this thread owed before (less than 1 ms), ten commits owe 9 ms more: nine sleeps of
  // exactly 1 ms, none longer, so no commit waits more than max_write_delay (at least 1 ms).
  for (int i = 0; i < 10; ++i) {
    auto t = g.store->begin();
    t.put(1, "k" + std::to_string(i), "v");
    REQUIRE(t.commit());
  }
  CHECK(g.waited == std::vector<microseconds>(9, microseconds{1000}));
}

TEST_CASE("write gate: a refused write leaves nothing in the store and wakes the id's local runners", "[adapter][gate][behaviour-24]") {
  gated_store g;
  auto slot = g.project("by-name", 1, 1);
  g.project("unrelated", 2, 2)->set_lag_gate(gate_exceeded);  // another table's gate plays no part here
  slot->set_lag_gate(gate_exceeded);
  auto before = latest_sequence(*g.store);
  auto refused = g.put(1, "a");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::index_lagging);
  CHECK(is_retryable(refused.error().value()));
  CHECK_THAT(refused.error().message(), Catch::Contains("by-name"));
  CHECK(latest_sequence(*g.store) == before);        // nothing written …
  CHECK_FALSE(g.store->get(1, "a").value().has_value());  // … and nothing readable
  CHECK(g.waited.empty());
  CHECK(g.woken == 1);  // by-name's runner only
  // A bare check wakes nobody.
  CHECK(g.store->admit(1).kind == admit_kind::reject);
  CHECK(g.woken == 1);
  // Any value above 1 000 000 is read as exceeded (formats.md §4.3).
  slot->set_lag_gate(1'000'001);
  CHECK_FALSE(g.put(1, "b"));
}

TEST_CASE("write gate: replicated and recovery writes, system transactions and unprojected tables never wait",
          "[adapter][gate][behaviour-23]") {
  gated_store g;
  g.project("by-name", 1, 1)->set_lag_gate(gate_exceeded);
  CHECK(g.put(1, "r", txn_flags::replicated));
  CHECK(g.put(1, "s", txn_flags::recovery));
  CHECK(commit_system(*g.store, {meta_op{op_kind::put, "gate-test", "x"}}));
  CHECK(g.put(2, "unprojected"));
  CHECK(g.waited.empty());
  CHECK(g.woken == 0);
  CHECK(g.store->get(1, "r").value().has_value());
}

TEST_CASE("write gate: an open gate admits at once, and removing a registration's entries ungates its tables", "[adapter][gate]") {
  gated_store g;
  auto slot = g.project("by-name", 1, 7);
  CHECK(g.put(1, "open"));
  CHECK(g.waited.empty());
  slot->set_lag_gate(gate_exceeded);
  CHECK_FALSE(g.put(1, "refused"));
  gate_of(*g.store).remove(7);
  CHECK(gate_of(*g.store).empty());
  CHECK(g.put(1, "after"));
  CHECK(g.store->admit(1).kind == admit_kind::open);
}

TEST_CASE("write gate: store_may_delay is false while every entry is open and true once any table's gate delays or refuses", "[adapter][gate]") {
  gated_store g;
  CHECK_FALSE(store_may_delay(*g.store));  // no entry at all
  auto a = g.project("a", 1, 1);
  auto c = g.project("c", 2, 3);
  CHECK_FALSE(store_may_delay(*g.store));  // entries, all open
  c->set_lag_gate(900);                    // a delay on another table than a commit may write
  CHECK(store_may_delay(*g.store));
  c->set_lag_gate(gate_open);
  a->set_lag_gate(gate_exceeded);          // a refusal
  CHECK(store_may_delay(*g.store));
  a->set_lag_gate(gate_open);
  CHECK_FALSE(store_may_delay(*g.store));
  // A test's admission hook decides instead of the gate: it may delay whatever the gate holds.
  set_admission_hook(*g.store, [](std::uint32_t) { return admission{}; });
  CHECK(store_may_delay(*g.store));
  set_admission_hook(*g.store, nullptr);
  CHECK_FALSE(store_may_delay(*g.store));
}
