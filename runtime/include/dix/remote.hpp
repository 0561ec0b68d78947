// Remote backends (backends.md §4, issue 28, decisions 0042 and 0043): an index that lives in
// another process — on this machine or another — and is registered in the owner's runtime like
// a local one.
//
//  * remote_backend_host runs beside the index (`dix serve-backend`): it wraps any dix::backend,
//    publishes one gate actor on CAF's middleman, fences owners by epoch (the highest epoch seen
//    is persisted, fsync + rename, before it acts; an older epoch's queued work is dropped and
//    counted) and checks every message before the wrapped backend sees it.
//  * remote_backend is the owner's side: a dix::backend that sends batches one-way over a window
//    of 16 batches / 64 MiB, defers while the window is full or the host unreachable, reconnects
//    for ever with a jittered backoff, and after a loss of work not yet durable reports
//    accepted_work_lost, so the runtime replays from the durable cursor: nothing lost, nothing
//    applied twice.
//
// Each runs a private CAF actor system with the middleman's heartbeats on (CAF 0.17 has them off:
// a frozen peer would never be noticed); the application's own actor system is not touched.
// Standard library only; the implementation is in actors/remote_*.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <dix/backend.hpp>
#include <dix/query.hpp>
#include <dix/result.hpp>

namespace dix {

// Mutual TLS (libcaf-openssl): this side's certificate and key, and the CA that must have signed
// the peer's. All three or none; with none the connection is plain TCP, which is allowed on
// loopback only (CAF 0.17 would otherwise fall back to anonymous ciphers: encrypted, but anyone
// may connect). CAF checks no host names: the CA must be the deployment's own.
struct remote_tls {
  std::filesystem::path certificate;
  std::filesystem::path key;
  std::filesystem::path ca;
  bool any() const noexcept { return !certificate.empty() || !key.empty() || !ca.empty(); }
  bool complete() const noexcept { return !certificate.empty() && !key.empty() && !ca.empty(); }
};

// The middleman's failure detection, set on both sides: a peer silent for `connection_timeout`
// is a lost connection.
struct remote_heartbeat {
  std::chrono::milliseconds interval{1000};
  std::chrono::milliseconds connection_timeout{5000};
};

// Queries on an index node (issue 28 item 5): a reader anywhere asks the node's wrapped backend
// directly. The node admits each query by the coverage the owner forwards (publish_coverage over
// the wire): `wait` resolves once the index covers `since` (read-your-writes across machines),
// `bounded` needs the forwarded coverage at most `tolerance` old (the owner's age at sending plus
// the node's steady time since), `strict` is refused with index_lagging (only the owner's process
// can prove an index current, as for any reader in another process).
// The node answers the queries of <dix/query.hpp>: backend::query of the wrapped backend.
using remote_query_kind = query_kind;
using remote_query = index_query;
using remote_rows = query_rows;

// The index node's side of a query: runs it on the wrapped backend, whose query calls admit
// through the host (`dix serve-backend` gives one per kind). Called on a query thread, never the
// host's actor; may block while a `wait` admission waits.
using remote_query_handler = std::function<result<remote_rows>(const remote_query&)>;

struct remote_host_options {
  std::string listen_address = "127.0.0.1";
  std::uint16_t port = 0;  // 0: an ephemeral port, see remote_backend_host::port()
  // Any address but loopback needs this and complete TLS (start refuses otherwise).
  bool allow_remote_interfaces = false;
  remote_tls tls;
  // Where the highest epoch seen is kept (`<state_dir>/epoch`); created 0700 when missing.
  std::filesystem::path state_dir;
  remote_heartbeat heartbeat;
  // Queries (empty: every query is answered not_supported), and how many may run at once (more
  // are answered unavailable, retryable).
  remote_query_handler query;
  std::size_t max_concurrent_queries = 8;
  // The owner's home store, when it is on this machine (backends.md §4): queries are admitted by
  // its readiness segment (make_query_host, <dix/query_host.hpp>), as any reader in another
  // process is, instead of by the coverage the owner forwards. Empty: forwarded coverage.
  std::filesystem::path home_db;
  // Called on the host's actor when the open session's owner becomes unreachable (its connection
  // went down: a closed socket, or the middleman's heartbeat timeout for a frozen peer), with the
  // session's epoch. Must not block. Optional (`dix serve-backend` prints a line).
  std::function<void(epoch_t)> on_session_lost;
};

// What a host did so far (its status, and the tests' evidence).
struct remote_host_stats {
  epoch_t epoch = 0;                       // the highest epoch seen (persisted)
  std::uint64_t sessions = 0;              // hellos welcomed
  std::uint64_t batches_applied = 0;       // deliveries the wrapped backend took
  std::uint64_t fenced_batches_dropped = 0;  // queued work of a superseded epoch or an old session
  std::uint64_t refused = 0;               // messages answered message_invalid or stopped
  std::uint64_t gates_published = 0;       // 1, plus one per gate a peer killed
  std::uint64_t queries = 0;               // queries answered (rows or an error)
  std::uint64_t sessions_lost = 0;         // open sessions whose owner became unreachable
};

class remote_backend_host {
 public:
  // Starts serving `wrapped` (not attached yet: the host attaches it). Fails invalid_argument for
  // options start refuses (a non-loopback address without allow_remote_interfaces and complete
  // TLS; partial TLS; an empty state_dir), io_error when the state directory or the port cannot
  // be used. The wrapped backend's databases are opened by its own first call, as in a runtime.
  static result<std::unique_ptr<remote_backend_host>> start(std::shared_ptr<backend> wrapped,
                                                            remote_host_options options);
  // What start refuses before it touches anything: the address and TLS rules above.
  static result<void> check(const remote_host_options& options);
  // The state directory as start makes it: created 0700 when missing (its last component), else
  // it must be a directory of this process's user with no group or other permission (it holds
  // the owners' epoch, the fence; decision 0011). io_error naming the path and the remedy. An
  // application that puts the wrapped backend's files inside calls it first, so a directory
  // refused here has nothing made in it.
  static result<void> make_state_dir(const std::filesystem::path& state_dir);
  ~remote_backend_host();  // stop()
  remote_backend_host(const remote_backend_host&) = delete;
  remote_backend_host& operator=(const remote_backend_host&) = delete;

  std::uint16_t port() const noexcept;
  const std::string& address() const noexcept;
  remote_host_stats stats() const;
  // Shuts the wrapped backend down for the current epoch, closes the port and ends the actor
  // system. Idempotent.
  void stop();

  struct impl;

 private:
  explicit remote_backend_host(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

struct remote_backend_options {
  std::string id;    // the backend id; the host must serve the same
  std::string kind;  // the wrapped backend's kind (part of the fingerprint); the host's must match
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  remote_tls tls;
  remote_heartbeat heartbeat;
  // A durable_cursor() with no cached answer waits this long for one (then timeout: a transient
  // fault); also the deadline of an acknowledgement and of one connect attempt.
  std::chrono::milliseconds request_timeout{5000};
};

// A reader's handle on an index node: a private actor system and one connection. Thread-safe;
// each query waits for its answer at most mode.timeout (wait) plus request_timeout.
struct remote_query_options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  remote_tls tls;
  std::chrono::milliseconds request_timeout{5000};
};

class remote_query_client {
 public:
  // Connects (at most request_timeout). invalid_argument for port 0 or partial TLS; unavailable
  // when the node cannot be reached.
  static result<std::unique_ptr<remote_query_client>> connect(remote_query_options options);
  ~remote_query_client();
  remote_query_client(const remote_query_client&) = delete;
  remote_query_client& operator=(const remote_query_client&) = delete;

  // The node's answer: rows, or the admission's or the backend's error (index_lagging,
  // unavailable, invalid_argument, not_supported…); timeout when no answer came in time.
  result<remote_rows> query(const remote_query& q);

  struct impl;

 private:
  explicit remote_query_client(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

// What the owner's side sees of its link (`dix status`).
struct remote_link_status {
  std::string address;  // host:port
  bool connected = false;
  std::uint64_t host_instance = 0;  // 0: never connected
  std::uint32_t window_batches = 0;  // unacknowledged
  std::uint64_t window_bytes = 0;
  std::uint64_t connects = 0;        // sessions welcomed so far
  std::uint64_t last_acked = 0;      // this session's
  std::optional<std::chrono::microseconds> round_trip;  // the last ping's
  std::optional<cursor> durable;     // as of the last welcome or durable push
  // Durable cursors the host reported below one it reported before (a log's sequence went down
  // at the same identity; a reset starts over). Always 0 unless the protocol is broken: the
  // tests assert it, an operator may alert on it.
  std::uint64_t cursor_regressions = 0;
};

class remote_backend final : public backend {
 public:
  // Starts the private actor system and the first connect attempt (asynchronous: never blocks).
  // invalid_argument for an empty id or kind, partial TLS, or port 0.
  static result<std::shared_ptr<remote_backend>> create(remote_backend_options options);
  ~remote_backend() override;

  const std::string& id() const noexcept override;
  std::string_view kind() const noexcept override;
  void attach(backend_host& host) override;
  result<std::optional<cursor>> durable_cursor() override;
  delivery_result deliver(std::shared_ptr<const batch> b) override;
  void flush(flush_reason reason, completion done) override;
  void shutdown(epoch_t epoch, completion done) override;
  subscription on_state_change(std::function<void(state_change)> callback) override;
  bool supports_reset() const noexcept override { return true; }
  void reset(epoch_t epoch, completion done) override;
  std::chrono::milliseconds min_barrier_interval() const noexcept override;
  // Forwarded to the node (its readers' admission), while a session of `epoch` is open.
  void publish_coverage(const positions& p, index_time_t coverage_time, epoch_t epoch) noexcept override;
  // The node's wrapped backend's digest view, read through the open session (dix verify; the
  // node's answers are bounded by request_timeout each). The view also answers skips() for the
  // node's backend: this object's own skips() keeps every record. unavailable without a session
  // or once it ends; not_supported when the node's backend keeps no digest; timeout.
  result<std::unique_ptr<digest_view>> open_digest() override;

  remote_link_status link_status() const;
  // Waits until a session is open (`connected`) or none is (!`connected`), at most `timeout`;
  // whether it came to that. For operators' tools and tests: no polling.
  bool wait_connected(bool connected, std::chrono::milliseconds timeout) const;

  struct impl;

 private:
  explicit remote_backend(std::shared_ptr<impl> p);
  std::shared_ptr<impl> impl_;
};

}  // namespace dix
