#include "actors/supervisor_actor.hpp"

#include <array>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "core/restart_policy.hpp"
#include "messages/errors.hpp"

namespace dix {
namespace {

struct supervised_id {
  std::shared_ptr<const supervised_spec> spec;
  log_tailer_actor tailer;
  backend_proxy_actor proxy;
  runner_actor runner;
  std::array<restart_history, 3> history{};  // by child_kind
  std::uint64_t incarnation = 0;
  std::optional<readiness_reason> runner_start;  // the next runner starts parked with it
  bool recovering = false;  // release steps for a dead runner under way
  bool held = false;        // those steps' shutdown was rejected: the lock stays held
  bool escalated = false;   // nothing of this id is restarted
  // A marker write for a dead runner is in flight: how to go on when the tailer answers.
  std::optional<restart_decision> marker_then;
  std::vector<caf::typed_response_promise<stopped>> waiting;  // unsupervise during recovery
};

struct supervisor_state {
  std::map<std::uint64_t, supervised_id> ids;  // by registration token
  std::map<caf::actor_addr, std::pair<std::uint64_t, child_kind>> children;
  std::uint64_t next_incarnation = 1;
  static inline const char* name = "dix.supervisor";
};

using supervisor_pointer = supervisor_actor::stateful_pointer<supervisor_state>;

template <class Handle>
void adopt(supervisor_pointer self, std::uint64_t token, child_kind kind, const Handle& h) {
  self->monitor(h);
  self->state.children[h.address()] = {token, kind};
}

template <class Handle>
void retire(supervisor_pointer self, Handle& h) {
  if (!h) return;
  self->demonitor(h.address());
  self->state.children.erase(h.address());
  self->send_exit(h, caf::exit_reason::user_shutdown);
  h = nullptr;
}

void spawn_runner_of(supervisor_pointer self, std::uint64_t token, supervised_id& e) {
  e.runner = e.spec->spawn_runner(e.tailer, e.proxy, e.runner_start);
  adopt(self, token, child_kind::runner, e.runner);
  if (e.spec->runner_changed) e.spec->runner_changed(e.runner);
  // A child still being respawned is down for the new runner too.
  if (!e.tailer) self->send(e.runner, child_down{child_kind::tailer, false});
  if (!e.proxy) self->send(e.runner, child_down{child_kind::proxy, false});
  // As if by a non-system commit (protocol.md §2.2): the runner evaluates the index at once.
  if (!e.runner_start) self->send(e.runner, wake{wake_flag::commit});
}

// Stops supervising: the registration's actors are told to exit and forgotten.
void forget(supervisor_pointer self, std::uint64_t token) {
  auto it = self->state.ids.find(token);
  if (it == self->state.ids.end()) return;
  auto& e = it->second;
  retire(self, e.runner);
  retire(self, e.tailer);
  retire(self, e.proxy);
  self->state.ids.erase(it);
}

void answer_waiting(supervised_id& e, const stopped& outcome) {
  for (auto& p : e.waiting) p.deliver(outcome);
  e.waiting.clear();
}

void finish_release(supervisor_pointer self, std::uint64_t token, bool owned, bool escalate,
                    std::chrono::milliseconds delay);

// The rest of the release steps for a dead runner, once the backend answered (or could not be
// asked): the condemnation marker (formats.md §5, through the tailer: all store I/O of an id is
// the tailer's), then publish, unlock, respawn or escalate.
void after_quiescence(supervisor_pointer self, std::uint64_t token, bool owned, bool escalate,
                      std::chrono::milliseconds delay, const caf::error& shutdown_error) {
  auto it = self->state.ids.find(token);
  if (it == self->state.ids.end()) return;
  auto& e = it->second;
  const auto& id = e.spec->id;
  if (shutdown_error) {
    // The backend cannot prove quiescence: keep the lock, never hand it on (protocol.md §9.7).
    e.recovering = false;
    e.held = true;
    e.spec->slot->publish(readiness_state::unavailable, readiness_reason::shutdown_failed, 0);
    answer_waiting(e, stopped{make_error(errc::backend_failed, "shutdown of " + id + " rejected after its runner failed")});
    return;
  }
  if (owned && e.tailer) {
    e.marker_then = restart_decision{escalate, delay};
    self->send(e.tailer, meta_write{meta_kind::condemn, 0});
    return;
  }
  // No tailer to write the marker: published without it, as after a failed marker write (§10.3).
  finish_release(self, token, owned, escalate, delay);
}

void finish_release(supervisor_pointer self, std::uint64_t token, bool owned, bool escalate,
                    std::chrono::milliseconds delay) {
  auto it = self->state.ids.find(token);
  if (it == self->state.ids.end()) return;
  auto& e = it->second;
  const auto& spec = *e.spec;
  e.recovering = false;
  if (owned) {
    spec.slot->publish(escalate ? readiness_state::unavailable : readiness_state::needs_rebuild,
                       readiness_reason::runner_failed, 0);
  }
  spec.lock->release(spec.id, spec.token);
  if (!e.waiting.empty()) {  // unregistered meanwhile: released, nothing to restart
    answer_waiting(e, stopped{});
    forget(self, token);
    return;
  }
  if (escalate) {
    e.escalated = true;
    return;
  }
  if (owned) e.runner_start = readiness_reason::runner_failed;
  self->delayed_send(self, delay, respawn{token, child_kind::runner, e.incarnation});
}

// actors.md §3, runner down: the supervisor holds the lock entry and performs the release steps.
void recover_runner(supervisor_pointer self, std::uint64_t token, supervised_id& e, const restart_decision& d) {
  auto s = e.spec->snapshot ? e.spec->snapshot->load() : runner_snapshot{};
  const bool owned = s.owner;
  if (!owned || !e.proxy) {
    // Not the owner: nothing to quiesce. Owner with a dead proxy: no one can quiesce the backend;
    // the next owner's larger epoch fences its late work.
    after_quiescence(self, token, owned, d.escalate, d.delay, caf::error{});
    return;
  }
  e.recovering = true;
  auto proxy = e.proxy;
  auto epoch = s.epoch;
  auto shut = [self, token, proxy, epoch, d] {
    self->request(proxy, caf::infinite, shutdown_request{epoch})
      .then([self, token, d](quiescence& q) { after_quiescence(self, token, true, d.escalate, d.delay, q.error); },
            [self, token, d](caf::error& err) { after_quiescence(self, token, true, d.escalate, d.delay, err); });
  };
  // An error of flush(shutdown) is logged only; the shutdown decides (protocol.md §9.6).
  self->request(proxy, caf::infinite, flush_request{0, flush_reason::shutdown})
    .then([shut](flush_done&) { shut(); }, [shut](caf::error&) { shut(); });
}

void on_down(supervisor_pointer self, const caf::down_msg& dm) {
  auto& st = self->state;
  auto child = st.children.find(dm.source);
  if (child == st.children.end()) return;
  auto [token, kind] = child->second;
  st.children.erase(child);
  auto it = st.ids.find(token);
  if (it == st.ids.end()) return;
  auto& e = it->second;
  auto d = decide_restart(kind, e.history[static_cast<std::size_t>(kind)], self->clock().now(), e.spec->options);
  switch (kind) {
    case child_kind::tailer:
    case child_kind::proxy:
      if (kind == child_kind::tailer) e.tailer = nullptr;
      else e.proxy = nullptr;
      if (kind == child_kind::tailer && e.marker_then) {  // the marker write died with it
        auto then = *e.marker_then;
        e.marker_then.reset();
        finish_release(self, token, true, then.escalate, then.delay);
        if (self->state.ids.count(token) == 0) return;
      }
      if (e.runner) self->send(e.runner, child_down{kind, d.escalate});
      if (d.escalate) {
        e.escalated = true;
        return;
      }
      self->delayed_send(self, d.delay, respawn{token, kind, e.incarnation});
      return;
    case child_kind::runner:
      e.runner = nullptr;
      recover_runner(self, token, e, d);
      return;
  }
}

// Releases every registration through unsupervise; answers once all settled.
caf::result<stopped> stop_all(supervisor_pointer self) {
  auto promise = self->make_response_promise<stopped>();
  std::vector<std::pair<std::uint64_t, std::string>> all;
  for (auto& [token, e] : self->state.ids) all.emplace_back(token, e.spec->id);
  if (all.empty()) return stopped{};
  struct tally {
    std::size_t left;
    std::string failed;
  };
  auto t = std::make_shared<tally>(tally{all.size(), {}});
  auto settle = [t, promise](const std::string& id, bool ok) mutable {
    if (!ok) t->failed += (t->failed.empty() ? "" : ", ") + id;
    if (--t->left > 0) return;
    promise.deliver(t->failed.empty() ? stopped{} : stopped{make_error(errc::backend_failed, "shutdown rejected by " + t->failed)});
  };
  for (auto& [token, id] : all) {
    self->request(caf::actor_cast<supervisor_actor>(self), caf::infinite, unsupervise{token})
      .then([settle, id = id](stopped& s) mutable { settle(id, !s.error); },
            [settle, id = id](caf::error&) mutable { settle(id, false); });
  }
  return promise;
}

supervisor_actor::behavior_type supervisor(supervisor_pointer self) {
  self->set_down_handler([self](caf::down_msg& dm) { on_down(self, dm); });
  self->set_exit_handler([self](caf::exit_msg& em) {
    std::vector<std::uint64_t> tokens;
    for (auto& [token, e] : self->state.ids) tokens.push_back(token);
    for (auto token : tokens) forget(self, token);
    self->quit(em.reason);
  });
  return {
    [self](supervise& m) {
      if (!m.spec || self->state.ids.count(m.spec->token) != 0) return;
      const auto token = m.spec->token;
      auto& e = self->state.ids[token];
      e.spec = std::move(m.spec);
      e.incarnation = self->state.next_incarnation++;
      e.tailer = e.spec->spawn_tailer();
      adopt(self, token, child_kind::tailer, e.tailer);
      e.proxy = e.spec->spawn_proxy();
      adopt(self, token, child_kind::proxy, e.proxy);
      spawn_runner_of(self, token, e);
    },
    [self](meta_written& m) {
      if (m.kind != meta_kind::condemn) return;
      auto sender = self->current_sender();
      if (!sender) return;
      auto child = self->state.children.find(sender->address());
      if (child == self->state.children.end()) return;
      auto token = child->second.first;
      auto it = self->state.ids.find(token);
      if (it == self->state.ids.end() || !it->second.marker_then) return;
      auto then = *it->second.marker_then;
      it->second.marker_then.reset();
      finish_release(self, token, true, then.escalate, then.delay);  // written or not: §10.3
    },
    [self](respawn& m) {
      auto it = self->state.ids.find(m.token);
      if (it == self->state.ids.end()) return;
      auto& e = it->second;
      if (e.incarnation != m.incarnation || e.escalated) return;
      switch (m.kind) {
        case child_kind::tailer:
          if (e.tailer) return;
          e.tailer = e.spec->spawn_tailer();
          adopt(self, m.token, m.kind, e.tailer);
          if (e.runner) self->send(e.runner, child_up{m.kind, caf::actor_cast<caf::strong_actor_ptr>(e.tailer)});
          return;
        case child_kind::proxy:
          if (e.proxy) return;
          e.proxy = e.spec->spawn_proxy();
          adopt(self, m.token, m.kind, e.proxy);
          if (e.runner) self->send(e.runner, child_up{m.kind, caf::actor_cast<caf::strong_actor_ptr>(e.proxy)});
          return;
        case child_kind::runner:
          if (e.runner || e.recovering || e.held) return;
          spawn_runner_of(self, m.token, e);
          return;
      }
    },
    [self](unsupervise& m) -> caf::result<stopped> {
      auto it = self->state.ids.find(m.token);
      if (it == self->state.ids.end()) return stopped{};
      auto& e = it->second;
      const auto& id = e.spec->id;
      if (e.held) return stopped{make_error(errc::backend_failed, "shutdown of " + id + " was rejected; its lock stays held")};
      auto promise = self->make_response_promise<stopped>();
      if (e.recovering) {
        e.waiting.push_back(promise);
        return promise;
      }
      if (!e.runner) {  // escalated, or between a crash and the respawn: released already
        forget(self, m.token);
        return stopped{};
      }
      self->request(e.runner, caf::infinite, stop{})
        .then([self, promise, token = m.token](stopped& s) mutable {
                if (!s.error) forget(self, token);
                promise.deliver(s);
              },
              [promise](caf::error& err) mutable { promise.deliver(stopped{err}); });
      return promise;
    },
    [self](stop&) -> caf::result<stopped> { return stop_all(self); },
  };
}

}  // namespace

supervisor_actor spawn_supervisor(caf::actor_system& sys) { return sys.spawn(supervisor); }

}  // namespace dix
