// log_window (decision 0061): the tailers of one store read its log through one window; each
// transaction is decoded once (by the feeder), every follower still sees every transaction exactly
// once in order, a follower behind the window reads on its own and joins it, a feeder's fault is
// the follower's fault and drops the window.
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "core/log_window.hpp"
#include "support/fake_store.hpp"

using namespace dix;
using dix::test::fake_store;

namespace {

// A log source that fails its next next() on demand (as a RocksDB source meets an unreadable WAL).
class flaky_source final : public log_source {
 public:
  explicit flaky_source(fake_store& s) : inner_(s) {}
  bool fail_next = false;
  int fail_after = -1;  // fail the next() after this many more succeed (-1: never)
  int opens = 0;
  const std::string& log_name() const noexcept override { return inner_.log_name(); }
  const std::string& identity() const noexcept override { return inner_.identity(); }
  result<wal_transaction> open(std::uint64_t sequence, index_time_t time) override {
    ++opens;
    return inner_.open(sequence, time);
  }
  result<std::optional<wal_transaction>> next() override {
    if (fail_after == 0) {
      fail_after = -1;
      fail_next = true;
    } else if (fail_after > 0) {
      --fail_after;
    }
    if (fail_next) {
      fail_next = false;
      return error{errc::log_corrupt, "unreadable (injected)"};
    }
    return inner_.next();
  }
  result<std::uint64_t> latest_sequence() const override { return inner_.latest_sequence(); }
  result<wal_retention> retention(std::uint64_t a, std::uint64_t w) const override { return inner_.retention(a, w); }
  std::uint64_t reopens() const noexcept override { return 0; }

 private:
  fake_store::source inner_;
};

struct one_log {
  fake_store store{"main", "id-main"};
  one_log() {
    for (int i = 0; i < 20; ++i) store.commit({test::put(1, "k" + std::to_string(i % 7), "v" + std::to_string(i))});
  }
  const wal_transaction& first() const { return store.transactions().front(); }
  // Every sequence `s` returns after its open, until caught up.
  static std::vector<std::uint64_t> drain(log_source& s) {
    std::vector<std::uint64_t> seen;
    for (;;) {
      auto t = s.next();
      REQUIRE(t);
      if (!*t) return seen;
      seen.push_back((*t)->sequence);
    }
  }
  std::vector<std::uint64_t> after_first() const {
    std::vector<std::uint64_t> all;
    for (std::size_t i = 1; i < store.transactions().size(); ++i) all.push_back(store.transactions()[i].sequence);
    return all;
  }
};

}  // namespace

TEST_CASE("log window: two followers read every transaction once each, decoded once", "[core][log_window]") {
  one_log l;
  auto window = std::make_shared<log_window>(std::make_unique<fake_store::source>(l.store), log_window::limits{});
  windowed_log_source a(std::make_unique<fake_store::source>(l.store), window);
  windowed_log_source b(std::make_unique<fake_store::source>(l.store), window);
  REQUIRE(a.open(l.first().sequence, l.first().time));
  REQUIRE(b.open(l.first().sequence, l.first().time));
  CHECK(one_log::drain(a) == l.after_first());
  CHECK(one_log::drain(b) == l.after_first());
  CHECK(window->fed() == 19);     // the feeder read each once
  CHECK(window->served() == 38);  // and both followers took each from the window
  // New commits: the first at the end reads them on, the other takes them.
  l.store.commit({test::put(1, "new", "x")});
  auto next_a = a.next();
  REQUIRE(next_a);
  REQUIRE(*next_a);
  CHECK((*next_a)->sequence == l.store.latest());
  auto next_b = b.next();
  REQUIRE(next_b);
  REQUIRE(*next_b);
  CHECK((*next_b)->sequence == l.store.latest());
  CHECK(window->fed() == 20);
}

TEST_CASE("log window: a follower behind the window reads on its own, joins it, and misses nothing", "[core][log_window]") {
  one_log l;
  // A window of at most 4 transactions: the leader runs 19 ahead, the laggard is left behind.
  auto window = std::make_shared<log_window>(std::make_unique<fake_store::source>(l.store), log_window::limits{4, 1u << 20, 2, 2});
  windowed_log_source leader(std::make_unique<fake_store::source>(l.store), window);
  windowed_log_source laggard(std::make_unique<fake_store::source>(l.store), window);
  REQUIRE(leader.open(l.first().sequence, l.first().time));
  REQUIRE(laggard.open(l.first().sequence, l.first().time));
  CHECK(one_log::drain(leader) == l.after_first());
  const auto served = window->served();
  CHECK(one_log::drain(laggard) == l.after_first());
  // It read the first 14 or so itself and took the last ones (still in the window) from it.
  CHECK(window->served() > served);
  CHECK(window->served() - served < 19);
  CHECK(window->fed() == 19);
}

TEST_CASE("log window: below min_followers the follower reads on its own", "[core][log_window]") {
  one_log l;
  auto window = std::make_shared<log_window>(std::make_unique<fake_store::source>(l.store), log_window::limits{});
  windowed_log_source alone(std::make_unique<fake_store::source>(l.store), window);
  REQUIRE(alone.open(l.first().sequence, l.first().time));
  CHECK(one_log::drain(alone) == l.after_first());
  CHECK(window->fed() == 0);
  CHECK(window->served() == 0);
}

TEST_CASE("log window: a feeder's fault is the follower's and drops the window, which the next follower seeds again", "[core][log_window]") {
  one_log l;
  auto feeder = std::make_unique<flaky_source>(l.store);
  auto* flaky = feeder.get();
  auto window = std::make_shared<log_window>(std::move(feeder), log_window::limits{64, 1u << 20, 2, 1});
  windowed_log_source a(std::make_unique<fake_store::source>(l.store), window);
  windowed_log_source b(std::make_unique<fake_store::source>(l.store), window);
  REQUIRE(a.open(l.first().sequence, l.first().time));
  REQUIRE(b.open(l.first().sequence, l.first().time));
  auto one = a.next();
  REQUIRE(one);
  REQUIRE(*one);
  flaky->fail_next = true;
  auto failed = a.next();
  REQUIRE_FALSE(failed);
  CHECK(failed.error().value() == errc::log_corrupt);
  // `a` is closed, as after any source's error: open() again, at what it returned last.
  CHECK_FALSE(a.next());
  REQUIRE(a.open((*one)->sequence, (*one)->time));
  // `b` stands before the (dropped) window's start: it seeds it again at its own position.
  const auto opens = flaky->opens;
  CHECK(one_log::drain(b) == l.after_first());
  CHECK(flaky->opens == opens + 1);
  // And `a` reads on from where it reopened, through the window again.
  auto rest = one_log::drain(a);
  auto expected = l.after_first();
  expected.erase(expected.begin());
  CHECK(rest == expected);
}

TEST_CASE("log window: a fault met while reading ahead reaches only the follower that gets there", "[core][log_window]") {
  one_log l;
  auto feeder = std::make_unique<flaky_source>(l.store);
  auto* flaky = feeder.get();
  auto window = std::make_shared<log_window>(std::move(feeder), log_window::limits{64, 1u << 20, 2, 64});
  windowed_log_source a(std::make_unique<fake_store::source>(l.store), window);
  windowed_log_source b(std::make_unique<fake_store::source>(l.store), window);
  REQUIRE(a.open(l.first().sequence, l.first().time));
  REQUIRE(b.open(l.first().sequence, l.first().time));
  flaky->fail_after = 5;  // the feed reads 5 transactions, then meets the fault
  std::vector<std::uint64_t> seen;
  for (int i = 0; i < 5; ++i) {
    auto t = a.next();
    REQUIRE(t);
    REQUIRE(*t);
    seen.push_back((*t)->sequence);
  }
  auto expected = l.after_first();
  CHECK(seen == std::vector<std::uint64_t>(expected.begin(), expected.begin() + 5));
  // `b` is still served the five, as far as they go.
  for (int i = 0; i < 5; ++i) {
    auto t = b.next();
    REQUIRE(t);
    REQUIRE(*t);
    CHECK((*t)->sequence == expected[static_cast<std::size_t>(i)]);
  }
  // The sixth is where the fault was: the first to get there gets it.
  auto failed = a.next();
  REQUIRE_FALSE(failed);
  CHECK(failed.error().value() == errc::log_corrupt);
}

TEST_CASE("log window: a feed stops at the byte bound, and the window keeps at most its bound", "[core][log_window]") {
  one_log l;
  const auto txn_bytes = l.store.transactions()[1].data_size;
  // Room for about three transactions' data.
  auto window = std::make_shared<log_window>(std::make_unique<fake_store::source>(l.store),
                                             log_window::limits{64, 3 * txn_bytes, 2, 64});
  windowed_log_source a(std::make_unique<fake_store::source>(l.store), window);
  windowed_log_source b(std::make_unique<fake_store::source>(l.store), window);
  REQUIRE(a.open(l.first().sequence, l.first().time));
  REQUIRE(b.open(l.first().sequence, l.first().time));
  auto t = a.next();
  REQUIRE(t);
  REQUIRE(*t);
  CHECK(window->fed() <= 4);  // not 19: the feed stopped once it held max_bytes
  CHECK(one_log::drain(a).size() == 18);
  CHECK(one_log::drain(b) == l.after_first());  // b, left behind, read on its own where it had to
}

TEST_CASE("log window: a window whose readers stopped is dropped, and a follower ahead of it seeds it again", "[core][log_window]") {
  one_log l;
  auto window = std::make_shared<log_window>(std::make_unique<fake_store::source>(l.store), log_window::limits{64, 1u << 20, 2, 2, 3});
  windowed_log_source stopped(std::make_unique<fake_store::source>(l.store), window);
  windowed_log_source ahead(std::make_unique<fake_store::source>(l.store), window);
  const auto& t5 = l.store.transactions()[5];
  REQUIRE(stopped.open(l.first().sequence, l.first().time));
  REQUIRE(ahead.open(t5.sequence, t5.time));
  auto one = stopped.next();  // seeds the window at the start and reads two: then stops reading
  REQUIRE(one);
  const auto fed = window->fed();
  // `ahead` reads on its own; after a few asks from beyond the window's end the window goes, and
  // `ahead` seeds it at its own position.
  auto rest = one_log::drain(ahead);
  CHECK(rest.size() == 14);
  CHECK(window->fed() > fed);
  CHECK(window->served() > 1);
}
