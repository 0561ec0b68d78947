#include "actors/runtime_actor.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/id_wiring.hpp"
#include "actors/ownership.hpp"
#include "actors/registration_record.hpp"
#include "actors/state_change_relay.hpp"
#include "actors/readiness_publisher_actor.hpp"
#include "actors/supervisor_actor.hpp"
#include "actors/coverage_waiters.hpp"
#include "actors/diagnostics.hpp"
#include "actors/runtime_work.hpp"
#include "actors/watcher.hpp"
#include "adapters/meta_records.hpp"
#include "adapters/primary_store_hooks.hpp"
#include "adapters/store_ports.hpp"
#include "adapters/verify_files.hpp"
#include "core/assert.hpp"
#include "core/clock.hpp"
#include "core/names.hpp"
#include "messages/values.hpp"

namespace dix {
namespace {

// Registration tokens name a registration in the process-wide lock table, so they are unique in
// the process, not only in one runtime.
std::atomic<std::uint64_t> next_token{1};

bool same(const readiness& a, const readiness& b) noexcept {
  return a.state == b.state && a.reason == b.reason && a.rebuild_attempts == b.rebuild_attempts &&
         a.owner_epoch == b.owner_epoch;
}

// Hosts of registrations whose backend never proved quiescence (a rejected shutdown) when their
// runtime ended: such a backend may still call its host, so the host must not die with the
// runtime. They are kept for the life of the process (one small object per such registration).
std::mutex orphaned_mutex;
std::vector<std::shared_ptr<backend_host_impl>>& orphaned_hosts() {
  static auto* hosts = new std::vector<std::shared_ptr<backend_host_impl>>();
  return *hosts;
}

// A subscriber of one id: the events it asked for explicitly (subscribe), and whether its
// subscribe_all covers the id (the id was registered when it subscribed, or later). The events of
// a subscribe_all live only in runtime_state::all_subscribers (events_of reads them), so one
// subscription is never held twice; the subscriber receives the union.
struct subscriber_entry {
  caf::actor handle;
  std::uint8_t explicit_events = 0;
  bool through_all = false;
};

struct watched_id {
  std::map<caf::actor_addr, subscriber_entry> subscribers;
  std::uint64_t counter = 0;  // the slot change counter of `value`
  readiness value;
  std::uint64_t status_token = 0, status_version = 0;  // of `status`
  std::optional<runner_status> status;
};

struct runtime_state {
  std::shared_ptr<runtime_context> ctx;
  supervisor_actor supervisor;
  readiness_publisher_actor publisher;   // every publication of this runtime's runners
  std::vector<std::uint64_t> listeners;  // one commit listener per store
  std::vector<std::shared_ptr<backend_host_impl>> hosts;  // every host handed out: they outlive registrations
  // A registration request for a backend object whose earlier registration is still releasing:
  // it proceeds when that release settled (api.md §5: one call into a backend at a time).
  struct waiting_registration {
    registration value;
    caf::typed_response_promise<index_registered> promise;
  };
  // One registration of this runtime, from register_one until its release settled for good: its
  // record (where it stands: registered, releasing, held or retrying; actors/registration_record.hpp)
  // and who waits for its release to settle.
  struct tracked_registration {
    std::shared_ptr<registration_record> record;
    std::vector<caf::typed_response_promise<index_unregistered>> unregister_waiters;
    std::vector<waiting_registration> waiting;  // registrations of the same backend object
  };
  std::map<std::uint64_t, tracked_registration> registrations;  // by token
  std::map<std::string, watched_id> watched;
  // subscriber → its references: the ids it watches, plus one for a subscribe_all
  std::map<caf::actor_addr, std::size_t> monitored;
  // subscribe_all's subscribers (issue 29) and the events each asked for: each id registered
  // later gets them too. The one holder of those events (subscriber_entry::through_all refers
  // here); an entry's through_all is set only while its subscriber is in this map.
  std::map<caf::actor_addr, std::pair<caf::actor, std::uint8_t>> all_subscribers;
  // wait_coverage requests by key, until their waiter resolves (coverage_waited).
  std::map<std::uint64_t, std::pair<wait_coverage, caf::typed_response_promise<coverage_reached>>> coverage_requests;
  std::uint64_t next_coverage_key = 0;
  // Commits and queries as messages (actors/runtime_work.hpp): a committer per store that had a
  // commit_transaction (by store index), and the queries waiting for a worker.
  std::map<std::size_t, committer_actor> committers;
  struct pending_query {
    query_index request;
    std::shared_ptr<dix::backend> served;
    caf::typed_response_promise<index_rows> promise;
    // A `wait` query's deadline (its timeout from arrival): the worker's admission waits only
    // for what is left of it when the worker starts.
    std::optional<steady_time> deadline;
  };
  query_gate<pending_query> queries;
  // `wait`-mode queries waiting for their coverage before they take a worker (a waiting query
  // holds no worker and no slot), by coverage key; at most max_waiting_queries.
  std::map<std::uint64_t, pending_query> waiting_queries;
  // The running queries' promises, by worker: answered once, by the worker's reply, by its end
  // without one, or with the runtime's own end (clean_up).
  std::map<caf::actor_addr, caf::typed_response_promise<index_rows>> running_queries;
  bool stopping = false;
  std::optional<caf::error> stop_outcome;  // once every release settled
  std::vector<caf::typed_response_promise<runtime_stopped>> stop_waiters;
  std::optional<caf::error> exit_reason;  // an exit message arrived: end once stopped
  bool finished = false;
  static inline const char* name = "dix.runtime";

  runtime_state() = default;
  runtime_state(const runtime_state&) = delete;
  runtime_state& operator=(const runtime_state&) = delete;
  ~runtime_state();
};

using runtime_pointer = runtime_actor_impl::stateful_pointer<runtime_state>;

// The events `who` receives for an id it has `entry` for: its explicit ones and its
// subscribe_all's.
std::uint8_t events_of(const runtime_state& st, const caf::actor_addr& who, const subscriber_entry& entry) {
  auto events = entry.explicit_events;
  if (entry.through_all) {
    auto all = st.all_subscribers.find(who);
    if (all != st.all_subscribers.end()) events = static_cast<std::uint8_t>(events | all->second.second);
  }
  return events;
}

void clean_up(runtime_state& st);
runtime_state::~runtime_state() {
  if (ctx) clean_up(*this);
}

steady_time now_of(runtime_pointer self) { return self->home_system().clock().now(); }

void check_stopped(runtime_pointer self);
caf::expected<index_registered> register_one(runtime_pointer self, registration r);
struct subscriber_entry;
subscriber_entry& watch_for(runtime_pointer self, const std::string& id, const std::shared_ptr<segment_slot>& slot,
                            const caf::actor& who);

// Moves `r` to `to`, giving back exactly once what its stage held and `to` does not (the record
// decides): its count in the process lock table (protocol.md §9.1), which leaves as the release
// starts (§2.4: a releasing owner that finds no registration of its id left forces the gate
// open, §13.4), and its admission entries in the stores' write gates (§2.2, §13.5), which go once
// the release settled (§2.4).
void advance(runtime_state& st, registration_record& r, registration_stage to) {
  const auto undo = r.transition(to);
  if (undo.uncount) st.ctx->locks->count_registration(r.id(), -1);
  if (undo.ungate) {
    for (auto& s : st.ctx->stores) gate_of(*s).remove(r.token());
  }
}

// A release settled (protocol.md §2.4): the subscription goes first, then the host ends, then the
// waiters hear the outcome.
void on_released(runtime_pointer self, std::uint64_t token, const caf::error& err) {
  auto& st = self->state;
  auto it = st.registrations.find(token);
  if (it == st.registrations.end() || !it->second.record->releasing()) return;
  auto e = it->second.record;
  auto waiters = std::exchange(it->second.unregister_waiters, {});
  // Registrations of the same backend object waited for this release.
  auto registrations = std::exchange(it->second.waiting, {});
  advance(st, *e, err ? registration_stage::held : registration_stage::released);
  if (!err) st.registrations.erase(it);
  e->changes.reset();
  e->host->end();
  for (auto& w : waiters) {
    if (err) {
      w.deliver(make_error(errc::backend_failed, "the shutdown of " + e->id() + " was rejected; its lock stays held (" +
                                                     error_text(err) + ")"));
    } else {
      w.deliver(index_unregistered{e->id()});
    }
  }
  for (auto& w : registrations) {
    if (err) {
      w.promise.deliver(make_error(errc::backend_failed, "backend " + e->id() +
                                                         " is still held by its previous registration, whose shutdown "
                                                         "was rejected; request_rebuild retries that release"));
      continue;
    }
    auto done = register_one(self, std::move(w.value));
    if (done) w.promise.deliver(std::move(*done));
    else w.promise.deliver(done.error());
  }
  check_stopped(self);
}

// Starts the release of a registration the registry let go (→ releasing), or retries a held one's
// (→ retrying, §9.7): the supervisor quiesces the backend and releases the lock.
void release(runtime_pointer self, const std::shared_ptr<registration_record>& e) {
  DIX_ASSERT(self->state.registrations.count(e->token()) != 0);
  const bool retry = e->stage() == registration_stage::held;
  advance(self->state, *e, retry ? registration_stage::retrying : registration_stage::releasing);
  const auto token = e->token();
  self->request(self->state.supervisor, caf::infinite, unsupervise{token})
    .then([self, token](stopped& s) { on_released(self, token, s.error); },
          [self, token](caf::error& err) { on_released(self, token, err); });
}

// protocol.md §2.4: the id leaves at once (the facade may have detached it already); its runner
// releases behind it. Every registration detached so far is released, so none is left behind
// by a stop that overtakes the facade's message.
void start_unregister(runtime_pointer self, const std::shared_ptr<registration_record>& e) {
  auto& registry = *self->state.ctx->registry;
  registry.detach(e->id(), e->token());
  for (auto& detached : registry.take_all_detached()) release(self, detached);
}

// Where the release of registration `token` stands, for a late unregister request: pending (the
// promise waits), settled with a held lock (an error), or settled (nullopt after release).
caf::result<index_unregistered> await_release(runtime_pointer self, std::uint64_t token, const std::string& id) {
  auto& st = self->state;
  if (auto e = st.ctx->registry->take_detached(token)) release(self, e);
  auto it = st.registrations.find(token);
  if (it == st.registrations.end()) return index_unregistered{id};
  if (it->second.record->releasing()) {
    auto promise = self->make_response_promise<index_unregistered>();
    it->second.unregister_waiters.push_back(promise);
    return promise;
  }
  if (it->second.record->stage() == registration_stage::held) {
    return make_error(errc::backend_failed, "the shutdown of " + id + " was rejected; its lock stays held");
  }
  return index_unregistered{id};
}

// What a runtime object's destruction does (protocol.md §15): the registrations that did not
// release cleanly — a release still pending, a rejected shutdown keeping its lock, or (when the
// actor ends without a stop: a kill, an escaped exception) every current one — give their
// lock-table entries back through their ownership records (their backends stay fenced by the
// epoch a successor mints), their hosts end and are kept for the life of the process (a backend
// that never proved quiescence may still call its host), and no entry keeps an actor alive; the
// supervisor and the publisher end, the watcher and the listeners go. The state's destructor
// runs it, so every way the actor ends runs it exactly once — CAF destroys the state in
// on_exit, before attached functors run, so nothing after that may touch it.
void clean_up(runtime_state& st) {
  if (st.finished) return;
  st.finished = true;
  auto& ctx = *st.ctx;
  // Every registration not released for good: registered ones (current, or detached and not yet
  // taken), releasing ones, held and retrying ones.
  std::vector<std::shared_ptr<registration_record>> unreleased;
  for (auto& [token, t] : st.registrations) unreleased.push_back(t.record);
  if (ctx.waiters) ctx.waiters->close();
  for (auto& e : ctx.registry->all()) ctx.registry->detach(e->id(), e->token());
  (void)ctx.registry->take_all_detached();  // their records are among `unreleased` already
  // Fail what still waits here: the actor is ending (with its own `stopped` reason if it has one).
  // (A dix `stopped`, not an exit reason: CAF's user_shutdown and kill map to stopped too, but a
  // caller's error should keep dix's category and words.)
  const bool own = st.exit_reason && st.exit_reason->category() == caf_error_category &&
                   to_errc(*st.exit_reason) == errc::stopped;
  auto ended = own ? *st.exit_reason : make_error(errc::stopped, "the runtime ended");
  for (auto& w : st.stop_waiters) w.deliver(ended);
  st.stop_waiters.clear();
  for (auto& [token, t] : st.registrations) {
    for (auto& w : std::exchange(t.unregister_waiters, {})) w.deliver(ended);
    for (auto& w : std::exchange(t.waiting, {})) w.promise.deliver(ended);
  }
  // The counts and the gates each registration still holds go back, once.
  for (auto& e : unreleased) advance(st, *e, registration_stage::abandoned);
  st.registrations.clear();
  for (auto& [key, request] : st.coverage_requests) request.second.deliver(ended);
  st.coverage_requests.clear();
  for (auto& q : st.queries.drain()) q.promise.deliver(ended);
  for (auto& [key, q] : st.waiting_queries) q.promise.deliver(ended);
  st.waiting_queries.clear();
  for (auto& [worker, promise] : st.running_queries) promise.deliver(ended);
  st.running_queries.clear();
  // A committer ends after the commit it runs; running query workers end with their query.
  for (auto& [index, c] : st.committers) caf::anon_send_exit(c, caf::exit_reason::user_shutdown);
  st.committers.clear();
  for (auto& e : unreleased) {
    e->host->end();  // the backend is told first that no epoch is its own any more
    e->owner->release();
    e->set_runner(runner_actor{});
    std::lock_guard g(orphaned_mutex);
    orphaned_hosts().push_back(e->host);
  }
  if (ctx.watch) ctx.watch->stop();
  for (std::size_t i = 0; i < ctx.stores.size() && i < st.listeners.size(); ++i) {
    remove_commit_listener(*ctx.stores[i], st.listeners[i]);
  }
  st.listeners.clear();
  if (st.supervisor) caf::anon_send_exit(st.supervisor, caf::exit_reason::user_shutdown);
  st.supervisor = nullptr;
  if (st.publisher) caf::anon_send_exit(st.publisher, caf::exit_reason::user_shutdown);
  st.publisher = nullptr;
}

void finish(runtime_pointer self) {
  clean_up(self->state);
  self->quit(self->state.exit_reason ? *self->state.exit_reason : caf::error{});
}

// The supervisor or the publisher ended, which only a defect in dix makes happen: the runtime
// cannot release through them (a release is the supervisor's unsupervise, its publications the
// publisher's), so it ends at once, as when it is killed: clean_up ends the hosts and gives the
// locks back (the backends are fenced by the epoch a successor mints); the supervisor's
// children are told to exit when it ends (from its state's destructor). Every request waiting
// here fails `stopped`; a subscriber's monitor fires.
void lost_helper(runtime_pointer self, const char* which, const caf::error& reason) {
  auto& st = self->state;
  if (st.finished) return;
  auto err = make_error(errc::stopped, std::string("the runtime ended: its ") + which + " ended (" + to_string(reason) + ")");
  report(self->system(), diagnostic_level::error, error_text(err), self->id());
  st.exit_reason = err;  // clean_up answers every waiter with it
  finish(self);
}

void check_stopped(runtime_pointer self) {
  auto& st = self->state;
  if (!st.stopping || st.stop_outcome) return;
  for (const auto& [token, t] : st.registrations) {
    if (t.record->releasing()) return;
  }
  std::string failed;
  for (const auto& [token, t] : st.registrations) {
    if (t.record->stage() == registration_stage::held) failed += (failed.empty() ? "" : ", ") + t.record->id();
  }
  st.stop_outcome = failed.empty() ? caf::error{} : make_error(errc::backend_failed, "shutdown rejected by " + failed);
  for (auto& w : st.stop_waiters) {
    if (*st.stop_outcome) w.deliver(*st.stop_outcome);
    else w.deliver(runtime_stopped{});
  }
  st.stop_waiters.clear();
  if (st.exit_reason) finish(self);
}

void begin_stop(runtime_pointer self) {
  auto& st = self->state;
  if (st.stopping) return;
  st.stopping = true;
  if (st.ctx->waiters) st.ctx->waiters->close();  // its waiters fail stopped, and later waits too
  auto& registry = *st.ctx->registry;
  for (auto& e : registry.all()) registry.detach(e->id(), e->token());
  for (auto& e : registry.take_all_detached()) release(self, e);
  check_stopped(self);
}

// -- registration (protocol.md §2.1, §2.2) -----------------------------------------------------

// Runs a call into backend code during registration; what it throws becomes backend_failed.
template <class Call>
std::optional<caf::error> backend_call(const std::string& id, const char* what, Call call) {
  try {
    call();
    return std::nullopt;
  } catch (const std::exception& ex) {
    return make_error(errc::backend_failed, std::string(what) + " of " + id + " threw: " + ex.what());
  } catch (...) {
    return make_error(errc::backend_failed, std::string(what) + " of " + id + " threw");
  }
}

caf::expected<index_registered> register_one(runtime_pointer self, registration r) {
  auto& st = self->state;
  auto& ctx = *st.ctx;
  registration_context rc;
  rc.stopped = st.stopping;
  rc.attached = &ctx.attached;
  rc.defaults = &ctx.options.runner;
  rc.registered = [&ctx](const std::string& id) { return ctx.registry->find(id) != nullptr; };
  auto plan = plan_registration(r, rc);
  if (!plan) return make_error(plan.error());
  const auto& id = plan->id;
  auto slot = ctx.segment->claim(id);  // formats.md §4.6 step 3: segment_full
  if (!slot) return make_error(slot.error());
  // Epoch floor (formats.md §4.6 step 4): never below the persisted epoch/<id>.
  const auto& home = ctx.stores.front();
  auto persisted = meta::read_epoch(*home, id);
  if (!persisted) return make_error(persisted.error());
  if (*persisted) (*slot)->raise_epoch_floor(**persisted);
  // An epoch that cannot be incremented is refused here, where the caller hears it, not at the
  // runner's first mint (which refuses it too).
  if (auto mintable = (*slot)->check_mintable(); !mintable) return make_error(mintable.error());

  const auto token = next_token.fetch_add(1);
  caf::weak_actor_ptr me = self->ctrl();
  auto host = std::make_shared<backend_host_impl>(*slot, [me, id] {
    if (auto strong = me.lock()) caf::anon_send(caf::actor_cast<runtime_actor>(strong), rebuild_index{id});
  });
  host->set_coverage(coverage_services_for(st.ctx, id));
  st.hosts.push_back(host);
  auto relay = std::make_shared<state_change_relay>();
  // Counted in the process (§9.1) before attach, as §2.2 orders it. The record starts registered
  // (counted and gated), so until it is made a failure here gives the count back itself.
  ctx.locks->count_registration(id, +1);
  // attach and the subscription are part of the registration: either fails, nothing remains.
  if (auto failed = backend_call(id, "attach", [&] { r.backend->attach(*host); })) {
    host->end();
    ctx.locks->count_registration(id, -1);
    return *failed;
  }
  subscription changes;
  if (auto failed =
        backend_call(id, "on_state_change", [&] { changes = subscribe_state_changes(*r.backend, relay); })) {
    host->end();
    ctx.locks->count_registration(id, -1);
    return *failed;
  }
  // The projected tables join each store's admission check (§2.2, §13.5); a refusal wakes this
  // registration's runner as a non-system commit would.
  std::weak_ptr<runtime_registry> weak_registry = ctx.registry;
  for (const auto& [ref, fn] : r.projections) {
    for (std::size_t i = 0; i < ctx.attached.size(); ++i) {
      if (ctx.attached[i].name != ref.log) continue;
      gate_of(*ctx.stores[i]).add(ref.table, write_gate::entry{id, token, *slot, [weak_registry, id] {
                                    if (auto reg = weak_registry.lock()) reg->wake(id, wake_flag::commit);
                                  }});
    }
  }

  // The registration's settings, made once: its record, its wiring and its actors share them.
  auto settings = std::make_shared<registration_settings>();
  auto& w = *settings;
  w.id = id;
  w.token = token;
  w.backend = r.backend;
  w.projections = r.projections;
  // Projections run on one thread at a time per registration (<dix/projection.hpp>): the tailer
  // calls them, and so does a verify's scan on the proxy's thread (decision 0057), so every call
  // takes the registration's lock (uncontended but for a verify).
  auto one_at_a_time = std::make_shared<std::mutex>();
  for (auto& [ref, fn] : w.projections) {
    fn = [one_at_a_time, inner = fn](std::string_view payload, const record_info& info) {
      std::lock_guard<std::mutex> hold(*one_at_a_time);
      return inner(payload, info);
    };
  }
  for (auto index : plan->logs) {
    const auto& store = ctx.stores[index];
    w.log_stores.push_back(store);
    w.logs.push_back(wired_log{make_rocksdb_log_source(store), make_rocksdb_store_reader(store),
                               ctx.attached[index].wal_ttl_s});
  }
  for (const auto& a : ctx.attached) w.attached.push_back(attached_log{a.name, a.identity});
  w.meta = std::make_shared<meta::home_meta_store>(home, id);
  w.time = ctx.time;
  w.runner.options = plan->options;
  w.runner.fingerprint = plan->fingerprint;
  w.runner.rebuildable = plan->rebuildable;
  w.runner.cursor_flush_age = plan->cursor_flush_age;
  w.runner.gate = gate_policy{plan->options.max_lag, plan->options.max_flush_age, r.backend->min_barrier_interval(),
                              ctx.options.max_write_delay};
  w.slot = *slot;
  w.publisher = st.publisher;
  w.lock = ctx.locks.get();
  w.proof = std::make_shared<coverage_proof_box>();
  w.link = [weak_host = std::weak_ptr<backend_host_impl>(host)]() -> std::optional<link_figures> {
    auto h = weak_host.lock();
    return h ? h->link() : std::nullopt;
  };
  w.relay = relay;
  w.on_status = [me, id, token](const runner_status& s, std::uint64_t version) {
    if (auto strong = me.lock()) {
      caf::anon_send(caf::actor_cast<runtime_actor_impl>(strong), runner_status_observed{id, token, version, s});
    }
  };
  w.detached = ctx.detached;
  auto e = std::make_shared<registration_record>(std::move(settings));
  e->host = std::move(host);
  e->changes = std::move(changes);
  auto spec = wire_registration(self->home_system(), e->shared_settings());
  e->owner = spec->record;
  st.registrations[token].record = e;
  ctx.registry->put(e);
  // subscribe_all's subscribers hear this id too, from its first change (issue 29).
  for (auto& [addr, sub] : st.all_subscribers) watch_for(self, id, e->slot(), sub.first).through_all = true;
  // The supervisor spawns the actors and wakes the runner as by a non-system commit (§2.2).
  self->send(st.supervisor, supervise{std::move(spec)});
  return index_registered{id};
}

// -- rebuild requests (protocol.md §11.2) ------------------------------------------------------

// A `dix verify` from another process (formats.md §8), for a registration this process owns (the
// watcher took its request): the runner's answer becomes the report the requester waits for.
void serve_verify_request(runtime_pointer self, const verify_requested& m) {
  auto& st = self->state;
  auto segment = st.ctx->segment;
  auto it = st.registrations.find(m.token);
  auto slot = it == st.registrations.end() ? nullptr : it->second.record->slot();
  auto finish = [segment, slot, id = m.id, nonce = m.nonce, self](const result<verify_result>& r) {
    verify_report written;
    written.nonce = nonce;
    if (r) {
      written.result = *r;
    } else {
      written.code = r.error().value();
      written.message = r.error().message();
    }
    if (auto ok = write_verify_report(segment->directory(), id, written); !ok) {
      report(self->system(), diagnostic_level::error, "the report of a dix verify of " + id + ": " + ok.error().to_string(),
             self->id());
    }
    if (slot) slot->poke();  // the requester waits on the segment's change counter
    else if (auto found = segment->find(id)) found->poke();
  };
  // The request was taken: every way out writes its report.
  auto runner = it == st.registrations.end() ? runner_actor{} : it->second.record->runner();
  if (!runner) {
    finish(error{errc::unavailable, "the registration of " + m.id + " ended before its verify started"});
    return;
  }
  self->request(runner, caf::infinite, runner_verify{request_of(m.options)})
    .then([finish](verify_answer& a) { finish(result_of(a)); },
          [finish](caf::error& err) { finish(result<verify_result>(to_dix_error(err))); });
}

// A verify_index from a CAF application or, through the gate, another process (issue 31): asks the
// id's runner as runtime::verify does and answers with its result once the verify ended.
caf::result<index_verified> verify_one(runtime_pointer self, const verify_index& m) {
  auto& st = self->state;
  if (auto ok = check_backend_id(m.id); !ok) return make_error(ok.error());
  // Checked here, not in the message's load: CAF drops a frame it cannot load without an answer.
  const auto deadline = m.options.deadline.count();
  if (deadline < 1 || deadline > 86'400'000) {
    return make_error(errc::invalid_argument, "verify_index.options.deadline = " + std::to_string(deadline) +
                                                " ms: must be in [1, 86400000]");
  }
  if (m.options.limit > 1'000'000) {
    return make_error(errc::invalid_argument,
                      "verify_index.options.limit = " + std::to_string(m.options.limit) + ": must be at most 1000000");
  }
  auto e = st.ctx->registry->find(m.id);
  if (!e) return make_error(errc::not_registered, "backend id " + m.id + " is not registered in this runtime");
  auto runner = e->runner();
  if (!runner) return make_error(errc::unavailable, "backend id " + m.id + " has no runner now");
  auto promise = self->make_response_promise<index_verified>();
  self->request(runner, caf::infinite, runner_verify{request_of(m.options)})
    .then(
      [promise, id = m.id](verify_answer& a) mutable {
        auto r = result_of(a);
        if (r) promise.deliver(index_verified{id, std::move(*r)});
        else promise.deliver(make_error(r.error()));
      },
      [promise, id = m.id](caf::error& err) mutable {
        if (err == caf::sec::request_receiver_down) err = make_error(errc::stopped, "the runner of " + id + " stopped before it answered");
        promise.deliver(std::move(err));
      });
  return promise;
}

caf::result<rebuild_requested> rebuild_one(runtime_pointer self, const std::string& id) {
  auto& st = self->state;
  // First row: a runner of the id unregistered or stopped while a rejected shutdown keeps its
  // lock retries only its release (§9.7), then is released for good when that settles.
  for (auto& [token, t] : st.registrations) {
    const auto& e = t.record;
    if (e->stage() != registration_stage::held || e->id() != id) continue;
    auto runner = e->runner();
    if (!runner) continue;
    auto promise = self->make_response_promise<rebuild_requested>();
    auto held = e;
    self->request(runner, caf::infinite, rebuild_request{rebuild_source::local_call})
      .then(
        [self, promise, held](bool retried) mutable {
          if (retried && held->stage() == registration_stage::held) release(self, held);
          promise.deliver(rebuild_requested{held->id(), retried});
        },
        [promise, id](caf::error&) mutable { promise.deliver(rebuild_requested{id, false}); });
    return promise;
  }
  if (st.stopping) return rebuild_requested{id, false};
  auto e = st.ctx->registry->find(id);
  if (!e || !e->settings().runner.rebuildable) return rebuild_requested{id, false};
  e->slot()->request_rebuild();  // stores the flag and notifies: the watchers of every runtime see it
  self->send(st.supervisor, revive{e->token()});  // an escalated registration gets its children back
  if (auto r = e->runner()) self->send(r, wake{wake_flag::rebuild});
  return rebuild_requested{id, true};
}

// -- subscriptions -----------------------------------------------------------------------------

// One reference of `who` fewer; the last one ends the monitoring.
void unreference(runtime_pointer self, const caf::actor_addr& who) {
  auto& st = self->state;
  auto m = st.monitored.find(who);
  if (m != st.monitored.end() && --m->second == 0) {
    self->demonitor(who);
    st.monitored.erase(m);
  }
}

void reference(runtime_pointer self, const caf::actor& who) {
  if (self->state.monitored[who.address()]++ == 0) self->monitor(who);
}

// Which of a subscriber's subscriptions to one id end.
enum class subscription_part : std::uint8_t { explicit_only, all_only, both };

void drop_subscriber(runtime_pointer self, const std::string& id, const caf::actor_addr& who,
                     subscription_part part = subscription_part::both) {
  auto& st = self->state;
  auto w = st.watched.find(id);
  if (w == st.watched.end()) return;
  auto sub = w->second.subscribers.find(who);
  if (sub == w->second.subscribers.end()) return;
  if (part != subscription_part::all_only) sub->second.explicit_events = 0;
  if (part != subscription_part::explicit_only) sub->second.through_all = false;
  if (sub->second.explicit_events != 0 || sub->second.through_all) return;
  w->second.subscribers.erase(sub);
  if (w->second.subscribers.empty()) {
    if (st.ctx->watch) st.ctx->watch->unobserve(id);
    st.watched.erase(w);
  }
  unreference(self, who);
}

// The entry of `who` for `id` (made, watched and referenced when new).
subscriber_entry& watch_for(runtime_pointer self, const std::string& id, const std::shared_ptr<segment_slot>& slot,
                            const caf::actor& who) {
  auto& st = self->state;
  auto& w = st.watched[id];
  auto [it, fresh] = w.subscribers.emplace(who.address(), subscriber_entry{who, 0, false});
  if (fresh) {
    reference(self, who);
    if (w.subscribers.size() == 1 && st.ctx->watch) st.ctx->watch->observe(id, slot);
  }
  return it->second;
}

// The id's values now (readiness from the slot, the runner's status), kept in `watched` so later
// events never go back to an older value.
std::pair<readiness, std::optional<runner_status>> values_now(runtime_pointer self, const std::string& id,
                                                              const std::shared_ptr<segment_slot>& slot) {
  auto& st = self->state;
  auto& w = st.watched[id];
  // The counter before the fields: the value read is at least as new as the counter says.
  const auto counter = slot->change_counter();
  const auto now = slot->read();
  if (counter >= w.counter) {
    w.counter = counter;
    w.value = now;
  }
  std::optional<runner_status> status;
  if (auto e = st.ctx->registry->find(id)) {
    auto [snap, version] = e->snapshot()->load_versioned();
    status = snap.status();
    if (e->token() != w.status_token || version >= w.status_version) {
      w.status_token = e->token();
      w.status_version = version;
      w.status = status;
    }
  }
  return {w.value, status};
}

std::optional<caf::error> check_events(const char* what, std::uint8_t events) {
  if (events == 0 || (events & ~subscribe_events_all) != 0) {
    return make_error(errc::invalid_argument, std::string(what) + ": events " + std::to_string(events) +
                                                  " must name readiness (1), runner state (2) or both (3)");
  }
  return std::nullopt;
}

// `sender`: who is notified (the request's sender, or the requester a gated_request names).
caf::result<subscribed> subscribe_one(runtime_pointer self, const subscribe& m, const caf::strong_actor_ptr& sender) {
  auto& st = self->state;
  if (!sender) return make_error(errc::invalid_argument, "subscribe needs a sender to notify");
  if (auto ok = check_backend_id(m.id); !ok) return make_error(ok.error());
  if (auto bad = check_events("subscribe", m.events)) return *bad;
  auto slot = st.ctx->segment->find(m.id);
  if (!slot) return make_error(errc::not_registered, "backend id " + m.id + " has no slot in this database");
  watch_for(self, m.id, slot, caf::actor_cast<caf::actor>(sender)).explicit_events = m.events;
  auto [value, status] = values_now(self, m.id, slot);
  return subscribed{m.id, value, status};
}

caf::result<subscribed_all> subscribe_everything(runtime_pointer self, const subscribe_all& m,
                                                 const caf::strong_actor_ptr& sender) {
  auto& st = self->state;
  if (!sender) return make_error(errc::invalid_argument, "subscribe_all needs a sender to notify");
  if (auto bad = check_events("subscribe_all", m.events)) return *bad;
  if (st.stopping) return make_error(errc::stopped, "the runtime is stopped");
  auto who = caf::actor_cast<caf::actor>(sender);
  auto [it, fresh] = st.all_subscribers.emplace(who.address(), std::make_pair(who, m.events));
  if (fresh) reference(self, who);
  it->second.second = m.events;
  subscribed_all out;
  for (auto& e : st.ctx->registry->all()) {
    watch_for(self, e->id(), e->slot(), who).through_all = true;
    auto [value, status] = values_now(self, e->id(), e->slot());
    if ((m.events & subscribe_readiness) != 0) caf::anon_send(who, readiness_changed{e->id(), value});
    if ((m.events & subscribe_runner_state) != 0 && status) caf::anon_send(who, runner_state_changed{e->id(), *status});
    out.ids.push_back(e->id());
  }
  return out;
}

void unsubscribe_everything(runtime_pointer self, const caf::actor_addr& who) {
  auto& st = self->state;
  if (st.all_subscribers.count(who) == 0) return;
  std::vector<std::string> ids;
  for (auto& [id, w] : st.watched) {
    if (w.subscribers.count(who) != 0) ids.push_back(id);
  }
  // Every entry's through_all goes before the events it refers to.
  for (auto& id : ids) drop_subscriber(self, id, who, subscription_part::all_only);
  st.all_subscribers.erase(who);
  unreference(self, who);
}

// -- the actor ---------------------------------------------------------------------------------

// -- commits and queries as messages (issue 29) ------------------------------------------------

// Data never passes to a peer of the middleman (<dix/caf.hpp>): besides the published gate's
// refusal, and the gate never giving a peer this actor's handle, a commit or a query from another
// node, or with no sender (an anonymous one may come from a peer, and nobody would hear its
// outcome), is refused here too (decision 0066: a second layer, not the boundary).
std::optional<caf::error> refused_sender(runtime_pointer self, const char* what) {
  const auto& sender = self->current_sender();
  if (sender != nullptr && sender->node() == self->node()) return std::nullopt;
  return make_error(errc::not_supported, std::string(what) + " is taken only from an actor of the runtime's own "
                                                               "node that can hear the answer (not anonymously)");
}

caf::result<transaction_committed> commit_one(runtime_pointer self, commit_transaction& m) {
  auto& st = self->state;
  if (auto refused = refused_sender(self, "commit_transaction")) return std::move(*refused);
  if (st.stopping) return make_error(errc::stopped, "the runtime is stopped");
  const auto& stores = st.ctx->stores;
  std::size_t index = 0;
  if (!m.log.empty()) {
    auto it = std::find_if(stores.begin(), stores.end(), [&](const auto& store) { return store->log_name() == m.log; });
    if (it == stores.end()) {
      return make_error(errc::invalid_argument, "commit_transaction: no store with log \"" + m.log + "\" is attached");
    }
    index = static_cast<std::size_t>(it - stores.begin());
  }
  auto c = st.committers.find(index);
  if (c == st.committers.end()) {
    c = st.committers.emplace(index, spawn_committer(self->home_system(), stores[index], st.ctx->detached)).first;
    self->monitor(c->second);  // one that ends is forgotten: the next commit gets a new one
  }
  return self->delegate(c->second, std::move(m));
}

void start_query(runtime_pointer self, runtime_state::pending_query p);

// A running query's answer, once (later calls for the same worker do nothing); then the next
// queued query starts.
void answer_query(runtime_pointer self, const caf::actor_addr& worker, std::optional<index_rows> rows, caf::error err) {
  auto& st = self->state;
  auto it = st.running_queries.find(worker);
  if (it == st.running_queries.end()) return;
  auto promise = it->second;
  st.running_queries.erase(it);
  if (rows) promise.deliver(std::move(*rows));
  else promise.deliver(std::move(err));
  if (auto next = st.queries.finished()) start_query(self, std::move(*next));
}

void start_query(runtime_pointer self, runtime_state::pending_query p) {
  if (p.deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*p.deadline - now_of(self));
    p.request.timeout_ms = std::max<std::int64_t>(left.count(), 0);
  }
  auto worker = spawn_query_worker(self->home_system(), std::move(p.served), self->state.ctx->detached);
  const auto addr = worker.address();
  self->state.running_queries.emplace(addr, p.promise);
  self->monitor(worker);  // a worker that ends without its answer is answered for (the down handler)
  self->request(worker, caf::infinite, std::move(p.request))
    .then([self, addr](index_rows& rows) { answer_query(self, addr, std::move(rows), caf::error{}); },
          [self, addr](caf::error& err) { answer_query(self, addr, std::nullopt, std::move(err)); });
}

// A query whose coverage is settled (or that needs none first) takes a worker, waits its turn or
// is refused.
void admit_query(runtime_pointer self, runtime_state::pending_query p) {
  auto& st = self->state;
  auto promise = p.promise;
  const bool waited = p.deadline.has_value();  // bounded by max_waiting_queries already
  switch (st.queries.admit(p, !waited)) {
    case query_gate<runtime_state::pending_query>::verdict::start: start_query(self, std::move(p)); break;
    case query_gate<runtime_state::pending_query>::verdict::queued: break;
    case query_gate<runtime_state::pending_query>::verdict::refused:
      // Through the promise: making it answered the request.
      // timeout, retryable, as an index node answers when its queries are all taken.
      promise.deliver(make_error(errc::timeout, "query_index: " + std::to_string(st.queries.queued()) +
                                                    " queries already wait for a worker; try again"));
      break;
  }
}

// Sends `outcome` of the waiter `key` back to the runtime actor, through its mailbox (the
// watcher's thread, or under the test coordinator the thread that looks, resolves it).
std::function<void(result<void>)> post_coverage_outcome(runtime_pointer self, std::uint64_t key) {
  caf::weak_actor_ptr me = self->ctrl();
  return [me, key](result<void> outcome) {
    auto strong = me.lock();
    if (!strong) return;
    caf::anon_send(caf::actor_cast<runtime_actor_impl>(strong),
                   coverage_waited{key, outcome ? caf::error{} : make_error(outcome.error())});
  };
}

// How many `wait` queries may wait for their coverage at once; beyond, timeout (retryable).
constexpr std::size_t max_waiting_queries = 4096;

std::chrono::milliseconds coverage_timeout_of(std::int64_t timeout_ms) {
  return std::chrono::milliseconds(std::clamp<std::int64_t>(timeout_ms, 0, std::numeric_limits<std::uint32_t>::max()));
}

caf::result<index_rows> query_one(runtime_pointer self, query_index& m) {
  auto& st = self->state;
  if (auto refused = refused_sender(self, "query_index")) return std::move(*refused);
  if (st.stopping) return make_error(errc::stopped, "the runtime is stopped");
  auto e = st.ctx->registry->find(m.id);
  if (!e) return make_error(errc::not_registered, "query_index: backend id " + m.id + " is not registered in this runtime");
  if (auto refused = query_refusal(m)) return make_error(*refused);
  if (m.mode == coverage_kind::wait && m.timeout_ms < 0) {
    return make_error(errc::invalid_argument, "query_index: timeout_ms " + std::to_string(m.timeout_ms) + " is negative");
  }
  if (m.mode == coverage_kind::wait && st.waiting_queries.size() >= max_waiting_queries) {
    // timeout, retryable, as the query gate answers when its queue is full.
    return make_error(errc::timeout, "query_index: " + std::to_string(st.waiting_queries.size()) +
                                         " wait queries already wait for their coverage; try again");
  }
  runtime_state::pending_query p{std::move(m), e->settings().backend, self->make_response_promise<index_rows>(),
                                 std::nullopt};
  auto promise = p.promise;
  if (p.request.mode != coverage_kind::wait) {
    admit_query(self, std::move(p));
    return promise;
  }
  // `wait` (api.md §7): the wait runs here first, through the runtime's coverage waiters, so a
  // waiting query holds no worker; the worker's admission then waits only for what is left of
  // the timeout (the index's coverage is there by then unless it fell back meanwhile).
  const auto key = ++st.next_coverage_key;
  const auto timeout = coverage_timeout_of(p.request.timeout_ms);
  const auto since = p.request.since;
  const auto id = p.request.id;
  p.deadline = now_of(self) + timeout;
  st.waiting_queries.emplace(key, std::move(p));
  st.ctx->waiters->add(id, since, timeout, {}, post_coverage_outcome(self, key));
  return promise;
}

unsubscribed unsubscribe_one(runtime_pointer self, const unsubscribe& m, const caf::strong_actor_ptr& sender) {
  if (sender) drop_subscriber(self, m.id, sender->address(), subscription_part::explicit_only);
  return {m.id};
}

unsubscribed_all unsubscribe_all_of(runtime_pointer self, const unsubscribe_all&, const caf::strong_actor_ptr& sender) {
  if (sender) unsubscribe_everything(self, sender->address());
  return {};
}

// A subscription answer to the gate's requester itself (gated_request), or the error to the gate.
template <class T>
caf::result<caf::message> answer_requester(runtime_pointer self, const gated_request& g,
                                           const caf::strong_actor_ptr& requester, caf::result<T> r) {
  if (r.flag == caf::rt_error) return std::move(r.err);
  if (r.flag != caf::rt_value) return make_error(errc::invalid_argument, "gated_request: no answer to pass on");
  if (requester) requester->enqueue(g.answer_as, g.answer_id.response_id(), std::move(r.value), self->context());
  return caf::make_message(true);
}

// The gate's subscription requests (gated_request); anything else is an unexpected message, as
// CAF's default says.
caf::result<caf::message> on_other(runtime_pointer self, caf::scheduled_actor* ptr, caf::message_view& x) {
  if (!x.content().match_elements<gated_request>()) return caf::print_and_drop(ptr, x);
  const auto& g = x.content().get_as<gated_request>(0);
  auto requester = caf::actor_cast<caf::strong_actor_ptr>(g.requester);
  const auto& r = g.request;
  if (r.match_elements<subscribe>()) {
    return answer_requester(self, g, requester, subscribe_one(self, r.get_as<subscribe>(0), requester));
  }
  if (r.match_elements<unsubscribe>()) {
    return answer_requester(self, g, requester,
                            caf::result<unsubscribed>{unsubscribe_one(self, r.get_as<unsubscribe>(0), requester)});
  }
  if (r.match_elements<subscribe_all>()) {
    return answer_requester(self, g, requester, subscribe_everything(self, r.get_as<subscribe_all>(0), requester));
  }
  if (r.match_elements<unsubscribe_all>()) {
    return answer_requester(self, g, requester,
                            caf::result<unsubscribed_all>{unsubscribe_all_of(self, r.get_as<unsubscribe_all>(0), requester)});
  }
  return make_error(errc::invalid_argument, "gated_request: not a subscription request");
}

runtime_actor_impl::behavior_type runtime_fn(runtime_pointer self, std::shared_ptr<runtime_context> ctx) {
  auto& st = self->state;
  st.ctx = ctx;
  st.supervisor = spawn_supervisor(self->home_system());
  st.publisher = spawn_readiness_publisher(self->home_system(), ctx->segment, caf::actor_cast<caf::actor>(self), *ctx->time);
  self->monitor(st.supervisor);
  self->monitor(st.publisher);
  ctx->supervisor = st.supervisor.address();
  ctx->publisher = st.publisher.address();
  ctx->watch = std::make_shared<watcher>(ctx->segment, ctx->registry, caf::actor_cast<caf::actor>(self),
                                         ctx->options.runner.max_flush_age, caf::actor_cast<caf::actor>(st.supervisor));
  prepare_coverage(*ctx);
  ctx->watch->set_coverage(ctx->waiters);
  if (ctx->watcher_thread) {
    if (auto started = ctx->watch->start(); !started) {
      // Without a watcher rebuild requests from other processes and subscriptions would go
      // unseen: the runtime cannot keep its contract, so it ends at once.
      self->quit(make_error(started.error()));
    }
  }
  std::weak_ptr<runtime_registry> registry = ctx->registry;
  for (auto& s : ctx->stores) {
    st.listeners.push_back(add_commit_listener(*s, [registry](const commit_event& e) {
      if (auto r = registry.lock()) {
        std::uint8_t flags = wake_flag::commit;
        if ((e.flags & header_flag::system) != 0) flags |= wake_flag::system;
        r->wake_all(flags);
      }
    }));
  }
  self->set_default_handler([self](caf::scheduled_actor* ptr, caf::message_view& x) { return on_other(self, ptr, x); });
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& s = self->state;
    if (dm.source == s.supervisor.address() || dm.source == s.publisher.address()) {
      lost_helper(self, dm.source == s.supervisor.address() ? "supervisor" : "readiness publisher", dm.reason);
      return;
    }
    // A query worker ends normally after its answer (which comes first); ending otherwise, it
    // never answers, so the runtime does.
    if (s.running_queries.count(dm.source) != 0) {
      if (dm.reason) {
        answer_query(self, dm.source, std::nullopt,
                     make_error(errc::backend_failed, "query_index: the query's worker ended without an answer (" +
                                                          to_string(dm.reason) + ")"));
      }
      return;
    }
    for (auto c = s.committers.begin(); c != s.committers.end(); ++c) {
      if (c->second.address() == dm.source) {
        s.committers.erase(c);
        return;
      }
    }
    unsubscribe_everything(self, dm.source);
    std::vector<std::string> ids;
    for (auto& [id, w] : self->state.watched) {
      if (w.subscribers.count(dm.source) != 0) ids.push_back(id);
    }
    for (auto& id : ids) drop_subscriber(self, id, dm.source);
  });
  // An exit message stops the runtime first (every id released), then ends it.
  self->set_exit_handler([self](caf::exit_msg& em) {
    auto& s = self->state;
    // Answered to requesters and sent to monitors, remote ones too: a reason CAF can send again.
    s.exit_reason = wire::sendable_reason(std::move(em.reason), self->context());
    if (s.stop_outcome) {
      finish(self);
      return;
    }
    begin_stop(self);
  });
  return {
    [self](register_index& m) -> caf::result<index_registered> {
      auto& rs = self->state;
      // Releases the facade detached meanwhile start now, so an earlier registration of this
      // backend object is found whichever message came first.
      for (auto& d : rs.ctx->registry->take_all_detached()) release(self, d);
      if (rs.stopping) return make_error(errc::stopped, "the runtime is stopped");  // §2.1: stopped first
      const auto* object = m.value.backend.get();
      for (auto& [token, t] : rs.registrations) {
        const auto& e = *t.record;
        if (e.stage() == registration_stage::held && e.settings().backend.get() == object) {
          return make_error(errc::backend_failed, "backend " + e.id() +
                                                    " is still held by its previous registration, whose shutdown "
                                                    "was rejected; request_rebuild retries that release");
        }
      }
      for (auto& [token, t] : rs.registrations) {
        if (!t.record->releasing() || t.record->settings().backend.get() != object || !object) continue;
        auto promise = self->make_response_promise<index_registered>();
        t.waiting.push_back({std::move(m.value), promise});
        return promise;
      }
      auto done = register_one(self, std::move(m.value));
      if (!done) return done.error();
      return std::move(*done);
    },
    [self](unregister_index& m) -> caf::result<index_unregistered> {
      auto e = self->state.ctx->registry->find(m.id);
      if (!e && self->state.stopping) return make_error(errc::stopped, "the runtime is stopped");  // §15
      if (!e) return make_error(errc::not_registered, "backend id " + m.id + " is not registered in this runtime");
      start_unregister(self, e);
      return await_release(self, e->token(), m.id);
    },
    [self](unregister_registration& m) -> caf::result<index_unregistered> {
      return await_release(self, m.token, m.id);
    },
    [self](query_status& m) -> status_report {
      auto e = self->state.ctx->registry->find(m.id);
      if (!e) return {m.id, std::nullopt};
      return {m.id, e->snapshot()->load().status()};
    },
    [self](query_metrics& m) -> metrics_report {
      auto e = self->state.ctx->registry->find(m.id);
      if (!e) return {m.id, std::nullopt};
      return {m.id, metrics_of(*e, now_of(self), self->state.ctx->time->wall_now_ns())};
    },
    [self](query_readiness& m) -> caf::result<readiness_report> {
      if (auto ok = check_backend_id(m.id); !ok) return make_error(ok.error());
      auto slot = self->state.ctx->segment->find(m.id);
      if (!slot) return make_error(errc::not_registered, "backend id " + m.id + " has no slot in this database");
      return readiness_report{m.id, slot->read()};
    },
    [self](rebuild_index& m) -> caf::result<rebuild_requested> { return rebuild_one(self, m.id); },
    [self](verify_index& m) -> caf::result<index_verified> { return verify_one(self, m); },
    [self](subscribe& m) -> caf::result<subscribed> { return subscribe_one(self, m, self->current_sender()); },
    [self](unsubscribe& m) -> unsubscribed { return unsubscribe_one(self, m, self->current_sender()); },
    [self](subscribe_all& m) -> caf::result<subscribed_all> {
      return subscribe_everything(self, m, self->current_sender());
    },
    [self](unsubscribe_all& m) -> unsubscribed_all { return unsubscribe_all_of(self, m, self->current_sender()); },
    [self](stop_runtime&) -> caf::result<runtime_stopped> {
      auto& s = self->state;
      if (s.stop_outcome) {
        if (*s.stop_outcome) return *s.stop_outcome;
        return runtime_stopped{};
      }
      auto promise = self->make_response_promise<runtime_stopped>();
      s.stop_waiters.push_back(promise);
      begin_stop(self);
      return promise;
    },
    [self](wait_coverage& m) -> caf::result<coverage_reached> {
      auto& s = self->state;
      const auto key = ++s.next_coverage_key;
      auto promise = self->make_response_promise<coverage_reached>();
      s.coverage_requests.emplace(key, std::make_pair(m, promise));
      // The watcher thread resolves the waiter; the answer comes back through the mailbox.
      auto timeout = std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(
          std::min<std::uint64_t>(m.timeout_ms, std::numeric_limits<std::uint32_t>::max())));
      s.ctx->waiters->add(m.id, m.since, timeout, {}, post_coverage_outcome(self, key));
      return promise;
    },
    [self](commit_transaction& m) -> caf::result<transaction_committed> { return commit_one(self, m); },
    [self](query_index& m) -> caf::result<index_rows> { return query_one(self, m); },
    [self](coverage_waited& m) {
      auto& s = self->state;
      if (auto q = s.waiting_queries.find(m.key); q != s.waiting_queries.end()) {
        auto p = std::move(q->second);
        s.waiting_queries.erase(q);
        if (m.outcome) {
          p.promise.deliver(m.outcome);
          return;
        }
        admit_query(self, std::move(p));  // start_query cuts its timeout to what is left
        return;
      }
      auto it = s.coverage_requests.find(m.key);
      if (it == s.coverage_requests.end()) return;
      auto [request, promise] = std::move(it->second);
      s.coverage_requests.erase(it);
      if (m.outcome) promise.deliver(m.outcome);
      else promise.deliver(coverage_reached{request.id, request.since});
    },
    [self](verify_requested& m) { serve_verify_request(self, m); },
    [self](readiness_observed& m) {
      auto w = self->state.watched.find(m.id);
      if (w == self->state.watched.end()) return;
      auto& x = w->second;
      if (m.change_counter <= x.counter) return;  // an older look than what the subscribers have
      x.counter = m.change_counter;
      if (same(x.value, m.readiness)) return;
      x.value = m.readiness;
      for (auto& [addr, sub] : x.subscribers) {
        if ((events_of(self->state, addr, sub) & subscribe_readiness) != 0) caf::anon_send(sub.handle, readiness_changed{m.id, m.readiness});
      }
    },
    [self](runner_status_observed& m) {
      auto w = self->state.watched.find(m.id);
      if (w == self->state.watched.end()) return;
      auto e = self->state.ctx->registry->find(m.id);
      if (!e || e->token() != m.token) return;  // an earlier registration of the id
      auto& x = w->second;
      if (x.status_token == m.token && m.version <= x.status_version) return;
      x.status_token = m.token;
      x.status_version = m.version;
      x.status = m.status;
      for (auto& [addr, sub] : x.subscribers) {
        if ((events_of(self->state, addr, sub) & subscribe_runner_state) != 0) caf::anon_send(sub.handle, runner_state_changed{m.id, m.status});
      }
    },
  };
}

}  // namespace

runtime_actor_impl spawn_runtime_actor(caf::actor_system& sys, std::shared_ptr<runtime_context> ctx) {
  if (ctx->detached) return sys.spawn<caf::detached>(runtime_fn, std::move(ctx));
  return sys.spawn(runtime_fn, std::move(ctx));
}

}  // namespace dix
