// commit_tail and tail_log_source (decision 0064): a follower joins the tail at a transaction it
// read from its own source and takes the rest from memory; it leaves for its own source, re-opened
// exactly at its last transaction, when the tail was reset (a commit it did not get, a crash) or
// the transaction it needs was evicted; what it returns is the log's sequence either way.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/commit_tail.hpp"
#include "support/fake_store.hpp"

using namespace dix;
using dix::test::fake_store;

namespace {

std::vector<std::uint64_t> drain(log_source& s) {
  std::vector<std::uint64_t> out;
  for (;;) {
    auto t = s.next();
    REQUIRE(t);
    if (!*t) return out;
    out.push_back((*t)->sequence);
  }
}

std::vector<std::uint64_t> sequences_after(const fake_store& store, std::uint64_t after) {
  std::vector<std::uint64_t> out;
  for (const auto& t : store.transactions()) {
    if (t.sequence > after) out.push_back(t.sequence);
  }
  return out;
}

void commit_n(fake_store& store, int n, int ops = 1) {
  for (int i = 0; i < n; ++i) {
    std::vector<test::fake_op> o;
    for (int k = 0; k < ops; ++k) o.push_back(test::put(1, "r" + std::to_string(i * ops + k), "v"));
    store.commit(std::move(o));
  }
}

// A store with a tail of `limits`, one commit before anyone follows, and a source that read that
// one from the log, then `n` commits from memory: joined and caught up.
std::unique_ptr<log_source> joined(fake_store& store, int n, commit_tail::limits limits = {}) {
  store.share_tail(limits);
  store.commit({test::put(1, "a", "1")});
  auto source = store.tail_source();
  REQUIRE(source->open(1, 0));
  commit_n(store, n);
  drain(*source);
  auto* ts = dynamic_cast<tail_log_source*>(source.get());
  REQUIRE(ts != nullptr);
  REQUIRE(ts->in_tail());
  return source;
}

}  // namespace

TEST_CASE("commit tail: a follower joins at a transaction it read itself and takes the rest from memory", "[core][commit_tail]") {
  fake_store store("main", "id");
  store.share_tail({});
  store.commit({test::put(1, "a", "1")});  // 1: before anyone follows, so not in the tail
  CHECK(store.tail()->stats().appended == 0);
  auto source = store.tail_source();
  auto first = source->open(1, 0);
  REQUIRE(first);
  commit_n(store, 5, 2);  // 2, 4, 6, 8, 10: appended (the first after a hole: a new generation)
  CHECK(store.tail()->stats().appended == 5);
  const auto reads_before = store.log_reads();
  auto got = drain(*source);
  CHECK(got == sequences_after(store, 1));
  // It read the first from the log (the tail had no transaction 1 to join after), then joined.
  CHECK(store.log_reads() - reads_before == 1);
  auto* tail_source = dynamic_cast<tail_log_source*>(source.get());
  REQUIRE(tail_source != nullptr);
  CHECK(tail_source->in_tail());
  // Caught up in the tail; later commits come from memory alone, in order, with their contents.
  commit_n(store, 3);
  const auto reads_mid = store.log_reads();
  std::vector<wal_transaction> later;
  for (;;) {
    auto t = source->next();
    REQUIRE(t);
    if (!*t) break;
    later.push_back(**t);
  }
  CHECK(store.log_reads() == reads_mid);
  REQUIRE(later.size() == 3);
  const auto& log = store.transactions();
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& want = log[log.size() - 3 + i];
    CHECK(later[i].sequence == want.sequence);
    CHECK(later[i].time == want.time);
    REQUIRE(later[i].ops.size() == want.ops.size());
    CHECK(later[i].ops[0].key == want.ops[0].key);
    CHECK(later[i].ops[0].value == want.ops[0].value);
  }
  CHECK(source->reopens() == 0);
}

TEST_CASE("commit tail: a write that failed after its WAL record resets the tail, and the follower reads it from the log", "[core][commit_tail]") {
  fake_store store("main", "id");
  auto source = joined(store, 3);
  auto* ts = dynamic_cast<tail_log_source*>(source.get());
  const auto last = store.latest();
  store.skip_tail_once = true;  // in the log; the tail is reset instead of appended to
  commit_n(store, 1);
  CHECK(store.tail()->stats().resets == 1);
  const auto opens = store.log_opens();
  CHECK(drain(*source) == sequences_after(store, last));  // the failed write's record, once
  CHECK(store.log_opens() == opens + 1);  // one exact re-open at its last transaction
  CHECK(source->reopens() == 1);
  commit_n(store, 2);
  const auto reads = store.log_reads();
  CHECK(drain(*source).size() == 2);
  CHECK(store.log_reads() == reads + 1);  // the first of the new generation, then joined
  CHECK(ts->in_tail());
}

TEST_CASE("commit tail: a commit made while nothing followed ends the generation, so nobody waits at a stale end", "[core][commit_tail]") {
  fake_store store("main", "id");
  store.share_tail({});
  store.commit({test::put(1, "a", "1")});
  std::uint64_t last = 0;
  index_time_t last_time = 0;
  {
    auto first = store.tail_source();
    REQUIRE(first->open(1, 0));
    commit_n(store, 3);
    drain(*first);
    last = store.transactions().back().sequence;
    last_time = store.transactions().back().time;
  }  // gone: nothing follows
  commit_n(store, 1);  // not appended: missed() resets the tail
  CHECK(store.tail()->stats().held == 0);
  // A tailer resuming at the last transaction the tail held must not stand at that stale end: it
  // reads the commit made meanwhile from the log.
  auto second = store.tail_source();
  REQUIRE(second->open(last, last_time));
  CHECK(drain(*second) == sequences_after(store, last));
  // missed() on a tail that holds nothing of its generation is one load, no new generation.
  const auto resets = store.tail()->stats().resets;
  store.tail()->missed();
  CHECK(store.tail()->stats().resets == resets);
}

TEST_CASE("commit tail: an append that does not follow the last one starts a new generation (a guard)", "[core][commit_tail]") {
  commit_tail tail;
  tail.follow();
  auto make = [](std::uint64_t seq) {
    auto t = std::make_shared<wal_transaction>();
    t->sequence = seq;
    t->count = 1;
    t->time = 100 + seq;
    return t;
  };
  tail.append(make(1));
  tail.append(make(2));
  commit_tail::place p;
  REQUIRE(tail.join_after(2, 2, 102, p));
  CHECK(tail.next_after(p, 2).kind == commit_tail::answer::caught_up);
  tail.append(make(4));  // 3 never came
  CHECK(tail.stats().resets == 1);
  CHECK(tail.stats().held == 1);
  CHECK(tail.next_after(p, 2).kind == commit_tail::answer::outside);
}

TEST_CASE("commit tail: a reset (a failed write, a crash) is never stepped over", "[core][commit_tail]") {
  fake_store store("main", "id");
  auto source = joined(store, 2);
  const auto last = store.latest();
  store.tail()->reset();
  commit_n(store, 2);  // consecutive with the log, but after the reset: another generation
  auto got = drain(*source);
  CHECK(got == sequences_after(store, last));
  CHECK(source->reopens() == 1);
}

TEST_CASE("commit tail: a follower behind the tail's oldest reads on its own and joins again", "[core][commit_tail]") {
  fake_store store("main", "id");
  auto source = joined(store, 2, commit_tail::limits{4, 1u << 20});
  auto* ts = dynamic_cast<tail_log_source*>(source.get());
  const auto last = store.latest();
  commit_n(store, 10);  // the tail keeps the last 4
  CHECK(store.tail()->stats().held == 4);
  const auto reads = store.log_reads();
  auto got = drain(*source);
  CHECK(got == sequences_after(store, last));
  // The re-open returns 4, then 6 reads up to the tail's oldest (it holds the last 4: joined at 10).
  CHECK(store.log_reads() - reads == 6);
  CHECK(ts->in_tail());
  CHECK(source->reopens() == 1);
}

TEST_CASE("commit tail: bounded by bytes too, and the oldest go first", "[core][commit_tail]") {
  commit_tail tail(commit_tail::limits{1000, 2000});
  tail.follow();
  std::uint64_t seq = 1;
  for (int i = 0; i < 50; ++i) {
    auto t = std::make_shared<wal_transaction>();
    t->sequence = seq;
    t->count = 1;
    t->time = 100 + seq;
    t->data_size = 200;
    t->ops.resize(1);
    seq += 1;
    tail.append(t);
  }
  const auto s = tail.stats();
  CHECK(s.bytes <= 2000);
  CHECK(s.held >= 1);
  CHECK(s.evicted == 50 - s.held);
  commit_tail::place p;
  CHECK_FALSE(tail.join_after(1, 1, 101, p));  // evicted
  CHECK(tail.join_after(50, 50, 150, p));      // the newest: the follower stands at the end
  CHECK(tail.next_after(p, 50).kind == commit_tail::answer::caught_up);
  CHECK_FALSE(tail.join_after(50, 50, 999, p));  // another header time: another history
}

TEST_CASE("commit tail: open() is answered from the tail when it holds the anchor, with its header time", "[core][commit_tail]") {
  fake_store store("main", "id");
  store.share_tail({});
  store.commit({test::put(1, "a", "1")});
  auto follower = store.tail_source();  // following, so the commits below are appended
  REQUIRE(follower->open(1, 0));
  commit_n(store, 4);
  const auto& anchor = store.transactions()[2];
  auto source = store.tail_source();
  const auto opens = store.log_opens();
  auto first = source->open(anchor.sequence, anchor.time);
  REQUIRE(first);
  CHECK(first->sequence == anchor.sequence);
  CHECK(store.log_opens() == opens);  // no WAL open
  CHECK(drain(*source) == sequences_after(store, anchor.sequence));
  // Another header time at that sequence is not this log's transaction: the own source decides.
  auto other = store.tail_source();
  auto wrong = other->open(anchor.sequence, anchor.time + 1000);
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().value() == errc::log_retention);
}

TEST_CASE("commit tail: appended only while followed, and a source follows while open", "[core][commit_tail]") {
  fake_store store("main", "id");
  store.share_tail({});
  store.commit({test::put(1, "a", "1")});
  {
    auto source = store.tail_source();
    CHECK_FALSE(store.tail()->wanted());  // made, not open
    REQUIRE(source->open(1, 0));
    CHECK(store.tail()->wanted());
  }
  CHECK_FALSE(store.tail()->wanted());  // gone
  commit_n(store, 3);
  CHECK(store.tail()->stats().appended == 0);
  // An error closes the source, and it stops following.
  auto source = store.tail_source();
  REQUIRE(source->open(1, 0));
  store.purge_before(3);
  store.tail()->reset();
  auto failed = source->next();
  REQUIRE_FALSE(failed);
  CHECK_FALSE(store.tail()->wanted());
}

TEST_CASE("commit tail: a follower leaving the tail needs the WAL from its next transaction on, not the file of its last", "[core][commit_tail]") {
  fake_store store("main", "id");
  auto source = joined(store, 3, commit_tail::limits{4, 1u << 20});
  const auto last = store.latest();
  // While it reads from memory the WAL purges the file of its last transaction (a store idle past
  // its TTL), then a burst evicts past it.
  commit_n(store, 8);
  store.purge_before(last + 1);
  auto got = drain(*source);
  CHECK(got == sequences_after(store, last));
  CHECK(source->reopens() == 1);
  // Nothing more in the log after a generation ended: caught up, no open.
  store.tail()->reset();
  const auto opens = store.log_opens();
  auto none = source->next();
  REQUIRE(none);
  CHECK_FALSE(none->has_value());
  CHECK(store.log_opens() == opens);
  // Its next transaction purged too: log-retention, as from its own iterator.
  commit_n(store, 2);
  store.purge_before(store.latest());
  auto lost = source->next();
  REQUIRE_FALSE(lost);
  CHECK(lost.error().value() == errc::log_retention);
}

TEST_CASE("commit tail: a transaction larger than the byte bound is not held, and is read from the log", "[core][commit_tail]") {
  fake_store store("main", "id");
  auto source = joined(store, 2, commit_tail::limits{100, 600});
  const auto last = store.latest();
  store.commit({test::put(1, "big", std::string(1000, 'x'))});
  CHECK(store.tail()->stats().held == 0);
  commit_n(store, 2);
  CHECK(drain(*source) == sequences_after(store, last));
  CHECK(store.tail()->stats().bytes <= 600);
}

TEST_CASE("commit tail: the last follower's leaving empties it, a re-open of the only follower does not", "[core][commit_tail]") {
  fake_store store("main", "id");
  auto source = joined(store, 3);
  const auto& t = store.transactions()[2];
  const auto resets = store.tail()->stats().resets;
  REQUIRE(source->open(t.sequence, t.time));  // from the tail, still following
  CHECK(store.tail()->stats().resets == resets);
  CHECK(store.tail()->stats().held == 3);
  source.reset();
  CHECK(store.tail()->stats().held == 0);
  CHECK(store.tail()->stats().resets == resets + 1);
}
