// dix::remote_query_client (<dix/remote.hpp>, issue 28 item 5): a reader's handle on an index
// node. A private actor system (heartbeats on, TLS when asked), one connection made with the
// middleman actor's connect request and a deadline, and per query a scoped actor that sends
// rb_query to the node's gate and waits for the rb_rows with its id — at most the query's own
// wait plus request_timeout (CAF 0.17 fails no request when the peer dies, so the deadline is
// ours).
#include <dix/remote.hpp>

#include <atomic>
#include <cstring>
#include <set>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>

#include "actors/remote_system.hpp"
#include "messages/remote.hpp"
#include "messages/type_ids.hpp"

namespace dix {

struct remote_query_client::impl {
  remote_query_options options;
  std::string address;
  std::unique_ptr<caf::actor_system_config> cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::actor gate;
  std::atomic<std::uint64_t> next_id{1};
};

remote_query_client::remote_query_client(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

remote_query_client::~remote_query_client() {
  if (!impl_) return;
  impl_->gate = nullptr;
  impl_->sys.reset();
  impl_->cfg.reset();
}

result<std::unique_ptr<remote_query_client>> remote_query_client::connect(remote_query_options options) {
  if (options.port == 0) return error{errc::invalid_argument, "remote query: port 0 (the node's port is needed)"};
  if (options.request_timeout <= std::chrono::milliseconds{0}) {
    return error{errc::invalid_argument, "remote query: request_timeout must be positive"};
  }
  if (auto t = remote_detail::check_tls(options.tls); !t) return t.error();
  auto p = std::make_unique<impl>();
  p->options = std::move(options);
  p->address = p->options.host + ":" + std::to_string(p->options.port);
  p->cfg = std::make_unique<caf::actor_system_config>();
  remote_detail::configure(*p->cfg, remote_heartbeat{}, p->options.tls);
  p->sys = std::make_unique<caf::actor_system>(*p->cfg);
  remote_detail::ignore_broker_at_exit(*p->sys);
  std::optional<error> failure;
  {
    caf::scoped_actor self{*p->sys};
    auto mm = remote_detail::middleman_of(*p->sys, p->options.tls);
    self->request(mm, p->options.request_timeout, caf::connect_atom::value, p->options.host, p->options.port)
        .receive(
            [&](caf::node_id&, caf::strong_actor_ptr& ptr, std::set<std::string>&) {
              p->gate = caf::actor_cast<caf::actor>(ptr);
            },
            [&](caf::error& e) {
              // The common case in words first: CAF says cannot_connect_to_node for a refused,
              // unreachable or timed-out connection and for a failed TLS session; its rendering
              // stays in parentheses for the context (host, port, what failed).
              std::string why = p->sys->render(e);
              if (e == caf::sec::cannot_connect_to_node) {
                why = (p->options.tls.any() ? "the connection or its TLS session failed ("
                                            : "nothing accepted the connection: is an index node listening there? (") +
                      why + ")";
              }
              failure = error{errc::unavailable, "remote query: cannot reach " + p->address + ": " + why};
            });
  }
  if (failure) return *failure;
  if (!p->gate) return error{errc::unavailable, "remote query: " + p->address + " publishes no actor"};
  return std::unique_ptr<remote_query_client>(new remote_query_client(std::move(p)));
}

result<remote_rows> remote_query_client::query(const remote_query& q) {
  auto& p = *impl_;
  rb_query m;
  m.id = p.next_id.fetch_add(1);
  m.backend_id = q.id;
  m.kind = static_cast<rb_query_kind>(q.kind);
  m.text = q.text;
  m.end = q.end;
  m.vector.resize(q.vector.size() * sizeof(float));
  if (!q.vector.empty()) std::memcpy(m.vector.data(), q.vector.data(), m.vector.size());
  m.limit = q.limit;
  m.offset = q.offset;
  m.ef = q.ef;
  m.mode = q.mode.kind;
  m.tolerance_ms = q.mode.tolerance.count();
  m.since = q.mode.since;
  m.timeout_ms = q.mode.timeout.count();
  auto wait = p.options.request_timeout;
  if (q.mode.kind == coverage_kind::wait && q.mode.timeout > std::chrono::milliseconds{0}) wait += q.mode.timeout;
  const auto deadline = std::chrono::steady_clock::now() + wait;

  caf::scoped_actor self{*p.sys};
  self->send(p.gate, std::move(m));
  std::optional<result<remote_rows>> answer;
  const auto id = m.id;
  while (!answer) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left <= std::chrono::milliseconds{0}) break;
    self->receive(
        [&](rb_rows& r) {
          if (r.id != id) return;  // a late answer to an earlier query of this actor: not ours
          if (r.code != 0) {
            answer = result<remote_rows>{remote_detail::error_of(r.code, r.text)};
            return;
          }
          remote_rows rows;
          rows.coverage.state = r.coverage;
          rows.coverage.tolerance = std::chrono::milliseconds(r.tolerance_ms);
          if (r.lag_ms >= 0) rows.coverage.lag_upper_bound = std::chrono::milliseconds(r.lag_ms);
          rows.rows.reserve(r.rows.size());
          for (auto& row : r.rows) {
            rows.rows.push_back(scored_ref{record_ref{std::move(row.log), row.table, std::move(row.record_id), row.version},
                                           score_of(row.score_bits)});
          }
          answer = result<remote_rows>{std::move(rows)};
        },
        [&](rb_refused& r) { answer = result<remote_rows>{remote_detail::error_of(r.code, "remote query: " + r.text)}; },
        caf::after(left) >> [] {});
  }
  if (!answer) {
    return error{errc::timeout, "remote query: no answer from " + p.address + " within " +
                                    std::to_string(wait.count()) + " ms"};
  }
  return std::move(*answer);
}

}  // namespace dix
