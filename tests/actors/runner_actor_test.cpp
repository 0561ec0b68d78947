// [actor] The runner, tailer and backend proxy actors wired together on CAF's test coordinator
// (no detached actors, no sleeps): message flows the cores cannot show on their own.
#include <catch2/catch.hpp>

#include <algorithm>

#include "adapters/metrics_segment.hpp"
#include "support/wired_id.hpp"

using namespace dix;
using namespace std::chrono_literals;

namespace {

struct pipeline : test::wired_id {
  std::vector<std::uint64_t>& persisted = meta->epochs;
  log_tailer_actor tailer;
  backend_proxy_actor proxy;
  runner_actor runner;

  explicit pipeline(runner_options o = {}, std::optional<std::uint64_t> fingerprint = std::nullopt) {
    auto spec = wiring(o, 1, fingerprint);
    tailer = spec->spawn_tailer();
    proxy = spec->spawn_proxy();
    runner = spec->spawn_runner(tailer, proxy, std::nullopt);
  }
  ~pipeline() override {
    caf::anon_send_exit(runner, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(proxy, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(tailer, caf::exit_reason::user_shutdown);
    run();
  }

  void commit(const std::string& id, const std::string& value) {
    store.commit({test::put(1, id, value)});
    caf::anon_send(runner, dix::wake{wake_flag::commit});
    run();
  }
  // What another process's request_rebuild and the watcher do: the slot's flag, then a wake.
  void request_rebuild() {
    slot->request_rebuild();
    caf::anon_send(runner, dix::wake{wake_flag::rebuild});
    run();
  }
  runner_state state() { return snapshot->load().state; }
  bool durable_has(const std::string& id) { return backend->durable_index().count(test::index_key("main", 1, id)) == 1; }
};

constexpr std::uint64_t fingerprint = 0xF1F1;

// The states the publications went through, repeats folded (a rebuild republishes `rebuilding`
// with its new epoch).
std::vector<readiness_state> states_of(const std::vector<dix::readiness>& published) {
  std::vector<readiness_state> out;
  for (const auto& r : published) {
    if (out.empty() || out.back() != r.state) out.push_back(r.state);
  }
  return out;
}

}  // namespace

TEST_CASE("actors: a fresh index is condemned cursor-missing and rebuilt under a second epoch (reset, scan, boundary), ready once the barrier it asks for at once makes the boundary durable", "[actor][rebuild]") {
  pipeline p({}, fingerprint);
  p.backend->hold_work_barriers = true;  // the boundary stays pending until the barrier below
  p.commit("a", "1");
  // The acquisition's epoch 1, then the rebuild's 2: each written before it is used.
  CHECK(p.persisted == std::vector<std::uint64_t>{1, 2});
  CHECK(p.meta->markers == 1);  // the marker before the condemnation
  CHECK(p.backend->resets == 1);
  const auto& seen = p.backend->seen;  // scan chunks without `through`, then the boundary chunk
  REQUIRE_FALSE(seen.empty());
  for (std::size_t i = 0; i < seen.size(); ++i) {
    CHECK(seen[i]->epoch == 2);
    CHECK(seen[i]->rebuild);
    CHECK(seen[i]->through.has_value() == (i + 1 == seen.size()));
  }
  REQUIRE(seen.back()->through);
  CHECK(seen.back()->through->logs()[0].sequence == p.store.latest());  // boundary/idx
  auto now = p.slot->read();
  CHECK(now.state == readiness_state::rebuilding);  // the boundary is not durable yet
  CHECK(now.reason == readiness_reason::cursor_missing);
  CHECK(now.rebuild_attempts == 1);
  CHECK(now.owner_epoch == 2);
  CHECK(p.state() == runner_state::rebuilding);
  CHECK(p.backend->flushes_waiting() == 1);  // asked for at the boundary's acceptance, not at the age

  p.backend->release_work_barriers();  // the barrier makes the boundary durable; no time passes
  p.run();
  REQUIRE(p.backend->durable());
  CHECK(p.durable_has("a"));
  now = p.slot->read();
  CHECK(now.state == readiness_state::ready);
  CHECK(now.rebuild_attempts == 0);
  CHECK(now.owner_epoch == 2);
  CHECK(p.meta->records.fingerprint == fingerprint);  // settled before `ready`, the marker deleted
  CHECK_FALSE(p.meta->records.condemned);
  CHECK(p.state() == runner_state::idle);
  const auto published = p.publications();
  CHECK(states_of(published) ==
        std::vector<readiness_state>{readiness_state::needs_rebuild, readiness_state::rebuilding, readiness_state::ready});
  REQUIRE_FALSE(published.empty());
  CHECK(published.front().reason == readiness_reason::cursor_missing);
  CHECK(published.front().owner_epoch == 1);
  CHECK(p.snapshot->load().metrics(p.clock.steady_now()).rebuilt_records == 1);
}

TEST_CASE("actors: after deferred, commits do not redeliver, a changed redelivers the identical batch", "[actor][deferred]") {
  pipeline p;
  p.backend->auto_barrier = false;
  p.backend->cap = 1;
  p.commit("a", "1");
  p.commit("b", "2");
  REQUIRE(p.state() == runner_state::deferred);
  auto deferred_batch = p.backend->seen.back();
  auto calls = p.backend->seen.size();
  p.commit("c", "3");
  p.commit("d", "4");
  CHECK(p.backend->seen.size() == calls);
  p.backend->apply_queue();  // room: `changed`, from outside the actors (an applier thread)
  p.run();
  REQUIRE(p.backend->seen.size() > calls);
  CHECK(p.backend->seen[calls] == deferred_batch);  // the same batch object: same contents, same epoch
}

TEST_CASE("actors: a changed raised synchronously inside deliver reaches the runner after the result", "[actor][deferred]") {
  pipeline p;
  p.backend->auto_barrier = false;
  p.backend->cap = 1;
  p.backend->changed_inside_deliver = true;
  p.commit("a", "1");
  p.commit("b", "2");  // deferred, with a `changed` emitted inside that deliver
  // The proxy queued the change behind the deferred result, so the runner counted it after the
  // result and retried at once: no timer was needed.
  REQUIRE(p.backend->seen.size() >= 3);
  CHECK(p.backend->seen[1] == p.backend->seen[2]);
  CHECK(p.state() != runner_state::deferred);
}

TEST_CASE("actors: stop answers every request with the same outcome", "[actor][stop]") {
  pipeline p;
  p.commit("a", "1");
  caf::scoped_actor self{p.sys};
  self->send(p.runner, dix::stop{});
  self->send(p.runner, dix::stop{});
  p.run();
  auto first = test::caf_fixture::try_receive<dix::stopped>(self);
  auto second = test::caf_fixture::try_receive<dix::stopped>(self);
  REQUIRE(first);
  REQUIRE(second);
  CHECK_FALSE(first->error);
  CHECK_FALSE(second->error);
  CHECK(p.state() == runner_state::stopped);
  self->send(p.runner, dix::stop{});  // a later stop: the same, settled outcome
  p.run();
  auto third = test::caf_fixture::try_receive<dix::stopped>(self);
  REQUIRE(third);
  CHECK_FALSE(third->error);
}

TEST_CASE("actors: a rejected shutdown makes every stop fail with backend_failed and keeps the lock", "[actor][stop]") {
  pipeline p;
  p.commit("a", "1");
  p.backend->reject_shutdown = true;
  caf::scoped_actor self{p.sys};
  self->send(p.runner, dix::stop{});
  self->send(p.runner, dix::stop{});
  p.run();
  auto first = test::caf_fixture::try_receive<dix::stopped>(self);
  auto second = test::caf_fixture::try_receive<dix::stopped>(self);
  REQUIRE(first);
  REQUIRE(second);
  CHECK(to_errc(first->error) == errc::backend_failed);
  CHECK(to_errc(second->error) == errc::backend_failed);
  CHECK(p.slot->read().state == readiness_state::unavailable);
  CHECK(p.slot->read().reason == readiness_reason::shutdown_failed);
}

TEST_CASE("actors: a store that cannot be read is a transient fault: no marker, readiness unchanged, the index continues (behaviour 27)", "[actor][transient]") {
  runner_options o;
  o.rebuild_backoff = std::chrono::milliseconds(100);
  pipeline p(o, fingerprint);
  p.commit("a", "1");
  p.advance(1000ms);  // the fresh index's rebuild is over
  REQUIRE(p.slot->read().state == readiness_state::ready);
  const auto ready = p.slot->read();
  const auto publications = p.readiness_changes();
  const auto markers = p.meta->markers;  // the fresh index's condemnation wrote one
  const auto epochs = p.persisted;
  const auto fault = p.snapshot->load().last_fault;  // cursor-missing: the last suspect fault
  p.store.fail_reads = true;  // what a closed or failing primary store answers: io_error
  p.commit("b", "2");
  CHECK(p.slot->read().state == readiness_state::ready);  // no condemnation, no new publication
  CHECK(p.readiness_changes() == publications);
  CHECK(p.meta->markers == markers);
  CHECK(p.snapshot->load().transient_faults == 1);
  p.advance(100ms);  // the retry fails again
  CHECK(p.snapshot->load().transient_faults == 2);
  p.store.fail_reads = false;
  p.advance(200ms);   // the next retry resumes from the newest accepted cursor
  p.advance(1000ms);  // and the age flush makes it durable
  CHECK(p.backend->durable_index().count(test::index_key("main", 1, "b")) == 1);
  CHECK(p.slot->read().state == readiness_state::ready);
  CHECK(p.snapshot->load().transient_faults == 0);  // reset by the durable advance
  CHECK(p.snapshot->load().last_fault == fault);  // a transient fault is not a suspect one
  CHECK(p.readiness_changes() == publications);
  CHECK(p.meta->markers == markers);
  CHECK(p.persisted == epochs);  // the same ownership throughout: no reacquisition, no rebuild
  CHECK(p.slot->read().owner_epoch == ready.owner_epoch);
  CHECK(p.backend->resets == 1);
}

TEST_CASE("actors: a rebuild request to an idle owner resets exactly once and ends ready, a request during that rebuild is absorbed", "[actor][rebuild]") {
  pipeline p({}, fingerprint);
  p.commit("a", "1");
  p.advance(1000ms);
  REQUIRE(p.slot->read().state == readiness_state::ready);
  REQUIRE(p.state() == runner_state::idle);
  REQUIRE(p.backend->resets == 1);  // the fresh index's
  const auto before = p.publications().size();

  p.backend->hold_work_barriers = true;  // the rebuild ends at the release below
  p.request_rebuild();
  CHECK_FALSE(p.slot->rebuild_requested());  // consumed
  CHECK(p.backend->resets == 2);
  CHECK(p.meta->markers == 2);  // the marker before the condemnation, again
  CHECK(p.persisted == std::vector<std::uint64_t>{1, 2, 3});
  auto now = p.slot->read();
  CHECK(now.state == readiness_state::rebuilding);
  CHECK(now.reason == readiness_reason::rebuild_requested);
  CHECK(now.rebuild_attempts == 1);
  CHECK(now.owner_epoch == 3);
  CHECK(p.state() == runner_state::rebuilding);  // its boundary is not durable yet

  p.commit("b", "2");  // drained from the boundary
  p.request_rebuild();
  CHECK_FALSE(p.slot->rebuild_requested());  // consumed and absorbed by the running attempt
  CHECK(p.backend->resets == 2);
  CHECK(p.slot->read().owner_epoch == 3);

  p.backend->release_work_barriers();
  p.run();
  CHECK(p.backend->resets == 2);
  now = p.slot->read();
  CHECK(now.state == readiness_state::ready);
  CHECK(now.rebuild_attempts == 0);
  CHECK(now.owner_epoch == 3);
  CHECK(p.durable_has("a"));
  CHECK(p.durable_has("b"));
  CHECK(p.state() == runner_state::idle);
  std::vector<dix::readiness> published = p.publications();
  published.erase(published.begin(), published.begin() + static_cast<std::ptrdiff_t>(before));
  CHECK(states_of(published) ==
        std::vector<readiness_state>{readiness_state::needs_rebuild, readiness_state::rebuilding, readiness_state::ready});
}

TEST_CASE("actors: a rebuild mints its epoch only after its publications landed, so no reader sees ready under the rebuild's new epoch while the publisher lags (decision 0032)", "[actor][rebuild]") {
  pipeline p({}, fingerprint);
  p.commit("a", "1");
  p.advance(1000ms);
  REQUIRE(p.slot->read().state == readiness_state::ready);
  const auto epoch = p.slot->read().owner_epoch;

  // The request, then every actor but the publisher runs: a publisher that lags behind the
  // runner (a loaded machine) holds the needs-rebuild and rebuilding publications.
  p.backend->hold_work_barriers = true;  // the rebuild ends at the release below
  p.slot->request_rebuild();
  caf::anon_send(p.runner, dix::wake{wake_flag::rebuild});
  auto* publisher = dynamic_cast<caf::resumable*>(caf::actor_cast<caf::abstract_actor*>(p.publisher));
  auto& jobs = p.sched.jobs;
  bool ready_under_new_epoch = false;
  for (;;) {
    auto next = std::find_if(jobs.begin(), jobs.end(), [&](caf::resumable* job) { return job != publisher; });
    if (next == jobs.end()) break;
    std::rotate(jobs.begin(), next, next + 1);
    p.sched.run_once();
    const auto r = p.slot->read();
    ready_under_new_epoch = ready_under_new_epoch || (r.state == readiness_state::ready && r.owner_epoch > epoch);
  }
  CHECK_FALSE(ready_under_new_epoch);
  CHECK(p.slot->read().owner_epoch == epoch);  // the mint waits for the publisher
  CHECK(p.backend->resets == 1);               // and so does the reset after it

  p.run();  // the publisher catches up: the attempt goes on
  const auto now = p.slot->read();
  CHECK(now.state == readiness_state::rebuilding);
  CHECK(now.owner_epoch == epoch + 1);
  CHECK(p.backend->resets == 2);
  p.backend->release_work_barriers();
  p.run();
  CHECK(p.slot->read().state == readiness_state::ready);
}

TEST_CASE("actors: failed rebuild attempts back off on the actor clock, 1 s doubling capped by max_rebuild_backoff, and the max_rebuild_attempts-th ends unavailable/rebuild-exhausted, released", "[actor][rebuild]") {
  runner_options o;
  o.rebuild_backoff = 1000ms;      // the default
  o.max_rebuild_backoff = 3000ms;  // caps the third delay (4 s)
  o.max_rebuild_attempts = 4;
  pipeline p(o, fingerprint);
  p.backend->fail_reset = true;
  p.commit("a", "1");
  CHECK(p.backend->resets == 1);  // attempt 1 failed at its reset
  auto now = p.slot->read();
  CHECK(now.state == readiness_state::needs_rebuild);
  CHECK(now.reason == readiness_reason::backend_failed);
  CHECK(now.rebuild_attempts == 1);
  CHECK(p.snapshot->load().owner);  // the lock is kept through the backoff
  for (auto [delay, attempt] : {std::pair{1000ms, 2u}, std::pair{2000ms, 3u}, std::pair{3000ms, 4u}}) {
    p.advance(delay - 1ms);
    CHECK(p.backend->resets == attempt - 1);  // not yet
    p.advance(1ms);
    CHECK(p.backend->resets == attempt);
  }
  now = p.slot->read();
  CHECK(now.state == readiness_state::unavailable);
  CHECK(now.reason == readiness_reason::rebuild_exhausted);
  CHECK(now.rebuild_attempts == 4);
  const auto s = p.snapshot->load();
  CHECK(s.state == runner_state::unavailable);
  CHECK(s.last_fault == readiness_reason::backend_failed);  // the cause
  CHECK_FALSE(s.owner);
  bool granted = false;  // released: another requester gets the entry at once
  p.locks.acquire("idx", 99, [&](result<void> r, bool) { granted = static_cast<bool>(r); });
  CHECK(granted);
  p.locks.release("idx", 99);
  // Every attempt shut the previous epoch down and minted its own.
  CHECK(p.persisted == std::vector<std::uint64_t>{1, 2, 3, 4, 5});
  p.advance(std::chrono::hours(1));
  CHECK(p.backend->resets == 4);  // nothing more is tried
  p.commit("b", "2");
  CHECK(p.backend->resets == 4);
}

TEST_CASE("actors: while rebuilding, the owner publishes its scan's progress to the metrics segment: at the scan's start, at most every 250 ms while it runs, and once at its end", "[actor][rebuild][metrics]") {
  runner_options o;
  o.max_chunk_records = 2;
  o.max_flush_age = std::chrono::milliseconds(60000);  // no deferral retry or age flush interferes
  pipeline p(o);
  for (int i = 0; i < 6; ++i) p.store.commit({test::put(1, "k" + std::to_string(i), "v")});
  p.backend->auto_barrier = false;
  p.backend->cap = 1;  // a second batch waits for room: the test lets the scan advance step by step
  auto& metrics = p.segment->metrics();
  auto block = [&] { return metrics.read(p.slot->index()).value(); };
  auto rebuilt = [&] { return p.snapshot->load().rebuilt_records; };

  // A fresh index: reset, boundary, scan. The scan's start is told at once, with the estimate;
  // the first chunk, delivered at the same moment, is not (less than 250 ms later).
  caf::anon_send(p.runner, dix::wake{wake_flag::commit});
  p.run();
  REQUIRE(p.slot->read().state == readiness_state::rebuilding);
  REQUIRE(p.snapshot->load().scan_started_at);
  const auto epoch = p.slot->owner_epoch();
  auto first = block();
  REQUIRE(first.progress);
  CHECK(first.progress->epoch == epoch);
  CHECK(first.progress->rebuilt_records == 0);
  CHECK(first.progress->estimated_records == 6);
  CHECK_FALSE(first.progress->scan_ended);
  CHECK(first.written_wall_ns > 0);
  CHECK(rebuilt() > 0);
  // The block also carries the lag figures (decision 0021), which have a pacer of their own:
  // what this test follows is the progress part.
  const auto told = block().progress->rebuilt_records;

  // More records at the same moment: still not told.
  p.backend->apply_queue();
  p.run();
  REQUIRE(rebuilt() > first.progress->rebuilt_records);
  CHECK(block().progress->rebuilt_records == told);

  // 300 ms later the next change is told, with the rate and the time left.
  p.advance(std::chrono::milliseconds(300));
  p.backend->apply_queue();
  p.run();
  CHECK(block().progress->rebuilt_records != told);
  auto later = block();
  REQUIRE(later.progress);
  // The first change after the pause; more may follow at the same moment, untold.
  CHECK(later.progress->rebuilt_records > first.progress->rebuilt_records);
  CHECK(later.progress->rebuilt_records <= rebuilt());
  CHECK_FALSE(later.progress->scan_ended);
  CHECK(later.progress->scan_records_per_s == later.progress->rebuilt_records * 1000 / 300);
  CHECK(later.progress->rebuild_eta_ms ==
        (6 - later.progress->rebuilt_records) * 1000 / later.progress->scan_records_per_s);

  // The scan's end is told at once, whatever the time since the last publication.
  for (int step = 0; step < 10 && !p.snapshot->load().scan_ended_at; ++step) {
    p.backend->apply_queue();
    p.run();
  }
  REQUIRE(p.snapshot->load().scan_ended_at);
  auto last = block();
  REQUIRE(last.progress);
  CHECK(last.progress->scan_ended);
  CHECK(last.progress->rebuilt_records == 6);
  CHECK(last.progress->rebuild_eta_ms == 0);
  CHECK(last.progress->epoch == epoch);

  // After the scan nothing more is told: the drain replays from the boundary, the index is ready.
  p.backend->auto_barrier = true;
  p.backend->barrier();
  p.advance(std::chrono::milliseconds(60000));
  CHECK(p.slot->read().state == readiness_state::ready);
  CHECK(p.slot->owner_epoch() == epoch);
  auto after = block();
  REQUIRE(after.progress);
  CHECK(after.progress->rebuilt_records == 6);
  CHECK(after.progress->scan_ended);
  CHECK(after.progress->epoch == epoch);
  // The lag part says the index caught up, under the same epoch, once the lag pacer's interval
  // since its last write passed (the change came less than 250 ms after it).
  p.advance(std::chrono::milliseconds(250));
  after = block();
  REQUIRE(after.lag);
  CHECK(after.lag->epoch == epoch);
  CHECK(after.lag->state == runner_state::idle);
  CHECK(after.lag->lag_ms == 0);
}

TEST_CASE("actors: the owner publishes its lag figures to the metrics segment: a backend that defers shows as deferred with its stall growing, a change held back by the 250 ms interval is written at its end", "[actor][lag][metrics]") {
  runner_options o;
  o.max_flush_age = std::chrono::milliseconds(60000);
  pipeline p(o);
  p.commit("a", "1");
  p.backend->barrier();
  p.advance(std::chrono::milliseconds(60000));
  REQUIRE(p.slot->read().state == readiness_state::ready);
  p.advance(std::chrono::milliseconds(250));  // the held-back last change, at the interval's end
  auto& metrics = p.segment->metrics();
  auto lag = [&] { return metrics.read(p.slot->index()).value().lag; };
  REQUIRE(lag());
  CHECK(lag()->state == runner_state::idle);
  CHECK(lag()->epoch == p.slot->owner_epoch());
  CHECK(lag()->max_accepted_batches_ahead == o.max_accepted_batches_ahead);

  // One batch queued, the next deferred: the runner parks in deferred at this same moment.
  p.backend->auto_barrier = false;
  p.backend->cap = 1;
  p.commit("b", "2");
  p.commit("c", "3");
  REQUIRE(p.state() == runner_state::deferred);
  // The first change was written at once (the last figures are 60 s old); what followed at the
  // same moment waits for the interval, unless it was the same.
  const auto counter = metrics.change_counter();
  p.advance(std::chrono::milliseconds(250));
  auto parked = lag();
  REQUIRE(parked);
  CHECK(parked->state == runner_state::deferred);
  CHECK(parked->stalled_growing);
  CHECK(parked->accepted_batches >= 1);
  CHECK(metrics.change_counter() >= counter);
  // Parked: the ages grow but nothing else changes, so nothing more is written.
  const auto parked_counter = metrics.change_counter();
  p.advance(std::chrono::milliseconds(5));
  CHECK(metrics.change_counter() == parked_counter);
  CHECK(attribute(p.slot->read(), parked).cause == stall_cause::backend_deferred);
}
