// remote_backend (<dix/remote.hpp>, backends.md §4, decision 0043): the owner's side of a remote
// index. The backend calls come from the runtime's proxy thread; the connection lives in a client
// actor of a private actor system (heartbeats on). Both meet in `impl` under one mutex: the
// window (core/remote_link) must answer deliver() synchronously, so deliver() decides there and
// sends the batch itself, one-way, to the host's gate. Everything the host sends goes to the
// client actor, which updates the shared state and runs completions and callbacks outside the
// lock.
//
// Sessions. Each welcomed hello opens a session (a random number); deliveries are numbered from
// 1 per session on the wire (the link's own numbers never repeat; `base` maps them). A session
// ends on a down message, an acknowledgement past its deadline, a welcome that does not come, or
// a new owner epoch (then a new hello goes out on the same connection).
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/stateful_actor.hpp>

#include <dix/remote.hpp>

#include "actors/remote_system.hpp"
#include "core/remote_fence.hpp"
#include "core/remote_link.hpp"
#include "messages/remote.hpp"
#include "messages/type_ids.hpp"

namespace dix {

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using remote_detail::error_of;

using tick_atom = caf::atom_constant<caf::atom("rbtick")>;    // the client's periodic look
using epoch_atom = caf::atom_constant<caf::atom("rbepoch")>;  // a call saw an owner epoch the session lacks
using bye_atom = caf::atom_constant<caf::atom("rbbye")>;      // the backend object is going away

constexpr auto tick_interval = 100ms;
constexpr auto ping_interval = 1000ms;

}  // namespace

struct remote_backend::impl {
  remote_backend_options options;
  std::string address;
  remote_link link;
  mutable std::mutex mutex;
  mutable std::condition_variable cv;  // a session opened or ended, a durable answer

  backend_host* host = nullptr;
  // Whether `host` may be called: from attach, and again at each call of the runtime, until a
  // shutdown (after its last shutdown settled the runtime may be destroyed while this object
  // lives on, backend.hpp); what the host node reports meanwhile is dropped.
  bool host_live = false;
  backend_host* live_host() const { return host_live ? host : nullptr; }
  caf::actor gate;                  // while connected (the remote proxy)
  std::uint64_t session = 0;        // the welcomed session, 0: none
  std::uint64_t pending_session = 0;  // a hello sent, its welcome awaited
  clock_type::time_point hello_sent{};
  epoch_t session_epoch = 0;
  epoch_t pending_epoch = 0;        // the epoch of the hello sent
  epoch_t wanted_epoch = 0;         // the owner epoch the runtime's calls carry
  std::uint64_t base = 0;           // link seq = wire seq + base in this session
  std::uint64_t last_issued = 0;    // the link's last sequence number handed out
  std::uint64_t next_op = 1;
  std::optional<cursor> durable;    // the cache: as of the last welcome or durable push
  std::optional<cursor> highest_durable;  // the highest reported since the last reset
  std::uint64_t cursor_regressions = 0;
  // A durable cursor reported by the host (under the lock): the cache, and a check that no log
  // went backwards.
  void note_durable(const std::optional<cursor>& c) {
    durable = c;
    if (!c) {  // no cursor (a reset, a new index): the next one starts over
      highest_durable.reset();
      return;
    }
    if (highest_durable) {
      bool back = false;
      for (const auto& log : c->logs()) {
        const auto* was = highest_durable->find(log.log);
        if (was != nullptr && was->identity == log.identity && log.sequence < was->sequence) back = true;
      }
      if (back) {
        ++cursor_regressions;
        return;
      }
    }
    highest_durable = c;
  }
  std::optional<error> durable_error;
  bool durable_known = false;
  epoch_t durable_epoch = 0;
  // Work was judged lost at a welcome (accepted_work_lost emitted): until the runtime reads the
  // durable cursor again — its replay's start, protocol.md §5.7 — deliveries are `deferred`.
  // A batch the runner delivers before it hears of the loss continues the lost work: applied
  // after a gap, a later barrier could make a cursor durable that claims the gap (data lost).
  // Only a read that begins after the loss was announced ends it (a read that was blocked
  // waiting for this welcome was asked before the runner knew). Same rule as the Xapian
  // backend's apply errors (decision 0022).
  bool replay_pending = false;
  std::uint64_t replay_generation = 0;  // counts the announcements
  bool held = false;                // the host reports a hold: acknowledgements may take long
  backend_hold node_hold = backend_hold::none;  // the node's last report
  std::chrono::milliseconds min_barrier{0};
  std::uint64_t connects = 0;
  std::uint64_t last_acked = 0;
  std::optional<std::chrono::microseconds> rtt;
  std::map<std::uint64_t, clock_type::time_point> pings;

  struct pending {
    rb_op_kind op;
    completion done;
  };
  std::map<std::uint64_t, pending> ops;  // by id, this session's
  // A reset of an epoch the session does not have yet (a rebuild's attempt mints one): sent once
  // a session of that epoch is welcomed; failed if the connection goes first.
  std::optional<std::pair<epoch_t, completion>> reset_waiting;
  std::map<std::uint64_t, std::function<void(state_change)>> subscribers;
  std::uint64_t next_subscriber = 1;
  // The digest views open (dix verify), by their number: the node's answers not yet taken, and
  // whether the session they were opened in ended.
  struct digest_channel {
    std::uint64_t session = 0;
    std::deque<rb_digest_reply> replies;
    bool lost = false;
  };
  std::map<std::uint64_t, std::shared_ptr<digest_channel>> digests;

  std::unique_ptr<caf::actor_system_config> cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::actor client;

  // Callbacks and completions collected under the lock, run after it.
  struct deferred_calls {
    std::vector<state_change> changes;
    std::vector<std::pair<completion, result<void>>> completions;
    std::vector<std::function<void()>> host_calls;
  };
  void run(impl& self, deferred_calls&& calls);

  // The session ends (under the lock): pending flushes and shutdowns succeed (durability is judged
  // by the cursor; the host fences an older epoch), resets fail.
  void end_session(clock_type::time_point now, deferred_calls& calls) {
    // Readers in any process (`dix status`) see why deliveries wait, before anyone waiting for
    // the session's end is woken. A host call under the lock: set_hold is a store into the
    // segment that calls nothing back.
    if (session != 0) note_reachable(false);
    for (auto& [id, channel] : digests) channel->lost = true;
    link.lost(now);
    session = 0;
    pending_session = 0;
    gate = nullptr;
    held = false;
    settle_ops(calls);
    if (reset_waiting) {
      calls.completions.emplace_back(std::move(reset_waiting->second),
                                     error{errc::unavailable, "remote host unreachable: " + address});
      reset_waiting.reset();
    }
    cv.notify_all();
  }

  // The hold this link stands for in the owner's slot: remote_unreachable while no session is
  // open, else what the node last reported (its wrapped backend's own hold).
  void note_reachable(bool reachable) {
    auto* h = live_host();
    const epoch_t e = reachable ? session_epoch : wanted_epoch;
    if (h == nullptr || e == 0) return;
    h->note_hold(e, reachable ? node_hold : backend_hold::remote_unreachable);
  }

  // The link as readers in other processes see it (backend_host::note_link), under the lock.
  void note_link() {
    auto* h = live_host();
    const epoch_t e = session != 0 ? session_epoch : wanted_epoch;
    if (h == nullptr || e == 0) return;
    link_figures f;
    f.address = address;
    f.connected = session != 0;
    f.round_trip_us = rtt ? static_cast<std::uint64_t>(rtt->count()) : 0;
    f.window_batches = link.unacked_batches();
    f.window_bytes = link.unacked_bytes();
    f.durable_sequence = durable && !durable->logs().empty() ? durable->logs().front().sequence : 0;
    f.connects = connects;
    h->note_link(e, f);
  }

  // The session's pending operations end with it: flushes and shutdowns succeed, resets fail.
  void settle_ops(deferred_calls& calls) {
    for (auto& [id, p] : ops) {
      if (p.op == rb_op_kind::reset) {
        calls.completions.emplace_back(std::move(p.done), error{errc::unavailable, "remote host unreachable: " + address});
      } else {
        calls.completions.emplace_back(std::move(p.done), result<void>{});
      }
    }
    ops.clear();
    pings.clear();
  }
};

void remote_backend::impl::run(impl& self, deferred_calls&& calls) {
  std::vector<std::function<void(state_change)>> subs;
  if (!calls.changes.empty()) {
    std::lock_guard lock(self.mutex);
    for (auto& [k, fn] : self.subscribers) subs.push_back(fn);
  }
  for (auto& c : calls.changes) {
    for (auto& fn : subs) fn(c);
  }
  for (auto& [done, r] : calls.completions) std::move(done)(std::move(r));
  for (auto& fn : calls.host_calls) fn();
}

namespace {

struct client_state {
  static inline const char* name = "dix.remote_client";
  std::shared_ptr<remote_backend::impl> shared;
  bool connecting = false;
  clock_type::time_point last_ping{};
  std::mt19937_64 rng{std::random_device{}()};
};

using client_actor = caf::stateful_actor<client_state>;

std::uint64_t new_session(client_state& st) {
  std::uint64_t s = 0;
  while (s == 0) s = st.rng();
  return s;
}

// Sends a hello for the wanted epoch (under the lock; a connection must exist).
void send_hello(client_actor* self, remote_backend::impl& p, clock_type::time_point now) {
  p.pending_session = new_session(self->state);
  p.hello_sent = now;
  rb_hello h;
  h.version = remote_protocol_version;
  h.backend_id = p.options.id;
  h.kind = p.options.kind;
  h.epoch = p.wanted_epoch;
  h.session = p.pending_session;
  p.pending_epoch = h.epoch;
  self->send(p.gate, std::move(h));
}

void lose(client_actor* self, remote_backend::impl& p, remote_backend::impl::deferred_calls& calls,
          bool refused = false) {
  if (p.gate) self->demonitor(p.gate);
  auto now = clock_type::now();
  p.end_session(now, calls);
  if (refused) {
    // Counted as a failed attempt: a hello the host refuses again is not retried at once.
    std::uniform_real_distribution<double> jitter(0.0, 1.0);
    p.link.refused(now, jitter(self->state.rng));
  }
}

void connect(client_actor* self) {
  self->state.connecting = true;
  const auto& o = self->state.shared->options;
  auto mm = remote_detail::middleman_of(self->system(), o.tls);
  self->request(mm, o.request_timeout, caf::connect_atom::value, o.host, o.port)
      .then(
          [self](caf::node_id&, caf::strong_actor_ptr& ptr, std::set<std::string>&) {
            auto& st = self->state;
            st.connecting = false;
            auto& p = *st.shared;
            std::lock_guard lock(p.mutex);
            if (!ptr) {
              std::uniform_real_distribution<double> jitter(0.0, 1.0);
              p.link.connect_failed(clock_type::now(), jitter(st.rng));
              p.note_reachable(false);
              return;
            }
            p.gate = caf::actor_cast<caf::actor>(ptr);
            self->monitor(p.gate);
            if (p.wanted_epoch != 0) send_hello(self, p, clock_type::now());
          },
          [self](caf::error&) {
            auto& st = self->state;
            st.connecting = false;
            auto& p = *st.shared;
            std::lock_guard lock(p.mutex);
            std::uniform_real_distribution<double> jitter(0.0, 1.0);
            p.link.connect_failed(clock_type::now(), jitter(st.rng));
            p.note_reachable(false);
          });
}

void tick(client_actor* self) {
  auto& st = self->state;
  auto& p = *st.shared;
  remote_backend::impl::deferred_calls calls;
  auto now = clock_type::now();
  bool start_connect = false;
  {
    std::lock_guard lock(p.mutex);
    if (!p.gate && !st.connecting) {
      auto due = p.link.connect_due();
      if (due && *due <= now) {
        p.link.connecting(now);
        start_connect = true;
      }
    } else if (p.gate) {
      bool hello_overdue = p.pending_session != 0 && now - p.hello_sent > p.options.request_timeout;
      bool ack_overdue = p.session != 0 && !p.held && p.link.ack_overdue(now);
      if (hello_overdue || ack_overdue) {
        lose(self, p, calls);
      } else if (p.pending_session == 0 && p.wanted_epoch != 0 && p.wanted_epoch != p.session_epoch) {
        // A new owner epoch: a new session on the same connection.
        if (p.session != 0) {
          for (auto& [id, channel] : p.digests) channel->lost = true;
          p.cv.notify_all();
          p.link.new_session(now);  // the host fences the older epoch's work at this hello
          p.replay_pending = false;  // an older epoch's replay is moot
          p.session = 0;
          p.held = false;
          p.settle_ops(calls);
        }
        send_hello(self, p, now);
      } else if (p.session != 0 && now - st.last_ping >= ping_interval) {
        st.last_ping = now;
        auto id = p.next_op++;
        p.pings[id] = now;
        caf::send_as(p.client, p.gate, rb_op{p.session, p.session_epoch, id, rb_op_kind::ping, flush_reason::age});
      }
    }
  }
  {
    std::lock_guard lock(p.mutex);
    p.note_link();
  }
  if (start_connect) connect(self);
  p.run(p, std::move(calls));
}

caf::behavior client_fun(client_actor* self, std::shared_ptr<remote_backend::impl> shared) {
  self->state.shared = std::move(shared);
  self->set_down_handler([self](caf::down_msg& m) {
    auto& p = *self->state.shared;
    remote_backend::impl::deferred_calls calls;
    {
      std::lock_guard lock(p.mutex);
      if (!p.gate || m.source != p.gate.address()) return;
      lose(self, p, calls);
    }
    p.run(p, std::move(calls));
  });
  // The host holds this actor's handle (rb_hello) and monitors it: a peer's exit (but kill) or
  // error message must not end it, nor hand CAF a reason to send back (only bye_atom ends it).
  self->set_exit_handler([](caf::scheduled_actor*, caf::exit_msg&) {});
  self->set_error_handler([](caf::scheduled_actor*, caf::error&) {});
  self->set_default_handler(caf::drop);
  self->send(self, tick_atom::value);
  return {
      [self](tick_atom) {
        tick(self);
        self->delayed_send(self, tick_interval, tick_atom::value);
      },
      [self](epoch_atom) { tick(self); },
      [self](bye_atom) { self->quit(); },
      [self](rb_welcome& m) {
        auto& p = *self->state.shared;
        remote_backend::impl::deferred_calls calls;
        {
          std::lock_guard lock(p.mutex);
          if (m.session == 0 || m.session != p.pending_session) return;
          auto now = clock_type::now();
          p.pending_session = 0;
          p.session = m.session;
          p.session_epoch = p.pending_epoch;  // the hello's: the wanted one may have moved since
          p.base = p.last_issued;
          p.min_barrier = std::chrono::milliseconds(std::max<std::int64_t>(0, m.min_barrier_ms));
          ++p.connects;
          p.last_acked = 0;
          if (m.durable_code == 0) {
            p.note_durable(m.durable);
            p.durable_error.reset();
          } else {
            p.durable.reset();
            p.durable_error = error_of(m.durable_code, "remote host: " + m.durable_text);
          }
          p.durable_known = true;
          p.durable_epoch = p.session_epoch;
          if (p.link.current() != remote_link::phase::connecting) p.link.connecting(now);
          p.node_hold = backend_hold::none;
          p.note_reachable(true);
          auto owed = p.link.connected(now, m.host_instance);
          if (p.reset_waiting && p.reset_waiting->first == p.session_epoch) {
            auto id = p.next_op++;
            p.ops.emplace(id, remote_backend::impl::pending{rb_op_kind::reset, std::move(p.reset_waiting->second)});
            p.reset_waiting.reset();
            self->send(p.gate, rb_op{p.session, p.session_epoch, id, rb_op_kind::reset, flush_reason::age});
          }
          if (owed.work_lost) {
            p.replay_pending = true;
            ++p.replay_generation;
            calls.changes.push_back({state_change_kind::accepted_work_lost, p.session_epoch});
          }
          if (owed.changed) calls.changes.push_back({state_change_kind::changed, 0});
          p.cv.notify_all();
        }
        p.run(p, std::move(calls));
      },
      [self](rb_ack& m) {
        auto& p = *self->state.shared;
        remote_backend::impl::deferred_calls calls;
        {
          std::lock_guard lock(p.mutex);
          if (m.session == 0 || m.session != p.session) return;
          if (!p.link.acked(m.seq + p.base, clock_type::now())) {
            lose(self, p, calls);  // an acknowledgement of what was never sent: the peer is confused
          } else {
            p.last_acked = std::max(p.last_acked, m.seq);
            if (p.link.take_changed()) calls.changes.push_back({state_change_kind::changed, 0});
          }
        }
        p.run(p, std::move(calls));
      },
      [self](rb_durable& m) {
        auto& p = *self->state.shared;
        std::lock_guard lock(p.mutex);
        if (m.session == 0 || m.session != p.session || m.epoch != p.session_epoch) return;
        if (m.code == 0) {
          p.note_durable(m.cursor);
          p.durable_error.reset();
          if (m.through > 0) p.link.durable_through(m.through + p.base);
        } else {
          p.durable_error = error_of(m.code, "remote host: " + m.text);
        }
        p.durable_known = true;
        p.durable_epoch = m.epoch;
        p.cv.notify_all();
      },
      [self](rb_reply& m) {
        auto& p = *self->state.shared;
        remote_backend::impl::deferred_calls calls;
        {
          std::lock_guard lock(p.mutex);
          if (m.session == 0 || m.session != p.session) return;
          if (m.op == rb_op_kind::ping) {
            auto it = p.pings.find(m.id);
            if (it != p.pings.end()) {
              p.rtt = std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - it->second);
              p.pings.erase(it);
            }
            return;
          }
          auto it = p.ops.find(m.id);
          if (it == p.ops.end() || it->second.op != m.op) return;
          result<void> r = m.code == 0 ? result<void>{} : result<void>{error_of(m.code, "remote host: " + m.text)};
          if (m.op == rb_op_kind::reset && m.code == 0) {
            p.durable.reset();  // a reset removes the cursor (the host's push after it says so too)
            p.highest_durable.reset();
            p.durable_error.reset();
          }
          calls.completions.emplace_back(std::move(it->second.done), std::move(r));
          p.ops.erase(it);
        }
        p.run(p, std::move(calls));
      },
      [self](rb_event& m) {
        auto& p = *self->state.shared;
        remote_backend::impl::deferred_calls calls;
        {
          std::lock_guard lock(p.mutex);
          if (m.session == 0 || m.session != p.session) return;
          auto* host = p.live_host();
          switch (m.kind) {
            case rb_event_kind::accepted_work_lost:
              calls.changes.push_back({state_change_kind::accepted_work_lost, m.epoch});
              break;
            case rb_event_kind::failed:
              calls.changes.push_back({state_change_kind::failed, m.epoch});
              break;
            case rb_event_kind::unindexable:
              if (host) calls.host_calls.push_back([host, text = m.text] { host->note_unindexable(text); });
              break;
            case rb_event_kind::rebuild:
              if (host) calls.host_calls.push_back([host] { host->request_rebuild(); });
              break;
            case rb_event_kind::hold: {
              auto hold = static_cast<backend_hold>(m.value);
              p.held = m.value != 0;
              p.node_hold = hold;
              if (host) calls.host_calls.push_back([host, e = m.epoch, hold] { host->note_hold(e, hold); });
              break;
            }
          }
        }
        p.run(p, std::move(calls));
      },
      [self](rb_digest_reply& m) {
        auto& p = *self->state.shared;
        std::lock_guard lock(p.mutex);
        auto it = p.digests.find(m.view);
        if (it == p.digests.end() || it->second->lost || m.session != it->second->session) return;
        it->second->replies.push_back(std::move(m));
        p.cv.notify_all();
      },
      [self](rb_refused& m) {
        auto& p = *self->state.shared;
        remote_backend::impl::deferred_calls calls;
        {
          std::lock_guard lock(p.mutex);
          if (m.session == 0 || (m.session != p.session && m.session != p.pending_session)) return;
          // The host would not take this session's work (a superseded epoch, or a rule broken):
          // the session ends; the next one, after a backoff, starts from the durable cursor.
          lose(self, p, calls, true);
        }
        p.run(p, std::move(calls));
      },
  };
}

}  // namespace

remote_backend::remote_backend(std::shared_ptr<impl> p) : impl_(std::move(p)) {}

remote_backend::~remote_backend() {
  if (!impl_) return;
  {
    // A digest view holds the shared state too: once the actor system is gone it must not send.
    std::lock_guard lock(impl_->mutex);
    impl_->gate = nullptr;
    for (auto& [id, channel] : impl_->digests) channel->lost = true;
    impl_->cv.notify_all();
  }
  caf::anon_send(impl_->client, bye_atom::value);
  impl_->sys.reset();
  impl_->cfg.reset();
}

result<std::shared_ptr<remote_backend>> remote_backend::create(remote_backend_options options) {
  if (options.id.empty()) return error{errc::invalid_argument, "remote backend: id is empty"};
  if (options.kind.empty()) return error{errc::invalid_argument, "remote backend: kind is empty"};
  if (options.port == 0) return error{errc::invalid_argument, "remote backend: port 0 (the host's port is needed)"};
  if (options.request_timeout <= std::chrono::milliseconds{0}) {
    return error{errc::invalid_argument, "remote backend: request_timeout must be positive"};
  }
  if (auto t = remote_detail::check_tls(options.tls); !t) return t.error();
  auto p = std::make_shared<impl>();
  p->options = std::move(options);
  p->address = p->options.host + ":" + std::to_string(p->options.port);
  remote_link_limits limits;
  limits.ack_deadline = p->options.request_timeout;
  p->link = remote_link(limits);
  p->cfg = std::make_unique<caf::actor_system_config>();
  remote_detail::configure(*p->cfg, p->options.heartbeat, p->options.tls);
  p->sys = std::make_unique<caf::actor_system>(*p->cfg);
  remote_detail::ignore_broker_at_exit(*p->sys);
  p->client = p->sys->spawn(client_fun, p);
  return std::shared_ptr<remote_backend>(new remote_backend(std::move(p)));
}

const std::string& remote_backend::id() const noexcept { return impl_->options.id; }
std::string_view remote_backend::kind() const noexcept { return impl_->options.kind; }

void remote_backend::attach(backend_host& host) {
  std::lock_guard lock(impl_->mutex);
  impl_->host = &host;
  impl_->host_live = true;
}

std::chrono::milliseconds remote_backend::min_barrier_interval() const noexcept {
  std::lock_guard lock(impl_->mutex);
  return impl_->min_barrier;
}

result<std::optional<cursor>> remote_backend::durable_cursor() {
  auto& p = *impl_;
  std::unique_lock lock(p.mutex);
  p.host_live = p.host != nullptr;  // the runtime calls: its host is alive
  epoch_t e = p.host != nullptr ? p.host->readiness().owner_epoch : 0;
  if (e > p.wanted_epoch) {
    p.wanted_epoch = e;
    caf::anon_send(p.client, epoch_atom::value);
  }
  const bool replay_start = p.replay_pending;
  const auto generation = p.replay_generation;
  auto ready = [&] { return p.session != 0 && p.durable_known && p.durable_epoch == p.wanted_epoch; };
  if (!p.cv.wait_for(lock, p.options.request_timeout, ready)) {
    return error{errc::timeout, "remote host unreachable: " + p.address + " (no durable cursor within " +
                                    std::to_string(p.options.request_timeout.count()) + " ms)"};
  }
  if (p.durable_error) return *p.durable_error;
  auto answer = p.durable;
  if (replay_start && p.replay_pending && generation == p.replay_generation) {
    p.replay_pending = false;  // from here on this epoch's deliveries are its replay
    if (p.link.take_changed()) {
      impl::deferred_calls calls;
      calls.changes.push_back({state_change_kind::changed, 0});
      lock.unlock();
      p.run(p, std::move(calls));
    }
  }
  return answer;
}

delivery_result remote_backend::deliver(std::shared_ptr<const batch> b) {
  auto& p = *impl_;
  std::lock_guard lock(p.mutex);
  p.host_live = p.host != nullptr;
  if (b->epoch > p.wanted_epoch) {
    p.wanted_epoch = b->epoch;
    caf::anon_send(p.client, epoch_atom::value);
  }
  // A batch the host must refuse whatever happens (its rules, backends.md §4) is a failure here,
  // not a refusal there: replayed, it would be refused again for ever.
  if (b->bytes > max_remote_message_bytes || b->records.size() > max_remote_records) return delivery_result::failed;
  auto now = clock_type::now();
  if (p.session == 0 || b->epoch != p.session_epoch || p.replay_pending) {
    p.link.note_deferred();  // `changed` follows once a session of this epoch is open
    return delivery_result::deferred;
  }
  auto seq = p.link.deliver(b->bytes, now);
  if (!seq) return delivery_result::deferred;
  p.last_issued = *seq;
  caf::send_as(p.client, p.gate, rb_deliver{p.session, p.session_epoch, *seq - p.base, batch_msg{std::move(b)}});
  return delivery_result::accepted;
}

void remote_backend::flush(flush_reason reason, completion done) {
  auto& p = *impl_;
  {
    std::lock_guard lock(p.mutex);
    if (p.session != 0) {
      auto id = p.next_op++;
      p.ops.emplace(id, impl::pending{rb_op_kind::flush, std::move(done)});
      caf::send_as(p.client, p.gate, rb_op{p.session, p.session_epoch, id, rb_op_kind::flush, reason});
      return;
    }
  }
  std::move(done)(result<void>{});  // durability is judged by the cursor alone (backends.md §4)
}

void remote_backend::shutdown(epoch_t epoch, completion done) {
  auto& p = *impl_;
  {
    std::lock_guard lock(p.mutex);
    p.host_live = false;  // the runtime may be gone once this settles: no more calls of its host
    if (p.session != 0 && epoch == p.session_epoch) {
      auto id = p.next_op++;
      p.ops.emplace(id, impl::pending{rb_op_kind::shutdown, std::move(done)});
      caf::send_as(p.client, p.gate, rb_op{p.session, p.session_epoch, id, rb_op_kind::shutdown, flush_reason::shutdown});
      return;
    }
  }
  // Unreachable, or another epoch than the session's: the host fences every older epoch at the
  // next owner's hello, so nothing of `epoch` can land afterwards (backends.md §4).
  std::move(done)(result<void>{});
}

void remote_backend::reset(epoch_t epoch, completion done) {
  auto& p = *impl_;
  {
    std::lock_guard lock(p.mutex);
    p.host_live = p.host != nullptr;
    if (p.session != 0 && epoch == p.session_epoch) {
      auto id = p.next_op++;
      p.ops.emplace(id, impl::pending{rb_op_kind::reset, std::move(done)});
      caf::send_as(p.client, p.gate, rb_op{p.session, p.session_epoch, id, rb_op_kind::reset, flush_reason::age});
      return;
    }
    if (p.gate && epoch > p.session_epoch && !p.reset_waiting) {
      // A new epoch (a rebuild's attempt): its session first, then the reset.
      p.wanted_epoch = std::max(p.wanted_epoch, epoch);
      p.reset_waiting.emplace(epoch, std::move(done));
      caf::anon_send(p.client, epoch_atom::value);
      return;
    }
  }
  std::move(done)(error{errc::unavailable, "remote host unreachable: " + p.address + " (reset waits for the connection)"});
}

subscription remote_backend::on_state_change(std::function<void(state_change)> callback) {
  auto& p = *impl_;
  std::lock_guard lock(p.mutex);
  auto id = p.next_subscriber++;
  p.subscribers.emplace(id, std::move(callback));
  std::weak_ptr<impl> weak = impl_;
  return subscription([weak, id] {
    if (auto s = weak.lock()) {
      std::lock_guard guard(s->mutex);
      s->subscribers.erase(id);
    }
  });
}

void remote_backend::publish_coverage(const positions& pos, index_time_t coverage_time, epoch_t epoch) noexcept {
  auto& p = *impl_;
  try {
    std::lock_guard lock(p.mutex);
    if (p.session == 0 || epoch != p.session_epoch) return;  // the next welcome's owner publishes again
    const auto now = static_cast<index_time_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
    const auto age = now > coverage_time ? static_cast<std::int64_t>(now - coverage_time) : std::int64_t{0};
    caf::send_as(p.client, p.gate, rb_coverage{p.session, epoch, pos, coverage_time, age});
  } catch (...) {
    // Coverage is advisory for the node's readers: a lost publication only delays their admission.
  }
}

namespace {

// A digest view of the node's wrapped backend, read through the session it was opened in: each
// step is a message to the node and an answer within request_timeout; reads go ahead by one
// (the next batch of entries is asked for as soon as one arrives).
class remote_digest_view final : public digest_view {
 public:
  remote_digest_view(std::shared_ptr<remote_backend::impl> p, std::shared_ptr<remote_backend::impl::digest_channel> channel,
                     std::uint64_t id, epoch_t epoch)
      : p_(std::move(p)), channel_(std::move(channel)), id_(id), epoch_(epoch) {}

  ~remote_digest_view() override {
    auto& p = *p_;
    std::lock_guard lock(p.mutex);
    if (!channel_->lost && p.gate && p.session == channel_->session) {
      caf::send_as(p.client, p.gate, rb_digest{channel_->session, epoch_, id_, rb_digest_op::close, 0, {}});
    }
    p.digests.erase(id_);
  }

  // Sends the open and waits for its answer: ten times request_timeout, since a backend may read
  // its whole index to open a view (Xapian's, hnsw's labels).
  result<void> open() {
    if (auto sent = send(rb_digest_op::open, 0, {}); !sent) return sent.error();
    auto r = await(rb_digest_op::open, 10);
    if (!r) return r.error();
    through_ = std::move(r->through);
    digest_.sum = hash128{r->sum_lo, r->sum_hi};
    digest_.records = r->records;
    preparation_ = r->amount;
    return {};
  }

  const std::optional<cursor>& through() const noexcept override { return through_; }
  const index_digest& digest() const noexcept override { return digest_; }
  std::uint64_t preparation_rows() const noexcept override { return preparation_; }

  result<std::uint64_t> prepare(std::uint64_t units) override {
    if (prepared_) return std::uint64_t{0};
    if (auto sent = send(rb_digest_op::prepare, std::min(units, max_rows), {}); !sent) return sent.error();
    auto r = await(rb_digest_op::prepare);
    if (!r) return r.error();
    if (r->amount == 0) prepared_ = true;
    return r->amount;
  }

  result<const digest_entry*> next() override {
    while (at_ == entries_.size()) {
      if (end_) return static_cast<const digest_entry*>(nullptr);
      if (!read_pending_) {
        if (auto sent = send(rb_digest_op::read, max_entries, {}); !sent) return sent.error();
      }
      read_pending_ = false;
      auto r = await(rb_digest_op::read);
      if (!r) return r.error();
      entries_.clear();
      at_ = 0;
      for (auto& row : r->entries) {
        entries_.push_back(digest_entry{std::move(row.log), row.table, std::move(row.record_id), row.version,
                                        hash128{row.hash_lo, row.hash_hi}});
      }
      end_ = r->end;
      if (!end_) {
        if (auto sent = send(rb_digest_op::read, max_entries, {}); !sent) return sent.error();
        read_pending_ = true;
      }
    }
    return &entries_[at_++];
  }

  bool answers_skips() const noexcept override { return true; }

  result<std::vector<bool>> skips(const std::vector<record_entry>& records) override {
    if (records.empty()) return std::vector<bool>{};
    if (auto sent = send(rb_digest_op::skips, 0, records); !sent) return sent.error();
    auto answer = await(rb_digest_op::skips);
    if (!answer) return answer.error();
    if (answer->left_out.size() != records.size()) {
      return error{errc::message_invalid, "remote host: a skips answer for " + std::to_string(answer->left_out.size()) +
                                              " records, not " + std::to_string(records.size())};
    }
    std::vector<bool> out;
    out.reserve(records.size());
    for (char c : answer->left_out) out.push_back(c != '\0');
    return out;
  }

 private:
  static constexpr std::uint64_t max_entries = 4096;
  static constexpr std::uint64_t max_rows = 1u << 20;

  error gone() const {
    return error{errc::unavailable, "remote host " + p_->address + ": the session of the digest view ended"};
  }

  result<void> send(rb_digest_op op, std::uint64_t amount, std::vector<record_entry> records) {
    auto& p = *p_;
    std::lock_guard lock(p.mutex);
    if (channel_->lost || !p.gate || p.session != channel_->session) return gone();
    caf::send_as(p.client, p.gate, rb_digest{channel_->session, epoch_, id_, op, amount, std::move(records)});
    return {};
  }

  // The node's answer to the oldest step of kind `op` not yet answered (a view's steps are
  // answered in order; a read asked ahead may come before a later step's answer).
  result<rb_digest_reply> await(rb_digest_op op, int timeouts = 1) {
    auto& p = *p_;
    const auto bound = p.options.request_timeout * timeouts;
    std::unique_lock lock(p.mutex);
    std::optional<rb_digest_reply> answer;
    auto arrived = [&] {
      auto& q = channel_->replies;
      auto it = std::find_if(q.begin(), q.end(), [op](const rb_digest_reply& r) { return r.op == op; });
      if (it == q.end()) return channel_->lost;
      answer = std::move(*it);
      q.erase(it);
      return true;
    };
    if (!p.cv.wait_for(lock, bound, arrived)) {
      return error{errc::timeout, "remote host " + p.address + ": no answer to a digest view's step within " +
                                      std::to_string(bound.count()) + " ms"};
    }
    if (!answer) return gone();
    if (answer->code != 0) return remote_detail::error_of(answer->code, "remote host: " + answer->text);
    return std::move(*answer);
  }

  std::shared_ptr<remote_backend::impl> p_;
  std::shared_ptr<remote_backend::impl::digest_channel> channel_;
  std::uint64_t id_;
  epoch_t epoch_;
  std::optional<cursor> through_;
  index_digest digest_;
  std::uint64_t preparation_ = 0;
  bool prepared_ = false;
  std::vector<digest_entry> entries_;
  std::size_t at_ = 0;
  bool end_ = false;
  bool read_pending_ = false;
};

}  // namespace

result<std::unique_ptr<digest_view>> remote_backend::open_digest() {
  auto& p = *impl_;
  std::unique_ptr<remote_digest_view> view;
  {
    std::lock_guard lock(p.mutex);
    if (p.session == 0 || !p.gate) {
      return error{errc::unavailable, "remote host unreachable: " + p.address + " (a digest view needs its session)"};
    }
    auto channel = std::make_shared<impl::digest_channel>();
    channel->session = p.session;
    const auto id = p.next_op++;
    p.digests.emplace(id, channel);
    view = std::make_unique<remote_digest_view>(impl_, std::move(channel), id, p.session_epoch);
  }
  if (auto opened = view->open(); !opened) return opened.error();
  return std::unique_ptr<digest_view>(std::move(view));
}

bool remote_backend::wait_connected(bool connected, std::chrono::milliseconds timeout) const {
  auto& p = *impl_;
  std::unique_lock lock(p.mutex);
  return p.cv.wait_for(lock, timeout, [&] { return (p.session != 0) == connected; });
}

remote_link_status remote_backend::link_status() const {
  auto& p = *impl_;
  std::lock_guard lock(p.mutex);
  remote_link_status s;
  s.address = p.address;
  s.connected = p.session != 0;
  s.host_instance = p.link.host_instance().value_or(0);
  s.window_batches = p.link.unacked_batches();
  s.window_bytes = p.link.unacked_bytes();
  s.connects = p.connects;
  s.last_acked = p.last_acked;
  s.round_trip = p.rtt;
  s.durable = p.durable;
  s.cursor_regressions = p.cursor_regressions;
  return s;
}

}  // namespace dix
