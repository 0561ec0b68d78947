// `dix demo` as a user runs it: to the end, again (resuming), and after a SIGKILL mid-run.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "adapters/test_support.hpp"
#include "cli/dix_cli.hpp"

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
  auto present = number_after(first.out, " entries for ", first.out.find("verify by-category"));
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

TEST_CASE("dix demo: a path component longer than NAME_MAX, a symlink loop or a directory it may not search is one line of io_error and exit 1, not an abort", "[system][cli]") {
  temp_dir dir;
  dix::test::check_refuses_hostile_paths(dir, "demo", [](const std::string& path) { return std::vector<std::string>{"--dir", path, "--records", "5", "--rate", "0"}; });
}

TEST_CASE("dix demo: an index database that cannot be opened is named with its error in the progress line, not just `unknown` (issue 12)", "[system][cli][demo]") {
  temp_dir dir;
  auto demo_dir = dir / "demo";
  fs::create_directories(demo_dir);
  const auto plain = demo_dir / "by-brand";
  { std::ofstream(plain) << "a plain file where the index directory should be\n"; }
  auto run = dix::test::run({DIX_BINARY, "demo", "--dir", demo_dir.string(), "--records", "20", "--rate", "0", "--timeout", "3"},
                            dir.path());
  INFO(run.out << run.err);
  CHECK(run.exit_code == 1);  // does not catch up within the timeout
  CHECK_THAT(run.out, Catch::Contains("by-brand: indexed through seq 0") && Catch::Contains("transient fault ") && Catch::Contains(" in a row: durable_cursor(): index by-brand: cannot open") &&
                          Catch::Contains(plain.string()) && Catch::Contains("not a directory"));
  CHECK(fs::is_regular_file(plain));
}
