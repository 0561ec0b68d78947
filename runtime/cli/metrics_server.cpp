#include "metrics_server.hpp"

#include <httplib.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstring>
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
// for at most a request's deadline. Threads are kept for the next connections until shutdown.
constexpr std::size_t max_connection_threads = 128;
// How long a connection may stay silent before a request (a keep-alive connection, or a client
// that sends nothing): it is closed then. Prometheus sends its request at once.
constexpr std::chrono::milliseconds silence{1000};
constexpr time_t silence_timeout_s = 1;
// How long one request may take, from its first byte (the first request: from accept) to the
// end of its response: a client that trickles a request a byte at a time is cut there with 408
// (issue 34: cpp-httplib's read timeout restarts at every byte, so 70 such clients held every
// thread and silenced the endpoint).
constexpr std::chrono::milliseconds request_deadline{2000};
// Requests served on one connection, pipelined or not; the last response says Connection: close,
// so any request beyond it is refused explicitly, never dropped.
constexpr std::size_t max_requests_per_connection = 100;

using steady = std::chrono::steady_clock;

// One connection's stream: one read buffer kept across its requests (cpp-httplib makes a stream,
// and a buffer, per request: the requests a client pipelined behind the first were read into it
// and lost), and every wait bounded by the current request's deadline, not per call.
class deadline_stream final : public httplib::Stream {
 public:
  explicit deadline_stream(socket_t sock) : sock_(sock), buffer_(16384) {}

  void start_request(steady::time_point deadline) {
    deadline_ = deadline;
    expired_ = false;
    written_ = 0;
  }
  bool expired() const noexcept { return expired_; }
  std::size_t written() const noexcept { return written_; }
  // Waits up to `wait` for the next request's first byte (buffered already, or on the socket).
  bool next_request(std::chrono::milliseconds wait) const { return buffered() || ready(POLLIN, static_cast<int>(wait.count())); }

  bool is_readable() const override { return buffered() || ready(POLLIN, left_ms()); }
  bool is_writable() const override { return ready(POLLOUT, left_ms()); }
  ssize_t read(char* out, size_t size) override {
    if (!buffered()) {
      if (!ready(POLLIN, left_ms())) {
        expired_ = true;
        return -1;
      }
      const auto n = ::recv(sock_, buffer_.data(), buffer_.size(), 0);
      if (n <= 0) return n;
      begin_ = 0;
      end_ = static_cast<std::size_t>(n);
    }
    const auto n = std::min(size, end_ - begin_);
    std::memcpy(out, buffer_.data() + begin_, n);
    begin_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* data, size_t size) override {
    std::size_t done = 0;
    while (done < size) {
      if (!ready(POLLOUT, left_ms())) {
        expired_ = true;
        return -1;
      }
      const auto n = ::send(sock_, data + done, size - done, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return -1;
      }
      done += static_cast<std::size_t>(n);
    }
    written_ += done;
    return static_cast<ssize_t>(done);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(::getsockname, ip, port); }
  socket_t socket() const override { return sock_; }

 private:
  bool buffered() const noexcept { return begin_ < end_; }
  int left_ms() const {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - steady::now()).count();
    return ms > 0 ? static_cast<int>(ms) : 0;
  }
  bool ready(short events, int ms) const {
    pollfd p{sock_, events, 0};
    for (;;) {
      const int r = ::poll(&p, 1, ms);
      if (r < 0 && errno == EINTR) continue;
      return r > 0;
    }
  }
  template <class Name>
  void address(Name name, std::string& ip, int& port) const {
    sockaddr_storage ss{};
    socklen_t length = sizeof ss;
    ip.clear();
    port = 0;
    if (name(sock_, reinterpret_cast<sockaddr*>(&ss), &length) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (ss.ss_family == AF_INET) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
      ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
      port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
      ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
      port = ntohs(a->sin6_port);
    }
    ip = text;
  }

  socket_t sock_;
  std::vector<char> buffer_;
  std::size_t begin_ = 0, end_ = 0;
  steady::time_point deadline_{};
  mutable bool expired_ = false;
  std::size_t written_ = 0;
};

// cpp-httplib's server with its per-connection loop replaced (it is a virtual of cpp-httplib
// 0.11's Server, private but overridable; process_request and svr_sock_ are protected): one
// deadline_stream per connection, each request bounded by request_deadline, a request not read
// by then answered 408 with Connection: close. Re-check on a cpp-httplib upgrade.
class deadline_server final : public httplib::Server {
 private:
  bool process_and_close_socket(socket_t sock) override {
    deadline_stream stream(sock);
    bool served = false;
    for (std::size_t n = 0; n < max_requests_per_connection && svr_sock_ != INVALID_SOCKET; ++n) {
      if (n > 0 && !stream.next_request(silence)) break;  // a silent keep-alive connection
      stream.start_request(steady::now() + request_deadline);
      bool closed = false;
      served = process_request(stream, n + 1 == max_requests_per_connection, closed, nullptr);
      if (!served) {
        if (stream.expired() && stream.written() == 0) {
          static constexpr char timed_out[] =
            "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
          stream.start_request(steady::now() + std::chrono::milliseconds(200));
          (void)stream.write(timed_out, sizeof timed_out - 1);
        }
        break;
      }
      if (closed) break;
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return served;
  }
};

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
  deadline_server server;
  std::thread thread;
  std::atomic<bool> ended{false};  // listen_after_bind returned
  std::string host;
  std::uint16_t port = 0;
  int listening_fd = -1;  // the socket bound last (cpp-httplib's own; it closes it)
};

result<listen_address> parse_listen_address(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return error(errc::invalid_argument, "\"" + text + "\": " + why + " (expected PORT, HOST:PORT or [V6]:PORT)");
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
  // A host that names no address is a bad argument found before anything is made (issue 34:
  // serve made its store and index directories first, then failed to bind, exit 1).
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(out.host.c_str(), nullptr, &hints, &found); rc != 0) {
    return bad("cannot resolve " + out.host + ": " + ::gai_strerror(rc));
  }
  ::freeaddrinfo(found);
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
  p->server.set_keep_alive_max_count(max_requests_per_connection);
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
