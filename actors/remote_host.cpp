// remote_backend_host (<dix/remote.hpp>, backends.md §4, decision 0043): the index node's side.
//
//   peer ──rb_*──► gate (published, stateless) ──(sender, message)──► host actor ──► wrapped backend
//   peer ◄──────────────── anonymous sends ◄──────────────────────────── host actor
//
// The gate only forwards the protocol's messages with their sender; it ignores exit, error and
// down messages and drops anything else. A peer can still kill it (CAF delivers exit_msg{kill}
// whatever the handler): the host actor monitors it and publishes a new gate on the same port.
// The host actor holds all state: the epoch fence (core/remote_fence), the current session, and
// one queue of the session's work, taken strictly in order — a batch the wrapped backend deferred
// holds everything behind it until the wrapped `changed`, and a barrier covers exactly the
// batches before it. Its handle never crosses the wire: it answers with anonymous sends.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/publish.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <dix/query_host.hpp>
#include <dix/remote.hpp>

#include "actors/remote_digest.hpp"
#include "actors/remote_system.hpp"
#include "adapters/posix_files.hpp"
#include "core/coverage_read.hpp"
#include "core/remote_fence.hpp"
#include "core/remote_link.hpp"
#include "messages/remote.hpp"
#include "messages/type_ids.hpp"

namespace dix {

namespace {

using namespace std::chrono_literals;
using remote_detail::code_of;

// Local messages of the host process (atoms and built-in types only: nothing here is reachable
// from the wire, the gate forwards rb_* alone).
using from_atom = caf::atom_constant<caf::atom("rbfrom")>;      // gate → host: sender, message
using done_atom = caf::atom_constant<caf::atom("rbdone")>;      // a wrapped completion: token, code, text
using changed_atom = caf::atom_constant<caf::atom("rbchg")>;    // the wrapped backend's changed
using event_atom = caf::atom_constant<caf::atom("rbevent")>;    // forward an rb_event: kind, epoch, value, text
using stop_atom = caf::atom_constant<caf::atom("rbstop")>;      // stop(): shut down, then quit
using gate_atom = caf::atom_constant<caf::atom("rbgate")>;     // the first gate, published by start()
using republish_atom = caf::atom_constant<caf::atom("rbrepub")>;  // try the port again

bool loopback(const std::string& address) {
  return address == "127.0.0.1" || address.rfind("127.", 0) == 0 || address == "::1" || address == "localhost";
}

}  // namespace

// What the host actor, the wrapped backend's host and the public object share.
struct remote_backend_host::impl {
  remote_host_options options;
  std::shared_ptr<backend> wrapped;
  std::uint64_t instance = 0;
  std::atomic<epoch_t> highest{0};  // the fence's epoch, for is_owner_epoch on any thread
  std::uint16_t port = 0;
  std::string address;

  mutable std::mutex mutex;
  remote_host_stats stats;

  // The coverage the owner forwarded (rb_coverage), for the node's readers: the highest coverage
  // time, the owner's age of it when sent, and when it arrived. Cleared by a reset.
  struct forwarded_coverage {
    index_time_t time = 0;
    std::chrono::nanoseconds age{0};
    std::chrono::steady_clock::time_point at;
  };
  std::mutex coverage_mutex;
  std::condition_variable coverage_cv;  // a coverage arrived, or the host closes
  std::optional<forwarded_coverage> coverage;
  bool closing = false;
  std::atomic<std::size_t> queries_running{0};
  std::shared_ptr<backend_host> home;  // options.home_db's query host, when set

  std::unique_ptr<caf::actor_system_config> cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::actor host;
  bool stopped = false;

  // <state_dir>/epoch: decimal, written to epoch.tmp, fsync'd, renamed over, directory fsync'd.
  result<epoch_t> read_epoch() const;
  result<void> persist_epoch(epoch_t e) const;
};

result<epoch_t> remote_backend_host::impl::read_epoch() const {
  auto path = options.state_dir / "epoch";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return epoch_t{0};
    return posix_error("remote host", "cannot open", path, errno);
  }
  char buf[32] = {};
  auto n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return error{errc::io_error, "remote host: " + path.string() + " is empty or unreadable"};
  epoch_t e = 0;
  for (ssize_t i = 0; i < n; ++i) {
    if (buf[i] == '\n') break;
    const auto d = static_cast<epoch_t>(buf[i] - '0');
    if (buf[i] < '0' || buf[i] > '9' || e > (UINT64_MAX - d) / 10) {
      return error{errc::io_error, "remote host: " + path.string() + " does not hold an epoch"};
    }
    e = e * 10 + d;
  }
  return e;
}

namespace {

// <state_dir>/epoch.tmp is overwritten by persist_epoch: only when it is what an interrupted
// persist left (a regular file holding nothing or decimal digits and a newline). Anything else
// by that name is someone's file, and the host refuses to start rather than truncate it.
result<void> check_epoch_tmp(const std::filesystem::path& state_dir) {
  auto path = state_dir / "epoch.tmp";
  struct ::stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    return posix_error("remote host", "cannot inspect", path, errno);
  }
  bool ours = S_ISREG(st.st_mode) && st.st_size <= 21;
  if (ours) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    char buf[32] = {};
    auto n = fd < 0 ? -1 : ::read(fd, buf, sizeof buf);
    if (fd >= 0) ::close(fd);
    ours = n >= 0;
    for (ssize_t i = 0; ours && i < n; ++i) ours = (buf[i] >= '0' && buf[i] <= '9') || (buf[i] == '\n' && i == n - 1);
  }
  if (!ours) {
    return error{errc::io_error, "remote host: " + path.string() +
                                     " is not an epoch this host was writing; it is left as it is (move it away)"};
  }
  return {};
}

}  // namespace

result<void> remote_backend_host::impl::persist_epoch(epoch_t e) const {
  auto tmp = options.state_dir / "epoch.tmp";
  auto path = options.state_dir / "epoch";
  {
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return posix_error("remote host", "cannot create", tmp, errno);
    auto text = std::to_string(e) + "\n";
    bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
    int err = errno;
    ::close(fd);
    if (!ok) return posix_error("remote host", "cannot write", tmp, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return posix_error("remote host", "cannot rename", tmp, errno);
  int dir = ::open(options.state_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return posix_error("remote host", "cannot open", options.state_dir, errno);
  int rc = ::fsync(dir);
  int err = errno;
  ::close(dir);
  if (rc != 0) return posix_error("remote host", "cannot sync", options.state_dir, err);
  return {};
}

namespace {

// The wrapped backend's backend_host: the fence answers is_owner_epoch; what the backend reports
// goes to the host actor, which forwards it to the owner.
class host_side final : public backend_host {
 public:
  host_side(remote_backend_host::impl& shared, caf::actor host) : shared_(shared), host_(std::move(host)) {}
  bool is_owner_epoch(epoch_t e) const noexcept override { return e != 0 && e == shared_.highest.load(); }
  dix::readiness readiness() const noexcept override {
    dix::readiness r;
    r.owner_epoch = shared_.highest.load();
    return r;
  }
  void note_unindexable(std::string_view reason) noexcept override {
    forward(rb_event_kind::unindexable, shared_.highest.load(), 0, std::string(reason));
  }
  void request_rebuild() noexcept override { forward(rb_event_kind::rebuild, shared_.highest.load(), 0, {}); }
  result<coverage> admit_query(const coverage_mode& mode, cancel_token cancel) override;
  void note_hold(epoch_t epoch, backend_hold hold) noexcept override {
    forward(rb_event_kind::hold, epoch, static_cast<std::uint8_t>(hold), {});
  }
  void forward(rb_event_kind kind, epoch_t epoch, std::uint8_t value, std::string text) noexcept {
    try {
      caf::anon_send(host_, event_atom::value, static_cast<std::uint8_t>(kind), epoch, value, std::move(text));
    } catch (...) {
    }
  }

 private:
  remote_backend_host::impl& shared_;
  caf::actor host_;
};

// The lag bound of what the owner forwarded: its age when sent plus this node's time since.
coverage coverage_now(const remote_backend_host::impl::forwarded_coverage& f, std::chrono::milliseconds tolerance) {
  coverage c;
  c.tolerance = tolerance;
  auto lag = std::chrono::duration_cast<std::chrono::milliseconds>(f.age + (std::chrono::steady_clock::now() - f.at));
  c.lag_upper_bound = lag;
  c.state = lag <= tolerance ? coverage_state::bounded : coverage_state::unknown;
  return c;
}

result<coverage> host_side::admit_query(const coverage_mode& mode, cancel_token cancel) {
  auto& sh = shared_;
  if (sh.home) return sh.home->admit_query(mode, std::move(cancel));  // the owner's segment, this machine
  std::unique_lock lock(sh.coverage_mutex);
  if (mode.kind == coverage_kind::wait) {
    // Read-your-writes across machines: the writer's commit time is covered once the owner says
    // so. Waits through a node that has heard nothing yet (started, reset, owner away).
    auto woken = cancel.on_cancel([&sh] { sh.coverage_cv.notify_all(); });
    const auto deadline = std::chrono::steady_clock::now() + mode.timeout;
    while (!sh.coverage || sh.coverage->time < mode.since) {
      if (sh.closing) return error{errc::stopped, "remote host: stopping"};
      if (cancel.cancelled()) return error{errc::cancelled, "remote host: the query was cancelled"};
      if (sh.coverage_cv.wait_until(lock, deadline) == std::cv_status::timeout &&
          (!sh.coverage || sh.coverage->time < mode.since)) {
        return error{errc::index_lagging, "index " + sh.wrapped->id() + " did not cover index time " +
                                              std::to_string(mode.since) + " within " +
                                              std::to_string(mode.timeout.count()) + " ms"};
      }
    }
    return coverage_now(*sh.coverage, mode.tolerance);
  }
  if (!sh.coverage) {
    return error{errc::unavailable, "index " + sh.wrapped->id() +
                                        ": the owner has forwarded no coverage to this index node (since it "
                                        "started or since a reset)"};
  }
  auto c = coverage_now(*sh.coverage, mode.tolerance);
  if (auto refused = admission_refusal(c, mode.kind)) return *refused;
  return c;
}

void clear_coverage(remote_backend_host::impl& shared) {
  std::lock_guard lock(shared.coverage_mutex);
  shared.coverage.reset();
}

struct host_state {
  static inline const char* name = "dix.remote_host";
  remote_backend_host::impl* shared = nullptr;
  std::unique_ptr<host_side> side;
  subscription changes;
  host_fence fence;
  caf::actor gate;

  struct session_t {
    std::uint64_t id = 0;
    caf::actor client;
    epoch_t epoch = 0;
    std::uint64_t next_seq = 1;  // the next deliver expected on arrival
    std::uint64_t applied = 0;   // the last one the wrapped backend took
    bool lost = false;           // its owner's connection went down (reported once)
    std::uint64_t queued_bytes = 0;  // of its deliveries not yet taken by the wrapped backend
  };
  std::optional<session_t> session;
  // The session's digest views (dix verify), each in its reader actor with its cancel flag, by
  // the owner's number.
  struct view_reader {
    caf::actor actor;
    std::shared_ptr<std::atomic<bool>> cancelled;
  };
  std::map<std::uint64_t, view_reader> views;

  struct work {
    caf::actor client;
    std::uint64_t session = 0;
    epoch_t epoch = 0;
    std::optional<rb_hello> hello;
    std::optional<rb_deliver> deliver;
    std::optional<rb_op> op;
  };
  std::deque<work> queue;
  // What the front of the queue waits for: a wrapped completion (token), or the wrapped changed.
  enum class waiting : std::uint8_t { none, completion, changed } wait = waiting::none;
  std::uint64_t token = 0;
  std::uint64_t flush_through = 0;  // the last batch before the barrier in progress
  epoch_t adopting = 0;             // a hello whose epoch is adopted while the old one quiesces
  epoch_t shut = 0;                 // the last epoch a shutdown quiesced (never twice, backends.md §0)
  // The wrapped backend took a batch since its last barrier, shutdown or reset: a same-epoch
  // hello makes that work durable before its welcome (decision 0043, "same-epoch sessions").
  bool unflushed = false;
  bool settling = false;  // the front hello waits for that barrier
  bool stopping = false;
};

using host_actor = caf::stateful_actor<host_state>;

void count(host_state& st, std::uint64_t remote_host_stats::*field, std::uint64_t n = 1) {
  std::lock_guard lock(st.shared->mutex);
  st.shared->stats.*field += n;
}

void refuse(host_actor* self, const caf::actor& to, std::uint64_t session, const error& e) {
  count(self->state, &remote_host_stats::refused);
  if (to) caf::anon_send(to, rb_refused{session, code_of(e), e.message()});
}

void pump(host_actor* self);

// Ends the digest views' readers (their session ended, or the host stops): a view pins the
// wrapped backend's state, and the owner's next verify opens a new one.
void close_views(host_state& st) {
  for (auto& [id, reader] : st.views) {
    reader.cancelled->store(true);  // first: the exit queues behind the steps already sent
    caf::anon_send_exit(reader.actor, caf::exit_reason::user_shutdown);
  }
  st.views.clear();
}

// A wrapped completion that comes back to the host actor as a message (any thread may run it).
completion completes_to(host_actor* self) {
  auto token = ++self->state.token;
  self->state.wait = host_state::waiting::completion;
  caf::actor me = caf::actor_cast<caf::actor>(self);
  return completion([me, token](result<void> r) {
    caf::anon_send(me, done_atom::value, token, r ? std::uint8_t{0} : code_of(r.error()),
                   r ? std::string{} : r.error().message());
  });
}

rb_durable durable_now(host_state& st, std::uint64_t id) {
  rb_durable d;
  d.session = st.session ? st.session->id : 0;
  d.id = id;
  d.epoch = st.fence.highest();
  d.through = st.session ? st.session->applied : 0;
  try {
    auto c = st.shared->wrapped->durable_cursor();
    if (c) {
      d.cursor = *c;
    } else {
      d.code = code_of(c.error());
      d.text = c.error().message();
    }
  } catch (const std::exception& e) {
    d.code = static_cast<std::uint8_t>(errc::backend_failed);
    d.text = std::string("durable_cursor() threw: ") + e.what();
  }
  return d;
}

void welcome(host_actor* self, const host_state::work& w) {
  auto& st = self->state;
  // Its loss is noticed (a diagnostic: fencing never depends on it).
  if (!st.session || st.session->client != w.client || st.session->lost) self->monitor(w.client);
  close_views(st);
  st.session = host_state::session_t{w.hello->session, w.client, w.hello->epoch, 1, 0};
  count(st, &remote_host_stats::sessions);
  auto d = durable_now(st, 0);
  rb_welcome m;
  m.session = w.hello->session;
  m.host_instance = st.shared->instance;
  m.epoch = st.fence.highest();
  m.durable = d.cursor;
  m.durable_code = d.code;
  m.durable_text = d.text;
  m.supports_reset = st.shared->wrapped->supports_reset();
  m.min_barrier_ms = st.shared->wrapped->min_barrier_interval().count();
  caf::anon_send(w.client, std::move(m));
}

// Takes the front of the queue; false when it must wait.
bool step(host_actor* self) {
  auto& st = self->state;
  auto& w = st.queue.front();
  auto& wrapped = *st.shared->wrapped;
  if (w.hello) {
    auto d = st.fence.on_message(w.hello->epoch);
    if (d.what == host_fence::decision::kind::superseded) {
      refuse(self, w.client, w.hello->session,
             error{errc::stopped, "epoch superseded: " + std::to_string(w.hello->epoch) + " < " +
                                      std::to_string(st.fence.highest())});
      return true;
    }
    if (d.what == host_fence::decision::kind::adopt && st.adopting != w.hello->epoch) {
      // Persist first: a host restarted after this point still refuses every older epoch.
      if (auto p = st.shared->persist_epoch(w.hello->epoch); !p) {
        refuse(self, w.client, w.hello->session, p.error());
        return true;
      }
      st.fence.adopted(w.hello->epoch);
      st.shared->highest.store(w.hello->epoch);
      {
        std::lock_guard lock(st.shared->mutex);
        st.shared->stats.epoch = w.hello->epoch;
      }
      if (d.quiesce && *d.quiesce != st.shut) {  // the older epoch's work stops before the new owner is welcomed
        st.adopting = w.hello->epoch;
        st.shut = *d.quiesce;
        wrapped.shutdown(*d.quiesce, completes_to(self));
        return false;
      }
    }
    st.adopting = 0;
    if (d.what == host_fence::decision::kind::act && st.unflushed) {
      // The same epoch's new session: the wrapped backend may still hold batches an older session
      // delivered and the owner will replay. Made durable first, the welcome's cursor covers
      // them, the replay starts after it, and no later barrier can report a cursor below one
      // reported before (cursors never move backwards).
      st.settling = true;
      wrapped.flush(flush_reason::shutdown, completes_to(self));  // unspaced: the session ended
      return false;
    }
    welcome(self, w);
    return true;
  }
  if (!st.session || w.session != st.session->id) {  // an old session's work left in the queue
    if (w.deliver) count(st, &remote_host_stats::fenced_batches_dropped);
    return true;
  }
  auto& s = *st.session;
  if (w.deliver) {
    delivery_result r;
    try {
      r = wrapped.deliver(w.deliver->batch.value);
    } catch (const std::exception& e) {
      caf::anon_send(s.client, rb_event{s.id, s.epoch, rb_event_kind::failed, 0, std::string("deliver threw: ") + e.what()});
      r = delivery_result::failed;
    }
    if (r == delivery_result::deferred) {
      st.wait = host_state::waiting::changed;
      return false;
    }
    if (r == delivery_result::failed) {
      caf::anon_send(s.client, rb_event{s.id, s.epoch, rb_event_kind::failed, 0, "the wrapped backend failed a batch"});
    } else {
      count(st, &remote_host_stats::batches_applied);
      st.unflushed = true;
    }
    s.applied = w.deliver->seq;
    s.queued_bytes -= std::min(s.queued_bytes, w.deliver->batch->bytes);
    caf::anon_send(s.client, rb_ack{s.id, s.applied});
    return true;
  }
  auto& op = *w.op;
  switch (op.op) {
    case rb_op_kind::durable_query:
      caf::anon_send(s.client, durable_now(st, op.id));
      return true;
    case rb_op_kind::flush:
      st.flush_through = s.applied;
      wrapped.flush(op.reason, completes_to(self));
      return false;
    case rb_op_kind::shutdown:
      wrapped.shutdown(op.epoch, completes_to(self));
      return false;
    case rb_op_kind::reset:
      if (!wrapped.supports_reset()) {
        caf::anon_send(s.client, rb_reply{s.id, op.id, op.op, static_cast<std::uint8_t>(errc::not_supported),
                                          "the wrapped backend has no reset"});
        return true;
      }
      clear_coverage(*st.shared);  // the index empties: its readers wait for the rebuild's coverage
      wrapped.reset(op.epoch, completes_to(self));
      return false;
    case rb_op_kind::ping:
      break;
  }
  return true;
}

void pump(host_actor* self) {
  auto& st = self->state;
  while (st.wait == host_state::waiting::none && !st.queue.empty()) {
    if (!step(self)) return;
    st.queue.pop_front();
  }
}

// A wrapped completion for the front of the queue.
void completed(host_actor* self, std::uint8_t code, const std::string& text) {
  auto& st = self->state;
  st.wait = host_state::waiting::none;
  if (st.queue.empty()) return;
  auto& w = st.queue.front();
  if (w.hello && st.settling) {  // the older sessions' work is durable, or the barrier failed
    st.settling = false;
    if (code == 0) st.unflushed = false;
    welcome(self, w);
    if (code != 0) {
      // The held work's fate is unknown: the index cannot be trusted to resume from the
      // welcome's cursor, so the owner condemns it (a rebuild resets it).
      caf::anon_send(w.client, rb_event{w.hello->session, w.hello->epoch, rb_event_kind::failed, 0,
                                        "the barrier before the session failed: " + text});
    }
  } else if (w.hello) {  // the older epoch is quiescent (a rejected shutdown changes nothing: it is fenced)
    st.adopting = 0;
    st.unflushed = false;
    welcome(self, w);
  } else if (w.op && st.session && w.session == st.session->id) {
    auto& s = *st.session;
    if ((w.op->op == rb_op_kind::flush || w.op->op == rb_op_kind::reset) && code == 0) {
      auto d = durable_now(st, 0);  // after a reset: no cursor
      d.through = w.op->op == rb_op_kind::flush ? st.flush_through : 0;
      caf::anon_send(s.client, std::move(d));
    }
    if (w.op->op == rb_op_kind::shutdown && code == 0) st.shut = w.op->epoch;
    if (code == 0) st.unflushed = false;  // a barrier, a shutdown or a reset: nothing held
    caf::anon_send(s.client, rb_reply{s.id, w.op->id, w.op->op, code, text});
  }
  st.queue.pop_front();
  pump(self);
}

// Checks a message on arrival and queues it; answers what it refuses.
void arrive(host_actor* self, const caf::actor& client, host_state::work w) {
  auto& st = self->state;
  if (w.hello) {
    auto& h = *w.hello;
    if (auto c = check_hello(h.version, h.backend_id, h.kind, h.epoch, st.shared->wrapped->id(),
                             std::string(st.shared->wrapped->kind()));
        !c) {
      refuse(self, client, h.session, c.error());
      return;
    }
    if (h.session == 0) {
      refuse(self, client, 0, error{errc::message_invalid, "hello: session 0 is reserved"});
      return;
    }
    if (st.fence.on_message(h.epoch).what == host_fence::decision::kind::superseded) {
      refuse(self, client, h.session,
             error{errc::stopped, "epoch superseded: " + std::to_string(h.epoch) + " < " + std::to_string(st.fence.highest())});
      return;
    }
    // A newer session supersedes what older ones queued (their owner judged it lost, or an older
    // epoch's owner was fenced): it is dropped and counted, never applied after the new session's.
    std::uint64_t dropped = 0;
    std::deque<host_state::work> kept;
    for (std::size_t i = 0; i < st.queue.size(); ++i) {
      auto& q = st.queue[i];
      // Only a front waiting for a wrapped completion has started; one waiting for `changed` (a
      // deferred batch) is dropped like the rest of an older session's work.
      bool started = i == 0 && st.wait == host_state::waiting::completion;
      if (started || (!q.hello && q.epoch > h.epoch)) {
        kept.push_back(std::move(q));
      } else if (q.hello) {
        if (q.hello->epoch > h.epoch) kept.push_back(std::move(q));
      } else if (q.deliver) {
        ++dropped;
      }
    }
    if (st.wait == host_state::waiting::changed && (kept.empty() || !kept.front().deliver)) {
      st.wait = host_state::waiting::none;
    }
    st.queue = std::move(kept);
    if (dropped > 0) count(st, &remote_host_stats::fenced_batches_dropped, dropped);
    w.client = client;
    w.session = h.session;
    w.epoch = h.epoch;
    st.queue.push_back(std::move(w));
    pump(self);
    return;
  }
  std::uint64_t session = w.deliver ? w.deliver->session : w.op->session;
  epoch_t epoch = w.deliver ? w.deliver->epoch : w.op->epoch;
  if (st.fence.on_message(epoch).what == host_fence::decision::kind::superseded) {
    refuse(self, client, session,
           error{errc::stopped, "epoch superseded: " + std::to_string(epoch) + " < " + std::to_string(st.fence.highest())});
    return;
  }
  // Only the welcomed session's work is taken (an owner sends nothing before its welcome).
  if (!st.session || st.session->id != session) {
    refuse(self, client, session, error{errc::message_invalid, "session: " + std::to_string(session) + " is not open"});
    return;
  }
  if (epoch != st.session->epoch) {
    refuse(self, client, session,
           error{errc::message_invalid, "epoch: " + std::to_string(epoch) + " is not the session's " +
                                            std::to_string(st.session->epoch)});
    return;
  }
  if (w.op && w.op->op == rb_op_kind::ping) {  // answered at once: the round-trip time
    caf::anon_send(client, rb_reply{session, w.op->id, rb_op_kind::ping, 0, {}});
    return;
  }
  if (w.deliver) {
    auto& d = *w.deliver;
    if (!d.batch) {
      refuse(self, client, session, error{errc::message_invalid, "deliver: no batch"});
      return;
    }
    if (auto c = check_deliver(epoch, d.seq, st.session->next_seq, d.batch->bytes, d.batch->records.size()); !c) {
      refuse(self, client, session, c.error());
      return;
    }
    if (d.batch->epoch != epoch) {
      refuse(self, client, session, error{errc::message_invalid, "deliver: the batch's epoch is not the message's"});
      return;
    }
    // The owner's window (16 batches / 64 MiB unacknowledged) is the host's memory bound too: a
    // peer that sends past it is refused, never queued.
    const remote_link_limits window;
    if (auto fits = check_window(d.seq, st.session->applied, st.session->queued_bytes, d.batch->bytes, window.max_batches,
                              window.max_bytes);
        !fits) {
      refuse(self, client, session, fits.error());
      return;
    }
    st.session->queued_bytes += d.batch->bytes;
    st.session->next_seq = d.seq + 1;
  }
  w.client = client;
  w.session = session;
  w.epoch = epoch;
  st.queue.push_back(std::move(w));
  pump(self);
}

// The owner's coverage: the current session's only (an older session's or epoch's is stale, and
// ignored without an answer: it is advisory). Kept monotone; wakes the readers that wait.
void take_coverage(host_actor* self, const caf::actor& client, const rb_coverage& m) {
  auto& st = self->state;
  if (!st.session || m.session != st.session->id || m.epoch != st.session->epoch ||
      !st.fence.is_owner_epoch(m.epoch)) {
    return;
  }
  if (m.coverage_time == 0 || m.age_ns < 0 || m.positions.size() > cursor::max_logs) {
    refuse(self, client, m.session, error{errc::message_invalid, "coverage: a zero time, a negative age or too many logs"});
    return;
  }
  auto& sh = *st.shared;
  {
    std::lock_guard lock(sh.coverage_mutex);
    if (!sh.coverage || sh.coverage->time <= m.coverage_time) {
      sh.coverage = remote_backend_host::impl::forwarded_coverage{m.coverage_time, std::chrono::nanoseconds(m.age_ns),
                                                                  std::chrono::steady_clock::now()};
    }
  }
  sh.coverage_cv.notify_all();
  try {
    sh.wrapped->publish_coverage(m.positions, m.coverage_time, m.epoch);
  } catch (...) {
  }
}

// A step on a digest view (dix verify, remote_digest.hpp): only the current session's owner,
// at its epoch, may take one; the view's reader answers it. Close is never answered.
void take_digest(host_actor* self, const caf::actor& client, const rb_digest& m) {
  auto& st = self->state;
  auto answer_error = [&](const error& e) {
    if (m.op == rb_digest_op::close) return;
    rb_digest_reply r;
    r.session = m.session;
    r.view = m.view;
    r.op = m.op;
    r.code = code_of(e);
    r.text = e.message();
    caf::anon_send(client, std::move(r));
  };
  if (!st.session || st.session->lost || m.session != st.session->id || client != st.session->client ||
      m.epoch != st.session->epoch || !st.fence.is_owner_epoch(m.epoch)) {
    answer_error(error{errc::stopped, "digest view: not this index node's current session and owner epoch"});
    return;
  }
  auto it = st.views.find(m.view);
  if (m.op == rb_digest_op::open) {
    if (it != st.views.end()) {
      answer_error(error{errc::message_invalid, "digest view " + std::to_string(m.view) + " is open already"});
      return;
    }
    if (st.views.size() >= max_remote_digest_views) {
      answer_error(error{errc::invalid_argument, "digest view: at most " + std::to_string(max_remote_digest_views) +
                                                     " are open per session"});
      return;
    }
    auto cancelled = std::make_shared<std::atomic<bool>>(false);
    auto reader = spawn_digest_reader(self->system(), st.shared->wrapped, client, m.session, m.view, cancelled);
    it = st.views.emplace(m.view, host_state::view_reader{std::move(reader), std::move(cancelled)}).first;
  } else if (it == st.views.end()) {
    answer_error(error{errc::message_invalid, "digest view " + std::to_string(m.view) + " is not open"});
    return;
  } else if (m.op == rb_digest_op::skips && m.records.size() > max_remote_digest_entries) {
    answer_error(error{errc::invalid_argument, "digest view: at most " + std::to_string(max_remote_digest_entries) +
                                                   " records per skips question"});
    return;
  }
  if (m.op == rb_digest_op::close) {
    it->second.cancelled->store(true);  // the steps queued before it are not taken either
    self->send(it->second.actor, m);
    st.views.erase(it);
    return;
  }
  self->send(it->second.actor, m);
}

constexpr std::size_t max_query_rows = 10000;
constexpr std::size_t max_query_text = 64 * 1024;
constexpr std::size_t max_query_dimensions = 65536;

// Checks a reader's query and runs it on a thread of its own (a detached actor), so a `wait`
// never holds up the host's actor; answers rb_rows to the sender.
void start_query(host_actor* self, const caf::actor& client, const rb_query& m) {
  auto& sh = *self->state.shared;
  auto answer_error = [&](const error& e) {
    count(self->state, &remote_host_stats::queries);
    caf::anon_send(client, rb_rows{m.id, static_cast<std::uint8_t>(e.value()), e.message(), {}, coverage_state::unknown, 0, -1});
  };
  if (m.backend_id != sh.wrapped->id()) {
    answer_error(error{errc::message_invalid, "query: this node serves " + sh.wrapped->id() + ", not " + m.backend_id +
                                                  " (ask it for " + sh.wrapped->id() + ")"});
    return;
  }
  if (m.limit == 0 || m.limit > max_query_rows || m.offset > 1000000 || m.ef > max_query_rows ||
      m.text.size() > max_query_text || m.end.size() > max_query_text || m.vector.size() % sizeof(float) != 0 ||
      m.vector.size() / sizeof(float) > max_query_dimensions) {
    answer_error(error{errc::invalid_argument, "query: limit 1…10000, offset ≤ 1000000, ef ≤ 10000, text and end ≤ "
                                               "64 KiB, a vector of whole floats ≤ 65536"});
    return;
  }
  if (m.mode == coverage_kind::wait && (m.since == 0 || m.timeout_ms < 0 || m.timeout_ms > 600000)) {
    answer_error(error{errc::invalid_argument, "query: wait needs since > 0 and a timeout of 0…600000 ms"});
    return;
  }
  if (m.mode == coverage_kind::bounded && m.tolerance_ms <= 0) {
    answer_error(error{errc::invalid_argument, "query: bounded needs a positive tolerance"});
    return;
  }
  if (!sh.options.query) {
    answer_error(error{errc::not_supported, "query: this index node answers no queries"});
    return;
  }
  if (sh.queries_running.fetch_add(1) >= sh.options.max_concurrent_queries) {
    sh.queries_running.fetch_sub(1);
    answer_error(error{errc::timeout, "query: " + std::to_string(sh.options.max_concurrent_queries) +
                                          " queries are running on this index node; try again"});
    return;
  }
  remote_query q;
  q.id = m.backend_id;
  q.kind = static_cast<remote_query_kind>(m.kind);
  q.text = m.text;
  q.end = m.end;
  q.vector.resize(m.vector.size() / sizeof(float));
  if (!q.vector.empty()) std::memcpy(q.vector.data(), m.vector.data(), m.vector.size());
  q.limit = m.limit;
  q.offset = m.offset;
  q.ef = m.ef;
  q.mode.kind = m.mode;
  q.mode.tolerance = std::chrono::milliseconds(m.tolerance_ms);
  q.mode.since = m.since;
  q.mode.timeout = std::chrono::milliseconds(m.timeout_ms);
  auto* shared = &sh;
  auto id = m.id;
  self->system().spawn<caf::detached>([shared, q = std::move(q), client, id](caf::blocking_actor*) {
    rb_rows out;
    out.id = id;
    try {
      auto r = shared->options.query(q);
      if (r) {
        out.coverage = r->coverage.state;
        out.tolerance_ms = r->coverage.tolerance.count();
        out.lag_ms = r->coverage.lag_upper_bound ? r->coverage.lag_upper_bound->count() : -1;
        out.rows.reserve(r->rows.size());
        for (auto& row : r->rows) {
          out.rows.push_back(rb_row{std::move(row.ref.log), row.ref.table, std::move(row.ref.record_id), row.ref.version,
                                    score_bits_of(row.score)});
        }
      } else {
        out.code = static_cast<std::uint8_t>(r.error().value());
        out.text = r.error().message();
      }
    } catch (const std::exception& e) {
      out.code = static_cast<std::uint8_t>(errc::backend_failed);
      out.text = std::string("query threw: ") + e.what();
    }
    {
      std::lock_guard lock(shared->mutex);
      ++shared->stats.queries;
    }
    shared->queries_running.fetch_sub(1);
    caf::anon_send(client, std::move(out));
  });
}

caf::behavior gate_fun(caf::event_based_actor* self, caf::actor host) {
  // A peer's exit (but kill), error or down message must not end the gate; nothing else but the
  // protocol reaches the host actor.
  self->set_exit_handler([](caf::scheduled_actor*, caf::exit_msg&) {});
  self->set_error_handler([](caf::scheduled_actor*, caf::error&) {});
  self->set_down_handler([](caf::scheduled_actor*, caf::down_msg&) {});
  self->set_default_handler(caf::drop);
  return {
      [=](rb_hello& m) { self->send(host, from_atom::value, self->current_sender(), caf::make_message(std::move(m))); },
      [=](rb_deliver& m) { self->send(host, from_atom::value, self->current_sender(), caf::make_message(std::move(m))); },
      [=](rb_op& m) { self->send(host, from_atom::value, self->current_sender(), caf::make_message(std::move(m))); },
      [=](rb_coverage& m) { self->send(host, from_atom::value, self->current_sender(), caf::make_message(std::move(m))); },
      [=](rb_query& m) { self->send(host, from_atom::value, self->current_sender(), caf::make_message(std::move(m))); },
      [=](rb_digest& m) { self->send(host, from_atom::value, self->current_sender(), caf::make_message(std::move(m))); },
  };
}

// Publishes the current gate on the host's port; the middleman closes the old one's listener
// asynchronously, so a bind that fails is tried again every 100 ms.
void publish_current_gate(host_actor* self) {
  auto& st = self->state;
  auto& shared = *st.shared;
  auto mm = remote_detail::middleman_of(self->system(), shared.options.tls);
  self->request(mm, caf::infinite, caf::publish_atom::value, shared.port, caf::actor_cast<caf::strong_actor_ptr>(st.gate),
                std::set<std::string>{}, shared.address, true)
      .then([self](std::uint16_t) { count(self->state, &remote_host_stats::gates_published); },
            [self](caf::error&) {
              if (!self->state.stopping) self->delayed_send(self, std::chrono::milliseconds(100), republish_atom::value);
            });
}

// The gate is gone (a peer's exit_msg{kill}): a new one on the same port.
void replace_gate(host_actor* self) {
  auto& st = self->state;
  auto old = st.gate;
  st.gate = self->system().spawn(gate_fun, caf::actor_cast<caf::actor>(self));
  self->monitor(st.gate);
  auto mm = remote_detail::middleman_of(self->system(), st.shared->options.tls);
  if (old) self->send(mm, caf::unpublish_atom::value, old.address(), st.shared->port);
  publish_current_gate(self);
}

caf::behavior host_fun(host_actor* self, remote_backend_host::impl* shared, epoch_t persisted) {
  self->state.shared = shared;
  self->state.fence = host_fence(persisted);
  self->state.side = std::make_unique<host_side>(*shared, caf::actor_cast<caf::actor>(self));
  shared->wrapped->attach(*self->state.side);
  caf::actor me = caf::actor_cast<caf::actor>(self);
  self->state.changes = shared->wrapped->on_state_change([me](state_change c) {
    if (c.kind == state_change_kind::changed) {
      caf::anon_send(me, changed_atom::value);
    } else {
      caf::anon_send(me, event_atom::value,
                     static_cast<std::uint8_t>(c.kind == state_change_kind::failed ? rb_event_kind::failed
                                                                                   : rb_event_kind::accepted_work_lost),
                     c.epoch, std::uint8_t{0}, std::string{});
    }
  });
  self->set_down_handler([self](caf::down_msg& m) {
    auto& st = self->state;
    if (!st.stopping && m.source == st.gate.address()) {
      replace_gate(self);
    } else if (st.session && !st.session->lost && m.source == st.session->client.address()) {
      // The owner is gone or unreachable. Reported only: the session stays as it is until a new
      // hello (the same owner reconnecting, or a successor) supersedes it and its queued work.
      st.session->lost = true;
      close_views(st);
      count(st, &remote_host_stats::sessions_lost);
      if (st.shared->options.on_session_lost) st.shared->options.on_session_lost(st.session->epoch);
    }
  });
  self->set_exit_handler([](caf::exit_msg&) {});  // only the host object ends it (stop_atom)
  return {
      [self](from_atom, caf::strong_actor_ptr& sender, caf::message& m) {
        auto client = caf::actor_cast<caf::actor>(sender);
        if (!client || self->state.stopping) return;
        host_state::work w;
        if (m.match_elements<rb_hello>()) {
          w.hello = m.get_as<rb_hello>(0);
        } else if (m.match_elements<rb_deliver>()) {
          w.deliver = m.get_as<rb_deliver>(0);
        } else if (m.match_elements<rb_op>()) {
          w.op = m.get_as<rb_op>(0);
        } else if (m.match_elements<rb_coverage>()) {
          take_coverage(self, client, m.get_as<rb_coverage>(0));
          return;
        } else if (m.match_elements<rb_query>()) {
          start_query(self, client, m.get_as<rb_query>(0));
          return;
        } else if (m.match_elements<rb_digest>()) {
          take_digest(self, client, m.get_as<rb_digest>(0));
          return;
        } else {
          return;
        }
        arrive(self, client, std::move(w));
      },
      [self](done_atom, std::uint64_t token, std::uint8_t code, std::string& text) {
        auto& st = self->state;
        if (st.wait != host_state::waiting::completion || token != st.token) return;
        completed(self, code, text);
      },
      [self](changed_atom) {
        auto& st = self->state;
        if (st.wait != host_state::waiting::changed) return;
        st.wait = host_state::waiting::none;
        pump(self);
      },
      [self](event_atom, std::uint8_t kind, epoch_t epoch, std::uint8_t value, std::string& text) {
        auto& st = self->state;
        const auto k = static_cast<rb_event_kind>(kind);
        if ((k == rb_event_kind::failed || k == rb_event_kind::accepted_work_lost) &&
            st.wait == host_state::waiting::changed && !st.queue.empty()) {
          // The deferral was answered by failed or lost work, not by changed (both are allowed):
          // the held batch is dropped (the owner replays, or the index is condemned) and the
          // queue moves on.
          st.wait = host_state::waiting::none;
          auto& front = st.queue.front();
          if (front.deliver && st.session && front.session == st.session->id) {
            st.session->applied = front.deliver->seq;  // acknowledged, so the owner's window moves
            st.session->queued_bytes -= std::min(st.session->queued_bytes, front.deliver->batch->bytes);
            caf::anon_send(st.session->client, rb_ack{st.session->id, st.session->applied});
          }
          st.queue.pop_front();
          pump(self);
        }
        if (!st.session) return;
        caf::anon_send(st.session->client,
                       rb_event{st.session->id, epoch, static_cast<rb_event_kind>(kind), value, std::move(text)});
      },
      [self](republish_atom) {
        if (!self->state.stopping) publish_current_gate(self);
      },
      [self](gate_atom, caf::actor& gate) {
        self->state.gate = gate;
        self->monitor(gate);
      },
      [self](stop_atom) -> caf::result<bool> {
        auto& st = self->state;
        st.stopping = true;
        {
          std::lock_guard lock(st.shared->coverage_mutex);
          st.shared->closing = true;  // waiting readers are answered stopped
        }
        st.shared->coverage_cv.notify_all();
        st.queue.clear();
        close_views(st);
        st.changes.reset();
        // The gate ignores every exit message but kill (a peer's must not end it).
        if (st.gate) caf::anon_send_exit(st.gate, caf::exit_reason::kill);
        auto epoch = st.fence.highest();
        if (epoch == 0) return true;
        auto rp = self->make_response_promise<bool>();  // takes the response over: create it last
        st.shared->wrapped->shutdown(epoch, completion([rp](result<void>) mutable { rp.deliver(true); }));
        return rp;
      },
  };
}

}  // namespace

result<void> remote_backend_host::check(const remote_host_options& options) {
  if (options.state_dir.empty()) return error{errc::invalid_argument, "remote host: state_dir is empty"};
  if (auto t = remote_detail::check_tls(options.tls); !t) return t.error();
  if (!loopback(options.listen_address) && (!options.allow_remote_interfaces || !options.tls.complete())) {
    // Names only what is missing.
    const std::string tls = "mutual TLS (certificate, key and CA files)";
    const std::string missing = !options.allow_remote_interfaces && !options.tls.complete() ? "--allow-remote-interfaces and " + tls
                                : !options.allow_remote_interfaces                          ? std::string("--allow-remote-interfaces")
                                                                                            : tls;
    return error{errc::invalid_argument, "listening on " + options.listen_address + " (not loopback) needs " + missing};
  }
  return {};
}

result<void> remote_backend_host::make_state_dir(const std::filesystem::path& state_dir) {
  return make_private_directory(state_dir, "the index node's state directory");
}

remote_backend_host::remote_backend_host(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

remote_backend_host::~remote_backend_host() { stop(); }

result<std::unique_ptr<remote_backend_host>> remote_backend_host::start(std::shared_ptr<backend> wrapped,
                                                                         remote_host_options options) {
  if (!wrapped) return error{errc::invalid_argument, "remote host: no backend to serve"};
  if (auto c = check(options); !c) return c.error();
  if (auto d = make_state_dir(options.state_dir); !d) return d.error();
  auto p = std::make_unique<impl>();
  p->options = std::move(options);
  p->wrapped = std::move(wrapped);
  p->address = p->options.listen_address;
  std::random_device rd;
  p->instance = (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(::getpid());
  if (p->instance == 0) p->instance = 1;
  if (auto tmp = check_epoch_tmp(p->options.state_dir); !tmp) return tmp.error();
  auto persisted = p->read_epoch();
  if (!persisted) return persisted.error();
  p->highest.store(*persisted);
  p->stats.epoch = *persisted;
  if (!p->options.home_db.empty()) p->home = make_query_host(p->options.home_db, p->wrapped->id());

  p->cfg = std::make_unique<caf::actor_system_config>();
  remote_detail::configure(*p->cfg, p->options.heartbeat, p->options.tls);
  p->sys = std::make_unique<caf::actor_system>(*p->cfg);
  remote_detail::ignore_broker_at_exit(*p->sys);
  p->host = p->sys->spawn(host_fun, p.get(), *persisted);
  // The first gate is published here, synchronously, so port() is known when start returns.
  auto gate = p->sys->spawn(gate_fun, p->host);
  caf::expected<std::uint16_t> port = caf::sec::runtime_error;
  if (p->options.tls.complete()) {
    port = caf::openssl::publish(gate, p->options.port, p->address.c_str(), true);
  } else {
    port = p->sys->middleman().publish(gate, p->options.port, p->address.c_str(), true);
  }
  if (!port) {
    caf::anon_send_exit(gate, caf::exit_reason::kill);
    caf::anon_send_exit(p->host, caf::exit_reason::kill);
    return error{errc::io_error, "remote host: cannot listen on " + p->address + ":" +
                                     std::to_string(p->options.port) + ": " + p->sys->render(port.error())};
  }
  p->port = *port;
  p->stats.gates_published = 1;
  // Hand the gate to the host actor: it monitors it and republishes on the same port.
  caf::anon_send(p->host, gate_atom::value, gate);
  return std::unique_ptr<remote_backend_host>(new remote_backend_host(std::move(p)));
}

std::uint16_t remote_backend_host::port() const noexcept { return impl_->port; }
const std::string& remote_backend_host::address() const noexcept { return impl_->address; }

remote_host_stats remote_backend_host::stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats;
}

void remote_backend_host::stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  {
    caf::scoped_actor self{*impl_->sys};
    // As long as the wrapped shutdown takes (an hnsw index saving a large graph can take long):
    // what it makes durable is what the next owner resumes from. SIGKILL is the impatient way.
    self->request(impl_->host, caf::infinite, stop_atom::value).receive([](bool) {}, [](caf::error&) {});
  }
  caf::anon_send_exit(impl_->host, caf::exit_reason::kill);  // it ignores the others too
  impl_->sys.reset();  // joins: the middleman closes the port
  impl_->cfg.reset();
}

}  // namespace dix
