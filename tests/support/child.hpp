// Helpers for tests that fork children which use only plain POSIX calls (open, flock, futex,
// read, write, close): a pipe for one-byte hand-shakes (no sleeps), fork with _exit, the exit
// code of a reaped child, and a umask set for one scope. A child that could touch RocksDB must
// be exec'd instead (protocol.md §9.8: a forked child inherits RocksDB's in-process lock table);
// see tests/harness/include/harness/child_process.hpp.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <functional>

#include <catch2/catch.hpp>

namespace dix::test {

// Restores the process umask at scope exit.
class umask_scope {
 public:
  explicit umask_scope(mode_t mask) : old_(::umask(mask)) {}
  ~umask_scope() { ::umask(old_); }
  umask_scope(const umask_scope&) = delete;
  umask_scope& operator=(const umask_scope&) = delete;

 private:
  mode_t old_;
};

// Reads one byte from `fd`, retrying EINTR; '\0' at end of file or on error.
inline char read_byte(int fd) {
  char c = 0;
  ssize_t n;
  do {
    n = ::read(fd, &c, 1);
  } while (n < 0 && errno == EINTR);
  return n == 1 ? c : '\0';
}

// A pipe for parent/child hand-shakes: one byte per step.
struct pipe_pair {
  int read_end = -1;
  int write_end = -1;
  pipe_pair() {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    read_end = fds[0];
    write_end = fds[1];
  }
  ~pipe_pair() {
    ::close(read_end);
    ::close(write_end);
  }
  pipe_pair(const pipe_pair&) = delete;
  pipe_pair& operator=(const pipe_pair&) = delete;
  void send(char c) const { REQUIRE(::write(write_end, &c, 1) == 1); }
  char receive() const { return read_byte(read_end); }
};

// Runs `body` in a forked child that then _exit()s with its result (2 if it threw): it never
// returns into Catch. In the child, use only plain system calls (no REQUIRE, no RocksDB).
inline pid_t fork_child(const std::function<int()>& body) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int code = 3;
    try {
      code = body();
    } catch (...) {
      code = 2;
    }
    ::_exit(code);
  }
  return pid;
}

// Reaps `pid`: its exit status, or 128 + the signal that ended it.
inline int wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace dix::test
