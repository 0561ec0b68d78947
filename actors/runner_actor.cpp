#include "actors/runner_actor.hpp"

#include <cstdio>
#include <optional>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/coverage_waiters.hpp"
#include "actors/diagnostics.hpp"
#include "actors/ownership.hpp"
#include "core/publication_fence.hpp"
#include "core/clock.hpp"
#include "core/lag_pacer.hpp"
#include "core/progress_pacer.hpp"
#include "core/proof_latch.hpp"
#include "messages/errors.hpp"

namespace dix {
namespace {

struct runner_state_data {
  runner_deps deps;
  std::unique_ptr<runner_core> core;
  turn_budgets budgets;  // made once from the options; every log_pull carries them
  std::vector<caf::typed_response_promise<stopped>> stop_promises;
  std::optional<stopped> outcome;  // the first stop's outcome: every stop gets the same one
  std::optional<runner_status> reported;  // the status last passed to deps.on_status
  publication_fence fence;  // the lock's release behind the publications before it
  progress_pacer pacer;     // when a rebuild's progress goes to the metrics segment
  lag_pacer lag;            // when the lag figures go there (decision 0021)
  std::optional<lag_figures> lag_ready;  // this event's figures, published with its effects
  bool lag_due_armed = false;            // a lag_due is on its way to this actor
  // The bell's own wake came while a pull was on its way and left the bell ringing: taken just
  // before the event that answers the pull, or after whatever else ended it (take_held_bell).
  bool bell_held = false;
  proof_latch proof;                     // what deps.proof holds, so it is stored only when it changes
  static inline const char* name = "dix.runner";
};

using runner_pointer = runner_actor::stateful_pointer<runner_state_data>;

steady_time now_of(runner_pointer self) { return self->home_system().clock().now(); }

result<void> from_caf(const caf::error& e) {
  if (!e) return {};
  return to_dix_error(e);
}

void apply(runner_pointer self, effects out);
void take_held_bell(runner_pointer self);

// A request to a proxy that died fails with request_receiver_down: that is the crash of a child
// (the supervisor's child_down follows), not an answer of the backend. The core learns it now, so
// nothing it sends meanwhile goes to the dead proxy.
bool proxy_gone(runner_pointer self, const caf::error& err) {
  if (err != caf::sec::request_receiver_down) return false;
  apply(self, self->state.core->on_child_down(child_kind::proxy, false, now_of(self)));
  return true;
}

// Sends `m` to the publisher; the fence counts it in flight until its answer `Reply` lands. An
// error counts as landed (it will not land later) and is reported (diagnostics.hpp) as `what` failing.
template <class Reply, class Message>
void send_counted(runner_pointer self, Message m, const char* what) {
  self->state.fence.sent();
  self->request(self->state.deps.publisher, caf::infinite, std::move(m))
    .then([self](Reply&) { self->state.fence.landed(); },
          [self, what](caf::error& err) {
            report(self->system(), diagnostic_level::error,
                   "runner of " + self->state.deps.id + ": " + what + " failed: " + error_text(err), self->id());
            self->state.fence.landed();
          });
}

void carry_out(runner_pointer self, effect& e) {
  auto& s = self->state;
  auto& d = s.deps;
  std::visit(
    [&](auto& x) {
      using T = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<T, fx::request_lock>) {
        caf::weak_actor_ptr me = self->ctrl();
        d.record->request([me, gen = x.gen](result<void> r, bool contended) {
          caf::error err = r ? caf::error{} : make_error(r.error());
          if (auto strong = me.lock()) {
            caf::anon_send(caf::actor_cast<runner_actor>(strong), lock_acquired{gen, std::move(err), contended});
          }
        });
      } else if constexpr (std::is_same_v<T, fx::release_lock>) {
        // Still the owner here: nothing else writes the slot's gate until the unlock.
        if (x.gate_open_if_last && d.lock != nullptr && d.lock->registrations(d.id) == 0) d.slot->set_lag_gate(0);
        d.record->release();
      } else if constexpr (std::is_same_v<T, fx::mint_epoch>) {
        // The mint is visible in the segment at once; whoever sees the new epoch there and then
        // asks for metrics must find this runner owning it, so the snapshot is stored under the
        // box's lock taken before the mint.
        effects next;
        auto mint = [&] {
          const auto epoch = d.slot->mint_epoch();  // refused, never wrapped, at 2^64-1
          if (epoch) d.record->minted(*epoch);
          next = s.core->on_epoch_minted(epoch, now_of(self));
          return s.core->snapshot();
        };
        if (d.snapshot) d.snapshot->store_with(mint);
        else mint();
        apply(self, std::move(next));
      } else if constexpr (std::is_same_v<T, fx::persist_epoch>) {
        self->send(d.tailer, meta_write{x.gen, meta_kind::epoch, x.epoch});
      } else if constexpr (std::is_same_v<T, fx::read_meta>) {
        self->send(d.tailer, meta_read{x.gen});
      } else if constexpr (std::is_same_v<T, fx::write_marker>) {
        self->send(d.tailer, meta_write{x.gen, meta_kind::condemn, 0});
      } else if constexpr (std::is_same_v<T, fx::settle>) {
        self->send(d.tailer, meta_write{x.gen, meta_kind::settle, x.fingerprint});
      } else if constexpr (std::is_same_v<T, fx::query_durable>) {
        self->request(d.proxy, caf::infinite, durable_query{x.gen})
          .then([self](durable& r) {
                  result<std::optional<cursor>> value = r.error ? result<std::optional<cursor>>(from_caf(r.error).error())
                                                                : result<std::optional<cursor>>(r.cursor);
                  apply(self, self->state.core->on_durable(r.gen, value, now_of(self)));
                },
                [self, gen = x.gen](caf::error& err) {
                  if (proxy_gone(self, err)) return;
                  apply(self, self->state.core->on_durable(gen, from_caf(err).error(), now_of(self)));
                });
      } else if constexpr (std::is_same_v<T, fx::open_log>) {
        self->send(d.tailer, log_open{x.gen, x.from});
      } else if constexpr (std::is_same_v<T, fx::pull>) {
        self->send(d.tailer, log_pull{x.gen, x.epoch, s.budgets, x.capture});
      } else if constexpr (std::is_same_v<T, fx::deliver>) {
        self->request(d.proxy, caf::infinite, deliver{x.gen, batch_msg{x.b}})
          .then([self](delivery_result_msg& r) { apply(self, self->state.core->on_delivery(r.gen, r.result, now_of(self))); },
                [self, gen = x.gen](caf::error& err) {
                  if (proxy_gone(self, err)) return;
                  apply(self, self->state.core->on_delivery(gen, delivery_result::failed, now_of(self)));
                });
      } else if constexpr (std::is_same_v<T, fx::flush>) {
        self->request(d.proxy, caf::infinite, flush_request{x.gen, x.reason})
          .then([self](flush_done& r) { apply(self, self->state.core->on_flush_done(r.gen, from_caf(r.error), now_of(self))); },
                [self, gen = x.gen](caf::error& err) {
                  if (proxy_gone(self, err)) return;
                  apply(self, self->state.core->on_flush_done(gen, from_caf(err), now_of(self)));
                });
      } else if constexpr (std::is_same_v<T, fx::shutdown>) {
        self->request(d.proxy, caf::infinite, shutdown_request{x.epoch})
          .then([self](quiescence& r) {
                  if (!r.error) self->state.deps.record->quiesced(r.epoch);
                  apply(self, self->state.core->on_shutdown_done(r.epoch, from_caf(r.error), now_of(self)));
                },
                [self, epoch = x.epoch](caf::error& err) {
                  if (proxy_gone(self, err)) return;
                  apply(self, self->state.core->on_shutdown_done(epoch, from_caf(err), now_of(self)));
                });
      } else if constexpr (std::is_same_v<T, fx::publish>) {
        // A publication lands when the publisher answers. An owner's slot is claimed, so an error
        // (not_registered) means the registration and the runtime's segment disagree — a bug — or
        // the publisher is gone: it is reported (diagnostics.hpp) and counted as landed, so a release is
        // not held forever behind a publication that will never land.
        // A coverage time is certified under the epoch the core names: if the slot's epoch is no
        // longer that one, another owner minted since and this one must not certify (§12.3).
        // The whole publication is dropped, not only its coverage part, on purpose: only the
        // current owner mints (formats.md §4.3–4.4; the epoch floor's CAS-max never passes an
        // epoch already minted), so a slot epoch other than x.epoch means this runner is no
        // longer the owner, and every field of the publication is owner-written. Its state and
        // reason would overwrite the successor's, and its lag_gate would undo an inherited gate
        // the successor must keep until it proves catch-up itself (protocol.md §13.3, "an
        // inherited gate survives handoff"). Publishing the rest would therefore be wrong, not
        // merely redundant. Publications without a coverage time carry no certification and
        // keep their epoch unchecked here, as before.
        if (x.coverage_time && d.slot->owner_epoch() != x.epoch) return;
        send_counted<published>(self, publication{d.id, x.state, x.reason, x.attempts, x.coverage_time, x.lag_gate},
                                "a publication");
      } else if constexpr (std::is_same_v<T, fx::store_gate>) {
        // Behind every publication before it (apply() runs it after they landed), so the slot
        // never holds an older gate than the core decided last (protocol.md §13.3).
        d.slot->set_lag_gate(x.value);
      } else if constexpr (std::is_same_v<T, fx::reset>) {
        self->request(d.proxy, caf::infinite, reset_request{x.gen, x.epoch})
          .then([self](reset_done& r) { apply(self, self->state.core->on_reset_done(r.gen, from_caf(r.error), now_of(self))); },
                [self, gen = x.gen](caf::error& err) {
                  if (proxy_gone(self, err)) return;
                  apply(self, self->state.core->on_reset_done(gen, from_caf(err), now_of(self)));
                });
      } else if constexpr (std::is_same_v<T, fx::capture_boundary>) {
        self->send(d.tailer, boundary_capture{x.gen, x.epoch, x.scan_bytes_per_s});
      } else if constexpr (std::is_same_v<T, fx::scan>) {
        self->send(d.tailer, scan_pull{x.gen, x.epoch, s.budgets});
      } else if constexpr (std::is_same_v<T, fx::publish_coverage>) {
        self->send(d.proxy, coverage_publish{x.epoch, x.coverage_time, std::move(x.positions)});
      } else if constexpr (std::is_same_v<T, fx::arm_timer>) {
        self->delayed_send(self, x.delay, timer{x.kind, x.gen});
      } else if constexpr (std::is_same_v<T, fx::stopped>) {
        stopped out{x.outcome ? caf::error{} : make_error(x.outcome.error().value(), x.outcome.error().message())};
        s.outcome = out;
        for (auto& p : s.stop_promises) p.deliver(out);
        s.stop_promises.clear();
      }
    },
    e);
}

// The snapshot first: a publication among the effects must never be visible before the state
// that made it (status/metrics would lag the segment). Returns the rebuild progress the pacer
// says to publish after this event's effects.
// The lag figures the pacer says to publish go to state.lag_ready; one it holds back arms a
// single lag_due for when it is due.
void pace_lag(runner_pointer self, const runner_snapshot& snap) {
  auto& s = self->state;
  auto d = s.lag.next(snap, s.deps.config.options, now_of(self), s.deps.time->wall_now_ns());
  if (d.publish) s.lag_ready = std::move(d.publish);
  if (d.due_in && !s.lag_due_armed) {
    s.lag_due_armed = true;
    self->delayed_send(self, *d.due_in, lag_due{});
  }
}

std::optional<rebuild_progress> store_snapshot(runner_pointer self) {
  auto& s = self->state;
  auto snap = s.core->snapshot();
  auto progress = s.pacer.next(snap, now_of(self));
  pace_lag(self, snap);
  if (s.deps.proof) {
    std::optional<coverage_proof> next;
    if (snap.owner && !snap.durable_ends.empty()) next = coverage_proof{snap.epoch, snap.durable_ends};
    if (s.proof.changed(next)) {
      if (next) s.deps.proof->store(std::move(*next));
      else s.deps.proof->clear();
    }
  }
  if (!s.deps.snapshot) return progress;
  auto status = snap.status();
  const bool changed = !s.reported || s.reported->state != status.state || s.reported->reason != status.reason ||
                       s.reported->epoch != status.epoch;
  s.deps.snapshot->store(std::move(snap));
  if (!changed) return progress;
  s.reported = status;
  if (s.deps.on_status) s.deps.on_status(status, s.deps.snapshot->load_versioned().second);
  return progress;
}

// The figures for the metrics segment, in the fence's order like a publication and counted as
// one: a release hands the lock over only after they landed, so no earlier owner's figures
// arrive after a successor's.
void publish_progress(runner_pointer self, const rebuild_progress& progress) {
  self->state.fence.then([self, progress] {
    send_counted<metrics_published>(self, metrics_publication{self->state.deps.id, progress}, "a metrics publication");
  });
}

void publish_lag(runner_pointer self) {
  auto& s = self->state;
  if (!s.lag_ready) return;
  auto figures = *std::exchange(s.lag_ready, std::nullopt);
  if (s.deps.link) figures.link = s.deps.link();
  s.fence.then([self, lag = std::move(figures)] {
    send_counted<metrics_published>(self, lag_publication{self->state.deps.id, lag}, "a lag publication");
  });
}

void apply(runner_pointer self, effects out) {
  // Every event samples the gate (protocol.md §13.3: turns, idle passes, flush ticks and more):
  // it stores only what changed.
  auto gate = self->state.core->sample_gate(now_of(self));
  out.insert(out.end(), gate.begin(), gate.end());
  auto progress = store_snapshot(self);
  for (auto& e : out) {
    auto step = [self, e]() mutable { carry_out(self, e); };
    // The unlock, and the answer that the release is over, wait for the publications before
    // them: whoever hears `stopped` reads in the slot what the release published.
    if (std::holds_alternative<fx::release_lock>(e) || std::holds_alternative<fx::stopped>(e) ||
        std::holds_alternative<fx::store_gate>(e)) {
      // The progress goes behind the event's other effects, but never behind the unlock.
      if (progress) publish_progress(self, *std::exchange(progress, std::nullopt));
      publish_lag(self);
      self->state.fence.after_landed(std::move(step));
    } else if (std::holds_alternative<fx::mint_epoch>(e)) {
      // The mint waits for the publications before it: the slot's owner_epoch moves at once,
      // its state only when the publisher stores it, so a mint ahead of a rebuild's `rebuilding`
      // (protocol.md §11.4 publishes it first) showed readers `ready` under the rebuild's new
      // epoch while the attempt shut the backend down and reset it (decision 0032).
      self->state.fence.after_landed(std::move(step));
    } else {
      self->state.fence.then(std::move(step));
    }
  }
  if (progress) publish_progress(self, *progress);
  publish_lag(self);
  // A pull can also end without its answer (a discard of progress, a stop): the bell left
  // ringing through it is taken then, so nothing that rang is left without a wake. Once: the
  // flag is cleared first, and a ring after the take sends a wake of its own.
  if (self->state.bell_held && !self->state.core->pulling()) take_held_bell(self);
}

void take_held_bell(runner_pointer self) {
  auto& st = self->state;
  if (!st.bell_held) return;
  st.bell_held = false;
  if (auto flags = st.deps.bell->take(); flags != 0) apply(self, st.core->on_wake(flags, now_of(self)));
}

runner_actor::behavior_type runner(runner_pointer self, runner_deps deps) {
  auto& s = self->state;
  s.deps = std::move(deps);
  s.core = std::make_unique<runner_core>(s.deps.config);
  s.budgets = make_turn_budgets(s.deps.config.options);
  (void)store_snapshot(self);  // e.g. parked from the start; no scan ran yet
  // A dying runner keeps its lock entry: its supervisor, as the lock holder, quiesces the backend
  // and only then releases the entry (actors.md §3), so no successor overlaps unfinished work.
  return {
    [self](wake& m) {
      auto& st = self->state;
      // What rang the bell counts with this wake; a bell's own wake finds it taken by an
      // earlier one when nothing rang since, and is then nothing at all.
      // The bell's own wake during a pull leaves it ringing, so the commits rung meanwhile send no
      // wake of their own; it is taken just before the pull's answer (take_held_bell).
      if (m.flags == 0 && st.core->pulling()) {
        st.bell_held = true;
        return;
      }
      auto flags = st.deps.bell ? wake_flag::merge(m.flags, st.deps.bell->take()) : m.flags;
      if (flags == 0) return;
      if ((flags & wake_flag::rebuild) != 0) {
        const auto action = st.core->on_rebuild_wake(st.deps.lock->owned(st.deps.id));
        if (action == runner_core::rebuild_wake::consume && st.deps.slot->consume_rebuild_request()) {
          apply(self, st.core->on_rebuild_requested(now_of(self)));
        }
        // Only `acquire` is left for on_wake, which starts the acquisition.
        if (action != runner_core::rebuild_wake::acquire) flags = static_cast<std::uint8_t>(flags & ~wake_flag::rebuild);
        if (flags == 0) return;
      }
      // §12.4: the demand a coverage wake is about, as the slot holds it now.
      if ((flags & wake_flag::coverage) != 0) st.core->on_coverage_demand(st.deps.slot->coverage_demand());
      apply(self, st.core->on_wake(flags, now_of(self)));
    },
    [self](timer& m) { apply(self, self->state.core->on_timer(m.kind, m.gen, now_of(self))); },
    [self](lag_due&) {
      self->state.lag_due_armed = false;
      pace_lag(self, self->state.core->snapshot());
      publish_lag(self);
    },
    [self](lock_acquired& m) {
      auto& st = self->state;
      auto& core = *st.core;
      if (m.error) {
        apply(self, core.on_lock_failed(m.gen, to_dix_error(m.error), m.contended, now_of(self)));
        return;
      }
      const bool was_owner = core.owner();
      auto out = core.on_lock_acquired(m.gen, now_of(self), st.deps.slot->lag_gate());
      if (!was_owner && core.owner()) st.deps.record->acquired();  // the core took the grant
      apply(self, std::move(out));
    },
    [self](log_opened& m) {
      apply(self, self->state.core->on_log_opened(m.gen, std::nullopt, m.installed, now_of(self), m.anchor_ends));
    },
    [self](log_chunk& m) {
      // The commits rung during the pull count as wakes that came before its answer, as their
      // messages would have (a system commit so still asks for the turn after it).
      take_held_bell(self);
      pull_outcome out{std::nullopt, std::move(m.chunk)};
      apply(self, self->state.core->on_chunk(m.gen, out, now_of(self)));
    },
    [self](boundary_captured& m) {
      boundary_outcome out{std::nullopt, std::move(m.found)};
      apply(self, self->state.core->on_boundary(m.gen, out, now_of(self)));
    },
    [self](scan_chunk& m) {
      take_held_bell(self);
      scan_outcome out{std::nullopt, std::move(m.step)};
      apply(self, self->state.core->on_scan_chunk(m.gen, out, now_of(self)));
    },
    [self](log_fault& m) {
      take_held_bell(self);
      apply(self, self->state.core->on_log_fault(m.gen, tailer_fault{m.transient, m.reason, m.text}, now_of(self)));
    },
    [self](meta_written& m) {
      auto& st = self->state;
      switch (m.kind) {
        case meta_kind::epoch: apply(self, st.core->on_epoch_persisted(m.gen, from_caf(m.error), now_of(self))); break;
        case meta_kind::condemn: apply(self, st.core->on_marker_written(m.gen, from_caf(m.error), now_of(self))); break;
        case meta_kind::settle: apply(self, st.core->on_settled(m.gen, from_caf(m.error), now_of(self))); break;
      }
    },
    [self](meta_state& m) {
      auto& st = self->state;
      result<meta_records> records = m.error ? result<meta_records>(to_dix_error(m.error)) : result<meta_records>(meta_records{m.condemned, m.fingerprint});
      // §9.2 step 3: the request is consumed only by the acquisition that takes this answer.
      const bool requested = records && st.core->awaits_meta(m.gen) && st.deps.slot->consume_rebuild_request();
      apply(self, st.core->on_meta_state(m.gen, records, st.deps.slot->read(), now_of(self), requested));
    },
    [self](state_change_msg& m) { apply(self, self->state.core->on_state_change(m.to_state_change(), now_of(self))); },
    [self](rebuild_request&) {
      // Only the retry of a held release after stop/unregister (§11.2 first row); requests to a
      // registered id travel through the slot's flag and the watcher.
      auto& st = self->state;
      if (!st.core->holds_rejected_release()) return false;
      st.outcome.reset();  // the retried release decides what the next stop answers
      apply(self, st.core->retry_release(now_of(self)));
      return true;
    },
    [self](child_down& m) { apply(self, self->state.core->on_child_down(m.kind, m.escalated, now_of(self))); },
    [self](child_up& m) {
      auto& d = self->state.deps;
      if (m.kind == child_kind::tailer) d.tailer = caf::actor_cast<log_tailer_actor>(m.handle);
      if (m.kind == child_kind::proxy) d.proxy = caf::actor_cast<backend_proxy_actor>(m.handle);
      apply(self, self->state.core->on_child_up(m.kind, now_of(self)));
    },
    [self](stop&) -> caf::result<stopped> {
      auto& st = self->state;
      if (st.outcome) return *st.outcome;
      auto promise = self->make_response_promise<stopped>();
      st.stop_promises.push_back(promise);
      // §13.4: the registration counts of the process (§9.1) say whether this was the last one.
      const bool last = st.deps.lock == nullptr || st.deps.lock->registrations(st.deps.id) == 0;
      apply(self, st.core->stop(now_of(self), last));
      return promise;
    },
  };
}

}  // namespace

runner_actor spawn_runner(caf::actor_system& sys, runner_deps deps) { return sys.spawn(runner, std::move(deps)); }

}  // namespace dix
