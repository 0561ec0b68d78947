#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <set>
#include <thread>

#include "adapters/primary_store_impl.hpp"
#include "adapters/wal_sample.hpp"
#include "adapters/rocksdb_log_source.hpp"
#include "adapters/test_support.hpp"
#include "core/bytes.hpp"
#include "core/clock.hpp"
#include "core/index_time.hpp"
#include "support/child.hpp"
#include "support/dir_snapshot.hpp"
#include "support/fake_space.hpp"
#include "support/tmpfs_mount.hpp"

using namespace dix;
using dix::test::temp_dir;

namespace {

// Reads every transaction of the store's WAL from sequence 1.
std::vector<wal_transaction> read_all(const std::shared_ptr<primary_store>& s) {
  rocksdb_log_source source(s);
  std::vector<wal_transaction> out;
  out.push_back(source.open(1, 0).value());
  for (;;) {
    auto next = source.next().value();
    if (!next) break;
    out.push_back(std::move(*next));
  }
  return out;
}

}  // namespace

TEST_CASE("primary store: a new store writes `format` as its first transaction", "[adapter][store]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto txns = read_all(s);
  REQUIRE(txns.size() >= 2);
  CHECK(txns[0].sequence == 1);
  CHECK(txns[0].has_flag(header_flag::system));
  REQUIRE(txns[0].ops.size() == 1);
  CHECK(txns[0].ops[0].meta);
  CHECK(txns[0].ops[0].key == "format");
  CHECK(get_le<std::uint32_t>(txns[0].ops[0].value, 0) == 1u);
  // `clock` follows at open, also a system transaction.
  CHECK(txns[1].ops[0].key == "clock");
  auto format = read_meta(*s, "format").value();
  REQUIRE(format);
  CHECK(format->size() == 4);
}

TEST_CASE("primary store: open creates only the store's own directory: a missing parent fails io_error naming it and creates nothing (decision 0035)", "[adapter][store]") {
  temp_dir dir;
  auto o = test::options();
  o.create_if_missing = false;
  auto missing = primary_store::open(dir / "a" / "db", o);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().value() == errc::io_error);
  auto nested = primary_store::open(dir / "a" / "b" / "db", test::options());
  REQUIRE_FALSE(nested);
  CHECK(nested.error().value() == errc::io_error);
  CHECK_THAT(nested.error().message(), Catch::Contains("its parent " + (dir / "a" / "b").string()) &&
                                           Catch::Contains("only the store's own directory is created"));
  CHECK_FALSE(std::filesystem::exists(dir / "a"));
  auto created = primary_store::open(dir / "db", test::options());
  REQUIRE(created);
  CHECK((*created)->path() == dir / "db");
  auto slash = primary_store::open((dir / "other").string() + "/", test::options());  // a trailing slash names it too
  REQUIRE(slash);
}

TEST_CASE("primary store: a directory holding other files but no CURRENT is refused store_format_mismatch and left byte for byte unchanged (decision 0035)", "[adapter][store]") {
  temp_dir dir;
  std::filesystem::create_directories(dir / "xapian");
  { std::ofstream(dir / "xapian" / "postlist.glass") << "not ours"; }
  { std::ofstream(dir / "xapian" / "iamglass") << "x"; }
  const auto before = test::snapshot_dir(dir / "xapian");
  for (bool create : {true, false}) {
    auto o = test::options();
    o.create_if_missing = create;
    auto r = primary_store::open(dir / "xapian", o);
    REQUIRE_FALSE(r);
    if (create) {
      CHECK(r.error().value() == errc::store_format_mismatch);
      CHECK_THAT(r.error().message(), Catch::Contains((dir / "xapian").string()) && Catch::Contains("no CURRENT file") &&
                                          Catch::Contains("only in an empty directory or a new path"));
    }
  }
  CHECK(test::snapshot_dir(dir / "xapian") == before);
  // What RocksDB writes before CURRENT (an open killed while creating the store) is no refusal.
  std::filesystem::create_directories(dir / "interrupted");
  { std::ofstream(dir / "interrupted" / "LOCK"); }
  { std::ofstream(dir / "interrupted" / "LOG") << "rocksdb"; }
  // The WAL archive, made early with a WAL TTL (dix's default), and a file system's lost+found.
  std::filesystem::create_directories(dir / "interrupted" / "archive");
  std::filesystem::create_directories(dir / "interrupted" / "lost+found");
  auto resumed = primary_store::open(dir / "interrupted", test::options());
  REQUIRE(resumed);
}

TEST_CASE("primary store: values are stored as version + payload and read back", "[adapter][store]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto txn = s->begin();
  txn.put(1, "apple", "red");
  txn.put(1, "kiwi", "");
  auto info = txn.commit().value();
  CHECK(info.sequence > 0);
  CHECK(info.time > 0);
  auto apple = s->get(1, "apple").value();
  REQUIRE(apple);
  CHECK(apple->version == info.time);
  CHECK(apple->payload == "red");
  auto kiwi = s->get(1, "kiwi").value();
  REQUIRE(kiwi);
  CHECK(kiwi->payload.empty());
  CHECK_FALSE(s->get(1, "pear").value());

  std::string raw;
  auto& p = primary_store_access::get(*s);
  REQUIRE(p.db->Get(rocksdb::ReadOptions{}, p.tables.at(1), "apple", &raw).ok());
  CHECK(raw.size() == 8 + 3);
  CHECK(get_le<std::uint64_t>(raw, 0) == info.time);

  auto del = s->begin();
  del.del(1, "apple");
  REQUIRE(del.commit());
  CHECK_FALSE(s->get(1, "apple").value());

  std::vector<std::string> ids;
  REQUIRE(s->scan(1, "", [&](std::string_view id, const record&) {
    ids.emplace_back(id);
    return true;
  }));
  CHECK(ids == std::vector<std::string>{"kiwi"});
}

TEST_CASE("primary store: the committed sequence is the batch's first sequence", "[adapter][store]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto before = latest_sequence(*s);
  auto info = test::put_records(*s, "k", 5);
  CHECK(info.sequence == before + 1);
  CHECK(latest_sequence(*s) == before + 5);
}

TEST_CASE("primary store: bad input fails invalid_argument and writes nothing", "[adapter][store]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto before = latest_sequence(*s);
  auto expect_invalid = [&](transaction txn, const std::string& fragment) {
    auto r = txn.commit();
    REQUIRE_FALSE(r);
    CHECK(r.error().value() == errc::invalid_argument);
    CHECK_THAT(r.error().message(), Catch::Contains(fragment));
    CHECK(latest_sequence(*s) == before);
  };
  {
    auto t = s->begin();
    t.put(1, "ok", "v");
    t.put(9, "x", "v");
    expect_invalid(std::move(t), "unknown table 9");
  }
  {
    auto t = s->begin();
    t.put(0, "x", "v");
    expect_invalid(std::move(t), "table id 0");
  }
  {
    auto t = s->begin();
    t.put(1, "", "v");
    expect_invalid(std::move(t), "record id of 0 bytes");
  }
  {
    auto t = s->begin();
    t.del(1, std::string(4097, 'x'));
    expect_invalid(std::move(t), "record id of 4097 bytes");
  }
  {
    auto t = s->begin();
    t.delete_range(1, "a", "b");
    expect_invalid(std::move(t), "reload");
  }
  {
    auto t = s->begin(txn_flags::reload);
    t.delete_range(1, "b", "a");
    expect_invalid(std::move(t), "begin < end");
  }
  // The largest valid record id is accepted.
  auto t = s->begin();
  t.put(1, std::string(4096, 'x'), "v");
  CHECK(t.commit());
  CHECK(s->create_table(0).error().value() == errc::invalid_argument);
}

TEST_CASE("primary store: an empty log name is refused at open", "[adapter][store]") {
  temp_dir dir;
  auto r = primary_store::open(dir / "db", test::options(""));
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::invalid_argument);
  CHECK_THAT(r.error().message(), Catch::StartsWith("store_options.log_name"));
  CHECK_FALSE(std::filesystem::exists(dir / "db"));
}

TEST_CASE("primary store: an empty transaction writes nothing", "[adapter][store]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto before = latest_sequence(*s);
  auto info = s->begin().commit().value();
  CHECK(info.sequence == 0);
  CHECK(info.time == 0);
  CHECK(latest_sequence(*s) == before);
}

TEST_CASE("primary store: a transaction commits at most once", "[adapter][store]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto t = s->begin();
  t.put(1, "a", "1");
  REQUIRE(t.commit());
  auto again = t.commit();
  REQUIRE_FALSE(again);
  CHECK(again.error().value() == errc::invalid_argument);
}

TEST_CASE("primary store: delete_range in a reload transaction removes the range", "[adapter][store]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  test::put_records(*s, "k", 5);
  auto t = s->begin(txn_flags::reload);
  t.delete_range(1, "k1", "k3");
  REQUIRE(t.commit());
  CHECK(s->get(1, "k0").value());
  CHECK_FALSE(s->get(1, "k1").value());
  CHECK_FALSE(s->get(1, "k2").value());
  CHECK(s->get(1, "k3").value());
}

TEST_CASE("primary store: a stored value without a valid version reads as record_corrupt", "[adapter][store]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto& p = primary_store_access::get(*s);
  // Written around primary_store on purpose: this is the corruption under test.
  REQUIRE(p.db->Put(rocksdb::WriteOptions{}, p.tables.at(1), "short", "abc").ok());
  REQUIRE(p.db->Put(rocksdb::WriteOptions{}, p.tables.at(1), "zero", std::string(9, '\0')).ok());
  CHECK(s->get(1, "short").error().value() == errc::record_corrupt);
  CHECK(s->get(1, "zero").error().value() == errc::record_corrupt);
  auto scanned = s->scan(1, "", [](std::string_view, const record&) { return true; });
  CHECK(scanned.error().value() == errc::record_corrupt);
}

TEST_CASE("primary store: a foreign format record fails open with store_format_mismatch", "[adapter][store]") {
  temp_dir dir;
  {
    auto s = test::open_store(dir / "db");
    std::string two;
    put_le<std::uint32_t>(two, 2);
    meta_op op;
    op.key = "format";
    op.value = two;
    REQUIRE(commit_system(*s, {op}));
    REQUIRE(s->close());
  }
  auto r = primary_store::open(dir / "db", test::options());
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::store_format_mismatch);
  CHECK_THAT(r.error().message(), Catch::Contains("format 2"));
}

TEST_CASE("primary store: a plain RocksDB database with data is refused store_format_mismatch and left byte for byte unchanged", "[adapter][store]") {
  temp_dir dir;
  REQUIRE(test::make_plain_rocksdb(dir / "db"));  // its key in the WAL only: no flush
  const auto before = test::snapshot_dir(dir / "db");
  auto r = primary_store::open(dir / "db", test::options());
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::store_format_mismatch);
  CHECK_THAT(r.error().message(), Catch::Contains("no dix.meta"));
  const auto after = test::snapshot_dir(dir / "db");
  INFO("changed: " << test::changed_files(before, after));
  CHECK(after == before);
}

TEST_CASE("primary store: a store with a foreign format record or a foreign column family is refused and left byte for byte unchanged", "[adapter][store]") {
  temp_dir dir;
  {
    auto s = test::open_store(dir / "db");
    std::string two;
    put_le<std::uint32_t>(two, 2);
    REQUIRE(commit_system(*s, {meta_op{op_kind::put, "format", two}}));
    test::put_records(*s, "k", 3);
    REQUIRE(s->close());
  }
  auto before = test::snapshot_dir(dir / "db");
  auto r = primary_store::open(dir / "db", test::options());
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::store_format_mismatch);
  auto after = test::snapshot_dir(dir / "db");
  INFO("changed: " << test::changed_files(before, after));
  CHECK(after == before);

  {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    REQUIRE(rocksdb::DB::Open(o, (dir / "other").string(), &raw).ok());
    rocksdb::ColumnFamilyHandle* family = nullptr;
    REQUIRE(raw->CreateColumnFamily(rocksdb::ColumnFamilyOptions{}, "users", &family).ok());
    REQUIRE(raw->DestroyColumnFamilyHandle(family).ok());
    delete raw;
  }
  before = test::snapshot_dir(dir / "other");
  r = primary_store::open(dir / "other", test::options());
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::store_format_mismatch);
  after = test::snapshot_dir(dir / "other");
  INFO("changed: " << test::changed_files(before, after));
  CHECK(after == before);
}

TEST_CASE("primary store: an empty RocksDB database, an empty directory and a new path become dix stores", "[adapter][store]") {
  temp_dir dir;
  {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    REQUIRE(rocksdb::DB::Open(o, (dir / "empty-rocksdb").string(), &raw).ok());
    delete raw;
  }
  std::filesystem::create_directories(dir / "empty-dir");
  for (const auto* name : {"empty-rocksdb", "empty-dir", "new"}) {
    INFO(name);
    auto s = primary_store::open(dir / name, test::options());
    REQUIRE(s);
    REQUIRE((*s)->close());
    auto again = primary_store::open(dir / name, test::options());  // and it is one now
    REQUIRE(again);
    REQUIRE((*again)->close());
  }
}

TEST_CASE("primary store: opening a path already open in this process fails io_error naming it", "[adapter][store]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto again = primary_store::open(dir / "db", test::options());
  REQUIRE_FALSE(again);
  CHECK(again.error().value() == errc::io_error);
  CHECK_THAT(again.error().message(), Catch::Contains((dir / "db").string()));
  CHECK_THAT(again.error().message(), Catch::Contains("already open in this process"));
}

TEST_CASE("primary store: after close every call fails io_error and close is idempotent", "[adapter][store]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  REQUIRE(s->close());
  REQUIRE(s->close());
  auto t = s->begin();
  t.put(1, "a", "b");
  CHECK(t.commit().error().value() == errc::io_error);
  CHECK(s->get(1, "a").error().value() == errc::io_error);
  CHECK(sync_wal(*s, 0).error().value() == errc::io_error);
}

TEST_CASE("primary store: index_time is strictly increasing across close and reopen (clock record)", "[adapter][store][time]") {
  temp_dir dir;
  auto& counter = process_index_time();
  index_time_t written = 0;
  {
    auto s = test::open_store(dir / "db");
    // Pretend the wall clock ran an hour ahead while this store was written.
    counter.raise_floor(system_clock().wall_now_ns() + 3600ull * 1'000'000'000);
    written = test::put_records(*s, "k", 1).time;
    REQUIRE(s->close());
    auto clock = read_meta(*s, "clock");
    CHECK_FALSE(clock);  // closed
  }
  counter.test_reset(0);  // as a fresh process: only the store remembers
  auto s = test::open_store(dir / "db");
  CHECK(s->index_time() > written);
  auto clock = read_meta(*s, "clock").value();
  REQUIRE(clock);
  CHECK(get_le<std::uint64_t>(*clock, 0) > written);
}

TEST_CASE("primary store: index_time stays above the newest WAL header after a crash", "[system][store][time]") {
  temp_dir dir;
  { auto s = test::open_store(dir / "db"); REQUIRE(s->close()); }
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::fflush(nullptr);  // nothing buffered may be written twice by the child
  pid_t pid = ::fork();
  if (pid == 0) {
    // The child writes with a clock two hours ahead and dies without close(): no `clock` record.
    ::close(fds[0]);
    auto s = primary_store::open(dir / "db", test::options());
    if (!s) ::_exit(1);
    process_index_time().raise_floor(system_clock().wall_now_ns() + 7200ull * 1'000'000'000);
    auto t = (*s)->begin();
    t.put(1, "crash", "v");
    t.set_sync(true);
    auto info = t.commit();
    if (!info) ::_exit(2);
    auto written = info->time;
    if (::write(fds[1], &written, sizeof written) != sizeof written) ::_exit(3);
    ::_exit(0);
  }
  ::close(fds[1]);
  index_time_t written = 0;
  REQUIRE(::read(fds[0], &written, sizeof written) == sizeof written);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  process_index_time().test_reset(0);
  auto s = test::open_store(dir / "db");
  CHECK(s->index_time() > written);
  auto got = s->get(1, "crash").value();
  REQUIRE(got);
  CHECK(got->version == written);
}

TEST_CASE("primary store: synced_sequence follows sync commits and explicit WAL syncs", "[adapter][store][sync]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto base = synced_sequence(*s);
  CHECK(base == latest_sequence(*s));  // everything recovered at open is durable
  auto unsynced = test::put_records(*s, "a", 3);
  CHECK(synced_sequence(*s) < unsynced.sequence + 2);
  auto synced_to = sync_wal(*s, 0).value();
  CHECK(synced_to.called);
  CHECK(synced_to.synced == latest_sequence(*s));
  CHECK(synced_sequence(*s) >= unsynced.sequence + 2);
  auto t = s->begin();
  t.put(1, "b", "v");
  t.set_sync(true);
  auto info = t.commit().value();
  CHECK(synced_sequence(*s) == info.sequence);
  CHECK(primary_store_access::get(*s).wal_syncs.load() == 1);
}

TEST_CASE("primary store: a WAL sync already covered by another makes no fsync (decision 0061)", "[adapter][store][sync]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  test::put_records(*s, "a", 3);
  const auto wanted = latest_sequence(*s);  // what a tailer read after its resolution
  auto first = sync_wal(*s, wanted).value();  // the first tailer syncs
  CHECK(first.called);
  CHECK(first.synced >= wanted);
  auto second = sync_wal(*s, wanted).value();  // the second one, after it: covered
  CHECK_FALSE(second.called);
  CHECK(second.synced == first.synced);
  CHECK(primary_store_access::get(*s).wal_syncs.load() == 1);
  // A later commit is not covered: the next caller that read it syncs.
  test::put_records(*s, "b", 1);
  CHECK(sync_wal(*s, latest_sequence(*s)).value().called);
  CHECK(primary_store_access::get(*s).wal_syncs.load() == 2);
}

TEST_CASE("primary store: concurrent committers never share a WAL record (behaviour 30)", "[adapter][store][concurrency]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  REQUIRE(s->create_table(2));
  constexpr int writers = 8, per_writer = 150;
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  std::vector<std::vector<commit_info>> results(writers + 1);
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < per_writer; ++i) {
        auto t = s->begin();
        t.put(w % 2 == 0 ? 1u : 2u, "w" + std::to_string(w) + "-" + std::to_string(i), "payload");
        t.put(1, "shared", std::to_string(w));
        t.set_sync(w % 4 == 0);  // sync and non-sync writers mixed
        results[static_cast<std::size_t>(w)].push_back(t.commit().value());
      }
    });
  }
  // System transactions (as a rebuild writes its epoch and boundary records) interleave.
  threads.emplace_back([&] {
    while (!go.load()) std::this_thread::yield();
    for (int i = 0; i < 40; ++i) {
      meta_op op;
      op.key = "epoch/idx";
      op.value = std::string(8, static_cast<char>(i));
      results[writers].push_back(commit_system(*s, {op}).value());
    }
  });
  go = true;
  for (auto& t : threads) t.join();

  std::set<std::uint64_t> sequences;
  for (auto& list : results) {
    for (auto& info : list) CHECK(sequences.insert(info.sequence).second);
  }
  auto txns = read_all(s);  // fails with log_corrupt if any record held two headers
  std::uint64_t user = 0, system = 0;
  index_time_t last_time = 0;
  for (auto& t : txns) {
    CHECK(t.time > last_time);  // header time order equals sequence order
    last_time = t.time;
    if (t.has_flag(header_flag::system)) ++system;
    else {
      ++user;
      CHECK(t.count == 2);
      CHECK(sequences.count(t.sequence) == 1);
    }
  }
  CHECK(user == writers * per_writer);
  CHECK(system >= 40);
}

TEST_CASE("primary store: the admission hook can refuse or delay writes, replicated writes bypass it", "[adapter][store][gate]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  CHECK(s->admit(1).kind == admit_kind::open);  // the default admits everything
  set_admission_hook(*s, [](std::uint32_t table) {
    admission a;
    if (table == 1) {
      a.kind = admit_kind::reject;
      a.backend_id = "by-category";
    }
    return a;
  });
  auto before = latest_sequence(*s);
  auto t = s->begin();
  t.put(1, "a", "v");
  auto refused = t.commit();
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::index_lagging);
  CHECK(is_retryable(refused.error().value()));
  CHECK_THAT(refused.error().message(), Catch::Contains("by-category"));
  CHECK(latest_sequence(*s) == before);
  auto replicated = s->begin(txn_flags::replicated);
  replicated.put(1, "a", "v");
  CHECK(replicated.commit());
  auto recovery = s->begin(txn_flags::recovery);
  recovery.put(1, "b", "v");
  CHECK(recovery.commit());
  set_admission_hook(*s, [](std::uint32_t) {
    return admission{admit_kind::delay, std::chrono::microseconds{1}, "x"};
  });
  auto delayed = s->begin();
  delayed.put(1, "c", "v");
  CHECK(delayed.commit());
}

TEST_CASE("primary store: commit listeners hear every commit with its flags", "[adapter][store]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  std::vector<commit_event> heard;
  auto id = add_commit_listener(*s, [&](const commit_event& e) { heard.push_back(e); });
  auto info = test::put_records(*s, "k", 2);
  meta_op op;
  op.key = "condemned/x";
  op.value = "\x01";
  auto sys = commit_system(*s, {op}).value();
  remove_commit_listener(*s, id);
  test::put_records(*s, "z", 1);
  REQUIRE(heard.size() == 2);
  CHECK(heard[0].info.sequence == info.sequence);
  CHECK(heard[0].flags == 0);
  CHECK(heard[1].info.sequence == sys.sequence);
  CHECK(heard[1].flags == header_flag::system);
}

TEST_CASE("primary store: a coverage point is taken under the commit mutex", "[adapter][store]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto info = test::put_records(*s, "k", 3);
  auto point = capture_coverage_point(*s).value();
  CHECK(point.latest_sequence == info.sequence + 2);
  CHECK(point.time > info.time);
}

TEST_CASE("primary store: coverage points taken while writers commit order every transaction by time and sequence alike", "[adapter][store][coverage]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  constexpr int writers = 4, commits = 300;
  constexpr std::size_t captures = 300;
  std::vector<std::vector<commit_info>> written(writers);
  std::atomic<int> finished{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < commits; ++i) written[w].push_back(test::put_records(*s, "w" + std::to_string(w) + "-", 1 + i % 3));
      ++finished;
    });
  }
  std::vector<coverage_point> points;
  // While the writers run (as many as it takes, at least `captures`), and once after them.
  while (points.size() < captures || finished < writers) points.push_back(capture_coverage_point(*s).value());
  for (auto& t : threads) t.join();
  points.push_back(capture_coverage_point(*s).value());
  // protocol.md §12.1: every transaction with header time ≤ the point's time has a sequence ≤ its
  // position, and every one at or below the position is at or below its time.
  for (const auto& point : points) {
    std::size_t disordered = 0;
    for (const auto& mine : written) {
      for (const auto& t : mine) disordered += (t.time <= point.time) != (t.sequence <= point.latest_sequence);
    }
    REQUIRE(disordered == 0);
  }
  CHECK(points.back().latest_sequence >= written[0].back().sequence);  // the last point is after every commit
}

TEST_CASE("primary store: read-only open writes nothing", "[adapter][store]") {
  temp_dir dir;
  std::uint64_t latest = 0;
  {
    auto s = test::open_store(dir / "db");
    test::put_records(*s, "k", 3);
    REQUIRE(s->close());
    latest = latest_sequence(*s);
  }
  auto ro = open_read_only(dir / "db", "main").value();
  latest = latest_sequence(*ro);
  CHECK(latest > 0);
  auto t = ro->begin();
  t.put(1, "x", "y");
  CHECK(t.commit().error().value() == errc::invalid_argument);
  REQUIRE(ro->close());
  auto again = open_read_only(dir / "db", "main").value();
  CHECK(latest_sequence(*again) == latest);
  CHECK(open_read_only(dir / "missing", "main").error().value() == errc::io_error);
}

TEST_CASE("primary store: a path the system refuses (a component over NAME_MAX, a symlink loop) fails open io_error naming it, never throws", "[adapter][store]") {
  temp_dir dir;
  std::filesystem::create_symlink("loop", dir / "loop");
  for (const auto& path : {dir / std::string(300, 'a'), dir / "loop" / "db"}) {
    INFO(path.string());
    auto ro = open_read_only(path, "main");  // dix wal's open
    REQUIRE_FALSE(ro);
    CHECK(ro.error().value() == errc::io_error);
    CHECK_THAT(ro.error().message(), Catch::Contains(path.string()));
    auto rw = primary_store::open(path, test::options());  // dix write, demo, serve
    REQUIRE_FALSE(rw);
    CHECK(rw.error().value() == errc::io_error);
    CHECK_THAT(rw.error().message(), Catch::Contains(path.string()));
  }
}

TEST_CASE("primary store: a store directory it creates is private to its user (0700), whatever the umask, an existing one keeps its mode (decision 0040)", "[adapter][store][security]") {
  temp_dir dir;
  {
    dix::test::umask_scope open_umask(0);
    auto s = primary_store::open(dir / "new", test::options());
    REQUIRE(s);
    REQUIRE((*s)->close());
  }
  struct stat st {};
  REQUIRE(::stat((dir / "new").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  {
    dix::test::umask_scope strict_umask(0200);  // a umask taking even the owner's write bit: 0700 all the same
    auto s = primary_store::open(dir / "strict", test::options());
    REQUIRE(s);
    REQUIRE((*s)->close());
  }
  REQUIRE(::stat((dir / "strict").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  std::filesystem::create_directories(dir / "mine");
  std::filesystem::permissions(dir / "mine", std::filesystem::perms::all);  // the user's own choice
  {
    auto s = primary_store::open(dir / "mine", test::options());
    REQUIRE(s);
    REQUIRE((*s)->close());
  }
  REQUIRE(::stat((dir / "mine").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0777);
}

TEST_CASE("primary store: below its free-space reserve a commit fails a retryable io_error naming the path, the free bytes and the reserve, writes nothing, and commits again once space returns (decision 0013)", "[adapter][store][space]") {
  temp_dir dir;
  auto o = test::options();
  o.free_space_reserve_bytes = 64u << 20;
  auto s = test::open_store(dir / "db", o);
  test::fake_space space;
  set_space_probe(*s, space.probe(), std::chrono::milliseconds(0));
  test::put_records(*s, "a", 3);
  const auto before = latest_sequence(*s);

  space.set_available(60u << 20);
  auto txn = s->begin();
  txn.put(1, "b", "value-b");
  auto refused = txn.commit();
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::io_error);
  CHECK(is_retryable(refused.error().value()));
  INFO(refused.error().message());
  CHECK_THAT(refused.error().message(), Catch::StartsWith("primary store " + (dir / "db").string() + ": ") &&
                                            Catch::Contains(" MiB (") && Catch::Contains("free on its filesystem") &&
                                            Catch::Contains("below its free-space reserve of 64.0 MiB (67108864 bytes)") &&
                                            Catch::Contains("nothing written"));
  CHECK(latest_sequence(*s) == before);
  CHECK_FALSE(s->get(1, "b").value());

  // The runtime's system transactions (epoch, marker) still commit down to half the reserve, so
  // fencing keeps working while user commits are refused.
  CHECK(commit_system(*s, {meta_op{op_kind::put, "epoch/by-brand", std::string(8, '\1')}}));
  space.set_available(30u << 20);
  auto system = commit_system(*s, {meta_op{op_kind::put, "epoch/by-brand", std::string(8, '\2')}});
  REQUIRE_FALSE(system);
  CHECK_THAT(system.error().message(), Catch::Contains("below half its free-space reserve, 32.0 MiB"));
  CHECK(read_meta(*s, "epoch/by-brand").value() == std::string(8, '\1'));

  space.set_available(1u << 30);
  auto again = s->begin();
  again.put(1, "b", "value-b");
  REQUIRE(again.commit());
  CHECK(s->get(1, "b").value()->payload == "value-b");
}

TEST_CASE("primary store: on a real small filesystem commits stop at the reserve with nothing written, a full filesystem refuses the open before RocksDB writes, and both resume when space is freed (decision 0013)", "[adapter][store][space]") {
  temp_dir dir;
  std::string why;
  auto mnt = test::tmpfs_mount::make(dir / "mnt", 32u << 20, why);
  if (!mnt) {
    WARN("skipped, " << why);
    return;
  }
  const auto path = *mnt / "db";
  std::uint64_t committed = 0;
  {
    auto s = test::open_store(path);  // automatic reserve: an eighth of 32 MiB
    CHECK(free_space_reserve(*s) == (4u << 20));
    const std::string payload(64u << 10, 'x');
    std::optional<error> refusal;
    for (int i = 0; i < 1000 && !refusal; ++i) {
      auto txn = s->begin();
      txn.put(1, "r" + std::to_string(i), payload);
      const auto latest = latest_sequence(*s);
      auto done = txn.commit();
      if (done) {
        ++committed;
      } else {
        refusal = done.error();
        CHECK(latest_sequence(*s) == latest);  // nothing written
      }
    }
    REQUIRE(refusal);
    INFO(refusal->message());
    CHECK(refusal->value() == errc::io_error);
    CHECK_THAT(refusal->message(), Catch::Contains("below its free-space reserve of 4.0 MiB"));
    CHECK(committed > 10);
    CHECK(mnt->available_bytes() > 0);  // RocksDB never met ENOSPC
    REQUIRE(s->close());
  }
  // Something else fills the filesystem: the open is refused before DB::Open writes anything.
  mnt->fill(*mnt / "filler", 0);
  auto refused = primary_store::open(path, test::options());
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::io_error);
  CHECK_THAT(refused.error().message(), Catch::StartsWith("cannot open primary store " + path.string()) &&
                                            Catch::Contains("below half its free-space reserve"));
  std::filesystem::remove(*mnt / "filler");
  auto s = test::open_store(path);
  std::uint64_t held = 0;
  REQUIRE(s->scan(1, "", [&](std::string_view, const record&) { return ++held, true; }));
  CHECK(held == committed);
  // The store itself filled the filesystem down to its reserve (its unflushed data written when
  // that alone held it back, decision 0039): commits resume once the filesystem grows.
  REQUIRE(mnt->resize(64u << 20));
  test::put_records(*s, "after", 1);
  CHECK(s->get(1, "after0").value());
}

TEST_CASE("primary store: the WAL figures of protocol.md 13.2 are sampled at most once per interval and shared", "[adapter][store][gate]") {
  temp_dir dir;
  auto o = test::options();
  o.wal_size_limit_mb = 64;
  auto s = test::open_store(dir / "db", o);
  test::put_records(*s, "a", 10);
  const auto t0 = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  const auto wall = system_clock().wall_now_ns();
  const std::chrono::milliseconds tick{250};
  auto first = sampled_retention(*s, 0, wall, t0, tick).value();
  CHECK(first.wal_retained_bytes > 0);
  CHECK(first.wal_oldest_sequence >= 1);
  CHECK(first.retention_headroom_bytes == (std::int64_t{64} << 20) - static_cast<std::int64_t>(first.archived_bytes));
  CHECK(first.retention_headroom_ms == -1);  // the anchor's file is live
  test::put_records(*s, "b", 200);
  // Within the interval every caller gets the same listing: no new GetSortedWalFiles.
  auto cached = sampled_retention(*s, 5, wall, t0 + std::chrono::milliseconds(249), tick).value();
  CHECK(cached.wal_retained_bytes == first.wal_retained_bytes);
  auto fresh = sampled_retention(*s, 5, wall, t0 + tick, tick).value();
  CHECK(fresh.wal_retained_bytes > first.wal_retained_bytes);
}

// ---------------------------------------------------------------------------------------------
// WAL recovery (decision 0034)

namespace {

// Commits `count` synced transactions "<prefix><i>.0" .. "<prefix><i>.2" = "value-<i>" and
// `padding` bytes more; the last one's info.
commit_info put_synced(primary_store& s, const std::string& prefix, int count, std::size_t padding = 0) {
  commit_info last;
  for (int i = 0; i < count; ++i) {
    auto t = s.begin();
    for (int r = 0; r < 3; ++r) {
      t.put(1, prefix + std::to_string(i) + "." + std::to_string(r), "value-" + std::to_string(i) + std::string(padding, 'p'));
    }
    t.set_sync(true);
    last = t.commit().value();
  }
  return last;
}

}  // namespace

TEST_CASE("primary store: a crash's torn last WAL record is dropped at open and every synced transaction is kept", "[adapter][store][recovery]") {
  temp_dir dir;
  const auto db = dir / "db";
  const auto crash = dir / "crash";
  {
    auto s = test::open_store(db);
    put_synced(*s, "s", 20);
    auto t = s->begin();
    t.put(1, "torn", std::string(300, 't'));
    t.set_sync(false);
    REQUIRE(t.commit());
    // The files as a crash of this process leaves them: every write is in the page cache (the
    // store never buffers a WAL record), nothing was closed, no `clock` was written at close.
    std::filesystem::copy(db, crash, std::filesystem::copy_options::recursive);
    REQUIRE(s->close());
  }
  // The unsynced last record was being written when the process died: its end is missing.
  const auto wal = test::newest_wal(crash);
  std::filesystem::resize_file(wal, std::filesystem::file_size(wal) - 5);

  auto s = primary_store::open(crash, test::options());
  REQUIRE(s);
  CHECK(test::raw_db(**s).GetDBOptions().wal_recovery_mode == rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords);
  for (int i = 0; i < 20; ++i) {
    for (int r = 0; r < 3; ++r) {
      auto got = (*s)->get(1, "s" + std::to_string(i) + "." + std::to_string(r)).value();
      REQUIRE(got);
      CHECK(got->payload == "value-" + std::to_string(i));
    }
  }
  CHECK_FALSE((*s)->get(1, "torn").value());  // never synced, never complete: allowed to be lost
}

TEST_CASE("primary store: bytes corrupted in the middle of the live WAL, before valid records, fail the open log_corrupt and change nothing", "[adapter][store][recovery]") {
  temp_dir dir;
  const auto db = dir / "db";
  std::uint64_t latest = 0;
  {
    auto s = test::open_store(db);
    put_synced(*s, "m", 100, 500);
    latest = latest_sequence(*s) + 1;  // and the `clock` record close() writes
    REQUIRE(s->close());
  }
  // What the user trial did: 4000 bytes flipped in the middle of the newest WAL file, which
  // holds every transaction (nothing was flushed), so valid records follow the damage. RocksDB
  // finds records again only from the next 32 KiB block of the file: the file spans several.
  const auto wal = test::newest_wal(db);
  const auto size = std::filesystem::file_size(wal);
  REQUIRE(size > 4 * 32768);
  test::flip_bytes(wal, size / 2 - 2000, 4000);
  const auto before = test::snapshot_dir(db);

  auto check_refusal = [&](const error& e) {
    INFO(e.message());
    CHECK(e.value() == errc::log_corrupt);
    CHECK_FALSE(is_retryable(e.value()));
    CHECK_THAT(e.message(), Catch::Contains("primary store " + db.string()));
    CHECK_THAT(e.message(), Catch::Contains("write-ahead log is corrupt"));
    CHECK_THAT(e.message(), Catch::Contains("Corruption"));
    CHECK_THAT(e.message(), Catch::Contains("readable transactions up to sequence " + std::to_string(latest) + " follow the damage"));
    CHECK_THAT(e.message(), Catch::Contains("nothing was dropped"));
  };
  auto opened = primary_store::open(db, test::options());
  REQUIRE_FALSE(opened);
  check_refusal(opened.error());
  auto reader = wal_reader::open(db, "main");  // read-only inspection (`dix wal`)
  REQUIRE_FALSE(reader);
  check_refusal(reader.error());
  auto standby = primary_store::open_standby(db, test::options());  // no other process holds it
  REQUIRE_FALSE(standby);
  check_refusal(standby.error());
  CHECK(test::changed_files(before, test::snapshot_dir(db)).empty());
  CHECK(test::snapshot_dir(db) == before);
}

TEST_CASE("primary store: damage in the last WAL record, nothing readable after it, is a torn tail: the open replays up to it and keeps every transaction before", "[adapter][store][recovery]") {
  temp_dir dir;
  const auto db = dir / "db";
  {
    auto s = test::open_store(db);
    put_synced(*s, "z", 5);
    REQUIRE(s->close());
  }
  // The record is whole in length but its last bytes changed (its checksum fails). A power loss
  // leaves this when the file's size reached the disk before its data (XFS, ext4
  // data=writeback): refusing it would stop every restart after an ordinary power cut. Nothing
  // readable follows, so it cannot be told from a torn write (decision 0034, revised).
  const auto wal = test::newest_wal(db);
  test::flip_bytes(wal, std::filesystem::file_size(wal) - 4, 4);
  auto opened = primary_store::open(db, test::options());
  REQUIRE(opened);
  for (int i = 0; i < 5; ++i) {
    for (int r = 0; r < 3; ++r) {
      auto got = (*opened)->get(1, "z" + std::to_string(i) + "." + std::to_string(r)).value();
      REQUIRE(got);
      CHECK(got->payload == "value-" + std::to_string(i));
    }
  }
  REQUIRE((*opened)->close());
  auto again = primary_store::open(db, test::options());  // the log now ends where replay stopped
  REQUIRE(again);
}
