#include "metrics_server.hpp"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace dix::cli {
namespace {

// cpp-httplib serves a connection on one worker for as long as the client keeps it: a fixed
// pool (8 threads by default) is held by 8 clients that connect and send nothing, and a scrape
// waits behind them for their timeouts. Here each connection gets a thread of its own, started
// when no thread is free, up to max_connection_threads; only past that does one wait, and then
// for at most a connection's timeouts. Threads are kept for the next connections until shutdown.
constexpr std::size_t max_connection_threads = 64;
// How long a connection may stay silent: before a request (a keep-alive connection or a client
// that sends nothing) and within one; also how long a write may block. Prometheus sends its
// request at once and scrapes every 15 s by default, so a connection per scrape costs nothing.
constexpr time_t silence_timeout_s = 1;

class connection_threads final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> job) override {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(job));
    if (jobs_.size() > idle_ && threads_.size() < max_connection_threads) {
      try {
        threads_.emplace_back([this] { work(); });
      } catch (const std::system_error&) {
        // No thread to spare (a process or cgroup limit): the job waits for a running one.
      }
    }
    ready_.notify_one();
  }

  // After the listening loop ended (no enqueue comes any more): runs what is queued, joins all.
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      shutdown_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ++idle_;
        ready_.wait(lock, [this] { return !jobs_.empty() || shutdown_; });
        --idle_;
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  std::size_t idle_ = 0;  // threads waiting for a job
  bool shutdown_ = false;
};

}  // namespace

struct metrics_server::impl {
  httplib::Server server;
  std::thread thread;
  std::atomic<bool> ended{false};  // listen_after_bind returned
  std::string host;
  std::uint16_t port = 0;
  int listening_fd = -1;  // the socket bound last (cpp-httplib's own; it closes it)
};

result<listen_address> parse_listen_address(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return error(errc::invalid_argument, "--metrics-listen " + text + ": " + why + " (expected PORT, HOST:PORT or [V6]:PORT)");
  };
  listen_address out;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') return bad("no ]:PORT");
    out.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else if (const auto colon = text.rfind(':'); colon != std::string::npos) {
    if (text.find(':') != colon) return bad("an IPv6 address needs brackets");
    out.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  } else {
    port = text;
  }
  if (out.host.empty()) out.host = "127.0.0.1";
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return bad("bad port");
  const auto n = std::stoul(port);
  if (n > 65535) return bad("port above 65535");
  out.port = static_cast<std::uint16_t>(n);
  return out;
}

result<std::unique_ptr<metrics_server>> metrics_server::start(const listen_address& at,
                                                              std::function<std::string()> render) {
  auto p = std::make_unique<impl>();
  p->host = at.host;
  p->server.new_task_queue = [] { return new connection_threads(); };
  // cpp-httplib listens with a backlog of 5: a burst of connections overflows it and a scrape's
  // connection is retried by the client's TCP a second later. The socket is noted here and
  // listens again with the system's backlog once bound (Linux changes a listening socket's backlog).
  // SO_REUSEADDR only, not cpp-httplib's SO_REUSEPORT: with it a second `dix serve` (same user)
  // bound the same port beside the first and the kernel split the scrapes between them.
  p->server.set_socket_options([fd = &p->listening_fd](socket_t sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    *fd = sock;
  });
  p->server.set_read_timeout(silence_timeout_s, 0);
  p->server.set_write_timeout(silence_timeout_s, 0);
  p->server.set_keep_alive_timeout(silence_timeout_s);
  // Any method but GET and HEAD is answered before its body is read (cpp-httplib would wait for
  // a body without Content-Length until the read timeout): 405 naming the allowed ones on
  // /metrics, 404 elsewhere. The connection is closed, as a body may follow unread.
  p->server.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "GET" || req.method == "HEAD") return httplib::Server::HandlerResponse::Unhandled;
    if (req.path == "/metrics") {
      res.status = 405;
      res.set_header("Allow", "GET, HEAD");
      res.set_content("405 Method Not Allowed: /metrics answers GET and HEAD\n", "text/plain; charset=utf-8");
    } else {
      res.status = 404;
      res.set_content("404 Not Found: only /metrics is served\n", "text/plain; charset=utf-8");
    }
    res.set_header("Connection", "close");
    return httplib::Server::HandlerResponse::Handled;
  });
  p->server.Get("/metrics", [render = std::move(render)](const httplib::Request&, httplib::Response& res) {
    res.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  int port = at.port;
  if (at.port == 0) {
    port = p->server.bind_to_any_port(at.host);
  } else if (!p->server.bind_to_port(at.host, at.port)) {
    port = -1;
  }
  if (port <= 0) {
    return error(errc::io_error, "--metrics-listen: cannot listen on " + at.host + ":" + std::to_string(at.port) +
                                     " (address not local, port in use, or not permitted)");
  }
  if (p->listening_fd >= 0) ::listen(p->listening_fd, SOMAXCONN);  // a failure leaves cpp-httplib's 5
  p->port = static_cast<std::uint16_t>(port);
  auto* server = &p->server;
  auto* ended = &p->ended;
  p->thread = std::thread([server, ended] {
    server->listen_after_bind();
    ended->store(true);
  });
  // stop() before the listening loop marked itself running would be lost and the join would
  // hang; the loop marks it first thing, so this waits only for the thread to start (or end).
  while (!p->server.is_running() && !p->ended.load()) std::this_thread::yield();
  return std::unique_ptr<metrics_server>(new metrics_server(std::move(p)));
}

metrics_server::metrics_server(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

metrics_server::~metrics_server() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::uint16_t metrics_server::port() const noexcept { return impl_->port; }
const std::string& metrics_server::host() const noexcept { return impl_->host; }

}  // namespace dix::cli
