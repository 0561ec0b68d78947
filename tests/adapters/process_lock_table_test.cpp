#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <functional>
#include <iterator>
#include <optional>
#include <vector>

#include "adapters/posix_files.hpp"
#include "adapters/process_lock_table.hpp"
#include "adapters/test_support.hpp"
#include "support/child.hpp"

using namespace dix;
using dix::test::temp_dir;
using dix::test::fork_child;
using dix::test::pipe_pair;
using dix::test::read_byte;
using dix::test::umask_scope;
using dix::test::wait_exit;
namespace fs = std::filesystem;

namespace {

// `<home>/dix` as the segment leaves it: created 0700 by the first attach.
fs::path make_dix_dir(const temp_dir& dir, const std::string& home = "db") {
  auto dix_dir = dir / home / "dix";
  fs::create_directories(dix_dir);
  fs::permissions(dix_dir, fs::perms::owner_all);  // private, as a runtime makes it
  return dix_dir;
}

// A lock file made beforehand (by another process of the user, say), private as dix makes it.
void make_lock_file(const fs::path& path) {
  REQUIRE(make_private_directory(path.parent_path(), "test"));
  REQUIRE(open_private_file(path, "test"));
}

mode_t mode_of(const fs::path& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// Every grant the table calls, in order.
struct grants {
  std::vector<std::pair<std::uint64_t, result<void>>> calls;
  std::vector<bool> contended;  // per call

  runner_lock::grant for_requester(std::uint64_t requester) {
    return [this, requester](result<void> r, bool busy) {
      calls.emplace_back(requester, std::move(r));
      contended.push_back(busy);
    };
  }
  std::vector<std::uint64_t> granted() const {
    std::vector<std::uint64_t> out;
    for (const auto& [requester, r] : calls) {
      if (r) out.push_back(requester);
    }
    return out;
  }
};

bool child_send(int fd, char c) { return ::write(fd, &c, 1) == 1; }

// Another process that answers, per 'p' it reads, whether it can take the flock of `path`
// through a descriptor of its own: 'h' (EWOULDBLOCK: held elsewhere), 'f' (free: it took and
// dropped it) or 'e'. It exits on 'q' or end of input.
//
// Fork it before the parent's table opens any lock file: a forked child shares the parent's
// open file descriptions, and an inherited copy would keep the parent's flock alive after the
// table closes its own descriptor.
class flock_probe {
 public:
  explicit flock_probe(const fs::path& path) {
    int commands = commands_.read_end;
    int answers = answers_.write_end;
    std::string file = path.string();
    pid_ = fork_child([commands, answers, file]() {
      while (read_byte(commands) == 'p') {
        int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
        char answer = 'e';
        if (fd >= 0) {
          if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
            answer = 'f';
          } else if (errno == EWOULDBLOCK) {
            answer = 'h';
          }
          ::close(fd);
        }
        if (!child_send(answers, answer)) return 4;
      }
      return 0;
    });
  }
  ~flock_probe() {
    if (pid_ > 0) {
      char quit = 'q';
      (void)!::write(commands_.write_end, &quit, 1);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  flock_probe(const flock_probe&) = delete;
  flock_probe& operator=(const flock_probe&) = delete;

  char probe() {
    commands_.send('p');
    return answers_.receive();
  }

 private:
  pipe_pair commands_;
  pipe_pair answers_;
  pid_t pid_ = -1;
};

}  // namespace

TEST_CASE("process lock table: a free entry is granted at once and its lock file is flocked", "[system][lock]") {
  temp_dir dir;
  auto dix_dir = make_dix_dir(dir);
  auto table = process_lock_table::for_home(dix_dir);
  CHECK(table->lock_file("idx") == fs::canonical(dix_dir) / "runner" / "idx.lock");
  make_lock_file(dix_dir / "runner" / "idx.lock");
  flock_probe other(dix_dir / "runner" / "idx.lock");
  REQUIRE(other.probe() == 'f');

  grants g;
  CHECK_FALSE(table->owned("idx"));
  table->acquire("idx", 1, g.for_requester(1));
  REQUIRE(g.calls.size() == 1);
  CHECK(g.granted() == std::vector<std::uint64_t>{1});
  CHECK(table->owned("idx"));
  CHECK_FALSE(table->owned("other"));
  CHECK(other.probe() == 'h');

  table->release("idx", 1);
  CHECK_FALSE(table->owned("idx"));
  CHECK(other.probe() == 'f');
}

TEST_CASE("process lock table: a second requester is queued and handed the entry FIFO on release, the flock kept across the handoff", "[system][lock]") {
  temp_dir dir;
  auto dix_dir = make_dix_dir(dir);
  auto table = process_lock_table::for_home(dix_dir);
  auto path = table->lock_file("idx");
  make_lock_file(path);
  flock_probe other(path);

  grants g;
  table->acquire("idx", 1, g.for_requester(1));
  table->acquire("idx", 2, g.for_requester(2));
  table->acquire("idx", 3, g.for_requester(3));
  CHECK(g.granted() == std::vector<std::uint64_t>{1});
  CHECK(g.calls.size() == 1);
  CHECK(table->test_waiter_count("idx") == 2);
  CHECK(other.probe() == 'h');

  table->release("idx", 1);
  CHECK(g.granted() == std::vector<std::uint64_t>{1, 2});
  CHECK(table->owned("idx"));
  CHECK(table->test_waiter_count("idx") == 1);
  CHECK(other.probe() == 'h');  // the handoff kept the descriptor

  table->release("idx", 2);
  CHECK(g.granted() == std::vector<std::uint64_t>{1, 2, 3});
  CHECK(other.probe() == 'h');

  table->release("idx", 3);
  CHECK(g.calls.size() == 3);
  CHECK_FALSE(table->owned("idx"));
  CHECK(other.probe() == 'f');
}

TEST_CASE("process lock table: releasing a waiting requester withdraws it and an unknown requester's release is ignored", "[adapter][lock]") {
  temp_dir dir;
  auto table = process_lock_table::for_home(make_dix_dir(dir));
  grants g;
  table->acquire("idx", 1, g.for_requester(1));
  table->acquire("idx", 2, g.for_requester(2));
  table->acquire("idx", 3, g.for_requester(3));

  table->release("idx", 99);    // neither owner nor waiter
  table->release("other", 1);   // no such entry
  CHECK(table->owned("idx"));
  CHECK(table->test_waiter_count("idx") == 2);
  CHECK(g.calls.size() == 1);

  table->release("idx", 2);  // withdraws the waiter
  CHECK(table->test_waiter_count("idx") == 1);
  CHECK(g.calls.size() == 1);

  table->release("idx", 1);
  CHECK(g.granted() == std::vector<std::uint64_t>{1, 3});
  table->release("idx", 3);
  CHECK(g.calls.size() == 2);
  CHECK_FALSE(table->owned("idx"));
}

TEST_CASE("process lock table: the owner acquiring again is granted again and keeps the entry", "[adapter][lock]") {
  temp_dir dir;
  auto table = process_lock_table::for_home(make_dix_dir(dir));
  grants g;
  table->acquire("idx", 1, g.for_requester(1));
  table->acquire("idx", 1, g.for_requester(1));
  CHECK(g.granted() == std::vector<std::uint64_t>{1, 1});
  CHECK(table->test_waiter_count("idx") == 0);
  table->release("idx", 1);
  CHECK_FALSE(table->owned("idx"));
}

TEST_CASE("process lock table: a grant may re-enter the table", "[adapter][lock]") {
  temp_dir dir;
  auto table = process_lock_table::for_home(make_dix_dir(dir));
  std::vector<std::uint64_t> order;
  table->acquire("idx", 1, [&](result<void> r, bool) {
    REQUIRE(r);
    order.push_back(1);
    CHECK(table->owned("idx"));
  });
  table->acquire("idx", 2, [&](result<void> r, bool) {
    REQUIRE(r);
    order.push_back(2);
    table->release("idx", 2);  // runs on the releasing thread, outside the table mutex
  });
  table->release("idx", 1);
  CHECK(order == std::vector<std::uint64_t>{1, 2});
  CHECK_FALSE(table->owned("idx"));
}

TEST_CASE("process lock table: another process holding the flock refuses the acquisition with io_error naming the file, unqueued, until it is killed", "[system][lock]") {
  temp_dir dir;
  auto dix_dir = make_dix_dir(dir);
  auto table = process_lock_table::for_home(dix_dir);
  auto path = table->lock_file("idx");
  REQUIRE(::mkdir(path.parent_path().c_str(), 0700) == 0);

  pipe_pair to_parent;
  pipe_pair to_child;
  std::string file = path.string();
  int report = to_parent.write_end;
  int wait_on = to_child.read_end;
  pid_t child = fork_child([file, report, wait_on]() {
    int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return 10;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) return 11;
    if (!child_send(report, 'k')) return 12;
    read_byte(wait_on);  // holds the flock until killed
    return 0;
  });
  REQUIRE(to_parent.receive() == 'k');

  grants g;
  table->acquire("idx", 1, g.for_requester(1));
  REQUIRE(g.calls.size() == 1);
  const auto& refused = g.calls[0].second;
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::io_error);
  CHECK(refused.error().message() == "runner lock " + path.string() + " is held by another process");
  CHECK(g.contended[0]);  // passes by itself: no fault (protocol.md §9.1)
  CHECK_FALSE(table->owned("idx"));
  CHECK(table->test_waiter_count("idx") == 0);

  REQUIRE(::kill(child, SIGKILL) == 0);
  CHECK(wait_exit(child) == 128 + SIGKILL);  // the kernel dropped the child's flock

  table->acquire("idx", 2, g.for_requester(2));
  REQUIRE(g.calls.size() == 2);
  CHECK(g.granted() == std::vector<std::uint64_t>{2});
  CHECK(table->owned("idx"));
  table->release("idx", 2);
  CHECK(g.calls.size() == 2);  // the refused requester was never queued
  CHECK_FALSE(table->owned("idx"));
}

TEST_CASE("process lock table: while this process owns the id another process cannot flock the file, after the release it can", "[system][lock]") {
  temp_dir dir;
  auto dix_dir = make_dix_dir(dir);
  auto table = process_lock_table::for_home(dix_dir);
  auto path = table->lock_file("idx");

  // The child is forked before the table opens the file (see flock_probe).
  pipe_pair to_child;
  pipe_pair to_parent;
  std::string file = path.string();
  int commands = to_child.read_end;
  int answers = to_parent.write_end;
  pid_t child = fork_child([file, commands, answers]() {
    for (char round : {'1', '2'}) {
      if (read_byte(commands) != round) return 10;
      int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
      if (fd < 0) return 11;
      int rc = ::flock(fd, LOCK_EX | LOCK_NB);
      char answer = rc == 0 ? 'f' : errno == EWOULDBLOCK ? 'w' : 'e';
      if (!child_send(answers, answer)) return 12;
      if (rc == 0) ::flock(fd, LOCK_UN);
      ::close(fd);
    }
    return 0;
  });

  grants g;
  table->acquire("idx", 1, g.for_requester(1));
  REQUIRE(g.granted() == std::vector<std::uint64_t>{1});
  to_child.send('1');
  CHECK(to_parent.receive() == 'w');  // EWOULDBLOCK

  table->release("idx", 1);
  to_child.send('2');
  CHECK(to_parent.receive() == 'f');
  CHECK(wait_exit(child) == 0);
}

TEST_CASE("process lock table: runner/ is created 0700 and lock files 0600 whatever the umask", "[adapter][lock]") {
  for (mode_t mask : {mode_t{0}, mode_t{0777}}) {
    temp_dir dir;
    auto table = process_lock_table::for_home(make_dix_dir(dir));
    grants g;
    {
      umask_scope scope(mask);
      table->acquire("idx", 1, g.for_requester(1));
      table->acquire("other.idx", 2, g.for_requester(2));
    }
    REQUIRE(g.granted() == std::vector<std::uint64_t>{1, 2});
    CHECK(mode_of(table->directory() / "runner") == 0700);
    CHECK(mode_of(table->lock_file("idx")) == 0600);
    CHECK(mode_of(table->lock_file("other.idx")) == 0600);
    table->release("idx", 1);
    table->release("other.idx", 2);
  }
}

TEST_CASE("process lock table: a symlink planted as the lock file is refused with io_error naming the path", "[adapter][lock]") {
  temp_dir dir;
  auto table = process_lock_table::for_home(make_dix_dir(dir));
  auto path = table->lock_file("idx");
  REQUIRE(::mkdir(path.parent_path().c_str(), 0700) == 0);
  auto target = dir / "elsewhere";
  fs::create_symlink(target, path);

  grants g;
  table->acquire("idx", 1, g.for_requester(1));
  REQUIRE(g.calls.size() == 1);
  REQUIRE_FALSE(g.calls[0].second);
  CHECK(g.calls[0].second.error().value() == errc::io_error);
  CHECK(g.calls[0].second.error().message().find(path.string()) != std::string::npos);
  CHECK_FALSE(g.contended[0]);  // an unusable lock file: a transient fault for the runner
  CHECK_FALSE(fs::exists(target));
  CHECK_FALSE(table->owned("idx"));
}

TEST_CASE("process lock table: a directory at the lock file's path is refused, not contended, with io_error naming the path and the errno text, every time, leaving it as it was (issue 12)", "[adapter][lock]") {
  temp_dir dir;
  auto table = process_lock_table::for_home(make_dix_dir(dir));
  auto path = table->lock_file("idx");
  fs::create_directories(path);
  fs::permissions(path.parent_path(), fs::perms::owner_all);
  for (std::uint64_t requester = 1; requester <= 3; ++requester) {
    grants g;
    table->acquire("idx", requester, g.for_requester(requester));
    REQUIRE(g.calls.size() == 1);
    REQUIRE_FALSE(g.calls[0].second);
    const auto& e = g.calls[0].second.error();
    CHECK(e.value() == errc::io_error);
    CHECK_THAT(e.message(), Catch::Contains(path.string()) && Catch::Contains("Is a directory"));
    CHECK_FALSE(g.contended[0]);
    CHECK_FALSE(table->owned("idx"));
    CHECK(table->test_waiter_count("idx") == 0);
  }
  CHECK(fs::is_directory(path));
  CHECK(fs::is_empty(path));
  CHECK(std::distance(fs::directory_iterator(path.parent_path()), fs::directory_iterator{}) == 1);
}

TEST_CASE("process lock table: a missing dix directory fails io_error naming the path and the errno text", "[adapter][lock]") {
  temp_dir dir;
  auto table = process_lock_table::for_home(dir / "absent" / "dix");
  grants g;
  table->acquire("idx", 1, g.for_requester(1));
  REQUIRE(g.calls.size() == 1);
  REQUIRE_FALSE(g.calls[0].second);
  const auto& e = g.calls[0].second.error();
  CHECK(e.value() == errc::io_error);
  CHECK(e.message().find((table->directory() / "runner").string()) != std::string::npos);
  CHECK(e.message().find("No such file or directory") != std::string::npos);
  CHECK_FALSE(table->owned("idx"));
}

TEST_CASE("process lock table: two different homes are independent tables, one path one table", "[adapter][lock]") {
  temp_dir dir;
  auto a_dir = make_dix_dir(dir, "a");
  auto b_dir = make_dix_dir(dir, "b");
  fs::create_directory_symlink(dir / "a", dir / "a-link");

  auto a = process_lock_table::for_home(a_dir);
  auto b = process_lock_table::for_home(b_dir);
  CHECK(a != b);
  CHECK(process_lock_table::for_home(dir / "a-link" / "dix") == a);
  CHECK(process_lock_table::for_home(a_dir / ".") == a);

  grants g;
  a->acquire("idx", 1, g.for_requester(1));
  b->acquire("idx", 2, g.for_requester(2));
  CHECK(g.granted() == std::vector<std::uint64_t>{1, 2});
  CHECK(a->owned("idx"));
  CHECK(b->owned("idx"));
  CHECK(fs::exists(a_dir / "runner" / "idx.lock"));
  CHECK(fs::exists(b_dir / "runner" / "idx.lock"));

  a->release("idx", 1);
  CHECK_FALSE(a->owned("idx"));
  CHECK(b->owned("idx"));
  b->release("idx", 2);
}
