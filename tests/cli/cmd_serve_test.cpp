// `dix serve` (runtime/cli/cmd_serve.cpp) as a user runs it. A bad --scheduler is refused before
// anything is opened; `dix bench` makes the same check (tool/args), so the one test covers both.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <dix/free_functions.hpp>

#include "cli/dix_cli.hpp"
#include "harness/child_process.hpp"
#include "support/lag_wait.hpp"
#include "support/tmpfs_mount.hpp"

using namespace dix;
using namespace std::chrono_literals;
using dix::cli::child_process;
using dix::test::temp_dir;

using dix::test::dix_cli;

TEST_CASE("dix serve and dix bench: a --scheduler other than sharing or stealing exits 2 and names the choices", "[system][cli]") {
  temp_dir dir;
  auto serve = dix_cli(dir, {"serve", "--dir", (dir / "d").string(), "--scheduler", "fifo"});
  CHECK(serve.exit_code == 2);
  CHECK_THAT(serve.err, Catch::Contains("--scheduler = \"fifo\": must be one of sharing, stealing"));
  CHECK_FALSE(std::filesystem::exists(dir / "d" / "primary"));  // refused before anything is opened
  auto bench = dix_cli(dir, {"bench", "catchup", "--scheduler", "fifo"});
  CHECK(bench.exit_code == 2);
  CHECK_THAT(bench.err, Catch::Contains("must be one of sharing, stealing"));
}

TEST_CASE("dix serve: an existing RocksDB database that is not a dix store is refused (store_format_mismatch, exit 1) and left byte for byte unchanged", "[system][cli]") {
  temp_dir dir;
  const auto db = dir / "d" / "primary";
  dix::test::check_refuses_foreign_store(dir, db, {"serve", "--dir", (dir / "d").string(), "--rate", "0"});
}

TEST_CASE("dix serve: a path component longer than NAME_MAX, a symlink loop or a directory it may not search is one line of io_error and exit 1, not an abort", "[system][cli]") {
  temp_dir dir;
  dix::test::check_refuses_hostile_paths(dir, "serve", [](const std::string& path) { return std::vector<std::string>{"--dir", path, "--rate", "0"}; });
}

TEST_CASE("dix serve: SIGINT ends a waiting standby with exit 0, as it stops an owner cleanly", "[system][cli][serve]") {
  temp_dir dir;
  const auto d = (dir / "d").string();
  auto owner = child_process::spawn({DIX_BINARY, "serve", "--dir", d, "--rate", "50"}).value();
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  REQUIRE(owner.wait_line("serve: owner of", deadline));
  auto standby = child_process::spawn({DIX_BINARY, "serve", "--dir", d, "--rate", "50", "--standby"}).value();
  // The line is printed once the standby is about to block on the store's LOCK.
  REQUIRE(standby.wait_line("serve: standby, waiting for", deadline));
  const int waiting = standby.reap(SIGINT);
  CHECK(WIFEXITED(waiting));
  CHECK((WIFEXITED(waiting) ? WEXITSTATUS(waiting) : 128 + WTERMSIG(waiting)) == 0);
  const int owned = owner.reap(SIGINT);
  CHECK(WIFEXITED(owned));
  CHECK((WIFEXITED(owned) ? WEXITSTATUS(owned) : 128 + WTERMSIG(owned)) == 0);
}

TEST_CASE("dix serve: a --dir whose parent does not exist is a bad argument (exit 2) and creates nothing, and a primary directory holding other files is refused at once, standby or not (decision 0035)",
          "[system][cli][serve]") {
  temp_dir dir;
  const auto typo = dir / "a" / "b";
  for (bool standby : {false, true}) {
    std::vector<std::string> args{"serve", "--dir", typo.string(), "--rate", "0"};
    if (standby) args.push_back("--standby");
    auto r = dix_cli(dir, args);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err == "dix serve: --dir " + typo.string() + ": " + (dir / "a").string() +
                       " does not exist (only the last component is created) (dix serve --help for usage)\n");
    CHECK_FALSE(std::filesystem::exists(dir / "a"));
  }
  std::filesystem::create_directories(dir / "d" / "primary");
  { std::ofstream(dir / "d" / "primary" / "notes.txt") << "someone else's"; }
  const auto before = dix::test::snapshot_dir(dir / "d" / "primary");
  for (bool standby : {false, true}) {
    std::vector<std::string> args{"serve", "--dir", (dir / "d").string(), "--rate", "0"};
    if (standby) args.push_back("--standby");
    auto r = dix_cli(dir, args);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("store_format_mismatch: " + (dir / "d" / "primary").string() +
                                      " is a directory that holds files (\"notes.txt\")"));
  }
  CHECK(dix::test::snapshot_dir(dir / "d" / "primary") == before);
}

namespace {
// Whether the child still runs (not reaped, no exit status waiting).
bool alive(const child_process& c) {
  int status = 0;
  return c.pid() > 0 && ::waitpid(c.pid(), &status, WNOHANG) == 0;
}
}  // namespace

TEST_CASE("dix serve: on a filesystem that fills up the owner keeps serving: its writer waits at the store's reserve, a standby keeps waiting, once space is freed the writer and every index go on by themselves, and SIGINT stops both cleanly (issue 34 items 4, 5)", "[system][cli][serve][space]") {
  temp_dir dir;
  std::string why;
  // Only `dix` children use the filesystem: in a namespace of its own a killed test leaves no mount.
  auto mnt = dix::test::tmpfs_mount::for_children(dir / "mnt", 64u << 20, why);
  if (!mnt) {
    WARN("skipped, " << why);
    return;
  }
  const auto d = (*mnt / "d").string();
  const auto home = *mnt / "d" / "primary";
  auto in = [](std::chrono::seconds s) { return std::chrono::steady_clock::now() + s; };  // failure bounds
  auto owner = child_process::spawn({DIX_BINARY, "serve", "--dir", d, "--rate", "300"}).value();
  REQUIRE(owner.wait_line("serve: owner of", in(120s)));
  for (const auto* id : {"by-category", "by-brand", "fulltext", "similar"}) REQUIRE(owner.wait_line(std::string(id) + " ready", in(120s)));
  auto standby = child_process::spawn({DIX_BINARY, "serve", "--dir", d, "--rate", "300", "--standby"}).value();
  REQUIRE(standby.wait_line("serve: standby, waiting for", in(120s)));
  // Another program fills the filesystem to just above the store's reserve (8 MiB of 64): the
  // writer meets it, says so and goes on waiting (before: the owner exited, then the standby).
  mnt->fill(*mnt / "filler", (8u << 20) + (256u << 10));
  auto waits = owner.wait_line("serve: the writer waits for free space, the indexes are still served: io_error: ", in(120s));
  INFO([&] {
    std::string all;
    for (const auto& l : owner.lines()) all += l + "\n";
    return all;
  }());
  REQUIRE(waits);
  CHECK_THAT(*waits, Catch::Contains("free-space reserve"));
  CHECK(alive(owner));
  CHECK(alive(standby));
  CHECK(mnt->available_bytes() > (512u << 10));  // nothing filled the filesystem
  // Space is freed: the writer resumes by itself and every index catches up with it (before: an
  // index deferred at its reserve stayed deferred, its unflushed data counted for good).
  std::filesystem::remove(*mnt / "filler");
  for (const auto* id : {"by-category", "by-brand", "fulltext", "similar"}) {
    INFO(id);
    auto caught_up = dix::test::wait_lag(home, id, [](const dix::lag_figures& f) {
      return (f.state == dix::runner_state::idle || f.state == dix::runner_state::running) && !f.logs.empty() &&
             f.logs[0].sequence_lag <= 2000 && f.logs[0].read_per_s > 0;
    }, 90s);
    CHECK(caught_up);
  }
  CHECK(alive(owner));
  const int owned = owner.reap(SIGINT);
  CHECK((WIFEXITED(owned) ? WEXITSTATUS(owned) : 128 + WTERMSIG(owned)) == 0);
  // The standby takes the store over.
  REQUIRE(standby.wait_line("serve: took over", in(120s)));
  const int waited = standby.reap(SIGINT);
  CHECK((WIFEXITED(waited) ? WEXITSTATUS(waited) : 128 + WTERMSIG(waited)) == 0);
}

TEST_CASE("dix serve runs the demo's four indexes: each one's readiness line comes, ready, and SIGINT stops it cleanly (issue 34 item 15)", "[system][cli][serve]") {
  temp_dir dir;
  auto owner = child_process::spawn({DIX_BINARY, "serve", "--dir", (dir / "d").string(), "--rate", "200"}).value();
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  for (const auto* id : {"by-category", "by-brand", "fulltext", "similar"}) {
    INFO(id);
    CHECK(owner.wait_line(std::string(id) + " ready epoch=", deadline));
  }
  const int owned = owner.reap(SIGINT);
  CHECK((WIFEXITED(owned) ? WEXITSTATUS(owned) : 128 + WTERMSIG(owned)) == 0);
}

TEST_CASE("dix serve --indexes: only the named indexes are made and served (no directory, no readiness slot for the others), "
          "an unknown or repeated name, or a --backend-host index the list leaves out, exits 2 before anything is made",
          "[system][cli][serve]") {
  temp_dir dir;
  const auto d = (dir / "d").string();
  for (const auto& [list, refused] : std::vector<std::pair<std::string, std::string>>{
           {"by-brand,nope", "\"nope\" is not one of by-category, by-brand, fulltext, similar"},
           {"fulltext,fulltext", "\"fulltext\" is given twice"}}) {
    auto r = dix_cli(dir, {"serve", "--dir", d, "--indexes", list});
    INFO(list << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(refused));
  }
  auto elsewhere = dix_cli(dir, {"serve", "--dir", d, "--indexes", "by-brand", "--backend-host", "similar=127.0.0.1:9"});
  CHECK(elsewhere.exit_code == 2);
  CHECK_THAT(elsewhere.err, Catch::Contains("--backend-host names similar, which --indexes leaves out"));
  CHECK_FALSE(std::filesystem::exists(d));

  auto owner = child_process::spawn({DIX_BINARY, "serve", "--dir", d, "--rate", "200", "--indexes", "fulltext,by-brand"}).value();
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  REQUIRE(owner.wait_line("by-brand ready epoch=", deadline));
  REQUIRE(owner.wait_line("fulltext ready epoch=", deadline));
  REQUIRE(owner.wait_line("serve: owner of", deadline));
  const int owned = owner.reap(SIGINT);
  CHECK((WIFEXITED(owned) ? WEXITSTATUS(owned) : 128 + WTERMSIG(owned)) == 0);
  // Registered: a slot in the readiness segment for the two named, none for the others.
  const auto home = dir / "d" / "primary";
  CHECK(dix::read_readiness(home, "by-brand"));
  CHECK(dix::read_readiness(home, "fulltext"));
  for (const auto* id : {"by-category", "similar"}) {
    INFO(id);
    auto slot = dix::read_readiness(home, id);
    REQUIRE_FALSE(slot);
    CHECK(slot.error().value() == dix::errc::not_registered);
  }
  CHECK(std::filesystem::exists(dir / "d" / "by-brand"));
  CHECK(std::filesystem::exists(dir / "d" / "fulltext"));
  CHECK_FALSE(std::filesystem::exists(dir / "d" / "by-category"));
  CHECK_FALSE(std::filesystem::exists(dir / "d" / "similar"));
}

TEST_CASE("dix serve: an index path holding a user's files or another program's RocksDB database is refused (store_format_mismatch, exit 1) and left byte for byte unchanged (issue 34 items 1, 2)", "[system][cli][serve][foreign]") {
  for (const auto* id : {"by-category", "fulltext", "similar"}) {
    for (auto kind : {dix::test::foreign_kind::files, dix::test::foreign_kind::rocksdb}) {
      INFO(id << (kind == dix::test::foreign_kind::files ? ": files" : ": a RocksDB database"));
      temp_dir dir;
      const auto d = dir / "d";
      std::filesystem::create_directories(d);
      dix::test::check_refuses_foreign_index(dir, d / id, {"serve", "--dir", d.string(), "--rate", "0"}, kind);
    }
  }
}

TEST_CASE("dix serve --backend-host: an index of the demo on an index node (dix serve-backend) is built there, "
          "kept up to date and answers a reader's query on the node, and bad specifications exit 2 before anything "
          "is opened",
          "[system][cli][serve][remote]") {
  temp_dir dir;
  const auto d = (dir / "d").string();
  for (const auto& [spec, words] :
       {std::pair{"nobody=127.0.0.1:1", "expected by-category, by-brand, fulltext or similar"},
        std::pair{"by-brand=127.0.0.1:0", "the node's port is needed"},
        std::pair{"by-brand=127.0.0.1:1,by-brand=127.0.0.1:2", "named twice"}, std::pair{"by-brand", "ID=HOST:PORT"}}) {
    INFO(spec);
    auto r = dix_cli(dir, {"serve", "--dir", d, "--backend-host", spec});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(words));
  }
  auto partial = dix_cli(dir, {"serve", "--dir", d, "--backend-host", "by-brand=127.0.0.1:1", "--tls-ca", "ca.pem"});
  CHECK(partial.exit_code == 2);
  CHECK_THAT(partial.err, Catch::Contains("all three"));
  CHECK_FALSE(std::filesystem::exists(dir / "d"));

  const auto deadline = std::chrono::steady_clock::now() + 120s;
  auto node = child_process::spawn({DIX_BINARY, "serve-backend", "--kind", "rocksdb", "--id", "by-brand", "--path",
                                    (dir / "node").string()})
                  .value();
  auto line = node.wait_line("dix serve-backend: listening on 127.0.0.1:", deadline);
  REQUIRE(line);
  const auto at = line->substr(line->rfind(' ') + 1);
  auto owner = child_process::spawn({DIX_BINARY, "serve", "--dir", d, "--rate", "200", "--backend-host", "by-brand=" + at})
                   .value();
  REQUIRE(owner.wait_line("serve: by-brand on the index node " + at, deadline));
  REQUIRE(dix::test::wait_readiness(dir / "d" / "primary", "by-brand", dix::test::is_ready));
  CHECK_FALSE(std::filesystem::exists(dir / "d" / "by-brand"));  // nothing of it in the owner's directory
  // Every brand of the catalogue starts with a letter: the whole printable range holds them all.
  // `ready` may be published before the node hears its first coverage: a reader waits for any.
  auto rows = dix_cli(dir, {"query", "--backend-host", at, "--id", "by-brand", "range", "a", "{", "--limit", "10000",
                            "--wait-since", "1", "--timeout", "60000"});
  INFO(rows.out << rows.err);
  CHECK(rows.exit_code == 0);
  CHECK_THAT(rows.out, Catch::Contains("main/1/p"));
  const int owned = owner.reap(SIGTERM);
  CHECK((WIFEXITED(owned) ? WEXITSTATUS(owned) : 128 + WTERMSIG(owned)) == 0);
  const int served = node.reap(SIGTERM);
  CHECK((WIFEXITED(served) ? WEXITSTATUS(served) : 128 + WTERMSIG(served)) == 0);
}

TEST_CASE("dix serve-backend: a --path directory of the user's that others may open is refused (io_error, exit 1, "
          "the chmod named) with nothing made in it, and a private one the user made is served",
          "[system][cli][serve][remote]") {
  temp_dir dir;
  const auto open_dir = dir / "open";
  std::filesystem::create_directory(open_dir);
  std::filesystem::permissions(open_dir, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                             std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                                             std::filesystem::perms::others_exec);  // 0755
  auto refused = dix_cli(dir, {"serve-backend", "--kind", "rocksdb", "--path", open_dir.string()});
  INFO(refused.err);
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Catch::Contains("has mode 0755") && Catch::Contains("chmod 0700 " + open_dir.string()));
  CHECK(std::filesystem::is_empty(open_dir));  // the index was not made before the refusal

  std::filesystem::permissions(open_dir, std::filesystem::perms::owner_all);  // the remedy the message names
  auto node = child_process::spawn({DIX_BINARY, "serve-backend", "--kind", "rocksdb", "--path", open_dir.string()}).value();
  REQUIRE(node.wait_line("dix serve-backend: listening on 127.0.0.1:", std::chrono::steady_clock::now() + 60s));
  const int served = node.reap(SIGTERM);
  CHECK((WIFEXITED(served) ? WEXITSTATUS(served) : 128 + WTERMSIG(served)) == 0);
  CHECK(std::filesystem::exists(open_dir / "index" / "dix-index"));
}

TEST_CASE("dix query, dix serve-backend and dix serve --backend-host: an address they cannot use is refused (exit 2) "
          "naming the option given, not another command's",
          "[system][cli][remote]") {
  temp_dir dir;
  // nohost.invalid never resolves (RFC 6761).
  for (const auto& [args, option] :
       {std::pair{std::vector<std::string>{"query", "--backend-host", "nohost.invalid:99", "lookup", "x"}, "--backend-host: "},
        std::pair{std::vector<std::string>{"serve-backend", "--kind", "rocksdb", "--path", (dir / "n").string(), "--listen",
                                           "127.0.0.1"},
                  "--listen: "},
        std::pair{std::vector<std::string>{"serve", "--dir", (dir / "d").string(), "--backend-host",
                                           "by-brand=nohost.invalid:1"},
                  "--backend-host: by-brand: "}}) {
    auto r = dix_cli(dir, args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(option) && !Catch::Contains("--metrics-listen"));
  }
  CHECK_FALSE(std::filesystem::exists(dir / "n"));
  CHECK_FALSE(std::filesystem::exists(dir / "d"));
  // A port bound but not listening refuses every connection: said in words first, CAF's error
  // kept after them for its context.
  const int bound = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(bound >= 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(bound, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0);
  socklen_t len = sizeof at;
  REQUIRE(::getsockname(bound, reinterpret_cast<sockaddr*>(&at), &len) == 0);
  auto refused = dix_cli(dir, {"query", "--backend-host", "127.0.0.1:" + std::to_string(ntohs(at.sin_port)), "lookup", "x"});
  ::close(bound);
  INFO(refused.err);
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Catch::Contains(": nothing accepted the connection: is an index node listening there? ("));
}
