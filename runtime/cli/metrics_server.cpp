#include "metrics_server.hpp"

#include <httplib.h>

#include <atomic>
#include <thread>
#include <utility>

namespace dix::cli {

struct metrics_server::impl {
  httplib::Server server;
  std::thread thread;
  std::atomic<bool> ended{false};  // listen_after_bind returned
  std::string host;
  std::uint16_t port = 0;
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
