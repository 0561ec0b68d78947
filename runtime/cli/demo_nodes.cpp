#include "demo_nodes.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "tool/args.hpp"

extern char** environ;

namespace dix::cli {

namespace {

// posix_spawn of argv with stdout on `out` (-1: inherited) and stderr inherited.
result<pid_t> spawn_with(const std::vector<std::string>& argv, int out) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (out >= 0) posix_spawn_file_actions_adddup2(&actions, out, STDOUT_FILENO);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return error{errc::io_error, "cannot start " + argv[0] + ": " + std::strerror(rc)};
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

result<std::string> self_binary() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return error{errc::io_error, "cannot find the dix binary (/proc/self/exe): " + ec.message()};
  return p.string();
}

}  // namespace

result<void> make_demo_pki(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return error{errc::io_error, "cannot create " + dir.string() + ": " + ec.message()};
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
  const std::string openssl = "/usr/bin/openssl";
  auto p = [&](const std::string& name) { return (dir / name).string(); };
  auto run = [&](std::vector<std::string> argv) -> result<void> {
    int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    auto pid = spawn_with(argv, null);
    if (null >= 0) ::close(null);
    if (!pid) return pid.error();
    if (wait_for(*pid) != 0) return error{errc::io_error, "openssl " + argv[1] + " failed (is openssl installed?)"};
    return {};
  };
  if (auto ok = run({openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", p("ca.key"), "-out", p("ca.pem"), "-days", "2", "-subj", "/CN=dix-demo-ca"});
      !ok) {
    return ok;
  }
  for (const std::string n : {"node", "owner"}) {
    if (auto ok = run({openssl, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                       p(n + ".key"), "-out", p(n + ".csr"), "-subj", "/CN=dix-demo-" + n});
        !ok) {
      return ok;
    }
    if (auto ok = run({openssl, "x509", "-req", "-in", p(n + ".csr"), "-CA", p("ca.pem"), "-CAkey", p("ca.key"),
                       "-CAcreateserial", "-out", p(n + ".pem"), "-days", "2"});
        !ok) {
      return ok;
    }
  }
  return {};
}

remote_tls demo_tls(const std::filesystem::path& pki, const std::string& who) {
  return remote_tls{pki / (who + ".pem"), pki / (who + ".key"), pki / "ca.pem"};
}

result<demo_node> demo_node::start(std::string kind, std::string id, std::filesystem::path path, std::uint16_t port,
                                   remote_tls tls) {
  demo_node n;
  n.kind_ = std::move(kind);
  n.id_ = std::move(id);
  n.path_ = std::move(path);
  n.port_ = port;
  n.tls_ = std::move(tls);
  if (auto ok = n.spawn(); !ok) return ok.error();
  return n;
}

demo_node::demo_node(demo_node&& o) noexcept { *this = std::move(o); }

demo_node& demo_node::operator=(demo_node&& o) noexcept {
  if (this != &o) {
    stop(SIGKILL);
    kind_ = std::move(o.kind_);
    id_ = std::move(o.id_);
    path_ = std::move(o.path_);
    port_ = o.port_;
    tls_ = std::move(o.tls_);
    pid_ = std::exchange(o.pid_, -1);
    out_ = std::exchange(o.out_, -1);
  }
  return *this;
}

demo_node::~demo_node() { stop(SIGKILL); }

int demo_node::stop(int sig) {
  int status = -1;
  if (pid_ > 0) {
    ::kill(pid_, sig);
    status = wait_for(std::exchange(pid_, -1));  // its summary line fits in the pipe: read end kept open
  }
  if (out_ >= 0) ::close(std::exchange(out_, -1));
  return status;
}

result<void> demo_node::kill_and_restart() {
  stop(SIGKILL);
  return spawn();
}

result<void> demo_node::spawn() {
  auto binary = self_binary();
  if (!binary) return binary.error();
  std::vector<std::string> argv{*binary, "serve-backend", "--kind", kind_, "--id", id_, "--path", path_.string(),
                                "--listen", "127.0.0.1:" + std::to_string(port_)};
  if (tls_.complete()) {
    for (auto [flag, file] : {std::pair{"--tls-cert", &tls_.certificate}, std::pair{"--tls-key", &tls_.key},
                              std::pair{"--tls-ca", &tls_.ca}}) {
      argv.push_back(flag);
      argv.push_back(file->string());
    }
  }
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return error{errc::io_error, std::string("pipe: ") + std::strerror(errno)};
  auto pid = spawn_with(argv, pipefd[1]);
  ::close(pipefd[1]);
  if (!pid) {
    ::close(pipefd[0]);
    return pid.error();
  }
  pid_ = *pid;
  out_ = pipefd[0];
  // The first line: "dix serve-backend: listening on 127.0.0.1:PORT".
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (line.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{out_, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
      stop(SIGKILL);
      return error{errc::timeout, "the index node of " + id_ + " did not start within 60 s"};
    }
    char chunk[256];
    auto n = ::read(out_, chunk, sizeof chunk);
    if (n <= 0) {
      const int status = stop(SIGKILL);
      return error{errc::io_error, "the index node of " + id_ + " ended at start (status " + std::to_string(status) + ")"};
    }
    line.append(chunk, static_cast<std::size_t>(n));
  }
  line.resize(line.find('\n'));
  const std::string prefix = "dix serve-backend: listening on 127.0.0.1:";
  if (line.rfind(prefix, 0) != 0) {
    stop(SIGKILL);
    return error{errc::io_error, "the index node of " + id_ + " said: " + line};
  }
  port_ = static_cast<std::uint16_t>(std::stoul(line.substr(prefix.size())));
  return {};
}

}  // namespace dix::cli
