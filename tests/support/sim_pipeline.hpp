// A deterministic, single-threaded pipeline for runner tests and the [sim] tier: runner_core and
// tailer_core over a fake_store and a sim_backend, with the runner's mailbox as a FIFO and timers
// on a manual clock. It plays the part of the actors: every effect the runner core returns is
// carried out the way runner_actor would (requests to the tailer and the backend proxy come back
// as events in mailbox order; a backend's state change emitted inside a call is queued after that
// call's reply, protocol.md §5.1).
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "core/runner_core.hpp"
#include "core/tailer_core.hpp"
#include "support/fake_store.hpp"
#include "support/sim_backend.hpp"

namespace dix::test {

constexpr std::uint32_t sim_table = 1;

// Projection used by the simulation: the payload itself is what the index stores.
inline projection identity_projection() {
  return [](std::string_view payload, const record_info&) -> projection_result { return std::string(payload); };
}

class sim_pipeline final : public backend_host {
 public:
  explicit sim_pipeline(runner_options options = {}) : options_(options), budgets_(make_turn_budgets(options)) {
    store.commit({fake_op{op_kind::put, 0, "format", "1", true}}, header_flag::system, true);  // sequence 1
    backend.attach(*this);
    subscription_ = backend.on_state_change([this](state_change c) {
      post([this, c] { return runner->on_state_change(c, time.steady_now()); });
    });
    restart_runner();
  }

  // Completions the backend still holds report "dropped" when destroyed; let them do so while the
  // mailbox they post to still exists.
  ~sim_pipeline() override { backend.crash(); }

  // backend_host
  bool is_owner_epoch(epoch_t e) const noexcept override { return slot_epoch == e; }
  dix::readiness readiness() const noexcept override { return {}; }
  void note_unindexable(std::string_view) noexcept override {}
  void request_rebuild() noexcept override {}
  result<coverage> admit_query(const coverage_mode&, cancel_token) override { return coverage{}; }

  // A new runtime process (or a restarted runner actor): new cores, lock free, mailbox and
  // timers of the old one gone. The store, the backend and the slot's epoch survive (and its
  // readiness; an OS crash also calls reset_segment()).
  void restart_runner() {
    mailbox_.clear();
    timers_.clear();
    lock_held = false;
    projections_ = {{table_ref{"main", sim_table}, identity_projection()}};
    tailer = std::make_unique<tailer_core>(std::vector<tailer_log>{{&source, &reader}}, projections_,
                                           std::vector<attached_log>{{store.log_name(), store.identity()}});
    runner_core::config c;
    c.options = options_;
    c.generation_base = (++incarnation_) << 32;
    c.fingerprint = sim_fingerprint;
    c.rebuildable = rebuildable;
    runner = std::make_unique<runner_core>(c);
  }

  // Another process sets the slot's rebuild_request; the watcher wakes the runner, which the
  // runner actor treats as it does: the owner consumes the request when it takes one, a dormant
  // runner acquires while no runner owns the id, anyone else leaves the flag for later.
  void store_rebuild_request(bool wake_runner = true) {
    slot_rebuild_request = true;
    if (!wake_runner) return;
    post([this] {
      const auto action = runner->on_rebuild_wake(lock_held);
      if (action == runner_core::rebuild_wake::acquire) return runner->on_wake(wake_flag::rebuild, time.steady_now());
      if (action == runner_core::rebuild_wake::consume && std::exchange(slot_rebuild_request, false)) {
        return runner->on_rebuild_requested(time.steady_now());
      }
      return effects{};
    });
    run();
  }

  // Every process died: the segment's stale reset (formats.md §4.6) leaves `unknown`.
  void reset_segment() { slot_readiness = {}; }

  // The runner actor died; the supervisor, as the lock holder, carries out the release steps
  // itself (actors.md §3: flush(shutdown), shutdown of the held epoch), releases the lock and
  // starts a new runner.
  void supervisor_restart_runner() {
    if (lock_held && runner->epoch() != 0) {
      backend.flush(flush_reason::shutdown, completion([](result<void>) {}));
      backend.shutdown(runner->epoch(), completion([](result<void>) {}));
    }
    restart_runner();
  }

  void wake(std::uint8_t flags = wake_flag::commit) {
    post([this, flags] { return runner->on_wake(flags, time.steady_now()); });
    run();
  }

  std::pair<std::uint64_t, index_time_t> commit(std::vector<fake_op> ops, bool sync = false) {
    auto r = store.commit(std::move(ops), 0, sync);
    wake();
    return r;
  }

  // Processes the mailbox until it is empty (timers do not fire).
  void run(std::size_t limit = 100000) {
    while (!mailbox_.empty() && limit-- > 0) {
      auto next = std::move(mailbox_.front());
      mailbox_.pop_front();
      apply(next());
    }
  }

  // Moves time forward, firing due timers in order, then runs.
  void advance(std::chrono::milliseconds d) {
    auto until = time.steady_now() + d;
    while (!timers_.empty() && timers_.begin()->first <= until) {
      auto at = timers_.begin()->first;
      auto fire = std::move(timers_.begin()->second);
      timers_.erase(timers_.begin());
      if (at > time.steady_now()) time.advance(at - time.steady_now());
      post(std::move(fire));
      run();
    }
    if (until > time.steady_now()) time.advance(until - time.steady_now());
    run();
  }

  void stop() {
    post([this] { return runner->stop(time.steady_now()); });
    run();
  }

  std::size_t timers_armed() const { return timers_.size(); }

  manual_clock time;
  fake_store store{"main", "id-main"};
  fake_store::source source{store};
  fake_store::reader reader{store};
  sim_backend backend;
  std::unique_ptr<tailer_core> tailer;
  std::unique_ptr<runner_core> runner;
  static constexpr std::uint64_t sim_fingerprint = 0x51305130u;
  epoch_t slot_epoch = 0;
  dix::readiness slot_readiness;  // the slot as the segment holds it: lost only when every process dies
  bool slot_rebuild_request = false;  // the slot's rebuild_request: survives even a stale reset
  bool rebuildable = true;            // the backend implements reset (applies at the next restart_runner)
  meta_records meta;              // condemned/<id> and registration/<id> in the home store (synced)
  epoch_t persisted_epoch = 0;
  bool lock_held = false;
  std::vector<fx::publish> publications;
  std::vector<std::shared_ptr<const batch>> delivered;
  std::vector<flush_reason> flush_requests;
  std::optional<result<void>> stopped;
  std::size_t durable_queries = 0;
  std::size_t log_opens = 0;

 private:
  using event = std::function<effects()>;
  void post(event e) { mailbox_.push_back(std::move(e)); }

  void apply(effects fx) {
    for (auto& e : fx) std::visit([this](auto& x) { carry_out(x); }, e);
  }

  void carry_out(fx::request_lock&) {
    if (lock_held) return;  // one runner per id here; a second would queue
    lock_held = true;
    post([this] { return runner->on_lock_acquired(time.steady_now()); });
  }
  void carry_out(fx::release_lock&) { lock_held = false; }
  void carry_out(fx::mint_epoch&) { apply(runner->on_epoch_minted(++slot_epoch, time.steady_now())); }
  void carry_out(fx::persist_epoch& p) {
    persisted_epoch = std::max(persisted_epoch, p.epoch);
    auto gen = p.gen;
    post([this, gen] { return runner->on_epoch_persisted(gen, result<void>{}, time.steady_now()); });
  }
  void carry_out(fx::query_durable& q) {
    ++durable_queries;
    auto gen = q.gen;
    auto d = backend.durable_cursor();
    post([this, gen, d] { return runner->on_durable(gen, d, time.steady_now()); });
  }
  void carry_out(fx::open_log& o) {
    ++log_opens;
    auto r = o.from ? tailer->install(*o.from) : tailer->install_from_start();
    auto gen = o.gen;
    post([this, gen, r] { return runner->on_log_opened(gen, r.fault, r.installed, time.steady_now()); });
  }
  void carry_out(fx::pull& p) {
    auto r = tailer->pull(budgets_, p.epoch, time);
    auto gen = p.gen;
    post([this, gen, r] { return runner->on_chunk(gen, r, time.steady_now()); });
  }
  void carry_out(fx::deliver& d) {
    delivered.push_back(d.b);
    auto r = backend.deliver(d.b);
    auto gen = d.gen;
    // sim_backend emits nothing inside deliver; a real backend's emissions would be queued
    // behind this reply by the proxy (§5.1), which is the order used here too.
    post([this, gen, r] { return runner->on_delivery(gen, r, time.steady_now()); });
  }
  void carry_out(fx::flush& f) {
    flush_requests.push_back(f.reason);
    auto gen = f.gen;
    backend.flush(f.reason, completion([this, gen](result<void> r) {
      post([this, gen, r] { return runner->on_flush_done(gen, r, time.steady_now()); });
    }));
  }
  void carry_out(fx::shutdown& s) {
    auto epoch = s.epoch;
    backend.shutdown(epoch, completion([this, epoch](result<void> r) {
      post([this, epoch, r] { return runner->on_shutdown_done(epoch, r, time.steady_now()); });
    }));
  }
  void carry_out(fx::publish& p) {
    publications.push_back(p);
    slot_readiness.state = p.state;
    slot_readiness.reason = p.reason;
  }
  void carry_out(fx::read_meta& r) {
    auto gen = r.gen;
    auto records = meta;
    auto slot = slot_readiness;
    post([this, gen, records, slot] {
      const bool requested = runner->awaits_meta(gen) && std::exchange(slot_rebuild_request, false);
      return runner->on_meta_state(gen, records, slot, time.steady_now(), requested);
    });
  }
  void carry_out(fx::write_marker& w) {
    meta.condemned = true;
    auto gen = w.gen;
    post([this, gen] { return runner->on_marker_written(gen, result<void>{}, time.steady_now()); });
  }
  void carry_out(fx::settle& x) {
    meta.fingerprint = x.fingerprint;
    meta.condemned = false;
    auto gen = x.gen;
    post([this, gen] { return runner->on_settled(gen, result<void>{}, time.steady_now()); });
  }
  void carry_out(fx::arm_timer& t) {
    auto kind = t.kind;
    auto gen = t.gen;
    timers_.emplace(time.steady_now() + t.delay, [this, kind, gen] { return runner->on_timer(kind, gen, time.steady_now()); });
  }
  void carry_out(fx::stopped& s) { stopped = s.outcome; }

  runner_options options_;
  turn_budgets budgets_;  // made once from options_, as the runner actor does
  std::uint64_t incarnation_ = 0;
  std::map<table_ref, projection> projections_;
  std::deque<event> mailbox_;
  std::multimap<steady_time, event> timers_;
  subscription subscription_;
};

}  // namespace dix::test
