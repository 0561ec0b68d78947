#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <fstream>
#include <thread>

#include "adapters/rocksdb_log_source.hpp"
#include "adapters/store_ports.hpp"
#include "adapters/test_support.hpp"
#include "core/clock.hpp"
#include "core/log_merge.hpp"

using namespace dix;
using dix::test::temp_dir;

namespace {

// Pulls until caught up.
std::vector<wal_transaction> drain(log_source& source) {
  std::vector<wal_transaction> out;
  for (;;) {
    auto next = source.next().value();
    if (!next) return out;
    out.push_back(std::move(*next));
  }
}

// What `source` (opened at the anchor `after`) read while a writer thread made 20 000 one-record
// commits: how many, and whether each followed the last (in order, none twice). The two-minute
// bound guards against a hang (a source standing "caught up" while commits wait), not a timing.
struct followed {
  int seen = 0;
  bool ordered = true;
};
constexpr int writer_commits = 20000;
followed follow_a_writer(primary_store& s, log_source& source, std::uint64_t after) {
  std::thread writer([&] {
    for (int i = 0; i < writer_commits; ++i) test::put_records(s, "w" + std::to_string(i) + "-", 1);
  });
  followed out;
  std::uint64_t expected = after + 1;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (out.seen < writer_commits && std::chrono::steady_clock::now() < give_up) {
    auto next = source.next();
    if (!next) {
      out.ordered = false;
      UNSCOPED_INFO(next.error().to_string());
      break;
    }
    if (!*next) continue;
    out.ordered = out.ordered && (*next)->sequence == expected;
    expected = (*next)->end_sequence() + 1;
    ++out.seen;
  }
  writer.join();
  return out;
}

}  // namespace

TEST_CASE("log source: exact resume returns the anchor, then the transactions after it", "[adapter][tailer]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto a = test::put_records(*s, "a", 2);
  auto b = test::put_records(*s, "b", 3);
  auto c = test::put_records(*s, "c", 1);
  rocksdb_log_source source(s);
  auto anchor = source.open(a.sequence, a.time).value();
  CHECK(anchor.sequence == a.sequence);
  CHECK(anchor.time == a.time);
  CHECK(anchor.end_sequence() == a.sequence + 1);
  auto rest = drain(source);
  REQUIRE(rest.size() == 2);
  CHECK(rest[0].sequence == b.sequence);
  CHECK(rest[0].ops.size() == 3);
  CHECK(rest[0].ops[0].table == 1);
  CHECK(rest[0].ops[0].key == "b0");
  CHECK(rest[1].sequence == c.sequence);
  CHECK(source.reopens() == 0);
}

TEST_CASE("log source: a log read from its start begins at sequence 1", "[adapter][tailer]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  rocksdb_log_source source(s);
  auto first = source.open(1, 0).value();
  CHECK(first.sequence == 1);
  CHECK(source.open(0, 0).error().value() == errc::invalid_argument);
}

TEST_CASE("log source: an anchor whose WAL file was purged is log-retention although RocksDB answers OK (behaviour 1)", "[adapter][tailer][retention]") {
  temp_dir dir;
  commit_info anchor;
  {
    auto s = test::open_store(dir / "db");
    anchor = test::put_records(*s, "old", 3);
    test::switch_wal(*s);  // the anchor's WAL file is archived
    test::put_records(*s, "new", 2);
    REQUIRE(s->close());
  }
  auto archived = test::wal_files(dir / "db", true);
  REQUIRE_FALSE(archived.empty());
  for (auto& f : archived) std::filesystem::remove(f);  // purged while the store was closed

  auto s = test::open_store(dir / "db");
  {
    // What RocksDB itself does: OK, and a later batch.
    std::unique_ptr<rocksdb::TransactionLogIterator> it;
    REQUIRE(test::raw_db(*s).GetUpdatesSince(anchor.sequence, &it).ok());
    REQUIRE(it->Valid());
    CHECK(it->GetBatch().sequence > anchor.sequence);
  }
  rocksdb_log_source source(s);
  auto r = source.open(anchor.sequence, anchor.time);
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::log_retention);
  CHECK_THAT(r.error().message(), Catch::Contains("purged"));
  // Nothing is delivered afterwards either: the source stays closed.
  CHECK_FALSE(source.next());
}

TEST_CASE("log source: a damaged record at the anchor inside the retained WAL is log-corrupt, not log-retention", "[adapter][tailer][corrupt]") {
  temp_dir dir;
  auto anchor = test::make_damaged_anchor(dir / "db");
  auto s = test::open_store(dir / "db");
  rocksdb_log_source source(s);
  // RocksDB drops the damaged record and answers with a later batch, as it does for a purge; but
  // the oldest retained file still starts at or before the anchor, so nothing was purged.
  REQUIRE(source.retention(anchor.sequence, 0).value().wal_oldest_sequence <= anchor.sequence);
  auto r = source.open(anchor.sequence, anchor.time);
  REQUIRE_FALSE(r);
  INFO(r.error().message());
  CHECK(r.error().value() == errc::log_corrupt);
  CHECK_THAT(r.error().message(), Catch::Contains("missing in between") && Catch::Contains("not purged"));
  CHECK_FALSE(source.next());
}

TEST_CASE("log source: a store whose every WAL file was deleted gives an invalid iterator, read as log-retention (behaviour 1)", "[adapter][tailer][retention]") {
  temp_dir dir;
  commit_info anchor;
  {
    auto s = test::open_store(dir / "db");
    anchor = test::put_records(*s, "k", 3);
    test::switch_wal(*s);
    REQUIRE(s->close());
  }
  for (auto& f : test::wal_files(dir / "db", true)) std::filesystem::remove(f);
  for (auto& f : test::wal_files(dir / "db", false)) std::filesystem::remove(f);
  auto s = open_read_only(dir / "db", "main").value();
  {
    std::unique_ptr<rocksdb::TransactionLogIterator> it;
    REQUIRE(test::raw_db(*s).GetUpdatesSince(anchor.sequence, &it).ok());
    CHECK_FALSE(it->Valid());
    CHECK(it->status().ok());
  }
  rocksdb_log_source source(s);
  auto r = source.open(anchor.sequence, anchor.time);
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::log_retention);
}

TEST_CASE("log source: an anchor at the right sequence with another header time is log-retention (behaviour 3)", "[adapter][tailer][retention]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto a = test::put_records(*s, "a", 2);
  rocksdb_log_source source(s);
  auto r = source.open(a.sequence, a.time + 1);
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::log_retention);
  CHECK_THAT(r.error().message(), Catch::Contains("header time"));
}

TEST_CASE("log source: an anchor inside a batch or beyond the end is log-retention", "[adapter][tailer][retention]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto a = test::put_records(*s, "a", 3);
  rocksdb_log_source source(s);
  CHECK(source.open(a.sequence + 1, 0).error().value() == errc::log_retention);  // an earlier batch
  CHECK(source.open(a.sequence + 100, 0).error().value() == errc::log_retention);  // NotFound
}

TEST_CASE("log source: Next() after the iterator went invalid continues on RocksDB 7.8.3", "[adapter][tailer][rocksdb]") {
  // Pins the RocksDB behaviour the tailer relies on (protocol.md §3.4).
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto first = test::put_records(*s, "a", 1);
  std::unique_ptr<rocksdb::TransactionLogIterator> it;
  REQUIRE(test::raw_db(*s).GetUpdatesSince(first.sequence, &it).ok());
  REQUIRE(it->Valid());
  it->Next();
  REQUIRE_FALSE(it->Valid());
  REQUIRE(it->status().ok());
  auto second = test::put_records(*s, "b", 1);
  it->Next();
  REQUIRE(it->Valid());
  CHECK(it->GetBatch().sequence == second.sequence);
}

TEST_CASE("log source: a caught-up source picks up new commits without re-opening (behaviour 4)", "[adapter][tailer]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto a = test::put_records(*s, "a", 1);
  rocksdb_log_source source(s);
  REQUIRE(source.open(a.sequence, a.time));
  CHECK(drain(source).empty());
  for (int round = 0; round < 50; ++round) {
    auto c = test::put_records(*s, "r" + std::to_string(round), 2);
    auto got = drain(source);
    REQUIRE(got.size() == 1);
    CHECK(got[0].sequence == c.sequence);
    CHECK(got[0].time == c.time);
  }
  CHECK(source.reopens() == 0);  // log_reopens does not grow with commits
}

TEST_CASE("log source: tailing a concurrent writer steps only onto complete batches and never re-opens without a WAL switch (decision 0026)", "[adapter][tailer]") {
  // Stepping the iterator while a batch is being written made RocksDB answer a sticky TryAgain
  // (the reader met the batch half written after LastSequence had moved on); its re-open scans
  // the live WAL file from its start, tens of ms at ~10 MB. No WAL switch happens here (2 MB of
  // writes, the default 64 MiB memtable).
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto a = test::put_records(*s, "a", 1);
  rocksdb_log_source source(s);
  REQUIRE(source.open(a.sequence, a.time));
  auto got = follow_a_writer(*s, source, a.sequence);
  CHECK(got.seen == writer_commits);
  CHECK(got.ordered);
  CHECK(source.reopens() == 0);
}

TEST_CASE("log source: a WAL switch causes exactly one checked re-open (behaviour 4)", "[adapter][tailer]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto a = test::put_records(*s, "a", 1);
  rocksdb_log_source source(s);
  REQUIRE(source.open(a.sequence, a.time));
  auto b = test::put_records(*s, "b", 1);
  REQUIRE(drain(source).size() == 1);
  test::switch_wal(*s);
  CHECK(drain(source).empty());  // nothing new yet: no re-open needed
  auto c = test::put_records(*s, "c", 2);
  auto d = test::put_records(*s, "d", 1);
  auto got = drain(source);
  REQUIRE(got.size() == 2);
  CHECK(got[0].sequence == c.sequence);
  CHECK(got[1].sequence == d.sequence);
  CHECK(source.reopens() == 1);
  for (int i = 0; i < 10; ++i) test::put_records(*s, "e" + std::to_string(i), 1);
  CHECK(drain(source).size() == 10);
  CHECK(source.reopens() == 1);
  (void)b;
}

TEST_CASE("log source: a table created after the source opened is decoded after one map refresh", "[adapter][tailer]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto a = test::put_records(*s, "a", 1);
  rocksdb_log_source source(s);
  REQUIRE(source.open(a.sequence, a.time));
  REQUIRE(s->create_table(42));
  test::put_records(*s, "x", 2, 42);
  auto got = drain(source);
  REQUIRE(got.size() == 1);
  CHECK(got[0].ops[0].table == 42);
}

TEST_CASE("log source: a batch written around primary_store is log-corrupt", "[adapter][tailer][corrupt]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto a = test::put_records(*s, "a", 1);
  rocksdb_log_source source(s);
  REQUIRE(source.open(a.sequence, a.time));
  auto& p = primary_store_access::get(*s);
  REQUIRE(p.db->Put(rocksdb::WriteOptions{}, p.tables.at(1), "foreign", "no header").ok());
  auto r = source.next();
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::log_corrupt);
  CHECK_THAT(r.error().message(), Catch::Contains("LogData"));
}

TEST_CASE("log source: a corrupted WAL byte is log-corrupt", "[adapter][tailer][corrupt]") {
  temp_dir dir;
  commit_info a;
  {
    auto s = test::open_store(dir / "db");
    a = test::put_records(*s, "a", 1);
    for (int i = 0; i < 20; ++i) test::put_records(*s, "b" + std::to_string(i), 5);
    test::switch_wal(*s);  // archive the file, so recovery never reads it
    for (int i = 0; i < 5; ++i) test::put_records(*s, "c" + std::to_string(i), 5);
    REQUIRE(s->close());
  }
  auto archived = test::wal_files(dir / "db", true);
  REQUIRE(archived.size() == 1);
  auto size = std::filesystem::file_size(archived[0]);
  {
    std::fstream f(archived[0], std::ios::in | std::ios::out | std::ios::binary);
    auto at = static_cast<std::streamoff>(size * 2 / 3);
    f.seekg(at);
    char c = 0;
    f.read(&c, 1);
    f.seekp(at);
    c = static_cast<char>(c ^ 0x5A);
    f.write(&c, 1);
  }
  // RocksDB's WAL reader drops a record that fails its checksum without saying so; the gap it
  // leaves must still surface, as log-corrupt, before anything after it is returned.
  auto s = test::open_store(dir / "db");
  rocksdb_log_source source(s);
  REQUIRE(source.open(a.sequence, a.time));
  result<std::optional<wal_transaction>> r = std::optional<wal_transaction>{};
  std::uint64_t last = a.sequence;
  for (int i = 0; i < 100; ++i) {
    r = source.next();
    if (!r || !*r) break;
    CHECK((*r)->sequence > last);
    last = (*r)->end_sequence();
  }
  REQUIRE_FALSE(r);
  INFO(r.error().message());
  CHECK(r.error().value() == errc::log_corrupt);
}

TEST_CASE("log source: RocksDB's empty recovery batch after a torn WAL tail is stepped over (kill test finding)", "[adapter][tailer][corrupt]") {
  temp_dir dir;
  commit_info a;
  commit_info kept;
  {
    auto s = test::open_store(dir / "db");
    a = test::put_records(*s, "a", 3);
    for (int i = 0; i < 10; ++i) kept = test::put_records(*s, "b" + std::to_string(i), 5);
    REQUIRE(s->close());  // its last WAL batch is the clock record (formats.md §5)
  }
  // What a SIGKILL in the middle of a WAL write leaves: the last record cut short.
  auto live = test::wal_files(dir / "db", false);
  REQUIRE(live.size() == 1);
  std::filesystem::resize_file(live[0], std::filesystem::file_size(live[0]) - 10);
  // The marker is written by kPointInTimeRecovery, which dix used before decision 0034; a store
  // recovered so keeps it in its retained WAL, so the tailer must still step over it.
  REQUIRE(test::open_point_in_time(dir / "db"));

  auto s = test::open_store(dir / "db");
  auto c = test::put_records(*s, "c", 2);
  // The scenario really has the marker: Count() 0, no record, at the recovered sequence, which
  // the next batch shares — the `clock` record the reopened store writes (formats.md §5).
  std::uint64_t marker_sequence = 0;
  {
    std::unique_ptr<rocksdb::TransactionLogIterator> it;
    REQUIRE(test::raw_db(*s).GetUpdatesSince(a.sequence, &it).ok());
    int markers = 0;
    for (; it->Valid(); it->Next()) {
      auto batch = it->GetBatch();
      if (batch.writeBatchPtr->Count() != 0) continue;
      ++markers;
      CHECK(batch.writeBatchPtr->GetDataSize() == 12);  // the bare WriteBatch header
      marker_sequence = batch.sequence;
    }
    REQUIRE(markers == 1);
  }
  CHECK(marker_sequence == c.sequence - 1);

  rocksdb_log_source source(s);
  auto anchor = source.open(a.sequence, a.time).value();
  auto rest = drain(source);
  REQUIRE_FALSE(rest.empty());
  std::uint64_t end = anchor.end_sequence();
  for (const auto& txn : rest) {
    CHECK(txn.sequence == end + 1);  // contiguous across the marker
    end = txn.end_sequence();
  }
  CHECK(rest.back().sequence == c.sequence);
  CHECK(std::any_of(rest.begin(), rest.end(), [&](const auto& t) { return t.sequence == kept.sequence; }));

  auto clock = std::find_if(rest.begin(), rest.end(), [&](const auto& t) { return t.sequence == marker_sequence; });
  REQUIRE(clock != rest.end());
  CHECK(clock->has_flag(header_flag::system));  // the store's clock record, read across the marker

  // Opening at the sequence the marker shares returns the real transaction (RocksDB's own seek
  // passes over the marker: its last sequence is one less), and reading on reaches c.
  auto at_marker = source.open(marker_sequence, clock->time).value();
  CHECK(at_marker.sequence == marker_sequence);
  auto after = source.next().value();
  REQUIRE(after);
  CHECK(after->sequence == c.sequence);
  CHECK(after->ops.size() == 2);
}

TEST_CASE("log source: a closed store is an io_error, not a log fault", "[adapter][tailer]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto a = test::put_records(*s, "a", 1);
  rocksdb_log_source source(s);
  REQUIRE(source.open(a.sequence, a.time));
  REQUIRE(s->close());
  auto r = source.next();
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::io_error);
  CHECK(is_retryable(r.error().value()));
  CHECK(source.open(a.sequence, a.time).error().value() == errc::io_error);
}

TEST_CASE("log source: retention figures describe the retained WAL", "[adapter][tailer][retention]") {
  temp_dir dir;
  auto o = test::options();
  o.wal_ttl_s = 3600;
  o.wal_size_limit_mb = 64;
  auto s = test::open_store(dir / "db", o);
  auto a = test::put_records(*s, "a", 10);
  test::switch_wal(*s);
  auto b = test::put_records(*s, "b", 10);
  rocksdb_log_source source(s);
  auto now = system_clock().wall_now_ns();
  auto old_anchor = source.retention(a.sequence, now).value();
  CHECK(old_anchor.wal_oldest_sequence == 1);
  CHECK(old_anchor.wal_files == 2);
  CHECK(old_anchor.archived_bytes > 0);
  CHECK(old_anchor.wal_retained_bytes > old_anchor.archived_bytes);
  CHECK(old_anchor.retention_headroom_bytes == static_cast<std::int64_t>((64ull << 20) - old_anchor.archived_bytes));
  // The anchor's file is archived: headroom is the TTL less its archive age (a few ms here).
  CHECK(old_anchor.retention_headroom_ms <= 3'600'000);
  CHECK(old_anchor.retention_headroom_ms > 3'600'000 - 60'000);
  auto new_anchor = source.retention(b.sequence, now).value();
  CHECK(new_anchor.retention_headroom_ms == -1);  // live file
  auto unlimited = test::options();
  unlimited.wal_size_limit_mb = 0;
  auto s2 = test::open_store(dir / "db2", unlimited);
  CHECK(rocksdb_log_source(s2).retention(1, now).value().retention_headroom_bytes == -1);
  CHECK(rocksdb_log_source(s2).retention(1, now).value().wal_write_bytes_per_s == 0);  // one file: unknown

  // The recent write rate: the bytes after the oldest file (here the live one) over the time
  // since the oldest was last written; seen 1 000 s later it is about a thousandth of them.
  const auto later = source.retention(0, now + 1'000'000'000'000ull).value();
  const auto live_bytes = later.wal_retained_bytes - later.archived_bytes;
  REQUIRE(live_bytes > 0);
  CHECK(later.wal_write_bytes_per_s <= live_bytes / 1000);
  CHECK(later.wal_write_bytes_per_s >= live_bytes / 1010);
}

TEST_CASE("log merge: two real logs interleave by header time", "[adapter][tailer]") {
  temp_dir dir;
  auto s1 = test::open_store(dir / "one", test::options("one"));
  auto s2 = test::open_store(dir / "two", test::options("two"));
  auto a1 = test::put_records(*s1, "a", 1);
  auto b1 = test::put_records(*s2, "b", 1);
  auto a2 = test::put_records(*s1, "c", 1);
  auto b2 = test::put_records(*s2, "d", 1);
  rocksdb_log_source one(s1), two(s2);
  REQUIRE(one.open(a1.sequence, a1.time));
  REQUIRE(two.open(b1.sequence, b1.time));
  log_merge merge({&one, &two});
  auto x = merge.next().value();
  auto y = merge.next().value();
  REQUIRE(x);
  REQUIRE(y);
  CHECK(x->source == 0);
  CHECK(x->txn.time == a2.time);
  CHECK(y->source == 1);
  CHECK(y->txn.time == b2.time);
  CHECK_FALSE(merge.next().value());
}

// The store's commit tail (core/commit_tail.hpp, decision 0064): what make_rocksdb_log_source gives
// the runtime's tailers reads the latest commits from memory, decoded once by the commit path.

namespace {

void check_same(const wal_transaction& got, const wal_transaction& want) {
  CHECK(got.sequence == want.sequence);
  CHECK(got.count == want.count);
  CHECK(got.time == want.time);
  CHECK(got.flags == want.flags);
  CHECK(got.data_size == want.data_size);
  REQUIRE(got.ops.size() == want.ops.size());
  for (std::size_t i = 0; i < got.ops.size(); ++i) {
    CHECK(got.ops[i].kind == want.ops[i].kind);
    CHECK(got.ops[i].meta == want.ops[i].meta);
    CHECK(got.ops[i].table == want.ops[i].table);
    CHECK(got.ops[i].key == want.ops[i].key);
    CHECK(got.ops[i].value == want.ops[i].value);
  }
}

}  // namespace

TEST_CASE("log source through the commit tail: the same transactions as the WAL, the latest from memory", "[adapter][tailer][commit_tail]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto a = test::put_records(*s, "a", 1);
  auto tailed = make_rocksdb_log_source(s);
  rocksdb_log_source plain(s);
  REQUIRE(tailed->open(a.sequence, a.time));
  REQUIRE(plain.open(a.sequence, a.time));
  auto& tail = *primary_store_access::get(*s).tail;
  for (int i = 0; i < 20; ++i) test::put_records(*s, "b" + std::to_string(i) + "-", 1 + i % 4);
  REQUIRE(s->create_table(42));  // a table the tail's family map does not know yet
  test::put_records(*s, "x", 2, 42);
  REQUIRE(commit_system(*s, {meta_op{op_kind::put, "some/key", "v"}, meta_op{op_kind::del, "other", ""}}));
  auto got = drain(*tailed);
  auto want = drain(plain);
  REQUIRE(got.size() == want.size());
  REQUIRE(got.size() >= 22);
  for (std::size_t i = 0; i < got.size(); ++i) check_same(got[i], want[i]);
  // The first after the anchor came from the WAL (the tail began with it), the rest from memory.
  CHECK(tail.stats().served == got.size() - 1);
  CHECK(tailed->reopens() == 0);
  // Caught up in the tail: a later commit comes from memory too.
  auto c = test::put_records(*s, "c", 3);
  auto more = drain(*tailed);
  REQUIRE(more.size() == 1);
  CHECK(more[0].sequence == c.sequence);
  CHECK(tail.stats().served == got.size());
}

TEST_CASE("log source through the commit tail: a concurrent writer's commits arrive in order, none twice, without a re-open", "[adapter][tailer][commit_tail]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto a = test::put_records(*s, "a", 1);
  auto source = make_rocksdb_log_source(s);
  REQUIRE(source->open(a.sequence, a.time));
  auto got = follow_a_writer(*s, *source, a.sequence);
  CHECK(got.seen == writer_commits);
  CHECK(got.ordered);
  CHECK(source->reopens() == 0);
  CHECK(primary_store_access::get(*s).tail->stats().served > 0);
}

TEST_CASE("log source through the commit tail: readers that come and go beside a writer each read every commit once, in order", "[adapter][tailer][commit_tail]") {
  // Sources open, read a while and close (the last one's leaving empties the tail) on three
  // threads while a writer commits: every session reads from its anchor without a gap or a
  // repeat, and the final ones reach the writer's last commit.
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto a = test::put_records(*s, "a", 1);
  constexpr int commits = 6000;
  std::atomic<bool> failed{false};
  std::atomic<std::uint64_t> final_end{0};
  std::thread writer([&] {
    for (int i = 0; i < commits; ++i) test::put_records(*s, "w" + std::to_string(i) + "-", 1 + i % 3);
    final_end = latest_sequence(*s);
  });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  auto reader = [&](int id) {
    std::mt19937 rng(static_cast<unsigned>(id));
    for (int session = 0; !failed; ++session) {
      auto source = make_rocksdb_log_source(s);
      auto anchor = source->open(a.sequence, a.time);
      if (!anchor) {
        failed = true;
        return;
      }
      std::uint64_t expected = anchor->end_sequence() + 1;
      const auto goal = final_end.load() != 0 ? final_end.load() : expected + rng() % 4000;
      while (expected <= goal && std::chrono::steady_clock::now() < give_up) {
        auto next = source->next();
        if (!next || (*next && (*next)->sequence != expected)) {
          failed = true;
          return;
        }
        if (*next) expected = (*next)->end_sequence() + 1;
      }
      if (expected <= goal) {
        failed = true;  // gave up: a source stood "caught up" with commits left
        return;
      }
      if (final_end.load() != 0 && goal == final_end.load()) return;
    }
  };
  std::thread r1(reader, 1), r2(reader, 2), r3(reader, 3);
  writer.join();
  r1.join();
  r2.join();
  r3.join();
  CHECK_FALSE(failed.load());
}

TEST_CASE("log source through the commit tail: a closed store is an io_error there too", "[adapter][tailer][commit_tail]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto a = test::put_records(*s, "a", 1);
  auto source = make_rocksdb_log_source(s);
  REQUIRE(source->open(a.sequence, a.time));
  test::put_records(*s, "b", 1);
  test::put_records(*s, "c", 1);
  REQUIRE(drain(*source).size() == 2);  // b from the WAL, c from the tail
  test::put_records(*s, "d", 1);
  REQUIRE(s->close());
  auto r = source->next();
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::io_error);
}
