// The runtime's coverage readers (actors/coverage_waiters.*) over a real readiness segment, a real
// primary store and the process's lock table: runtime waiters evaluated look by look on a manual
// clock (deterministic), the watcher thread waking them on futex changes, the owner-process
// `current` proof, and query admission through the backend host.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "actors/backend_host_impl.hpp"
#include "actors/coverage_waiters.hpp"
#include "actors/runtime_actor.hpp"
#include "actors/watcher.hpp"
#include "adapters/test_support.hpp"

using namespace dix;
using dix::test::temp_dir;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t ms = 1'000'000;

struct fixture {
  temp_dir dir;
  std::shared_ptr<primary_store> store = test::open_store(dir / "db");
  manual_clock clock{1'700'000'000'000'000'000ull};
  std::shared_ptr<runtime_context> ctx = std::make_shared<runtime_context>();
  std::shared_ptr<segment_slot> slot;
  std::shared_ptr<registration_record> entry;
  static inline std::uint64_t next_token = 1u << 30;

  fixture() {
    ctx->segment = readiness_segment::attach(dir / "db").value();
    ctx->locks = process_lock_table::for_home(ctx->segment->directory());
    ctx->stores = {store};
    ctx->time = &clock;
    ctx->options.max_coverage_wait = 30000ms;
    prepare_coverage(*ctx);
    slot = ctx->segment->claim("idx").value();
    REQUIRE(slot->mint_epoch());
    register_entry(++next_token, false);
  }
  // Registers "idx" as registration `token` over `slot`, with only what the readers use (its
  // proof box, whether it rebuilds). A registration's settings are fixed: set_rebuildable
  // registers the same registration again with the one setting changed.
  void register_entry(std::uint64_t token, bool rebuildable) {
    auto s = std::make_shared<registration_settings>();
    s->id = "idx";
    s->token = token;
    s->slot = slot;
    s->proof = std::make_shared<coverage_proof_box>();
    s->runner.rebuildable = rebuildable;
    entry = std::make_shared<registration_record>(std::move(s));
    ctx->registry->put(entry);
  }
  void set_rebuildable(bool yes) {
    auto s = std::make_shared<registration_settings>(entry->settings());
    s->runner.rebuildable = yes;
    entry = std::make_shared<registration_record>(std::move(s));
    ctx->registry->put(entry);
  }
  coverage_waiters& waiters() { return *ctx->waiters; }
  index_time_t now_time() const { return clock.wall_now_ns(); }
  void ready(index_time_t t) { slot->apply(slot_publication{readiness_state::ready, readiness_reason::none, 0, t, std::nullopt}); }
  void state(readiness_state s) { slot->apply(slot_publication{s, readiness_reason::none, 0, std::nullopt, std::nullopt}); }

  // One wait whose outcome lands in the returned future.
  std::future<result<void>> wait(index_time_t since, std::chrono::milliseconds timeout, cancel_token cancel = {}) {
    return wait_for_coverage_here(waiters(), "idx", since, timeout, std::move(cancel));
  }
};

bool resolved(std::future<result<void>>& f) { return f.wait_for(0s) == std::future_status::ready; }

errc code_of(std::future<result<void>>& f) {
  auto r = f.get();
  return r ? errc::none : r.error().value();
}

}  // namespace

TEST_CASE("runtime wait_for_coverage: since stays fixed and the waiter succeeds once coverage_time reaches it, the demand raised to the largest since", "[adapter][coverage][waiters]") {
  fixture f;
  const auto t = f.now_time();
  f.ready(t);
  auto near = f.wait(t + 10 * ms, 30000ms);
  auto far = f.wait(t + 20 * ms, 30000ms);
  f.waiters().scan(false);
  CHECK_FALSE(resolved(near));
  CHECK(f.slot->coverage_demand() == t + 20 * ms);
  f.clock.advance(50ms);  // later commits exist now; since does not move with them
  f.ready(t + 10 * ms);
  f.waiters().scan(false);
  REQUIRE(resolved(near));
  CHECK(code_of(near) == errc::none);
  CHECK_FALSE(resolved(far));
  f.ready(t + 20 * ms);
  f.waiters().scan(false);
  CHECK(code_of(far) == errc::none);
  CHECK(f.waiters().pending() == 0);
}

TEST_CASE("runtime wait_for_coverage: index_lagging at the deadline, not before, and a proof present at the deadline succeeds", "[adapter][coverage][waiters]") {
  fixture f;
  const auto t = f.now_time();
  f.ready(t);
  auto lagging = f.wait(t + 1, 100ms);
  auto other = f.wait(t + 1, 200ms);
  f.clock.advance(99ms);
  f.waiters().scan(true);
  CHECK_FALSE(resolved(lagging));
  CHECK(f.waiters().sleep_bound(1000ms) == 1ms);  // the watcher sleeps until the nearest deadline
  f.clock.advance(1ms);
  f.waiters().scan(true);
  REQUIRE(resolved(lagging));
  auto r = lagging.get();
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::index_lagging);
  CHECK(is_retryable(r.error().value()));
  CHECK_FALSE(resolved(other));  // its own deadline is later
  auto late = f.wait(t + 2, 0ms);
  f.ready(t + 2);
  f.waiters().scan(true);
  CHECK(code_of(late) == errc::none);  // deadline 0, but the proof is there at the look
  CHECK(code_of(other) == errc::none);
}

// Issue 29: the states a new index passes through between registration and ready (unknown, then
// needs-rebuild with cursor-missing, then rebuilding, then ready): a wait made at registration
// waits through all of them and succeeds once the built index covers its since.
TEST_CASE("runtime wait_for_coverage: a wait made at registration waits through unknown, needs-rebuild and rebuilding to ready", "[adapter][coverage][waiters]") {
  fixture f;
  f.set_rebuildable(true);
  const auto t = f.now_time();
  auto a = f.wait(t, 30000ms);
  f.waiters().scan(false);  // unknown
  CHECK_FALSE(resolved(a));
  f.slot->publish(readiness_state::needs_rebuild, readiness_reason::cursor_missing, 1);
  f.waiters().scan(false);
  CHECK_FALSE(resolved(a));
  f.slot->publish(readiness_state::rebuilding, readiness_reason::cursor_missing, 1);
  f.waiters().scan(false);
  CHECK_FALSE(resolved(a));
  f.clock.advance(10ms);
  f.ready(t);
  f.waiters().scan(false);
  REQUIRE(resolved(a));
  CHECK(code_of(a) == errc::none);
}

TEST_CASE("runtime wait_for_coverage: still being built at the deadline is rebuilding, unavailable and an index nothing rebuilds end it at once", "[adapter][coverage][waiters]") {
  fixture f;
  f.set_rebuildable(true);
  const auto t = f.now_time();
  auto a = f.wait(t, 100ms);
  f.state(readiness_state::rebuilding);
  f.waiters().scan(false);
  CHECK_FALSE(resolved(a));
  f.clock.advance(100ms);
  f.waiters().scan(true);
  REQUIRE(resolved(a));
  auto late = a.get();
  REQUIRE_FALSE(late);
  CHECK(late.error().value() == errc::rebuilding);
  CHECK(is_retryable(late.error().value()));
  auto b = f.wait(t, 30000ms);
  f.state(readiness_state::unavailable);
  f.waiters().scan(false);
  CHECK(code_of(b) == errc::unavailable);
  // A backend that cannot reset: its needs-rebuild index waits for an operator, not for time.
  f.set_rebuildable(false);
  auto c = f.wait(t, 30000ms);
  f.state(readiness_state::needs_rebuild);
  f.waiters().scan(false);
  CHECK(code_of(c) == errc::unavailable);
}

TEST_CASE("runtime wait_for_coverage: unregister fails the id's waiters stopped, stop fails every waiter and every later wait", "[adapter][coverage][waiters]") {
  fixture f;
  const auto t = f.now_time();
  f.ready(t);
  auto first = f.wait(t + 1, 30000ms);
  REQUIRE(f.ctx->registry->detach("idx", f.entry->token()));  // unregister: the id leaves at once
  REQUIRE(resolved(first));
  CHECK(code_of(first) == errc::stopped);
  auto gone = f.wait(t + 1, 30000ms);
  CHECK(code_of(gone) == errc::not_registered);
  f.register_entry(++fixture::next_token, false);
  auto second = f.wait(t + 1, 30000ms);
  CHECK_FALSE(resolved(second));
  f.waiters().close();  // stop
  CHECK(code_of(second) == errc::stopped);
  auto after = f.wait(t + 1, 30000ms);
  CHECK(code_of(after) == errc::stopped);
}

TEST_CASE("runtime wait_for_coverage: cancelling one waiter ends it cancelled and leaves the others waiting", "[adapter][coverage][waiters]") {
  fixture f;
  const auto t = f.now_time();
  f.ready(t);
  cancel_source one;
  auto cancelled = f.wait(t + 1, 30000ms, one.token());
  auto other = f.wait(t + 1, 30000ms);
  const auto counter = f.ctx->segment->segment_change_counter();
  one.cancel();
  CHECK(f.ctx->segment->segment_change_counter() != counter);  // the watcher's futex word moved: it wakes
  f.waiters().scan(false);
  CHECK(code_of(cancelled) == errc::cancelled);
  CHECK_FALSE(resolved(other));
  CHECK(f.waiters().pending() == 1);
  f.ready(t + 1);
  f.waiters().scan(false);
  CHECK(code_of(other) == errc::none);
}

TEST_CASE("runtime wait_for_coverage: since 0, a timeout above max_coverage_wait and an unregistered id fail at once", "[adapter][coverage][waiters]") {
  fixture f;
  auto zero = f.wait(0, 10ms);
  CHECK(code_of(zero) == errc::invalid_argument);
  auto over = f.wait(1, 30001ms);
  CHECK(code_of(over) == errc::invalid_argument);
  auto other = wait_for_coverage_here(f.waiters(), "other", 1, 10ms, {});
  CHECK(code_of(other) == errc::not_registered);
  CHECK(f.slot->coverage_demand() == 0);
}

TEST_CASE("runtime wait_for_coverage: the watcher thread resolves a waiter on the futex wake of the publication and a cancel at once, well inside max_flush_age", "[adapter][coverage][waiters]") {
  fixture f;
  // The real clock for the thread: the watcher's look and the deadlines use it.
  f.ctx->time = &system_clock();
  f.ctx->waiters.reset();
  prepare_coverage(*f.ctx);
  const auto t = system_clock().wall_now_ns();
  f.ready(t);
  watcher w(f.ctx->segment, f.ctx->registry, caf::actor{}, 600000ms);  // cap: 10 minutes
  w.set_coverage(f.ctx->waiters);
  REQUIRE(w.start());
  cancel_source cancel;
  auto covered = f.wait(t + 1, 30000ms);
  auto cancelled = f.wait(t + 1, 30000ms, cancel.token());
  // The first look raises the demand: the watcher is running and saw both waiters.
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (f.slot->coverage_demand() != t + 1 && std::chrono::steady_clock::now() < deadline) {
    f.slot->wait_change(f.slot->change_counter(), 100ms);
  }
  REQUIRE(f.slot->coverage_demand() == t + 1);
  cancel.cancel();
  REQUIRE(cancelled.wait_for(20s) == std::future_status::ready);
  CHECK(code_of(cancelled) == errc::cancelled);
  CHECK_FALSE(resolved(covered));
  f.ready(t + 1);
  REQUIRE(covered.wait_for(20s) == std::future_status::ready);
  CHECK(code_of(covered) == errc::none);
  w.stop();
}

TEST_CASE("runtime read_coverage: current when the owner's proof covers every log's latest sequence under the slot's epoch, not after a new commit or under another epoch", "[adapter][coverage]") {
  fixture f;
  f.ready(f.now_time() - 10'000 * ms);  // old: never bounded with these tolerances
  auto commit = test::put_records(*f.store, "k", 2);
  const auto latest = commit.sequence + 1;  // two puts and the header: sequences end at +1 or beyond
  std::promise<void> granted;
  f.ctx->locks->acquire("idx", f.entry->token(), [&](result<void>, bool) { granted.set_value(); });
  granted.get_future().wait();
  auto read = [&](std::chrono::milliseconds tolerance) {
    return read_coverage_here(*f.ctx->segment, *f.ctx->locks, f.ctx->stores, "idx", tolerance, f.clock);
  };
  CHECK(read(1000ms).state == coverage_state::unknown);  // no proof published
  const auto epoch = f.slot->owner_epoch();
  const auto durable_end = latest_sequence(*f.store);
  REQUIRE(durable_end >= latest);
  f.entry->settings().proof->store(coverage_proof{epoch, {{"main", durable_end}}});
  auto c = read(0ms);
  CHECK(c.state == coverage_state::current);
  CHECK(c.lag_upper_bound == 0ms);
  test::put_records(*f.store, "later", 1);  // committed, not yet durable in the index
  CHECK(read(0ms).state == coverage_state::unknown);
  f.entry->settings().proof->store(coverage_proof{epoch + 1, {{"main", latest_sequence(*f.store)}}});
  CHECK(read(0ms).state == coverage_state::unknown);  // another owner's proof
  f.entry->settings().proof->store(coverage_proof{epoch, {{"main", latest_sequence(*f.store)}}});
  CHECK(read(0ms).state == coverage_state::current);
  f.ctx->locks->release("idx", f.entry->token());
  CHECK(read(0ms).state == coverage_state::unknown);  // no owner in this process
}

// A registration's host with the runtime's coverage services and enforcement on.
struct admission_fixture : fixture {
  backend_host_impl host{slot, [] {}};
  admission_fixture() {
    auto services = coverage_services_for(ctx, "idx");
    services.enforce = true;
    host.set_coverage(services);
  }
  // Waits until the query thread's waiter is queued (20 s failure bound).
  void await_waiter() {
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (waiters().pending() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  }
};

TEST_CASE("query admission: strict needs current, bounded needs bounded or current, wait waits first, refusals are index_lagging and never condemn", "[adapter][coverage][query]") {
  admission_fixture f;
  backend_host& h = f.host;
  coverage_mode strict{coverage_kind::strict, 0ms, 0, 0ms};
  coverage_mode bounded{coverage_kind::bounded, 3000ms, 0, 0ms};

  CHECK(h.admit_query(bounded).error().value() == errc::unavailable);  // not ready
  f.ready(f.now_time() - 100 * ms);
  auto b = h.admit_query(bounded);
  REQUIRE(b);
  CHECK(b->state == coverage_state::bounded);  // the answer carries the coverage it was given under
  CHECK(b->lag_upper_bound == 100ms);
  auto s = h.admit_query(strict);
  REQUIRE_FALSE(s);
  CHECK(s.error().value() == errc::index_lagging);
  f.clock.advance(5000ms);
  auto stale = h.admit_query(bounded);
  REQUIRE_FALSE(stale);
  CHECK(stale.error().value() == errc::index_lagging);
  CHECK(f.slot->read().state == readiness_state::ready);  // a refusal never condemns

  // strict admitted: the owner's proof covers the store's latest sequence.
  std::promise<void> granted;
  f.ctx->locks->acquire("idx", f.entry->token(), [&](result<void>, bool) { granted.set_value(); });
  granted.get_future().wait();
  f.entry->settings().proof->store(coverage_proof{f.slot->owner_epoch(), {{"main", latest_sequence(*f.store)}}});
  auto current = h.admit_query(strict);
  REQUIRE(current);
  CHECK(current->state == coverage_state::current);
  f.ctx->locks->release("idx", f.entry->token());

  // wait: blocks on the runtime's waiter until the coverage reaches since.
  const auto since = f.now_time();
  coverage_mode wait{coverage_kind::wait, 3000ms, since, 30000ms};
  std::optional<result<coverage>> waited;
  std::thread querier([&] { waited = h.admit_query(wait); });
  f.await_waiter();
  REQUIRE(f.waiters().pending() == 1);
  f.ready(since);
  f.waiters().scan(false);
  querier.join();
  REQUIRE(waited);
  REQUIRE(*waited);
  CHECK((*waited)->state == coverage_state::bounded);
  CHECK((*waited)->lag_upper_bound == 0ms);
  coverage_mode lagging{coverage_kind::wait, 3000ms, since + 1, 0ms};
  std::thread late([&] { waited = h.admit_query(lagging); });
  f.await_waiter();
  f.waiters().scan(true);
  late.join();
  REQUIRE_FALSE(*waited);
  CHECK(waited->error().value() == errc::index_lagging);
  CHECK(f.slot->read().state == readiness_state::ready);
}

TEST_CASE("query admission: a wait query waits through unknown, needs-rebuild and rebuilding, admitted once ready covers since, rebuilding if still built at its deadline", "[adapter][coverage][query]") {
  admission_fixture f;
  f.set_rebuildable(true);
  backend_host& h = f.host;
  const auto since = f.now_time();
  coverage_mode wait{coverage_kind::wait, 3000ms, since, 30000ms};
  REQUIRE(f.slot->read().state == readiness_state::unknown);  // a runtime starting: no owner yet
  std::optional<result<coverage>> waited;
  std::thread querier([&] { waited = h.admit_query(wait); });
  f.await_waiter();
  REQUIRE(f.waiters().pending() == 1);  // waiting, not refused unavailable
  f.waiters().scan(false);
  CHECK(f.waiters().pending() == 1);  // still unknown: still waiting
  f.slot->publish(readiness_state::needs_rebuild, readiness_reason::cursor_missing, 1);
  f.waiters().scan(false);
  CHECK(f.waiters().pending() == 1);  // the first build is scheduled: still waiting
  f.slot->publish(readiness_state::rebuilding, readiness_reason::cursor_missing, 1);
  f.waiters().scan(false);
  CHECK(f.waiters().pending() == 1);  // being built: still waiting
  f.ready(since);
  f.waiters().scan(false);
  querier.join();
  REQUIRE(waited);
  REQUIRE(*waited);
  CHECK((*waited)->state == coverage_state::bounded);

  f.slot->publish(readiness_state::rebuilding, readiness_reason::rebuild_requested, 1);
  coverage_mode brief{coverage_kind::wait, 3000ms, since, 100ms};
  waited.reset();
  std::thread rebuilding([&] { waited = h.admit_query(brief); });
  f.await_waiter();
  REQUIRE(f.waiters().pending() == 1);
  f.waiters().scan(false);
  CHECK(f.waiters().pending() == 1);  // a rebuild is waited through too
  f.clock.advance(100ms);
  f.waiters().scan(true);  // its deadline, the index still rebuilding
  rebuilding.join();
  REQUIRE(waited);
  REQUIRE_FALSE(*waited);
  CHECK(waited->error().value() == errc::rebuilding);
}
