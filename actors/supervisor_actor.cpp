#include "actors/supervisor_actor.hpp"

#include <cstdio>
#include <map>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/diagnostics.hpp"
#include "actors/ownership.hpp"
#include "actors/registration_record.hpp"
#include "adapters/readiness_segment.hpp"
#include "core/publication_fence.hpp"
#include "core/supervisor_core.hpp"
#include "messages/errors.hpp"
#include "messages/values.hpp"

namespace dix {
namespace {

struct supervised_id {
  std::shared_ptr<const supervised_spec> spec;
  std::unique_ptr<supervisor_core> core;
  log_tailer_actor tailer;
  backend_proxy_actor proxy;
  runner_actor runner;
  std::uint64_t incarnation = 0;  // respawns of an earlier supervision of the token are dropped
  publication_fence fence;         // the unlock behind the dead runner's publication
  std::vector<caf::typed_response_promise<stopped>> waiting;  // unsupervise answers owed
};

struct supervisor_state {
  // By registration token. Shared: a step the fence carries out may forget the registration
  // while its own fence runs; whoever drives the fence holds a reference meanwhile.
  std::map<std::uint64_t, std::shared_ptr<supervised_id>> ids;
  std::map<caf::actor_addr, std::pair<std::uint64_t, child_kind>> children;
  std::uint64_t next_incarnation = 1;
  static inline const char* name = "dix.supervisor";

  supervisor_state() = default;
  supervisor_state(const supervisor_state&) = delete;
  supervisor_state& operator=(const supervisor_state&) = delete;
  // Children still here when the supervisor ends — only a defect in it makes that happen (an
  // exit message retires them first) — end with it: none runs on unsupervised. CAF destroys the
  // state however the actor ends (not links: a child killed with exit_reason::kill would take
  // the supervisor with it). The runtime actor then ends too and gives the locks back.
  ~supervisor_state() {
    for (const auto& [addr, child] : children) caf::anon_send_exit(addr, caf::exit_reason::user_shutdown);
  }
};

using supervisor_pointer = supervisor_actor::stateful_pointer<supervisor_state>;

result<void> from_caf(const caf::error& e) {
  if (!e) return {};
  return to_dix_error(e);
}

std::shared_ptr<supervised_id> find(supervisor_pointer self, std::uint64_t token) {
  auto it = self->state.ids.find(token);
  return it == self->state.ids.end() ? nullptr : it->second;
}

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

// Stops supervising: the registration's actors are told to exit and forgotten.
void forget(supervisor_pointer self, std::uint64_t token) {
  auto e = find(self, token);
  if (!e) return;
  retire(self, e->runner);
  retire(self, e->tailer);
  retire(self, e->proxy);
  self->state.ids.erase(token);
}

void apply(supervisor_pointer self, std::uint64_t token, supervision_effects out);

// A request to a proxy or runner that died fails with request_receiver_down: that is a child's
// crash, which its down message brings to the core, not an answer.
bool receiver_gone(const caf::error& err) { return err == caf::sec::request_receiver_down; }

void carry_out(supervisor_pointer self, std::uint64_t token, const std::shared_ptr<supervised_id>& ep,
               supervision_effect& effect) {
  auto& e = *ep;
  const auto& spec = *e.spec;
  const auto& settings = *spec.settings;
  std::visit(
    [&](auto& x) {
      using T = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<T, sfx::spawn>) {
        switch (x.kind) {
          case child_kind::tailer:
            e.tailer = spec.spawn_tailer();
            adopt(self, token, x.kind, e.tailer);
            break;
          case child_kind::proxy:
            e.proxy = spec.spawn_proxy();
            adopt(self, token, x.kind, e.proxy);
            break;
          case child_kind::runner:
            e.runner = spec.spawn_runner(e.tailer, e.proxy, x.start_condemned);
            adopt(self, token, x.kind, e.runner);
            break;
        }
      } else if constexpr (std::is_same_v<T, sfx::respawn_after>) {
        self->delayed_send(self, x.delay, respawn{token, x.kind, e.incarnation});
      } else if constexpr (std::is_same_v<T, sfx::tell_down>) {
        if (e.runner) self->send(e.runner, child_down{x.kind, x.escalated});
      } else if constexpr (std::is_same_v<T, sfx::tell_up>) {
        auto handle = x.kind == child_kind::tailer ? caf::actor_cast<caf::strong_actor_ptr>(e.tailer)
                                                   : caf::actor_cast<caf::strong_actor_ptr>(e.proxy);
        if (e.runner) self->send(e.runner, child_up{x.kind, std::move(handle)});
      } else if constexpr (std::is_same_v<T, sfx::wake_runner>) {
        if (e.runner) self->send(e.runner, wake{wake_flag::commit});
      } else if constexpr (std::is_same_v<T, sfx::flush>) {
        const auto round = x.round;
        self->request(e.proxy, caf::infinite, flush_request{round, flush_reason::shutdown})
          .then([self, token, round](flush_done& r) {
                  if (auto f = find(self, token)) apply(self, token, f->core->on_flush_done(round, from_caf(r.error)));
                },
                [self, token, round](caf::error& err) {
                  if (receiver_gone(err)) return;
                  if (auto f = find(self, token)) apply(self, token, f->core->on_flush_done(round, from_caf(err)));
                });
      } else if constexpr (std::is_same_v<T, sfx::shutdown>) {
        const auto round = x.round;
        self->request(e.proxy, caf::infinite, shutdown_request{x.epoch})
          .then([self, token, round](quiescence& q) {
                  auto f = find(self, token);
                  if (!f) return;
                  if (!q.error) f->spec->record->quiesced(q.epoch);
                  apply(self, token, f->core->on_shutdown_done(round, from_caf(q.error)));
                },
                [self, token, round](caf::error& err) {
                  if (receiver_gone(err)) return;
                  if (auto f = find(self, token)) apply(self, token, f->core->on_shutdown_done(round, from_caf(err)));
                });
      } else if constexpr (std::is_same_v<T, sfx::write_marker>) {
        // All store I/O of an id is its tailer's; it answers meta_written to this actor.
        self->send(e.tailer, meta_write{0, meta_kind::condemn, 0});
      } else if constexpr (std::is_same_v<T, sfx::publish>) {
        // The snapshot first, as the runner stores its own before its effects: whoever sees the
        // publication in the segment must not find metrics claiming the released ownership.
        if (settings.snapshot) {
          runner_status status;
          const auto version = settings.snapshot->update([&](runner_snapshot last) {
            auto snap = released_for_dead_runner(std::move(last), x.state, x.reason);
            status = snap.status();
            return snap;
          });
          if (settings.on_status) settings.on_status(status, version);
        }
        // As the runner's: an error cannot mean anything but a bug or a dead publisher; it is
        // reported and counted as landed, so the unlock is not held forever.
        const std::uint32_t attempts = settings.slot ? settings.slot->read().rebuild_attempts : 0;
        e.fence.sent();
        // A dead runner's index is needs-rebuild or unavailable: the gate is forced open with it
        // (protocol.md §13.4), so no writer waits for an index nobody drives.
        self->request(settings.publisher, caf::infinite,
                      publication{settings.id, x.state, x.reason, attempts, std::nullopt, 0u})
          .then([ep](published&) { ep->fence.landed(); },
                [self, ep](caf::error& err) {
                  report(self->system(), diagnostic_level::error,
                         "supervisor of " + ep->spec->settings->id + ": a publication failed: " + error_text(err),
                         self->id());
                  ep->fence.landed();
                });
      } else if constexpr (std::is_same_v<T, sfx::unlock>) {
        spec.record->release();
      } else if constexpr (std::is_same_v<T, sfx::stop_runner>) {
        self->request(e.runner, caf::infinite, stop{})
          .then([self, token](stopped& s) {
                  if (auto f = find(self, token)) apply(self, token, f->core->on_runner_stopped(from_caf(s.error)));
                },
                [self, token](caf::error& err) {
                  if (receiver_gone(err)) return;  // its down message starts the recovery, which answers
                  if (auto f = find(self, token)) apply(self, token, f->core->on_runner_stopped(from_caf(err)));
                });
      } else if constexpr (std::is_same_v<T, sfx::answer>) {
        stopped answer{x.outcome ? caf::error{} : make_error(x.outcome.error().value(), x.outcome.error().message())};
        for (auto& p : e.waiting) p.deliver(answer);
        e.waiting.clear();
      } else if constexpr (std::is_same_v<T, sfx::forget>) {
        forget(self, token);
      }
    },
    effect);
}

// Carries out the core's effects in order; the unlock waits for the publications before it.
void apply(supervisor_pointer self, std::uint64_t token, supervision_effects out) {
  auto e = find(self, token);
  if (!e) return;
  // The steps hold the registration weakly (a step waiting in its own fence must not keep it);
  // whoever drives the fence — this call, a publication's answer — holds it meanwhile.
  std::weak_ptr<supervised_id> weak = e;
  for (auto& effect : out) {
    auto step = [self, token, weak, effect]() mutable {
      if (auto strong = weak.lock()) carry_out(self, token, strong, effect);
    };
    if (std::holds_alternative<sfx::unlock>(effect)) e->fence.after_landed(std::move(step));
    else e->fence.then(std::move(step));
  }
}

void on_down(supervisor_pointer self, const caf::down_msg& dm) {
  auto& st = self->state;
  auto child = st.children.find(dm.source);
  if (child == st.children.end()) return;
  auto [token, kind] = child->second;
  st.children.erase(child);
  auto e = find(self, token);
  if (!e) return;
  switch (kind) {
    case child_kind::tailer: e->tailer = nullptr; break;
    case child_kind::proxy: e->proxy = nullptr; break;
    case child_kind::runner: e->runner = nullptr; break;
  }
  apply(self, token, e->core->on_down(kind, e->spec->record->read(), self->clock().now()));
}

supervisor_actor::behavior_type supervisor(supervisor_pointer self) {
  self->set_down_handler([self](caf::down_msg& dm) { on_down(self, dm); });
  self->set_exit_handler([self](caf::exit_msg& em) {
    std::vector<std::uint64_t> tokens;
    for (auto& [token, e] : self->state.ids) tokens.push_back(token);
    for (auto token : tokens) forget(self, token);
    self->quit(wire::sendable_reason(std::move(em.reason), self->context()));
  });
  return {
    [self](supervise& m) {
      if (!m.spec || self->state.ids.count(m.spec->settings->token) != 0) return;
      const auto token = m.spec->settings->token;
      auto e = std::make_shared<supervised_id>();
      e->spec = std::move(m.spec);
      const auto& settings = *e->spec->settings;
      e->core = std::make_unique<supervisor_core>(supervisor_core::config{settings.id, settings.runner.options});
      e->incarnation = self->state.next_incarnation++;
      self->state.ids[token] = e;
      apply(self, token, e->core->start());
    },
    [self](meta_written& m) {
      if (m.kind != meta_kind::condemn) return;
      auto sender = self->current_sender();
      if (!sender) return;
      auto child = self->state.children.find(sender->address());
      if (child == self->state.children.end()) return;
      const auto token = child->second.first;
      auto e = find(self, token);
      if (!e || !e->core->awaits_marker()) return;
      apply(self, token, e->core->on_marker_written(from_caf(m.error)));  // written or not: §10.3
    },
    [self](respawn& m) {
      auto e = find(self, m.token);
      if (!e || e->incarnation != m.incarnation) return;
      apply(self, m.token, e->core->on_respawn(m.kind));
    },
    [self](revive& m) {
      if (auto e = find(self, m.token)) apply(self, m.token, e->core->on_rebuild_request());
    },
    [self](unsupervise& m) -> caf::result<stopped> {
      auto e = find(self, m.token);
      if (!e) return stopped{};
      auto promise = self->make_response_promise<stopped>();
      e->waiting.push_back(promise);
      apply(self, m.token, e->core->on_unsupervise());
      return promise;
    },
  };
}

}  // namespace

supervisor_actor spawn_supervisor(caf::actor_system& sys) { return sys.spawn(supervisor); }

}  // namespace dix
