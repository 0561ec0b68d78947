#include "actors/runner_actor.hpp"

#include <cstdio>
#include <map>
#include <optional>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/coverage_waiters.hpp"
#include "actors/diagnostics.hpp"
#include "actors/ownership.hpp"
#include "actors/registration_record.hpp"
#include "adapters/readiness_segment.hpp"
#include "core/clock.hpp"
#include "core/lag_pacer.hpp"
#include "core/progress_pacer.hpp"
#include "core/proof_latch.hpp"
#include "core/runner_interpreter.hpp"
#include "messages/errors.hpp"

namespace dix {
namespace {

struct runner_state_data {
  runner_deps deps;
  std::unique_ptr<runner_core> core;
  turn_budgets budgets;  // made once from the options; every log_pull carries them
  std::vector<caf::typed_response_promise<stopped>> stop_promises;
  std::optional<stopped> outcome;  // the first stop's outcome: every stop gets the same one
  std::optional<runner_status> reported;  // the status last passed to the settings' on_status
  progress_pacer pacer;     // when a rebuild's progress goes to the metrics segment
  lag_pacer lag;            // when the lag figures go there (decision 0021)
  std::optional<lag_figures> lag_ready;  // figures due, published with the next event's effects
  bool lag_due_armed = false;            // a lag_due is on its way to this actor
  proof_latch proof;  // what the settings' proof box holds, so it is stored only when it changes
  // The verify (messages/verify.hpp): its requesters, the snapshots the tailer handed over until
  // start_verify takes them, and the last scan's report.
  // By the verify's number: an answer held behind a publication goes to its own requesters only.
  std::map<std::uint64_t, std::vector<caf::typed_response_promise<verify_answer>>> verify_promises;
  std::shared_ptr<std::vector<std::unique_ptr<store_snapshot>>> lifted;
  std::shared_ptr<const drift_report> verify_report;
  // The order of the effects — the publication fence, the commit bell — is the interpreter's
  // (core/runner_interpreter.hpp); `ports` below carries them out with CAF.
  std::unique_ptr<runner_ports> ports;
  std::unique_ptr<runner_interpreter> interp;
  static inline const char* name = "dix.runner";
};

using runner_pointer = runner_actor::stateful_pointer<runner_state_data>;

steady_time now_of(runner_pointer self) { return self->home_system().clock().now(); }

result<void> from_caf(const caf::error& e) {
  if (!e) return {};
  return to_dix_error(e);
}

// Every event's effects go through the interpreter, which orders them.
void apply(runner_pointer self, effects out) { self->state.interp->apply(std::move(out)); }

// A request to a proxy that died fails with request_receiver_down: that is the crash of a child
// (the supervisor's child_down follows), not an answer of the backend. The core learns it now, so
// nothing it sends meanwhile goes to the dead proxy.
bool proxy_gone(runner_pointer self, const caf::error& err) {
  if (err != caf::sec::request_receiver_down) return false;
  apply(self, self->state.core->on_child_down(child_kind::proxy, false, now_of(self)));
  return true;
}

// Sends `m` to the publisher, which the interpreter's fence counts in flight until its answer
// `Reply` lands. An error counts as landed (it will not land later) and is reported
// (diagnostics.hpp) as `what` failing.
template <class Reply, class Message>
void send_counted(runner_pointer self, Message m, const char* what) {
  self->request(self->state.deps.settings->publisher, caf::infinite, std::move(m))
    .then([self](Reply&) { self->state.interp->landed(); },
          [self, what](caf::error& err) {
            report(self->system(), diagnostic_level::error,
                   "runner of " + self->state.deps.settings->id + ": " + what + " failed: " + error_text(err),
                   self->id());
            self->state.interp->landed();
          });
}

// The mint is visible in the segment at once; whoever sees the new epoch there and then asks for
// metrics must find this runner owning it, so the snapshot is stored under the box's lock taken
// before the mint. Returns the core's answer.
effects mint(runner_pointer self) {
  auto& s = self->state;
  auto& d = s.deps;
  effects next;
  auto minted = [&] {
    const auto epoch = d.settings->slot->mint_epoch();  // refused, never wrapped, at 2^64-1
    next = s.core->on_epoch_minted(epoch, now_of(self));
    // The record holds the epoch the core holds: one the core refused (it went back) is not ours.
    if (epoch && s.core->epoch() == *epoch) d.record->minted(*epoch);
    return s.core->snapshot();
  };
  if (d.settings->snapshot) d.settings->snapshot->store_with(minted);
  else minted();
  return next;
}

// The scan's job: per log (attach order) its name, the fence's snapshot the tailer handed over and
// its projected tables; the proxy runs it over the digest view it kept.
void start_verify(runner_pointer self, const fx::start_verify& x) {
  auto& s = self->state;
  const auto& settings = *s.deps.settings;
  auto lifted = std::exchange(s.lifted, nullptr);
  if (!lifted || lifted->size() != settings.logs.size()) {
    self->send(self, verify_scanned{x.gen, nullptr, make_error(errc::io_error, "the fence's snapshots did not come")});
    return;
  }
  auto job = std::make_shared<verify_job>();
  job->request = x.request;
  for (std::size_t i = 0; i < settings.logs.size(); ++i) {
    verify_job::log l;
    l.name = settings.logs[i].source->log_name();
    l.snapshot = std::move((*lifted)[i]);
    for (const auto& [ref, fn] : settings.projections) {
      if (ref.log == l.name) l.tables.emplace(ref.table, fn);
    }
    job->logs.push_back(std::move(l));
  }
  self->send(s.deps.proxy, verify_run{x.gen, std::move(job)});
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
        const auto& r = *d.settings;
        if (x.gate_open_if_last && r.lock != nullptr && r.lock->registrations(r.id) == 0) r.slot->set_lag_gate(0);
        d.record->release();
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
      } else if constexpr (std::is_same_v<T, fx::store_gate>) {
        // Behind every publication before it (the interpreter runs it after they landed), so the
        // slot never holds an older gate than the core decided last (protocol.md §13.3).
        d.settings->slot->set_lag_gate(x.value);
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
      } else if constexpr (std::is_same_v<T, fx::fence>) {
        self->send(d.tailer, log_fence{x.gen});
      } else if constexpr (std::is_same_v<T, fx::lift_fence>) {
        self->send(d.tailer, log_lift{x.gen, x.scan});
      } else if constexpr (std::is_same_v<T, fx::open_digest>) {
        self->request(d.proxy, caf::infinite, digest_open{x.gen})
          .then(
            [self](digest_opened& r) {
              result<std::optional<cursor>> through = r.error ? result<std::optional<cursor>>(from_caf(r.error).error())
                                                              : result<std::optional<cursor>>(r.through);
              apply(self, self->state.core->on_digest_opened(r.gen, through, now_of(self)));
            },
            [self, gen = x.gen](caf::error& err) {
              if (proxy_gone(self, err)) return;
              apply(self, self->state.core->on_digest_opened(gen, from_caf(err).error(), now_of(self)));
            });
      } else if constexpr (std::is_same_v<T, fx::start_verify>) {
        start_verify(self, x);
      } else if constexpr (std::is_same_v<T, fx::verify_ended>) {
        verify_answer answer{x.outcome, nullptr};
        const bool scanned = x.outcome.what == verify_outcome::kind::verified || x.outcome.what == verify_outcome::kind::drift;
        if (scanned) answer.report = s.verify_report;
        if (auto waiting = s.verify_promises.find(x.number); waiting != s.verify_promises.end()) {
          for (auto& p : waiting->second) p.deliver(answer);
          s.verify_promises.erase(waiting);
        } else if (x.outcome.what != verify_outcome::kind::verified) {
          // A scheduled verify (runner_options::verify_every) has nobody to answer: what it did not
          // prove goes to the diagnostics, a difference (which also condemned) as an error.
          const bool drift = x.outcome.what == verify_outcome::kind::drift;
          report(self->system(), drift ? diagnostic_level::error : diagnostic_level::warning,
                 "runner of " + d.settings->id + ": the scheduled verify " +
                   (drift ? "found " + std::to_string(x.outcome.differences) + " records differing: "
                          : std::string("proved nothing: ") + std::string(to_string(x.outcome.code)) + ": ") +
                   x.outcome.message,
                 self->id());
        }
        s.verify_report.reset();
        s.lifted.reset();
        self->send(d.proxy, verify_drop{});  // the view and the scan, whatever is left of them
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
  auto d = s.lag.next(snap, s.deps.settings->runner.options, now_of(self), s.deps.settings->time->wall_now_ns());
  if (d.publish) s.lag_ready = std::move(d.publish);
  if (d.due_in && !s.lag_due_armed) {
    s.lag_due_armed = true;
    self->delayed_send(self, *d.due_in, lag_due{});
  }
}

std::optional<rebuild_progress> snapshot_event(runner_pointer self) {
  auto& s = self->state;
  auto snap = s.core->snapshot();
  auto progress = s.pacer.next(snap, now_of(self));
  pace_lag(self, snap);
  if (s.deps.settings->proof) {
    std::optional<coverage_proof> next;
    if (snap.owner && !snap.durable_ends.empty()) next = coverage_proof{snap.epoch, snap.durable_ends};
    if (s.proof.changed(next)) {
      if (next) s.deps.settings->proof->store(std::move(*next));
      else s.deps.settings->proof->clear();
    }
  }
  if (!s.deps.settings->snapshot) return progress;
  auto status = snap.status();
  const bool changed = !s.reported || s.reported->state != status.state || s.reported->reason != status.reason ||
                       s.reported->epoch != status.epoch;
  s.deps.settings->snapshot->store(std::move(snap));
  if (!changed) return progress;
  s.reported = status;
  const auto& settings = *s.deps.settings;
  if (settings.on_status) settings.on_status(status, settings.snapshot->load_versioned().second);
  return progress;
}

// The lag figures state.lag_ready holds, with the remote link's last report; taken.
std::optional<lag_figures> take_lag(runner_pointer self) {
  auto& s = self->state;
  if (!s.lag_ready) return std::nullopt;
  auto figures = *std::exchange(s.lag_ready, std::nullopt);
  if (s.deps.settings->link) figures.link = s.deps.settings->link();
  return figures;
}

// The interpreter's ports: what its effects do with CAF. Publications are requests to the
// runtime's readiness publisher, whose answers land them in the interpreter's fence.
class actor_ports final : public runner_ports {
 public:
  explicit actor_ports(runner_pointer self) : self_(self) {}
  steady_time now() override { return now_of(self_); }
  std::optional<rebuild_progress> store_snapshot() override { return snapshot_event(self_); }
  std::optional<lag_figures> take_lag() override { return dix::take_lag(self_); }
  void carry_out(effect& e) override { dix::carry_out(self_, e); }
  effects mint_epoch() override { return mint(self_); }
  // A publication lands when the publisher answers. An owner's slot is claimed, so an error
  // (not_registered) means the registration and the runtime's segment disagree — a bug — or the
  // publisher is gone: it is reported (diagnostics.hpp) and counted as landed, so a release is
  // not held forever behind a publication that will never land.
  void publish(const fx::publish& x) override {
    send_counted<published>(
      self_, publication{deps().settings->id, x.state, x.reason, x.attempts, x.coverage_time, x.lag_gate}, "a publication");
  }
  void publish_progress(const rebuild_progress& progress) override {
    send_counted<metrics_published>(self_, metrics_publication{deps().settings->id, progress}, "a metrics publication");
  }
  void publish_lag(const lag_figures& lag) override {
    send_counted<metrics_published>(self_, lag_publication{deps().settings->id, lag}, "a lag publication");
  }
  epoch_t owner_epoch() override { return deps().settings->slot->owner_epoch(); }
  bool owns_lock() override { return deps().settings->lock->owned(deps().settings->id); }
  bool consume_rebuild_request() override { return deps().settings->slot->consume_rebuild_request(); }
  index_time_t coverage_demand() override { return deps().settings->slot->coverage_demand(); }
  std::uint32_t lag_gate() override { return deps().settings->slot->lag_gate(); }
  dix::readiness read_slot() override { return deps().settings->slot->read(); }
  void acquired() override { deps().record->acquired(); }

 private:
  runner_deps& deps() { return self_->state.deps; }
  runner_pointer self_;
};

runner_actor::behavior_type runner(runner_pointer self, runner_deps deps) {
  auto& s = self->state;
  s.deps = std::move(deps);
  auto config = s.deps.settings->runner;
  config.start_condemned = s.deps.start_condemned;
  config.generation_base = s.deps.generation_base;
  s.core = std::make_unique<runner_core>(std::move(config));
  s.budgets = make_turn_budgets(s.deps.settings->runner.options);
  s.ports = std::make_unique<actor_ports>(self);
  s.interp = std::make_unique<runner_interpreter>(*s.core, *s.ports, s.deps.bell.get());
  (void)snapshot_event(self);  // e.g. parked from the start; no scan ran yet
  // A dying runner keeps its lock entry: its supervisor, as the lock holder, quiesces the backend
  // and only then releases the entry (actors.md §3), so no successor overlaps unfinished work.
  return {
    // The bell, a rebuild wake and a coverage wake: the interpreter's (on_wake).
    [self](wake& m) { self->state.interp->on_wake(m.flags); },
    [self](timer& m) { apply(self, self->state.core->on_timer(m.kind, m.gen, now_of(self))); },
    [self](lag_due&) {
      self->state.lag_due_armed = false;
      pace_lag(self, self->state.core->snapshot());
      self->state.interp->publish_lag_due();
    },
    [self](lock_acquired& m) {
      auto& st = self->state;
      auto& core = *st.core;
      if (m.error) {
        apply(self, core.on_lock_failed(m.gen, to_dix_error(m.error), m.contended, now_of(self)));
        return;
      }
      st.interp->on_lock_granted(m.gen);
    },
    [self](log_opened& m) {
      apply(self, self->state.core->on_log_opened(m.gen, std::nullopt, m.installed, now_of(self), m.anchor_ends));
    },
    [self](log_chunk& m) {
      // The commits rung during the pull count as wakes that came before its answer, as their
      // messages would have (a system commit so still asks for the turn after it).
      self->state.interp->before_pull_answer();
      pull_outcome out{std::nullopt, std::move(m.chunk)};
      apply(self, self->state.core->on_chunk(m.gen, out, now_of(self)));
    },
    [self](boundary_captured& m) {
      boundary_outcome out{std::nullopt, std::move(m.found)};
      apply(self, self->state.core->on_boundary(m.gen, out, now_of(self)));
    },
    [self](scan_chunk& m) {
      self->state.interp->before_pull_answer();
      scan_outcome out{std::nullopt, std::move(m.step)};
      apply(self, self->state.core->on_scan_chunk(m.gen, out, now_of(self)));
    },
    [self](log_fault& m) {
      self->state.interp->before_pull_answer();
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
      result<meta_records> records = m.error ? result<meta_records>(to_dix_error(m.error)) : result<meta_records>(meta_records{m.condemned, m.fingerprint});
      // §9.2 step 3: the request is consumed only by the acquisition that takes this answer.
      self->state.interp->on_meta_state(m.gen, records);
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
    [self](fence_taken& m) { apply(self, self->state.core->on_fence_taken(m.gen, from_caf(m.error), now_of(self))); },
    [self](fence_lifted& m) {
      auto& st = self->state;
      // Only the lift the core awaits hands snapshots over (start_verify takes them); a late one
      // of a verify that ended drops them here, or they would pin the store's old versions.
      if (m.gen != st.core->generation() || st.core->verify_phase() != verify_attempt::phase::lifting) return;
      st.lifted = std::move(m.snapshots);
      apply(self, st.core->on_fence_lifted(m.gen, now_of(self)));
    },
    [self](verify_progressed& m) {
      apply(self, self->state.core->on_verify_progress(m.gen, m.read, m.expected, m.eta_ms));
    },
    [self](verify_scanned& m) {
      auto& st = self->state;
      result<verify_outcome> scanned = error{errc::io_error, "no report"};
      if (m.error) {
        scanned = from_caf(m.error).error();
      } else if (m.report) {
        verify_outcome o;
        o.records = m.report->index.records;
        o.differences = m.report->differences;
        o.digest_agrees = !m.report->stored || *m.report->stored == m.report->index;
        o.stored_digest = m.report->stored.value_or(m.report->index);
        o.entries_digest = m.report->index;
        scanned = o;
        if (st.core->verify_phase() == verify_attempt::phase::scanning) st.verify_report = m.report;
      }
      apply(self, st.core->on_verify_scanned(m.gen, scanned, now_of(self)));
    },
    [self](runner_verify& m) -> caf::result<verify_answer> {
      auto& st = self->state;
      auto out = st.core->on_verify_request(m.request, now_of(self));
      // A refusal answers this request alone; otherwise it waits for the verify's end (joined).
      for (auto it = out.begin(); it != out.end(); ++it) {
        if (auto* refused = std::get_if<fx::verify_refused>(&*it)) {
          verify_answer answer{refused->outcome, nullptr};
          out.erase(it);
          apply(self, std::move(out));
          return answer;
        }
      }
      auto promise = self->make_response_promise<verify_answer>();
      st.verify_promises[st.core->verify_number()].push_back(promise);  // started or joined
      apply(self, std::move(out));
      return promise;
    },
    [self](stop&) -> caf::result<stopped> {
      auto& st = self->state;
      if (st.outcome) return *st.outcome;
      auto promise = self->make_response_promise<stopped>();
      st.stop_promises.push_back(promise);
      // §13.4: the registration counts of the process (§9.1) say whether this was the last one.
      const auto& settings = *st.deps.settings;
      const bool last = settings.lock == nullptr || settings.lock->registrations(settings.id) == 0;
      apply(self, st.core->stop(now_of(self), last));
      return promise;
    },
  };
}

}  // namespace

runner_actor spawn_runner(caf::actor_system& sys, runner_deps deps) { return sys.spawn(runner, std::move(deps)); }

}  // namespace dix
