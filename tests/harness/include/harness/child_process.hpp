// Child `dix` processes for the failover test and `dix bench failover`: fork+exec with stdout on
// a pipe (never a bare fork: a forked child inherits RocksDB's in-process lock table, protocol.md
// §9.8), line reads bounded by a deadline, and a futex wait on the readiness segment for a
// takeover's `ready`. Header-only; POSIX/Linux. Shared by the tests and the benchmarks, so it uses
// the public API only (tests/harness: outside the product, docs/architecture.md). The namespace
// says what it drives: the `dix` command line.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dix/segment.hpp>

namespace dix::cli {

using steady_time = std::chrono::steady_clock::time_point;

// One exec'd child. Its stdout is a pipe this object reads; stderr is inherited. The child gets
// SIGKILL if the thread that spawned it exits; the destructor SIGKILLs and reaps it if still
// running. Move-only.
class child_process {
 public:
  // argv[0] is the executable's path. Fails io_error (pipe, fork).
  static result<child_process> spawn(const std::vector<std::string>& argv) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return error{errc::io_error, std::string("pipe: ") + std::strerror(errno)};
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const pid_t parent = ::getpid();
    std::fflush(nullptr);  // nothing buffered may be written twice by the child
    pid_t pid = ::fork();
    if (pid < 0) {
      int err = errno;
      ::close(out[0]);
      ::close(out[1]);
      return error{errc::io_error, std::string("fork: ") + std::strerror(err)};
    }
    if (pid == 0) {  // async-signal-safe calls only until exec
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      ::dup2(out[1], STDOUT_FILENO);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(out[1]);
    child_process c;
    c.pid_ = pid;
    c.out_ = out[0];
    return c;
  }

  child_process() = default;
  child_process(child_process&& o) noexcept { *this = std::move(o); }
  child_process& operator=(child_process&& o) noexcept {
    if (this != &o) {
      reap(SIGKILL);
      pid_ = std::exchange(o.pid_, -1);
      out_ = std::exchange(o.out_, -1);
      buffer_ = std::move(o.buffer_);
      lines_ = std::move(o.lines_);
    }
    return *this;
  }
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  ~child_process() { reap(SIGKILL); }

  pid_t pid() const noexcept { return pid_; }
  bool running() const noexcept { return pid_ > 0; }

  // The first line of the child's output containing `needle`, reading (poll, no spinning) until
  // it arrives; nullopt at end of output or at `deadline`.
  std::optional<std::string> wait_line(std::string_view needle, steady_time deadline) {
    for (std::size_t next = 0;;) {
      for (; next < lines_.size(); ++next) {
        if (lines_[next].find(needle) != std::string::npos) return lines_[next];
      }
      if (out_ < 0 || !read_more(deadline)) return std::nullopt;
    }
  }
  // Every complete line read so far.
  const std::vector<std::string>& lines() const noexcept { return lines_; }

  // Sends `sig`, waits for the child to end and returns its wait status (-1 if none ran).
  int reap(int sig) {
    if (pid_ <= 0) return -1;
    if (sig != 0) ::kill(pid_, sig);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    if (out_ >= 0) ::close(out_);
    out_ = -1;
    return status;
  }

 private:
  bool read_more(steady_time deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{out_, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count() + 1, 1 << 30)));
    if (ready < 0) return errno == EINTR;
    if (ready == 0) return false;
    char chunk[4096];
    auto n = ::read(out_, chunk, sizeof chunk);
    if (n < 0) return errno == EINTR;
    if (n == 0) {  // end of output
      ::close(out_);
      out_ = -1;
      if (!buffer_.empty()) lines_.push_back(std::exchange(buffer_, {}));
      return true;
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
    for (auto nl = buffer_.find('\n'); nl != std::string::npos; nl = buffer_.find('\n')) {
      lines_.push_back(buffer_.substr(0, nl));
      buffer_.erase(0, nl + 1);
    }
    return true;
  }

  pid_t pid_ = -1;
  int out_ = -1;
  std::string buffer_;
  std::vector<std::string> lines_;
};

// Waits until every id of `ids` reads `ready` with an owner epoch above `above` (as
// read_readiness reads it: a segment no runtime is attached to reads `unknown`; an id without a
// slot is not ready), sleeping on the segment's change counter (futex, formats.md §4.4) between
// checks. Returns the smallest of their epochs; timeout at the deadline; other errors as
// segment_reader. The segment must exist.
inline result<epoch_t> wait_ready(const std::filesystem::path& home, const std::vector<std::string>& ids,
                                  epoch_t above, steady_time deadline) {
  auto reader = segment_reader::open(home);
  if (!reader) return reader.error();
  if (!*reader) return error{errc::io_error, "no readiness segment under " + home.string()};
  for (;;) {
    auto counter = (*reader)->change_counter();
    auto table = (*reader)->read();
    if (!table) return table.error();
    std::optional<epoch_t> lowest;
    bool all = true;
    for (const auto& id : ids) {
      auto entry = std::find_if(table->entries.begin(), table->entries.end(),
                                [&](const readiness_entry& e) { return e.id == id; });
      if (entry == table->entries.end() || entry->readiness.state != readiness_state::ready ||
          entry->readiness.owner_epoch <= above) {
        all = false;
        break;
      }
      lowest = std::min(lowest.value_or(entry->readiness.owner_epoch), entry->readiness.owner_epoch);
    }
    if (all && lowest) return *lowest;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return error{errc::timeout, "not ready within the deadline"};
    (*reader)->wait_change(counter, std::min(left, std::chrono::milliseconds(1000)));
  }
}

}  // namespace dix::cli
