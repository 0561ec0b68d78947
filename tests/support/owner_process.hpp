// An owner runtime in another process for the system tests of readers without a runtime:
// `dix_owner_process` (tests/system/owner_process.cpp, DIX_OWNER_BINARY) exec'd through the
// harness, over DIR/db with the index `by-value` (a RocksDB index of each record's payload in
// DIR/by-value) and, when asked, `fulltext` (Xapian, DIR/fulltext, field `text`) and `similar`
// (hnsw, DIR/similar, vector_of(payload)). The test drives it over a pipe, one command per line,
// each answered on the child's stdout under its number ("#n …"). Also what the owner program
// itself shares with the tests: the vector a payload projects to.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <dix/primary_store.hpp>

#ifdef DIX_OWNER_BINARY
#include "harness/child_process.hpp"
#endif

namespace dix::test {

// `similar`'s vectors: l2, four finite components of the payload's bytes.
inline constexpr std::size_t owner_vector_dimension = 4;
inline std::vector<float> vector_of(std::string_view payload) {
  std::uint32_t hash = 2166136261u;  // FNV-1a
  for (char c : payload) hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
  return {static_cast<float>(payload.size()), static_cast<float>(payload.empty() ? 0 : payload.front()),
          static_cast<float>(payload.empty() ? 0 : payload.back()), static_cast<float>(hash % 997)};
}

#ifdef DIX_OWNER_BINARY

class owner_process {
 public:
  // Starts the owner over `dir` and waits for "owner started"; throws when it does not start.
  // remote_port ≠ 0: by-value is a remote_backend to a `dix serve-backend` on 127.0.0.1 there.
  // standby: the process waits for the store (primary_store::open_standby) and the constructor
  // returns once it says so; wait_started() then waits for its takeover.
  explicit owner_process(std::filesystem::path dir, bool search = false, std::uint16_t remote_port = 0,
                         bool standby = false)
      : dir_(std::move(dir)) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    commands_ = fds[1];
    ::fcntl(commands_, F_SETFD, FD_CLOEXEC);  // the child inherits the read end only
    std::vector<std::string> argv{DIX_OWNER_BINARY, "--dir", dir_.string(), "--commands-fd", std::to_string(fds[0])};
    if (search) argv.push_back("--search");
    if (remote_port != 0) {
      argv.push_back("--remote-port");
      argv.push_back(std::to_string(remote_port));
    }
    if (standby) argv.push_back("--standby");
    auto spawned = cli::child_process::spawn(argv);
    ::close(fds[0]);
    if (!spawned) throw std::runtime_error(spawned.error().to_string());
    child_ = std::move(*spawned);
    if (!child_.wait_line(standby ? "standby waiting" : "owner started", deadline())) {
      throw std::runtime_error("the owner did not start: " + output());
    }
  }
  // A standby's takeover: false when it did not start owning within the deadline.
  bool wait_started() { return child_.wait_line("owner started", deadline()).has_value(); }
  pid_t pid() const noexcept { return child_.pid(); }
  ~owner_process() {
    if (commands_ >= 0) ::close(commands_);  // end of input: the owner stops; the child's destructor reaps it
  }
  owner_process(const owner_process&) = delete;
  owner_process& operator=(const owner_process&) = delete;

  std::filesystem::path home() const { return dir_ / "db"; }
  std::filesystem::path index_path(const std::string& id) const { return dir_ / id; }

  // One transaction putting `key` = `payload` (no spaces) in table 1, committed by the owner.
  commit_info put(const std::string& key, const std::string& payload) { return committed(command("put " + key + " " + payload)); }
  commit_info del(const std::string& key) { return committed(command("del " + key)); }
  // Waits (wait_for_coverage, 30 s) until by-value covers `time`; false when it did not.
  bool cover(index_time_t time) { return command("cover " + std::to_string(time)).find("covered") != std::string::npos; }
  // by-value's barriers wait (flush(shutdown) aside) until release().
  void hold() { command("hold"); }
  void release() { command("release"); }
  // A rebuild of by-value whose reset the owner's backend holds (it never finishes).
  void rebuild_with_held_reset() { command("rebuild-held"); }
  // SIGKILL, reaped: the kernel drops its flock and RocksDB's LOCK.
  void kill() {
    ::close(commands_);
    commands_ = -1;
    (void)child_.reap(SIGKILL);
  }
  // Stops the owner cleanly: its exit status (0 when it stopped and closed the store).
  int stop() {
    ::close(commands_);
    commands_ = -1;
    if (!child_.wait_line("stopped", deadline())) throw std::runtime_error("the owner did not stop: " + output());
    const int status = child_.reap(0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string output() const {
    std::string all;
    for (const auto& l : child_.lines()) all += l + "\n";
    return all;
  }

 private:
  static cli::steady_time deadline() { return std::chrono::steady_clock::now() + std::chrono::seconds(60); }
  // Sends `line` and returns the owner's answer to it (without its number).
  std::string command(const std::string& line) {
    const std::string tag = "#" + std::to_string(++sent_) + " ";
    const std::string text = tag + line + "\n";
    if (::write(commands_, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      throw std::runtime_error("cannot send " + line);
    }
    auto answer = child_.wait_line(tag, deadline());
    if (!answer) throw std::runtime_error("no answer to " + line + ": " + output());
    if (answer->find("error") != std::string::npos) throw std::runtime_error(*answer);
    return answer->substr(answer->find(tag) + tag.size());
  }
  static commit_info committed(const std::string& answer) {
    std::istringstream words(answer);
    std::string word;
    commit_info c;
    words >> word >> c.time >> c.sequence;
    if (word != "committed" || c.time == 0) throw std::runtime_error("unexpected answer " + answer);
    return c;
  }

  std::filesystem::path dir_;
  int commands_ = -1;
  std::uint64_t sent_ = 0;
  cli::child_process child_;
};

#endif  // DIX_OWNER_BINARY

}  // namespace dix::test
