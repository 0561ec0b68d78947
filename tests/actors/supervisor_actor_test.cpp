// [actor] The supervisor (actors.md §3) on CAF's test coordinator: a crashed child is an exit
// message with reason `kill`, the restart delays are delayed messages moved by advance().
#include <catch2/catch.hpp>

#include "messages/errors.hpp"
#include "support/wired_id.hpp"

using namespace dix;
using namespace std::chrono_literals;

namespace {

runner_options fast_policy() {
  runner_options o;
  o.rebuild_backoff = 100ms;
  o.max_rebuild_attempts = 3;
  return o;
}

// One supervised registration over a fake store and the simulated backend, wired by wire_registration(). The
// spawn functions remember the newest child of each kind, so a test can crash exactly the one the
// supervisor watches.
struct supervised : test::wired_id {
  std::vector<std::uint64_t>& persisted = meta->epochs;
  int& markers = meta->markers;  // condemned/<id> writes
  supervisor_actor sup;
  std::shared_ptr<ownership> record;  // the registration's ownership record
  log_tailer_actor tailer;
  backend_proxy_actor proxy;
  runner_actor runner;
  int tailers = 0, proxies = 0, runners = 0;
  std::optional<readiness_reason> last_start;

  runner_options options;
  std::uint64_t token = 1;

  // hold_work_barriers: from the start (the runner rebuilds the fresh index at its spawn), every
  // barrier of work waits for backend->release_work_barriers(), so a rebuild's end is observable.
  explicit supervised(runner_options o = fast_policy(), bool hold_work_barriers = false) : options(o) {
    backend->hold_work_barriers = hold_work_barriers;
    supervise_registration();
  }
  ~supervised() override {
    caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
    run();
  }

  // The registration `token` of "idx", wired and handed to the supervisor (spawned at the first).
  void supervise_registration() {
    auto spec = wiring(options, token);
    record = spec->record;
    auto spawn_tailer = spec->spawn_tailer;
    auto spawn_proxy = spec->spawn_proxy;
    auto spawn_runner = spec->spawn_runner;
    spec->spawn_tailer = [this, spawn_tailer] {
      ++tailers;
      return tailer = spawn_tailer();
    };
    spec->spawn_proxy = [this, spawn_proxy] {
      ++proxies;
      return proxy = spawn_proxy();
    };
    spec->spawn_runner = [this, spawn_runner](log_tailer_actor t, backend_proxy_actor x, std::optional<readiness_reason> condemned) {
      ++runners;
      last_start = condemned;
      return runner = spawn_runner(std::move(t), std::move(x), condemned);
    };
    if (!sup) sup = spawn_supervisor(sys);
    caf::anon_send(sup, supervise{spec});
    run();
  }
  // The index this registration built, made durable and released; then a new registration of the
  // id over the same backend, which no longer implements reset (say, another build of it): its
  // runner acquires, trusts the durable cursor and publishes `ready`.
  void reregister_without_reset() {
    auto s = unsupervise_now();
    REQUIRE(s);
    REQUIRE_FALSE(s->error);
    backend->can_reset = false;
    ++token;
    supervise_registration();
  }
  // "idx" ready on a backend that cannot reset: one record, the index built by registration 1 and
  // found by registration 2 (reregister_without_reset).
  void ready_without_reset() {
    commit("a", "1");
    advance(std::chrono::milliseconds(1000));
    reregister_without_reset();
    REQUIRE(slot->read().state == readiness_state::ready);
  }
  // Parked until a rebuild: a commit delivers nothing, the slot stays needs-rebuild, and no reset
  // came after registration 1's.
  void check_parked() {
    auto delivered = backend->seen.size();
    commit("z", "26");
    CHECK(backend->seen.size() == delivered);
    CHECK(slot->read().state == readiness_state::needs_rebuild);
    CHECK(backend->resets == 1);
  }

  void commit(const std::string& id, const std::string& value) {
    store.commit({test::put(1, id, value)});
    caf::anon_send(runner, dix::wake{wake_flag::commit});
    run();
  }
  template <class Handle>
  void crash(const Handle& h) {
    caf::anon_send_exit(h, caf::exit_reason::kill);
    run();
  }
  // The slot's state and reason are these.
  bool slot_says(readiness_state state, readiness_reason reason) {
    const auto now = slot->read();
    return now.state == state && now.reason == reason;
  }
  bool durable_has(const std::string& id) { return backend->durable_index().count(test::index_key("main", 1, id)) == 1; }
  // Whether another requester gets the lock at once (the id's entry is free); the entry, or the
  // wait for it, is given back at once.
  bool lock_free() {
    bool granted = false;
    locks.acquire("idx", 99, [&](result<void> r, bool) { granted = static_cast<bool>(r); });
    locks.release("idx", 99);
    return granted;
  }
  std::optional<stopped> unsupervise_now() {
    caf::scoped_actor self{sys};
    self->send(sup, unsupervise{token});
    run();
    return test::caf_fixture::try_receive<stopped>(self);
  }
};

}  // namespace

TEST_CASE("supervision: a tailer crash is transient: no condemnation, readiness unchanged, the index continues from its durable cursor (behaviour 27)", "[actor][supervision]") {
  supervised p;
  p.commit("a", "1");
  p.advance(1000ms);
  REQUIRE(p.durable_has("a"));
  REQUIRE(p.slot->read().state == readiness_state::ready);
  const auto epoch = p.slot->read().owner_epoch;
  const auto epochs = p.persisted;  // the acquisition's and the fresh index's rebuild's
  const auto publications = p.readiness_changes();
  REQUIRE(p.snapshot->load().last_fault == readiness_reason::cursor_missing);  // that rebuild's cause

  p.crash(p.tailer);
  CHECK(p.slot->read().state == readiness_state::ready);  // nothing published
  CHECK(p.snapshot->load().transient_faults == 1);
  CHECK(p.tailers == 1);  // respawned only after the policy's delay
  p.commit("b", "2");     // waits: no tailer yet
  p.advance(100ms);       // the replacement is up; the runner reinstalls its durable cursor
  CHECK(p.tailers == 2);
  p.advance(1000ms);      // and the age flush makes the new work durable
  CHECK(p.durable_has("b"));
  CHECK(p.slot->read().state == readiness_state::ready);
  CHECK(p.slot->read().owner_epoch == epoch);  // the same ownership: no reacquisition
  CHECK(p.persisted == epochs);
  CHECK(p.readiness_changes() == publications);
  CHECK(p.snapshot->load().last_fault == readiness_reason::cursor_missing);  // a transient fault sets none
  CHECK(p.snapshot->load().transient_faults == 0);  // reset by the durable advance
  CHECK(p.backend->resets == 1);                    // no rebuild
  CHECK(p.runners == 1);
}

TEST_CASE("supervision: max_rebuild_attempts tailer crashes in a row escalate: unavailable, runner-failed, released, nothing restarted", "[actor][supervision]") {
  supervised p;  // max_rebuild_attempts = 3
  p.commit("a", "1");
  p.advance(1000ms);
  REQUIRE(p.slot->read().state == readiness_state::ready);
  p.crash(p.tailer);
  p.advance(100ms);  // first delay: rebuild_backoff
  REQUIRE(p.tailers == 2);
  p.crash(p.tailer);
  p.advance(200ms);  // second: doubled
  REQUIRE(p.tailers == 3);
  CHECK(p.slot->read().state == readiness_state::ready);
  p.crash(p.tailer);  // third in a row: escalate
  CHECK(p.slot->read().state == readiness_state::unavailable);
  CHECK(p.slot->read().reason == readiness_reason::runner_failed);
  CHECK(p.snapshot->load().state == runner_state::unavailable);
  CHECK(p.lock_free());
  p.advance(10s);
  CHECK(p.tailers == 3);
  auto s = p.unsupervise_now();
  REQUIRE(s);
  CHECK_FALSE(s->error);
}

TEST_CASE("supervision: a rebuild request revives an escalated registration: a new tailer, the runner acquires, consumes the request and rebuilds to ready (actors.md 3)", "[actor][supervision][rebuild]") {
  supervised p;  // max_rebuild_attempts = 3
  p.commit("a", "1");
  p.advance(1000ms);
  REQUIRE(p.slot->read().state == readiness_state::ready);
  const auto resets = p.backend->resets;
  p.crash(p.tailer);
  p.advance(100ms);
  p.crash(p.tailer);
  p.advance(200ms);
  p.crash(p.tailer);  // escalated
  REQUIRE(p.slot->read().state == readiness_state::unavailable);
  REQUIRE(p.lock_free());
  p.commit("b", "2");
  // What runtime_actor's request_rebuild does: the flag, the supervisor, the runner.
  p.slot->request_rebuild();
  caf::anon_send(p.sup, revive{p.token});
  caf::anon_send(p.runner, wake{wake_flag::rebuild});
  p.run();
  CHECK(p.tailers == 4);
  CHECK_FALSE(p.slot->rebuild_requested());  // consumed by the acquisition
  p.advance(1000ms);
  CHECK(p.slot->read().state == readiness_state::ready);
  CHECK(p.backend->resets == resets + 1);
  CHECK(p.runners == 1);  // the runner was never lost: only its tailer
}

TEST_CASE("supervision: a proxy crash condemns with backend-failed and the replacement proxy serves the rebuild: shutdown, new epoch, reset, scan, ready", "[actor][supervision][rebuild]") {
  supervised p;
  p.commit("a", "1");
  p.advance(1000ms);
  REQUIRE(p.slot->read().state == readiness_state::ready);
  REQUIRE(p.backend->resets == 1);  // the fresh index's
  const auto epoch = p.slot->read().owner_epoch;
  p.commit("b", "2");  // accepted, not yet durable
  const auto before = p.publications().size();
  p.backend->hold_work_barriers = true;  // the rebuild ends at the release below
  p.crash(p.proxy);
  auto now = p.slot->read();
  CHECK(now.state == readiness_state::needs_rebuild);
  CHECK(now.reason == readiness_reason::backend_failed);
  CHECK(p.backend->resets == 1);  // the attempt waits for a proxy to shut the epoch down
  CHECK_FALSE(p.lock_free());     // the owner keeps the lock for its rebuild
  p.advance(100ms);               // the replacement is up: the attempt runs through it
  CHECK(p.proxies == 2);
  CHECK(p.backend->resets == 2);
  now = p.slot->read();
  CHECK(now.state == readiness_state::rebuilding);
  CHECK(now.reason == readiness_reason::backend_failed);
  CHECK(now.rebuild_attempts == 1);
  CHECK(now.owner_epoch == epoch + 1);
  p.backend->release_work_barriers();  // the barrier asked for at the boundary makes it durable
  p.run();
  now = p.slot->read();
  CHECK(now.state == readiness_state::ready);
  CHECK(now.rebuild_attempts == 0);
  CHECK(now.owner_epoch == epoch + 1);
  CHECK(p.durable_has("a"));
  CHECK(p.durable_has("b"));  // from the scan: the reset emptied the index
  CHECK(p.persisted == std::vector<std::uint64_t>{1, epoch, epoch + 1});
  CHECK(p.snapshot->load().state == runner_state::idle);
  CHECK(p.snapshot->load().owner);
  CHECK(p.runners == 1);  // the same runner throughout
  auto published = p.publications();
  REQUIRE(published.size() > before);
  CHECK(published[before].state == readiness_state::needs_rebuild);
  CHECK(published.back().state == readiness_state::ready);
  // rebuilding until ready; then ready only (its coverage publications, from the capture at ready).
  std::size_t i = before + 1;
  while (i < published.size() && published[i].state == readiness_state::rebuilding) ++i;
  CHECK(i > before + 1);
  for (; i < published.size(); ++i) CHECK(published[i].state == readiness_state::ready);
}

TEST_CASE("supervision: on a backend that cannot reset, a proxy crash condemns with backend-failed, the release goes through the replacement proxy and the index stays parked", "[actor][supervision]") {
  supervised p;
  p.ready_without_reset();
  REQUIRE(p.proxies == 2);
  p.crash(p.proxy);
  CHECK(p.slot_says(readiness_state::needs_rebuild, readiness_reason::backend_failed));
  CHECK_FALSE(p.lock_free());  // the release waits for a proxy to quiesce the backend
  p.advance(100ms);
  CHECK(p.proxies == 3);
  CHECK(p.lock_free());  // flush(shutdown) → shutdown(epoch) → unlock, through the new proxy
  CHECK(p.snapshot->load().state == runner_state::needs_rebuild);
  CHECK_FALSE(p.snapshot->load().owner);
  p.check_parked();
}

TEST_CASE("supervision: a runner crash: the supervisor quiesces the backend, publishes needs-rebuild, runner-failed, unlocks and respawns the runner, which reacquires and rebuilds to ready", "[actor][supervision][rebuild]") {
  supervised p;
  p.commit("a", "1");
  p.advance(1000ms);
  REQUIRE(p.slot->read().state == readiness_state::ready);
  p.commit("b", "2");  // accepted, not yet durable: the supervisor's flush(shutdown) decides
  CHECK(p.markers == 0);
  const auto epoch = p.slot->read().owner_epoch;
  p.backend->hold_work_barriers = true;  // the rebuild ends at the release below
  p.crash(p.runner);
  CHECK(p.record->read().quiesced == epoch);  // a later release of the epoch skips its shutdown
  CHECK(p.markers == 1);  // the durable marker before the publication
  CHECK(p.slot->read().state == readiness_state::needs_rebuild);
  CHECK(p.slot->read().reason == readiness_reason::runner_failed);
  CHECK(p.lock_free());
  CHECK(p.runners == 1);
  CHECK(p.backend->resets == 1);  // the fresh index's
  p.advance(100ms);
  CHECK(p.runners == 2);
  REQUIRE(p.last_start);
  CHECK(*p.last_start == readiness_reason::runner_failed);
  // Woken at its spawn, the new runner acquires (epoch + 1), finds the slot condemned and the
  // marker, shuts that epoch down and rebuilds under epoch + 2.
  CHECK(p.backend->resets == 2);
  CHECK(p.persisted == std::vector<std::uint64_t>{1, epoch, epoch + 1, epoch + 2});
  auto now = p.slot->read();
  CHECK(now.state == readiness_state::rebuilding);
  CHECK(now.reason == readiness_reason::runner_failed);
  CHECK(now.rebuild_attempts == 1);
  CHECK(now.owner_epoch == epoch + 2);
  CHECK(p.snapshot->load().state == runner_state::rebuilding);
  CHECK(p.snapshot->load().owner);
  p.backend->release_work_barriers();  // the barrier asked for at the boundary makes it durable
  p.run();
  now = p.slot->read();
  CHECK(now.state == readiness_state::ready);
  CHECK(now.rebuild_attempts == 0);
  CHECK(p.durable_has("a"));
  CHECK(p.durable_has("b"));  // from the scan: the reset emptied the index
  p.commit("c", "3");         // not parked: the new owner serves commits
  p.advance(1000ms);
  CHECK(p.durable_has("c"));
  CHECK(p.slot->read().state == readiness_state::ready);
  CHECK(p.snapshot->load().state == runner_state::idle);
  CHECK(p.runners == 2);
}

TEST_CASE("supervision: on a backend that cannot reset, a runner crash ends with the respawned runner parked in needs-rebuild", "[actor][supervision]") {
  supervised p;
  p.ready_without_reset();
  REQUIRE(p.runners == 2);
  p.crash(p.runner);
  CHECK(p.slot_says(readiness_state::needs_rebuild, readiness_reason::runner_failed));
  CHECK(p.lock_free());
  p.advance(100ms);
  CHECK(p.runners == 3);
  CHECK(p.snapshot->load().state == runner_state::needs_rebuild);
  CHECK(p.lock_free());  // parked: it does not acquire
  p.check_parked();
}

TEST_CASE("supervision: a runner that dies during a rebuild leaves the slot's attempt count as it was: the respawned runner continues it after the backoff", "[actor][supervision][rebuild]") {
  supervised p(fast_policy(), true);  // rebuild_backoff = 100 ms; every attempt's end waits for the release below
  p.commit("a", "1");  // the fresh index's rebuild, attempt 1: its boundary not yet durable
  REQUIRE(p.slot->read().state == readiness_state::rebuilding);
  REQUIRE(p.slot->read().rebuild_attempts == 1);
  p.crash(p.runner);
  auto now = p.slot->read();
  CHECK(now.state == readiness_state::needs_rebuild);
  CHECK(now.reason == readiness_reason::runner_failed);
  CHECK(now.rebuild_attempts == 1);  // a suspect fault keeps the count (protocol.md §10.3)
  p.advance(100ms);                  // the respawned runner acquires: one attempt spent, so it backs off
  CHECK(p.runners == 2);
  CHECK(p.backend->resets == 1);
  CHECK(p.slot->read().state == readiness_state::needs_rebuild);
  p.advance(100ms);  // min(rebuild_backoff × 2^0, max_rebuild_backoff)
  CHECK(p.backend->resets == 2);
  now = p.slot->read();
  CHECK(now.state == readiness_state::rebuilding);
  CHECK(now.rebuild_attempts == 2);
  p.backend->release_work_barriers();
  p.run();
  CHECK(p.slot->read().state == readiness_state::ready);
  CHECK(p.slot->read().rebuild_attempts == 0);
  CHECK(p.durable_has("a"));
}

TEST_CASE("supervision: after a runner crash, status and metrics say what the supervisor published: not owner, needs-rebuild, runner-failed, no owner figures", "[actor][supervision]") {
  supervised p;
  p.commit("a", "1");
  p.advance(1000ms);
  REQUIRE(p.slot->read().state == readiness_state::ready);
  p.commit("b", "2");  // accepted, not yet durable: an owner figure the dead runner's snapshot shows
  const auto epoch = p.slot->read().owner_epoch;
  REQUIRE(p.snapshot->load().owner);
  REQUIRE(p.snapshot->load().accepted_batches > 0);
  p.crash(p.runner);
  REQUIRE(p.slot->read().state == readiness_state::needs_rebuild);
  REQUIRE(p.runners == 1);  // the supervisor's publication is the newest: no runner respawned yet
  const auto status = p.snapshot->load().status();
  CHECK(status.state == runner_state::needs_rebuild);
  CHECK(status.reason == readiness_reason::runner_failed);
  CHECK(status.epoch == epoch);
  const auto m = p.snapshot->load().metrics(p.clock.steady_now());
  CHECK_FALSE(m.owner);
  CHECK(m.accepted_batches == 0);
  CHECK(m.accepted_bytes == 0);
  CHECK(m.last_fault == readiness_reason::runner_failed);
}

TEST_CASE("supervision: a runner crash whose backend rejects the shutdown keeps the lock, and unregistering fails with backend_failed", "[actor][supervision]") {
  supervised p;
  p.commit("a", "1");
  p.advance(1000ms);
  p.backend->reject_shutdown = true;
  p.crash(p.runner);
  CHECK(p.slot->read().state == readiness_state::unavailable);
  CHECK(p.slot->read().reason == readiness_reason::shutdown_failed);
  CHECK(p.snapshot->load().state == runner_state::unavailable);  // stored before that publication
  CHECK(p.snapshot->load().reason == readiness_reason::shutdown_failed);
  CHECK_FALSE(p.snapshot->load().owner);  // the lock is the supervisor's; no runner owns it
  CHECK_FALSE(p.lock_free());
  p.advance(10s);
  CHECK(p.runners == 1);  // nothing restarted over a held lock
  auto s = p.unsupervise_now();
  REQUIRE(s);
  CHECK(to_errc(s->error) == errc::backend_failed);
}

TEST_CASE("supervision: unsupervise releases the id and stops its actors, a down of a stopped child restarts nothing", "[actor][supervision]") {
  supervised p;
  p.commit("a", "1");
  const auto epoch = p.slot->read().owner_epoch;
  auto s = p.unsupervise_now();
  REQUIRE(s);
  CHECK_FALSE(s->error);
  CHECK(p.durable_has("a"));  // flush(shutdown) made the accepted work durable
  CHECK(p.record->read().quiesced == epoch);  // the runner's successful shutdown is recorded
  CHECK(p.lock_free());
  p.advance(10s);
  CHECK(p.tailers == 1);
  CHECK(p.proxies == 1);
  CHECK(p.runners == 1);
}

namespace {

// Queues another requester (a registration of another runtime of the process, say) behind the
// owner of "idx" and records the slot as it is at the moment the entry is handed to it: every
// publication of the old holder must be in the slot by then (decision 0008).
struct handoff_observer {
  std::optional<dix::readiness> seen;
  std::optional<runner_snapshot> snapshot;  // the registration's at that moment
  void queue(supervised& p) {
    p.locks.acquire("idx", 99, [this, &p](result<void> r, bool) {
      if (!r) return;
      seen = p.slot->read();
      snapshot = p.snapshot->load();
    });
  }
};

}  // namespace

TEST_CASE("supervision: the supervisor hands a dead runner's entry on only after its needs-rebuild publication landed", "[actor][supervision][publisher]") {
  supervised p;
  p.commit("a", "1");
  p.advance(1000ms);
  REQUIRE(p.slot->read().state == readiness_state::ready);
  handoff_observer next;
  next.queue(p);
  REQUIRE_FALSE(next.seen);  // queued behind the owner
  p.crash(p.runner);
  REQUIRE(next.seen);
  CHECK(next.seen->state == readiness_state::needs_rebuild);
  CHECK(next.seen->reason == readiness_reason::runner_failed);
  REQUIRE(next.snapshot);  // and the snapshot stored before that publication
  CHECK_FALSE(next.snapshot->owner);
  CHECK(next.snapshot->state == runner_state::needs_rebuild);
  p.locks.release("idx", 99);
}

TEST_CASE("supervision: a runner whose proxy escalates publishes unavailable and hands its entry on only after that publication landed", "[actor][supervision][publisher]") {
  runner_options o = fast_policy();
  o.max_rebuild_attempts = 1;  // the first proxy crash escalates
  supervised p(o);
  p.commit("a", "1");
  p.advance(1000ms);
  REQUIRE(p.slot->read().state == readiness_state::ready);
  handoff_observer next;
  next.queue(p);
  p.crash(p.proxy);
  REQUIRE(next.seen);
  CHECK(next.seen->state == readiness_state::unavailable);
  CHECK(next.seen->reason == readiness_reason::backend_failed);
  CHECK(p.snapshot->load().state == runner_state::unavailable);
  p.locks.release("idx", 99);
}

TEST_CASE("supervision: a new runner whose bell already rang for a system commit still evaluates the index at the supervisor's commit wake (a non-system commit outranks it)", "[actor][supervision][bell]") {
  test::wired_id f;
  auto spec = f.wiring();
  std::shared_ptr<commit_bell> bell;
  spec->spawn_runner = [&bell, spawn = spec->spawn_runner, settings = spec->settings](
                         log_tailer_actor t, backend_proxy_actor x, std::optional<readiness_reason> condemned) {
    auto runner = spawn(std::move(t), std::move(x), condemned);
    // Another index's epoch write lands between the spawn and the runner's first wake: it rings
    // the bell the wiring set as the registration's current runner's.
    auto b = settings->runner_now->bell();
    if (b->ring(true)) bell = std::move(b);
    return runner;
  };
  auto sup = spawn_supervisor(f.sys);
  caf::anon_send(sup, supervise{spec});
  f.run();
  REQUIRE(bell);  // the ring found the new bell silent: a wake of its own went too
  CHECK(bell->take() == 0);  // the supervisor's wake took it
  CHECK_FALSE(f.meta->epochs.empty());  // acquired: an epoch minted and persisted
  CHECK(f.slot->read().owner_epoch > 0);
  caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
  f.run();
}

// decision 0037: a runner that dies while its backend's reset runs. The supervisor releases for it
// (flush(shutdown), shutdown of the rebuild's epoch) through the proxy, which starts neither call
// while the reset is outstanding: the backend hears nothing until its reset ended, and the lock
// is released only after the shutdown that follows it. The respawned runner then rebuilds to ready.
TEST_CASE("supervision: a runner that dies while its backend resets: the supervisor's release waits at the proxy for the reset, then unlocks", "[actor][supervision][rebuild]") {
  supervised p;
  p.commit("a", "1");
  p.advance(1000ms);
  REQUIRE(p.slot->read().state == readiness_state::ready);
  p.backend->hold_reset = true;
  p.slot->request_rebuild();
  caf::anon_send(p.runner, wake{wake_flag::rebuild});
  p.run();
  REQUIRE(p.backend->resetting());
  p.backend->hold_reset = false;
  const auto rebuild_epoch = p.slot->read().owner_epoch;
  p.crash(p.runner);
  CHECK(p.backend->violation.empty());  // no flush, no shutdown during the reset …
  CHECK_FALSE(p.lock_free());           // … and the lock is still held
  CHECK(p.record->read().quiesced != rebuild_epoch);
  REQUIRE(p.backend->finish_reset());
  p.run();
  CHECK(p.backend->violation.empty());
  CHECK(p.record->read().quiesced == rebuild_epoch);  // the release's shutdown, after the reset
  CHECK(p.slot_says(readiness_state::needs_rebuild, readiness_reason::runner_failed));
  CHECK(p.lock_free());
  p.advance(100ms);  // the restart delay: the respawned runner acquires and rebuilds
  CHECK(p.runners == 2);
  // Its attempt after the interrupted one's backoff, then the age flush (time moves in steps:
  // a timer armed while one advance runs is due after it).
  for (int i = 0; i < 5; ++i) p.advance(1000ms);
  CHECK(p.slot->read().state == readiness_state::ready);
  CHECK(p.durable_has("a"));
  CHECK(p.backend->violation.empty());
}
