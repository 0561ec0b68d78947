// The index nodes of `dix demo --remote` (issue 28 item 7): `dix serve-backend` children of this
// process on ephemeral loopback ports, and with --tls a throw-away PKI the `openssl` command makes
// at run time (a CA, a certificate for the nodes, one for the owner). Children are started with
// posix_spawn (nothing runs between fork and exec), their first line read from a pipe with a
// deadline.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <dix/remote.hpp>
#include <dix/result.hpp>

namespace dix::cli {

// Makes `dir` (0700) with ca.pem, node.pem/node.key and owner.pem/owner.key: EC P-256, valid two
// days. io_error naming the openssl step that failed.
result<void> make_demo_pki(const std::filesystem::path& dir);
remote_tls demo_tls(const std::filesystem::path& pki, const std::string& who);  // who: node, owner

class demo_node {
 public:
  // `dix serve-backend --kind KIND --id ID --path PATH --listen 127.0.0.1:PORT` (+ TLS), waiting
  // at most 60 s for its "listening" line. PORT 0: an ephemeral port, port() after.
  static result<demo_node> start(std::string kind, std::string id, std::filesystem::path path, std::uint16_t port,
                                 remote_tls tls);
  demo_node(demo_node&& o) noexcept;
  demo_node& operator=(demo_node&& o) noexcept;
  demo_node(const demo_node&) = delete;
  demo_node& operator=(const demo_node&) = delete;
  ~demo_node();  // SIGKILL and reap, when still running

  std::uint16_t port() const noexcept { return port_; }
  pid_t pid() const noexcept { return pid_; }
  const std::string& id() const noexcept { return id_; }
  // Sends `sig` and waits for the child; its exit status (128 + signal when killed), -1 when none.
  int stop(int sig);
  // SIGKILL, then the same node again on the same port.
  result<void> kill_and_restart();

 private:
  demo_node() = default;
  result<void> spawn();
  std::string kind_, id_;
  std::filesystem::path path_;
  std::uint16_t port_ = 0;
  remote_tls tls_;
  pid_t pid_ = -1;
  int out_ = -1;
};

}  // namespace dix::cli
