// Failover between processes (protocol.md §9.8): the standby opener, the failover fixture's
// store options, and behaviour 14 with exec'd `dix serve` processes (never a bare fork: a forked
// child inherits RocksDB's in-process lock table). Waits are pipe reads (poll) and futex waits on
// the readiness segment, each bounded; nothing sleeps.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <iostream>

#include <rocksdb/db.h>

#include <dix/free_functions.hpp>

#include "adapters/test_support.hpp"
#include "support/child.hpp"
#include "support/dir_snapshot.hpp"
#include "harness/child_process.hpp"

using dix::cli::child_process;
using dix::test::temp_dir;
using namespace std::chrono_literals;

namespace {

const std::vector<std::string> catalogue_ids{"by-category", "by-brand"};

dix::cli::steady_time in_30s() { return std::chrono::steady_clock::now() + 30s; }

// `dix serve` with the failover fixture: 4 MiB memtables, 8 MiB of live WAL.
std::vector<std::string> serve_argv(const std::string& dir, bool standby) {
  std::vector<std::string> argv{DIX_BINARY, "serve", "--dir", dir, "--rate", "2000",
                                "--write-buffer-kib", "4096", "--max-wal-kib", "8192"};
  if (standby) argv.push_back("--standby");
  return argv;
}

// An owning `dix serve` over `serve_dir`, waited for until both indexes are ready; the epoch
// they are ready under.
std::pair<child_process, dix::epoch_t> start_owner(const std::string& serve_dir, const std::filesystem::path& home) {
  auto owner = child_process::spawn(serve_argv(serve_dir, false)).value();
  REQUIRE(owner.wait_line("serve: owner of", in_30s()));
  auto epoch = dix::cli::wait_ready(home, catalogue_ids, 0, in_30s());
  INFO((epoch ? std::string() : epoch.error().to_string()));
  REQUIRE(epoch);
  return {std::move(owner), *epoch};
}

}  // namespace

TEST_CASE("failover fixture: write_buffer_size and max_total_wal_size reach RocksDB and are validated",
          "[system][failover]") {
  temp_dir dir;
  auto o = dix::test::options();
  o.write_buffer_size = 4u << 20;
  o.max_total_wal_size = 8u << 20;
  auto store = dix::test::open_store(dir / "db", o);
  auto& p = dix::primary_store_access::get(*store);
  CHECK(p.db->GetDBOptions().max_total_wal_size == (8u << 20));
  CHECK(p.db->GetOptions(p.meta).write_buffer_size == (4u << 20));
  CHECK(p.db->GetOptions(p.tables.at(1)).write_buffer_size == (4u << 20));
  REQUIRE(store->close());
  auto again = dix::primary_store::open(dir / "db", o).value();  // families listed at open get it too
  CHECK(dix::primary_store_access::get(*again).db->GetOptions(dix::primary_store_access::get(*again).tables.at(1)).write_buffer_size ==
        (4u << 20));

  auto bad = dix::test::options();
  bad.write_buffer_size = 1000;
  auto refused = dix::primary_store::open(dir / "other", bad);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == dix::errc::invalid_argument);
  CHECK_THAT(refused.error().message(), Catch::StartsWith("store_options.write_buffer_size = 1000"));
}

TEST_CASE("standby opener: a store no process holds, or a new one, opens at once without waiting",
          "[system][failover]") {
  temp_dir dir;
  int waits = 0;
  dix::standby_events events;
  events.waiting = [&] { ++waits; };
  auto fresh = dix::primary_store::open_standby(dir / "db", dix::test::options(), events);
  REQUIRE(fresh);
  REQUIRE((*fresh)->create_table(1));
  dix::test::put_records(**fresh, "r", 3);
  REQUIRE((*fresh)->close());
  auto reopened = dix::primary_store::open_standby(dir / "db", dix::test::options(), events);
  REQUIRE(reopened);
  CHECK((*reopened)->get(1, "r2").value()->payload == "value-2");
  CHECK(waits == 0);
}

TEST_CASE("standby opener: a store this process has open fails at once and RocksDB's lock survives",
          "[system][failover]") {
  temp_dir dir;
  auto store = dix::test::open_store(dir / "db");
  int waits = 0;
  dix::standby_events events;
  events.waiting = [&] { ++waits; };
  auto second = dix::primary_store::open_standby(dir / "db", dix::test::options(), events);
  REQUIRE_FALSE(second);
  CHECK(second.error().value() == dix::errc::io_error);
  CHECK_THAT(second.error().message(), Catch::Contains("already open in this process"));
  CHECK(waits == 0);
  // LOCK was never opened by the probe (a close would have dropped RocksDB's lock): another
  // process still cannot open the store.
  auto other = dix::test::run({DIX_BINARY, "write", "--db", (dir / "db").string(), "--records", "1"}, dir.path());
  INFO(other.out << other.err);
  CHECK(other.exit_code == 1);
  CHECK_THAT(other.err, Catch::Contains("While lock file"));
  dix::test::put_records(*store, "still-mine", 1);
}

TEST_CASE("behaviour 14: a standby process takes the store over after the owner's SIGKILL, publishes ready "
          "under a larger epoch without polling, and a third process cannot open the store",
          "[system][failover]") {
  temp_dir dir;
  const auto serve_dir = (dir / "serve").string();
  const auto home = dir / "serve" / "primary";

  auto [owner, owner_epoch] = start_owner(serve_dir, home);

  auto standby = child_process::spawn(serve_argv(serve_dir, true)).value();
  REQUIRE(standby.wait_line("serve: standby, waiting for", in_30s()));
  // Waiting: the owner's readiness stands, and the standby has not taken the store.
  CHECK(dix::read_readiness(home, "by-category").value().owner_epoch == owner_epoch);

  // SIGKILL while the owner's writer commits; the standby recovers the store (WAL replay
  // included), registers and acquires.
  auto killed_at = std::chrono::steady_clock::now();
  REQUIRE(::kill(owner.pid(), SIGKILL) == 0);
  auto taken = dix::cli::wait_ready(home, catalogue_ids, owner_epoch, killed_at + 30s);
  auto elapsed = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - killed_at).count();
  INFO((taken ? std::string() : taken.error().to_string()));
  REQUIRE(taken);
  CHECK(*taken > owner_epoch);
  std::cout << "behaviour 14: the standby published ready (epoch " << *taken << ", owner's " << owner_epoch
            << ") " << elapsed << " ms after the owner's SIGKILL\n";
  auto status = owner.reap(0);
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
  // One blocking wait, granted once: no retry loop, no polling.
  CHECK(standby.wait_line("serve: took over", in_30s()).value_or("").find("after 1 wait(s)") != std::string::npos);

  // A third process: DB::Open fails on the lock, at once.
  auto third = dix::test::run({DIX_BINARY, "serve", "--dir", serve_dir}, dir.path());
  INFO(third.out << third.err);
  CHECK(third.exit_code == 1);
  CHECK_THAT(third.err, Catch::Contains("is held by another process"));
  auto writer = dix::test::run({DIX_BINARY, "write", "--db", home.string(), "--records", "1"}, dir.path());
  INFO(writer.out << writer.err);
  CHECK(writer.exit_code == 1);
  CHECK_THAT(writer.err, Catch::Contains("While lock file"));
  CHECK(dix::read_readiness(home, "by-category").value().owner_epoch == *taken);  // untouched

  // Kill the new owner too; then each index must equal the projection of the primary store once
  // it has caught up (the demo writes a few more records, waits for them, and verifies).
  standby.reap(SIGKILL);
  auto verify = dix::test::run({DIX_BINARY, "demo", "--dir", serve_dir, "--records", "10", "--rate", "0"}, dir.path());
  INFO(verify.out << verify.err);
  REQUIRE(verify.exit_code == 0);
  CHECK_THAT(verify.out, Catch::Contains("verify by-category: OK"));
  CHECK_THAT(verify.out, Catch::Contains("verify by-brand: OK"));
}

TEST_CASE("two standbys: the one that loses the store after its grant closes the index databases it opened "
          "early, so the winner acquires, and later takes over itself",
          "[system][failover]") {
  temp_dir dir;
  const auto serve_dir = (dir / "serve").string();
  const auto home = dir / "serve" / "primary";

  auto [owner, owner_epoch] = start_owner(serve_dir, home);
  std::vector<child_process> standbys;
  for (int i = 0; i < 2; ++i) {
    standbys.push_back(child_process::spawn(serve_argv(serve_dir, true)).value());
    REQUIRE(standbys.back().wait_line("serve: standby, waiting for", in_30s()));
  }

  // Both are granted when the owner dies and both start opening the index databases; one opens
  // the store, the other goes back to waiting and must let go of what it opened.
  REQUIRE(::kill(owner.pid(), SIGKILL) == 0);
  owner.reap(0);
  auto first = dix::cli::wait_ready(home, catalogue_ids, owner_epoch, in_30s());
  INFO((first ? std::string() : first.error().to_string()));
  REQUIRE(first);
  // "took over" is printed before the runtime exists, so before `ready`: it is in the pipe now.
  auto took_over = [](child_process& c) {
    return c.wait_line("serve: took over", std::chrono::steady_clock::now() + 5ms).has_value();
  };
  const bool zero_won = took_over(standbys[0]);
  const bool one_won = took_over(standbys[1]);
  REQUIRE(zero_won != one_won);
  auto& winner = zero_won ? standbys[0] : standbys[1];
  auto& loser = zero_won ? standbys[1] : standbys[0];

  // The loser waits again; when the winner dies it takes over under a still larger epoch.
  winner.reap(SIGKILL);
  auto second = dix::cli::wait_ready(home, catalogue_ids, *first, in_30s());
  INFO((second ? std::string() : second.error().to_string()));
  REQUIRE(second);
  CHECK(*second > *first);
  // "after 2 wait(s)" when it was granted and lost the race (the case this test is for), "after
  // 1" when the winner had the store before the loser's probe was granted.
  auto loser_line = loser.wait_line("serve: took over", in_30s());
  REQUIRE(loser_line);
  std::cout << "two standbys: the loser " << *loser_line << "\n";
  loser.reap(SIGKILL);

  auto verify = dix::test::run({DIX_BINARY, "demo", "--dir", serve_dir, "--records", "10", "--rate", "0"}, dir.path());
  INFO(verify.out << verify.err);
  REQUIRE(verify.exit_code == 0);
}

TEST_CASE("standby opener: a plain RocksDB database another program held is still judged before it is opened, and left unchanged", "[system][failover]") {
  temp_dir dir;
  const auto db = dir / "db";
  REQUIRE(dix::test::make_plain_rocksdb(db));
  // Another program holds the database as RocksDB does: a POSIX write lock on LOCK.
  dix::test::pipe_pair ready, release;
  const auto lock_path = (db / "LOCK").string();
  auto holder = dix::test::fork_child([&] {
    int fd = ::open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return 4;
    struct flock want {};
    want.l_type = F_WRLCK;
    want.l_whence = SEEK_SET;
    if (::fcntl(fd, F_SETLK, &want) != 0) return 5;
    char c = 'r';
    if (::write(ready.write_end, &c, 1) != 1) return 6;
    dix::test::read_byte(release.read_end);
    return 0;  // exiting drops the lock
  });
  REQUIRE(ready.receive() == 'r');
  dix::test::dir_snapshot before;
  dix::standby_events events;
  events.waiting = [&] { release.send('x'); };
  events.granted = [&] { before = dix::test::snapshot_dir(db); };  // the holder is gone; nothing opened yet
  auto standby = dix::primary_store::open_standby(db, dix::test::options(), events);
  CHECK(dix::test::wait_exit(holder) == 0);
  REQUIRE_FALSE(standby);
  CHECK(standby.error().value() == dix::errc::store_format_mismatch);
  const auto after = dix::test::snapshot_dir(db);
  INFO("changed: " << dix::test::changed_files(before, after));
  CHECK(after == before);
}
