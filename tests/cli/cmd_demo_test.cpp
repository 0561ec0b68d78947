// `dix demo` as a user runs it: to the end, again (resuming), and after a SIGKILL mid-run.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <dix/backends/rocksdb_index_backend.hpp>

#include "adapters/test_support.hpp"
#include "cli/dix_cli.hpp"
#include "harness/child_process.hpp"
#include "support/tmpfs_mount.hpp"

namespace fs = std::filesystem;
using dix::test::temp_dir;

TEST_CASE("dix demo: verifies, resumes from the durable cursor, and survives a SIGKILL mid-run", "[system][cli][demo]") {
  temp_dir dir;
  auto demo_dir = (dir / "demo").string();
  auto first = dix::test::run({DIX_BINARY, "demo", "--dir", demo_dir, "--records", "2000", "--rate", "0"}, dir.path());
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  CHECK_THAT(first.out, Catch::Contains("verify by-category: OK"));
  CHECK_THAT(first.out, Catch::Contains("verify by-brand: OK"));
  // The owner's proof of each of the four indexes (dix verify, issue 31), at one sequence.
  for (const char* id : {"by-category", "by-brand", "fulltext", "similar"}) {
    CHECK_THAT(first.out, Catch::Contains(std::string("verify ") + id + ": OK (dix verify: equal to the projection through main:"));
  }

  auto second = dix::test::run({DIX_BINARY, "demo", "--dir", demo_dir, "--records", "300", "--rate", "0"}, dir.path());
  INFO(second.out << second.err);
  REQUIRE(second.exit_code == 0);
  // Only the new writes were delivered: far fewer records than the store holds.
  CHECK_THAT(second.out, Catch::Contains("verify by-category: OK"));

  // SIGKILL once the writer has made progress (its progress lines arrive on a pipe).
  int out[2];
  REQUIRE(::pipe(out) == 0);
  std::fflush(nullptr);  // nothing buffered may be written twice by the child
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::close(out[0]);
    ::close(out[1]);
    ::execl(DIX_BINARY, DIX_BINARY, "demo", "--dir", demo_dir.c_str(), "--records", "1000000", "--rate", "5000",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  std::string seen;
  char buf[512];
  // Blocks until output arrives: the first progress line comes after about a second of writes.
  while (seen.find("committed") == std::string::npos) {
    auto n = ::read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    seen.append(buf, static_cast<std::size_t>(n));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(out[0]);
  CHECK(WIFSIGNALED(status));
  auto after = dix::test::run({DIX_BINARY, "demo", "--dir", demo_dir, "--records", "100", "--rate", "0"}, dir.path());
  INFO(after.out << after.err);
  REQUIRE(after.exit_code == 0);
  CHECK_THAT(after.out, Catch::Contains("dix demo: verified"));
}

namespace {

// The number in `text` right after the first `prefix` at or after `from`; fails the test when absent.
std::uint64_t number_after(const std::string& text, const std::string& prefix, std::size_t from = 0) {
  auto at = text.find(prefix, from);
  if (at == std::string::npos) FAIL("no \"" << prefix << "\" in: " << text);
  return std::stoull(text.substr(at + prefix.size()));
}

// The last progress line of a run.
std::string last_progress(const std::string& out) {
  auto at = out.rfind("committed ");
  REQUIRE(at != std::string::npos);
  return out.substr(at, out.find('\n', at) - at);
}

}  // namespace

TEST_CASE("dix demo: counts the products it found and says how far behind from the sequences it shows", "[system][cli][demo]") {
  temp_dir dir;
  auto demo_dir = (dir / "demo").string();
  auto first = dix::test::run({DIX_BINARY, "demo", "--dir", demo_dir, "--records", "300", "--rate", "0"}, dir.path());
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  // Deletes leave gaps: the highest product id (300 ops, 70 % inserts) is above the count held.
  auto present = number_after(first.out, " records for ", first.out.find("verify by-category"));
  // Every figure "behind B" is the committed sequence minus the indexed one on the same line; an
  // index at or past the writer's last transaction is "caught up".
  auto line = last_progress(first.out);
  INFO(line);
  auto committed = number_after(line, "last transaction at seq ");
  for (const std::string id : {"by-category", "by-brand"}) {
    auto at = line.find(id + ": ");
    auto indexed = number_after(line, "seq ", at);
    auto end = line.find(" | ", at);
    auto part = line.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (part.find("behind ") != std::string::npos) CHECK(committed - indexed == number_after(part, "behind "));
    else CHECK((part.find("caught up") != std::string::npos && indexed >= committed));
  }

  // A second run counts the products the first one verified (not the highest product id).
  auto second = dix::test::run({DIX_BINARY, "demo", "--dir", demo_dir, "--records", "10", "--rate", "0"}, dir.path());
  INFO(second.out << second.err);
  CHECK(second.exit_code == 0);
  CHECK_THAT(second.out, Catch::Contains("(" + std::to_string(present) + " products so far)"));
}

TEST_CASE("dix demo: midway it asks for a rebuild of by-brand, prints the rebuild's lines while a scan rebuilds it under a newer epoch, and every index still verifies", "[system][cli][demo][rebuild]") {
  temp_dir dir;
  auto demo_dir = (dir / "demo").string();
  auto run = dix::test::run({DIX_BINARY, "demo", "--dir", demo_dir, "--records", "3000", "--rate", "3000"}, dir.path());
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  const auto asked = run.out.find("dix demo: asking for a rebuild of by-brand midway");
  REQUIRE(asked != std::string::npos);
  // Its end, with the scan's figures (the lines while it runs depend on how fast it is).
  const auto rebuilt = run.out.find("dix demo: by-brand rebuilt by a scan: ", asked);
  REQUIRE(rebuilt != std::string::npos);
  const auto line = run.out.substr(rebuilt, run.out.find('\n', rebuilt) - rebuilt);
  CHECK(number_after(line, "rebuilt by a scan: ") > 0);
  const auto from = number_after(line, "(epoch ");
  CHECK(number_after(line, " -> ") > from);
  CHECK_THAT(line, Catch::EndsWith("); it follows the log again"));
  // The rebuild came before the verification, which holds for both indexes.
  CHECK(rebuilt < run.out.find("verify by-category: OK"));
  CHECK(rebuilt < run.out.find("verify by-brand: OK"));
  CHECK_THAT(run.out, Catch::Contains("dix demo: verified"));
}

TEST_CASE("dix demo: an existing RocksDB database that is not a dix store is refused (store_format_mismatch, exit 1) and left byte for byte unchanged", "[system][cli]") {
  temp_dir dir;
  const auto db = dir / "demo" / "primary";
  dix::test::check_refuses_foreign_store(dir, db, {"demo", "--dir", (dir / "demo").string(), "--records", "10", "--rate", "0"});
}

TEST_CASE("dix demo: a --dir whose parent does not exist is a bad argument (exit 2) and creates nothing (decision 0035)", "[system][cli][demo]") {
  temp_dir dir;
  const auto typo = dir / "a" / "b";
  auto r = dix::test::dix_cli(dir, {"demo", "--dir", typo.string(), "--records", "10"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err == "dix demo: --dir " + typo.string() + ": " + (dir / "a").string() +
                     " does not exist (only the last component is created) (dix demo --help for usage)\n");
  CHECK_FALSE(std::filesystem::exists(dir / "a"));
}

TEST_CASE("dix demo: a primary store whose WAL is corrupted in its middle is refused (log_corrupt, exit 1) and left byte for byte unchanged, not verified short", "[system][cli][recovery]") {
  temp_dir dir;
  dix::test::check_refuses_corrupt_wal(dir, dir / "demo" / "primary", {"demo", "--dir", (dir / "demo").string(), "--records", "10", "--rate", "0"},
                                       1, "dix demo: log_corrupt: ");
}

TEST_CASE("dix demo: a path component longer than NAME_MAX, a symlink loop or a directory it may not search is one line of io_error and exit 1, not an abort", "[system][cli]") {
  temp_dir dir;
  dix::test::check_refuses_hostile_paths(dir, "demo", [](const std::string& path) { return std::vector<std::string>{"--dir", path, "--records", "5", "--rate", "0"}; });
}

TEST_CASE("dix demo: an index path holding a user's files or another program's RocksDB database is refused (store_format_mismatch, exit 1) and left byte for byte unchanged (issue 34 items 1, 2)", "[system][cli][demo][foreign]") {
  for (const auto* id : {"by-category", "by-brand", "fulltext", "similar"}) {
    for (auto kind : {dix::test::foreign_kind::files, dix::test::foreign_kind::rocksdb}) {
      INFO(id << (kind == dix::test::foreign_kind::files ? ": files" : ": a RocksDB database"));
      temp_dir dir;
      const auto demo_dir = dir / "demo";
      fs::create_directories(demo_dir);
      dix::test::check_refuses_foreign_index(dir, demo_dir / id, {"demo", "--dir", demo_dir.string(), "--records", "20", "--rate", "0"},
                                             kind);
    }
  }
}

TEST_CASE("dix demo: an index whose own files are damaged beyond opening heals by a rebuild and verifies (issue 34 item 6)", "[system][cli][demo][recovery]") {
  temp_dir dir;
  const auto demo_dir = dir / "demo";
  auto args = [&](const char* records) {
    return std::vector<std::string>{DIX_BINARY, "demo", "--dir", demo_dir.string(), "--records", records, "--rate", "0"};
  };
  auto first = dix::test::run(args("200"), dir.path());
  REQUIRE(first.exit_code == 0);
  // A corrupt CURRENT (RocksDB), a corrupt version file (Xapian), an emptied cursor file (hnsw).
  { std::ofstream(demo_dir / "by-brand" / "CURRENT", std::ios::trunc) << "garbage\n"; }
  { std::ofstream(demo_dir / "fulltext" / "iamglass", std::ios::trunc) << "garbage"; }
  { std::ofstream(demo_dir / "similar" / "cursor", std::ios::trunc) << "\n"; }
  auto healed = dix::test::run(args("100"), dir.path());
  INFO(healed.out << healed.err);
  REQUIRE(healed.exit_code == 0);
  for (const auto* id : {"by-category", "by-brand", "fulltext", "similar"}) {
    CHECK_THAT(healed.out, Catch::Contains(std::string("verify ") + id + ": OK ("));
  }
  // A table file of the full-text database gone (the sweep's case: retried as transient, never
  // rebuilt), and a by-category SST gone (by-brand's damage the midway rebuild would hide).
  fs::remove(demo_dir / "fulltext" / "postlist.glass");
  for (const auto& e : fs::directory_iterator(demo_dir / "by-category")) {
    if (e.path().extension() == ".sst") {
      fs::remove(e.path());
      break;
    }
  }
  auto again = dix::test::run(args("50"), dir.path());
  INFO(again.out << again.err);
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.out, Catch::Contains("verify fulltext: OK (") && Catch::Contains("verify by-category: OK ("));
}

TEST_CASE("dix demo: a plain file where an index directory should be is refused at once, naming it (issue 12, decision 0038)", "[system][cli][demo]") {
  temp_dir dir;
  auto demo_dir = dir / "demo";
  fs::create_directories(demo_dir);
  const auto plain = demo_dir / "by-brand";
  { std::ofstream(plain) << "a plain file where the index directory should be\n"; }
  auto run = dix::test::run({DIX_BINARY, "demo", "--dir", demo_dir.string(), "--records", "20", "--rate", "0", "--timeout", "3"},
                            dir.path());
  INFO(run.out << run.err);
  CHECK(run.exit_code == 1);
  CHECK_THAT(run.err, Catch::Contains("store_format_mismatch") && Catch::Contains(plain.string()) && Catch::Contains("not a directory"));
  CHECK(fs::is_regular_file(plain));
}

TEST_CASE("dix demo: a verification MISMATCH names the differing record and counts what the index holds, beside the products the primary store holds (issue 12 item 8, issue 31)", "[system][cli][demo]") {
  temp_dir dir;
  auto demo_dir = dir / "demo";
  auto first = dix::test::run({DIX_BINARY, "demo", "--dir", demo_dir.string(), "--records", "300", "--rate", "0"}, dir.path());
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  {
    // One entry no record of the primary store projects, written behind the backend's back with
    // its own options: key "zzz-foreign", ref (log "main", table 1, record "none").
    rocksdb::DBOptions o;
    std::vector<rocksdb::ColumnFamilyDescriptor> families;
    dix::rocksdb_index_open_options(o, families);
    o.create_if_missing = false;
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    REQUIRE(rocksdb::DB::Open(o, (demo_dir / "by-category").string(), families, &handles, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    const std::string foreign = std::string("zzz-foreign\x00\x01\x04main\x00\x00\x00\x01none", 26);
    CHECK(db->Put(rocksdb::WriteOptions{}, handles[1], foreign, rocksdb::Slice()).ok());
    for (auto* h : handles) CHECK(db->DestroyColumnFamilyHandle(h).ok());
    CHECK(db->Close().ok());
  }
  auto second = dix::test::run({DIX_BINARY, "demo", "--dir", demo_dir.string(), "--records", "1", "--rate", "0"}, dir.path());
  INFO(second.out << second.err);
  CHECK(second.exit_code == 1);
  CHECK_THAT(second.out, Catch::Contains("verify by-brand: OK"));
  CHECK_THAT(second.out, Catch::Contains("dix demo: verification FAILED"));
  // The owner's proof names the record, though only `entries` holds it (no `reverse` entry), and
  // counts what the index holds beside the products — not the expected count twice.
  auto at = second.out.find("verify by-category: MISMATCH (dix verify at main:");
  REQUIRE(at != std::string::npos);
  auto line = second.out.substr(at, second.out.find('\n', at) - at);
  INFO(line);
  CHECK_THAT(line, Catch::Contains(": 1 records differ: extra none; the index holds "));
  // Every product has a category: the index holds one record more than the products, the foreign one.
  CHECK(number_after(line, "; the index holds ") == number_after(line, " records for ") + 1);
}

TEST_CASE("dix demo: on a filesystem that fills up the writer stops at the store's free-space reserve with one line of io_error and exit 1, dix status and a restart say so, and once space is freed a run resumes and verifies (decision 0013)", "[system][cli][demo][space]") {
  temp_dir dir;
  std::string why;
  // Only `dix` children use the filesystem: in a namespace of its own a killed test leaves no mount.
  auto mnt = dix::test::tmpfs_mount::for_children(dir / "mnt", 64u << 20, why);
  if (!mnt) {
    WARN("skipped, " << why);
    return;
  }
  mnt->fill(*mnt / "filler", 24u << 20);  // what the test frees later; the demo gets 24 MiB
  const auto demo_dir = (*mnt / "demo").string();
  const auto primary = (*mnt / "demo" / "primary").string();
  // One line of stderr: the command, then the store's refusal (decision 0013).
  auto check_refused = [](const dix::test::command_result& r, const std::string& start) {
    CHECK(r.exit_code == 1);  // a clean refusal: no SIGABRT (134) inside RocksDB
    CHECK(dix::test::line_count(r.err) == 1);
    CHECK_THAT(r.err, Catch::StartsWith(start) && Catch::Contains("io_error: ") &&
                          Catch::Contains("free on its filesystem, below") && Catch::Contains("free-space reserve"));
  };

  auto full = dix::test::dix_cli(dir, {"demo", "--dir", demo_dir, "--records", "10000000", "--rate", "0", "--indexes", "secondary"});
  INFO(full.out << full.err);
  check_refused(full, "dix demo: the writer failed: io_error: primary store " + primary);

  auto status = dix::test::dix_cli(dir, {"status", "--db", primary});
  INFO(status.out << status.err);
  CHECK(status.exit_code == 0);
  CHECK_THAT(status.out, Catch::Contains("store " + primary + ": ") && Catch::Contains("free-space reserve of 8.0 MiB"));

  // Restarts while it stays full end the same way, never with an abort: the open is refused, or
  // the first commit is.
  auto again = dix::test::dix_cli(dir, {"demo", "--dir", demo_dir, "--records", "1000000", "--rate", "0", "--indexes", "secondary"});
  INFO(again.out << again.err);
  check_refused(again, "dix demo: ");
  auto write = dix::test::dix_cli(dir, {"write", "--db", primary, "--records", "1000000"});
  INFO(write.out << write.err);
  check_refused(write, "dix write: ");

  fs::remove(*mnt / "filler");
  auto resumed = dix::test::dix_cli(dir, {"demo", "--dir", demo_dir, "--records", "1000", "--rate", "0", "--indexes", "secondary"});
  INFO(resumed.out << resumed.err);
  CHECK(resumed.exit_code == 0);
  CHECK_THAT(resumed.out, Catch::Contains("verify by-category: OK") && Catch::Contains("verify by-brand: OK"));
}

TEST_CASE("dix demo: on a 20 MiB filesystem with all four indexes the writer stops at the store's reserve with exit 1, never an abort, and nothing fills the filesystem (issue 34 item 3)", "[system][cli][demo][space]") {
  temp_dir dir;
  std::string why;
  // Only `dix` children use the filesystem: in a namespace of its own a killed test leaves no mount.
  auto mnt = dix::test::tmpfs_mount::for_children(dir / "mnt", 20u << 20, why);
  if (!mnt) {
    WARN("skipped, " << why);
    return;
  }
  // Three runs: before the fix the full-text index filled the disk and RocksDB aborted (134) in
  // most of them.
  for (int run = 0; run < 3; ++run) {
    const auto demo_dir = (*mnt / ("demo" + std::to_string(run))).string();
    auto full = dix::test::dix_cli(dir, {"demo", "--dir", demo_dir, "--records", "10000000", "--rate", "0"});
    INFO(full.out << full.err);
    CHECK(full.exit_code == 1);  // a clean refusal: no SIGABRT (134) inside RocksDB
    CHECK_THAT(full.err, Catch::StartsWith("dix demo: the writer failed: io_error: ") && Catch::Contains("free-space reserve"));
    CHECK(mnt->available_bytes() > (512u << 10));
    fs::remove_all(demo_dir);  // the test's own directory: room for the next run
  }
}

TEST_CASE("dix demo: --indexes secondary follows and verifies the two secondary indexes alone, a later full run brings the dormant search indexes up to the store, and another value is a usage error", "[system][cli][demo]") {
  temp_dir dir;
  const auto demo_dir = (dir / "demo").string();
  auto both = dix::test::run({DIX_BINARY, "demo", "--dir", demo_dir, "--records", "300", "--rate", "0", "--indexes", "secondary"}, dir.path());
  INFO(both.out << both.err);
  REQUIRE(both.exit_code == 0);
  CHECK_THAT(both.out, Catch::Contains("verify by-category: OK") && Catch::Contains("verify by-brand: OK"));
  CHECK_THAT(both.out, !Catch::Contains("fulltext") && !Catch::Contains("similar"));
  CHECK_FALSE(fs::exists(fs::path(demo_dir) / "fulltext"));

  auto all = dix::test::run({DIX_BINARY, "demo", "--dir", demo_dir, "--records", "100", "--rate", "0"}, dir.path());
  INFO(all.out << all.err);
  REQUIRE(all.exit_code == 0);
  CHECK_THAT(all.out, Catch::Contains("verify fulltext: OK") && Catch::Contains("verify similar: OK") &&
                          Catch::Contains("search fulltext"));

  auto bad = dix::test::run({DIX_BINARY, "demo", "--dir", demo_dir, "--indexes", "search"}, dir.path());
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::StartsWith("dix demo: ") && Catch::Contains("indexes"));
}

TEST_CASE("dix demo: SIGINT and SIGTERM stop the writer and the indexes cleanly with one line saying so (exit 1), and the next run resumes and verifies (issue 34 item 17)", "[system][cli][demo]") {
  temp_dir dir;
  const auto demo_dir = (dir / "demo").string();
  for (int sig : {SIGINT, SIGTERM}) {
    INFO(sig);
    // stderr joins stdout, which the harness reads.
    auto demo = dix::cli::child_process::spawn({"/bin/sh", "-c", "exec \"$0\" demo --dir \"$1\" --records 10000000 --rate 2000 2>&1",
                                                 DIX_BINARY, demo_dir})
                    .value();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    REQUIRE(demo.wait_line("committed", deadline));  // the first progress line: the writer runs
    REQUIRE(::kill(demo.pid(), sig) == 0);
    auto said = demo.wait_line("dix demo: interrupted by ", deadline);
    REQUIRE(said);
    CHECK_THAT(*said, Catch::Contains(sig == SIGINT ? "SIGINT" : "SIGTERM") && Catch::Contains("run it again to resume"));
    const int status = demo.reap(0);
    CHECK((WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) == 1);
  }
  auto resumed = dix::test::run({DIX_BINARY, "demo", "--dir", demo_dir, "--records", "200", "--rate", "0"}, dir.path());
  INFO(resumed.out << resumed.err);
  CHECK(resumed.exit_code == 0);
  CHECK_THAT(resumed.out, Catch::Contains("verify by-category: OK") && Catch::Contains("verify similar: OK"));
}

TEST_CASE("dix demo and dix serve: a badly-moded or foreign-owned dix/ directory or segment is refused before the store is opened, the store byte for byte unchanged (issue 34 item 9)", "[system][cli][demo]") {
  temp_dir dir;
  const auto demo_dir = dir / "demo";
  REQUIRE(dix::test::dix_cli(dir, {"demo", "--dir", demo_dir.string(), "--records", "20", "--rate", "0", "--indexes", "secondary"}).exit_code == 0);
  const auto primary = demo_dir / "primary";
  struct damage {
    const char* what;
    fs::path path;
    bool chown_it;
  };
  std::vector<damage> cases{{"a dix/ another user could open", primary / "dix", false},
                            {"a segment another user could open", primary / "dix" / "readiness.seg", false}};
  if (::geteuid() == 0) cases.push_back({"a segment another user owns", primary / "dix" / "readiness.seg", true});
  for (const auto& c : cases) {
    INFO(c.what);
    const auto mode = fs::status(c.path).permissions();
    if (c.chown_it) REQUIRE(::chown(c.path.c_str(), 12345, 12345) == 0);
    else fs::permissions(c.path, fs::perms::group_read | fs::perms::others_read, fs::perm_options::add);
    const auto before = dix::test::snapshot_dir(primary);
    for (const auto* command : {"demo", "serve"}) {
      INFO(command);
      auto r = std::string(command) == "demo"
                 ? dix::test::dix_cli(dir, {"demo", "--dir", demo_dir.string(), "--records", "10", "--rate", "0"})
                 : dix::test::dix_cli(dir, {"serve", "--dir", demo_dir.string(), "--rate", "0"});
      INFO(r.out << r.err);
      CHECK(r.exit_code == 1);
      CHECK_THAT(r.err, Catch::Contains(c.path.string()) && Catch::Contains("dix ") &&
                            (Catch::Contains("has mode") || Catch::Contains("is owned by uid 12345")));
      const auto after = dix::test::snapshot_dir(primary);
      INFO("changed: " << dix::test::changed_files(before, after));
      CHECK(after == before);
    }
    if (c.chown_it) REQUIRE(::chown(c.path.c_str(), ::geteuid(), ::getegid()) == 0);
    fs::permissions(c.path, mode);
  }
  CHECK(dix::test::dix_cli(dir, {"demo", "--dir", demo_dir.string(), "--records", "10", "--rate", "0", "--indexes", "secondary"}).exit_code == 0);
}

TEST_CASE("dix demo: whatever the umask, the directory it makes, its store and every index directory are private to the user (0700) (issue 34 item 16, decision 0040)", "[system][cli][demo]") {
  temp_dir dir;
  const auto demo_dir = dir / "demo";
  // umask 000: without the rule RocksDB's, Xapian's and hnsw's files came out readable, and the
  // directories searchable, by every user.
  auto r = dix::test::run({"/bin/sh", "-c", "umask 000 && exec \"$0\" demo --dir \"$1\" --records 50 --rate 0", DIX_BINARY, demo_dir.string()},
                          dir.path());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  for (const auto& d : {demo_dir, demo_dir / "primary", demo_dir / "primary" / "dix", demo_dir / "by-category", demo_dir / "by-brand",
                        demo_dir / "fulltext", demo_dir / "similar"}) {
    INFO(d.string());
    struct stat st {};
    REQUIRE(::stat(d.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0700);
  }
}

TEST_CASE("dix demo and dix serve: a --dir that is itself a primary store, or an index's directory, is a bad argument (exit 2) naming what it is, nothing made in it (issue 34 sweep)", "[system][cli][demo]") {
  temp_dir dir;
  const auto store = dir / "store";
  REQUIRE(dix::test::dix_cli(dir, {"write", "--db", store.string(), "--records", "10"}).exit_code == 0);
  const auto before = dix::test::snapshot_dir(store);
  for (const auto* command : {"demo", "serve"}) {
    INFO(command);
    auto r = dix::test::dix_cli(dir, {command, "--dir", store.string(), "--rate", "0"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("is itself a primary store"));
    CHECK(dix::test::snapshot_dir(store) == before);
  }
  // An index's directory of a demo is named as what it is, not as a store (a new user's trial).
  const auto demo = dir / "demo";
  REQUIRE(dix::test::dix_cli(dir, {"demo", "--dir", demo.string(), "--records", "200"}).exit_code == 0);
  const auto index_before = dix::test::snapshot_dir(demo / "by-brand");
  auto r = dix::test::dix_cli(dir, {"demo", "--dir", (demo / "by-brand").string(), "--rate", "0"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("is an index's directory (it holds dix-index)"));
  CHECK(dix::test::snapshot_dir(demo / "by-brand") == index_before);
}

TEST_CASE("dix demo --remote --tls: three index nodes over mutual TLS, one SIGKILLed midway and restarted, queries "
          "on the nodes, every index verified, and a second run resumes",
          "[system][cli][demo][remote]") {
  temp_dir dir;
  const auto d = (dir / "d").string();
  for (int run = 0; run < 2; ++run) {
    INFO("run " << run);
    auto r = dix_cli(dir, {"demo", "--dir", d, "--records", "2000", "--rate", "4000", "--remote", "--tls"});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    for (const char* id : {"by-category", "fulltext", "similar"}) {
      CHECK_THAT(r.out, Catch::Contains(std::string("dix demo: index node of ") + id + ": dix serve-backend --kind"));
    }
    CHECK_THAT(r.out, Catch::Contains("mutual TLS)"));
    CHECK_THAT(r.out, Catch::Contains("index node of by-category: SIGKILLed (pid "));
    CHECK_THAT(r.out, Catch::Contains("a lookup on its index node (another process) waiting until the index covered that write found it"));
    // Each node's index proven by the owner through its session (dix verify), not read at rest.
    for (const char* id : {"by-category", "fulltext", "similar"}) {
      CHECK_THAT(r.out, Catch::Contains(std::string("verify ") + id + " (on its index node): OK (dix verify: equal to the projection through main:"));
    }
    CHECK_THAT(r.out, Catch::Contains("verify by-brand: OK"));
    CHECK_THAT(r.out, Catch::Contains("dix demo: verified: every index equals the projection of the primary store"));
  }
  CHECK_FALSE(std::filesystem::exists(dir / "d" / "by-category"));  // nothing of the remote indexes here
  CHECK(std::filesystem::exists(dir / "d" / "nodes" / "by-category" / "epoch"));
  auto alone = dix_cli(dir, {"demo", "--dir", d, "--tls"});
  CHECK(alone.exit_code == 2);
  CHECK_THAT(alone.err, Catch::Contains("--tls needs --remote"));
  auto few = dix_cli(dir, {"demo", "--dir", d, "--remote", "--indexes", "secondary"});
  CHECK(few.exit_code == 2);
  CHECK_THAT(few.err, Catch::Contains("--remote needs --indexes all"));
}
