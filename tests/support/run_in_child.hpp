// run_in_child: runs a call in a forked child whose stderr is a pipe, and tells whether the child
// ended with SIGABRT and what it wrote — for tests that a broken invariant or an illegal
// transition aborts (core/assert.hpp, check_transition) in every build.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <functional>
#include <string>

#include <catch2/catch.hpp>

namespace dix::test {

// How a child of run_in_child ended, and what it wrote on stderr.
struct death {
  bool aborted = false;  // ended by SIGABRT
  std::string stderr_text;
};

// Runs `body` in a child whose stderr is a pipe; how the child ended and what it wrote.
inline death run_in_child(const std::function<void()>& body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::fflush(nullptr);  // nothing buffered before the fork is written twice
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // The abort ends the child at once: Catch's fatal-signal handler would report it as a
    // failure of the parent's test on the shared stdout.
    std::signal(SIGABRT, SIG_DFL);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    body();
    ::_exit(0);  // the body returned: no abort
  }
  ::close(fds[1]);
  death d;
  char buffer[512];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) d.stderr_text.append(buffer, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  d.aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
  return d;
}

}  // namespace dix::test
