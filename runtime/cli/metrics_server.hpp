// The `/metrics` endpoint of `dix serve --metrics-listen ADDRESS:PORT` (decision 0021): an HTTP
// server on a thread of its own that answers GET (and HEAD) /metrics with the Prometheus text the
// caller renders at each request, 405 with `Allow: GET, HEAD` for another method on /metrics,
// and 404 for any other path. Each connection is served on a thread of its own (up to 64), and
// one silent for 1 s is closed, so clients that connect and send nothing cannot hold a scrape
// behind them. cpp-httplib is included by metrics_server.cpp alone.
//
// Address: "PORT" or ":PORT" bind 127.0.0.1 (loopback unless told otherwise); "HOST:PORT" and
// "[V6]:PORT" bind exactly the address given, a non-loopback one too (docs/operations.md says
// what that exposes). PORT 0 takes a free port; port() tells which.
//
// Thread safety: render is called on the server's threads, one request at a time per thread;
// it must be safe to call from them. The destructor stops the server and joins its thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <dix/result.hpp>

namespace dix::cli {

struct listen_address {
  std::string host;  // as given, brackets of an IPv6 literal removed
  std::uint16_t port = 0;
};

// Parses an address to listen on or connect to (--metrics-listen, --listen, --backend-host).
// Fails invalid_argument with a one-line message quoting `text`, for the caller to prefix
// with its option's name.
result<listen_address> parse_listen_address(const std::string& text);

class metrics_server {
 public:
  // Binds and starts serving. Fails io_error naming the address when it cannot bind.
  static result<std::unique_ptr<metrics_server>> start(const listen_address& at, std::function<std::string()> render);
  ~metrics_server();
  metrics_server(const metrics_server&) = delete;
  metrics_server& operator=(const metrics_server&) = delete;

  std::uint16_t port() const noexcept;
  const std::string& host() const noexcept;

  struct impl;

 private:
  explicit metrics_server(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace dix::cli
