// <dix/applier.hpp> (decision 0050) on an engine in memory: what the skeleton owns, without a
// database. The shipped backends' tests and the conformance kits cover it over real engines.
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <dix/applier.hpp>

#include "support/backend_batches.hpp"
#include "support/fake_host.hpp"

namespace dix {
namespace {

using test::make_batch;
using test::make_cursor;

// Counts what the skeleton asks of it; an apply fails or is lost on request.
class counting_engine final : public applier_engine {
 public:
  result<std::optional<cursor>> load_cursor() override {
    ++loads;
    return stored;
  }
  result<apply_outcome> apply_batch(const batch&) override {
    ++applies;
    if (fail_next.exchange(false)) return error{errc::io_error, "injected"};
    if (lose_next.exchange(false)) return apply_outcome::lost;
    return apply_outcome::applied;
  }
  result<bool> commit(const std::optional<cursor>& through, epoch_t) override {
    ++commits;
    stored = through;
    return true;
  }
  result<void> close() override { return {}; }
  result<void> reset_index() override {
    stored.reset();
    return {};
  }

  bool ready(const batch&) override {
    if (ready_throws) throw std::runtime_error("ready: injected");
    return true;
  }

  std::atomic<int> loads{0}, applies{0}, commits{0};
  std::atomic<bool> fail_next{false}, lose_next{false}, ready_throws{false};
  std::optional<cursor> stored;  // written by the applier, read after a completion
};

struct fixture {
  test::fake_host host;
  counting_engine engine;
  applier skeleton{"skeleton", engine, applier_limits{4096, 2}};
  test::change_log changes;
  subscription sub = skeleton.on_state_change(changes.callback());
  fixture() { skeleton.attach(host); }
  ~fixture() {
    sub.reset();
    skeleton.stop();
  }
  result<void> barrier(flush_reason reason = flush_reason::age) {
    test::waiter w;
    skeleton.flush(reason, w.make());
    return w.wait();
  }
};

TEST_CASE("applier: flushes made while a barrier is pending join it, and the barrier commits the last applied cursor", "[adapter][backend][applier]") {
  fixture f;
  f.host.close_gate();  // the applier stops inside the first batch's epoch check
  REQUIRE(f.skeleton.deliver(make_batch(1, {}, 1)) == delivery_result::accepted);
  REQUIRE(f.host.wait_calls(1));
  test::waiter first, second;
  f.skeleton.flush(flush_reason::age, first.make());
  REQUIRE(f.skeleton.deliver(make_batch(1, {}, 2)) == delivery_result::accepted);
  f.skeleton.flush(flush_reason::threshold, second.make());
  f.host.open_gate();
  REQUIRE(first.wait());
  REQUIRE(second.wait());
  CHECK(f.engine.commits == 1);
  CHECK(f.engine.applies == 2);
  CHECK(*f.skeleton.durable_cursor().value() == make_cursor(2));
  CHECK(f.engine.loads == 0);  // known from the barrier
}

TEST_CASE("applier: the cap counts batches and bytes, and `changed` follows once both are at half", "[adapter][backend][applier]") {
  fixture f;
  f.host.close_gate();
  REQUIRE(f.skeleton.deliver(make_batch(1, {}, 1)) == delivery_result::accepted);
  REQUIRE(f.host.wait_calls(1));  // in flight, still counted; the queue itself is empty
  REQUIRE(f.skeleton.deliver(make_batch(1, {}, 2)) == delivery_result::accepted);
  CHECK(f.skeleton.deliver(make_batch(1, {}, 3)) == delivery_result::deferred);  // 2 batches
  CHECK(f.skeleton.queued_batches() == 2);
  CHECK(f.changes.count_locked(state_change_kind::changed) == 0);
  f.host.open_gate();
  REQUIRE(f.changes.wait_for(state_change_kind::changed));
  CHECK(f.skeleton.deliver(make_batch(1, {}, 3)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(*f.skeleton.durable_cursor().value() == make_cursor(3));
}

TEST_CASE("applier: work of another epoch is dropped, and a barrier over a superseded epoch commits nothing", "[adapter][backend][applier][epoch]") {
  fixture f;
  f.host.epoch = 2;
  REQUIRE(f.skeleton.deliver(make_batch(1, {}, 9)) == delivery_result::accepted);
  REQUIRE(f.skeleton.deliver(make_batch(2, {}, 3)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(f.skeleton.dropped_batches() == 1);
  CHECK(*f.skeleton.durable_cursor().value() == make_cursor(3));
  REQUIRE(f.skeleton.deliver(make_batch(2, {}, 4)) == delivery_result::accepted);
  REQUIRE(f.host.wait_calls(4));  // the batches' checks, the barrier's and the new batch's
  f.host.epoch = 3;
  REQUIRE(f.barrier());
  CHECK(f.engine.commits == 1);
  CHECK(*f.skeleton.durable_cursor().value() == make_cursor(3));
}

TEST_CASE("applier: an apply error is `failed`, barriers fail until a shutdown, and the same object serves the next epoch", "[adapter][backend][applier][failed]") {
  fixture f;
  f.engine.fail_next = true;
  REQUIRE(f.skeleton.deliver(make_batch(1, {}, 1)) == delivery_result::accepted);
  REQUIRE(f.changes.wait_for(state_change_kind::failed));
  REQUIRE(f.skeleton.deliver(make_batch(1, {}, 2)) == delivery_result::accepted);
  auto refused = f.barrier();
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::backend_failed);
  CHECK(f.engine.applies == 1);  // nothing applied over the lost batch
  test::waiter shut;
  f.skeleton.shutdown(1, shut.make());
  REQUIRE(shut.wait());
  f.host.epoch = 2;
  REQUIRE(f.skeleton.deliver(make_batch(2, {}, 3)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(*f.skeleton.durable_cursor().value() == make_cursor(3));
}

TEST_CASE("applier: a lost batch drops its epoch's queued work, forgets the cursor applied since the barrier and reports accepted_work_lost", "[adapter][backend][applier][lost]") {
  fixture f;
  REQUIRE(f.skeleton.deliver(make_batch(1, {}, 1)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  f.host.close_gate();
  REQUIRE(f.skeleton.deliver(make_batch(1, {}, 2)) == delivery_result::accepted);
  REQUIRE(f.host.wait_calls(3));  // "2" in flight: it is lost
  f.engine.lose_next = true;
  REQUIRE(f.skeleton.deliver(make_batch(1, {}, 3)) == delivery_result::accepted);  // lost with it
  f.host.open_gate();
  REQUIRE(f.changes.wait_for(state_change_kind::accepted_work_lost));
  REQUIRE(f.barrier());
  CHECK(*f.skeleton.durable_cursor().value() == make_cursor(1));
  CHECK(f.engine.applies == 2);
  CHECK(f.skeleton.dropped_batches() == 2);
  CHECK(f.skeleton.queued_batches() == 0);
  CHECK(f.changes.count_locked(state_change_kind::failed) == 0);
}

TEST_CASE("applier: reset forgets the durable cursor, and a shutdown makes the next owner load it again", "[adapter][backend][applier][reset]") {
  fixture f;
  REQUIRE(f.skeleton.deliver(make_batch(1, {}, 1)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  test::waiter shut;
  f.skeleton.shutdown(1, shut.make());
  REQUIRE(shut.wait());
  CHECK(*f.skeleton.durable_cursor().value() == make_cursor(1));
  CHECK(f.engine.loads == 1);
  test::waiter reset;
  f.skeleton.reset(2, reset.make());
  REQUIRE(reset.wait());
  CHECK_FALSE(f.skeleton.durable_cursor().value());
  CHECK(f.engine.loads == 1);
}

TEST_CASE("applier: once its subscription is reset a callback is never invoked again, even while the applier emits", "[adapter][backend][applier][callbacks]") {
  fixture f;
  std::mutex mutex;
  std::condition_variable cv;
  bool inside = false, release = false, after_reset = false, returned = false;
  std::atomic<bool> invoked_after_reset{false};
  auto sub = f.skeleton.on_state_change([&](state_change) {
    std::unique_lock lock(mutex);
    if (after_reset) invoked_after_reset = true;
    inside = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
    returned = true;
  });
  REQUIRE(f.skeleton.deliver(make_batch(1, {}, 1)) == delivery_result::accepted);
  test::waiter w;
  f.skeleton.flush(flush_reason::age, w.make());  // its `changed` runs the callback, which blocks
  {
    std::unique_lock lock(mutex);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return inside; }));
  }
  std::atomic<bool> returned_first{false};
  std::thread resetter([&] {
    sub.reset();  // returns only after the call in progress
    std::lock_guard lock(mutex);
    returned_first = returned;
  });
  {
    std::lock_guard lock(mutex);
    release = true;
    cv.notify_all();
  }
  resetter.join();
  {
    std::lock_guard lock(mutex);
    after_reset = true;
  }
  CHECK(returned_first);
  REQUIRE(w.wait());
  REQUIRE(f.barrier());  // another `changed`: the callback is gone
  CHECK_FALSE(invoked_after_reset);
}

}  // namespace
}  // namespace dix

namespace dix {
namespace {

TEST_CASE("applier: a cursor applied under another epoch is never committed by a later epoch's barrier", "[adapter][backend][applier][epoch]") {
  fixture f;
  REQUIRE(f.skeleton.deliver(make_batch(1, {}, 5)) == delivery_result::accepted);  // applied, not durable
  REQUIRE(f.host.wait_calls(1));
  f.host.epoch = 2;  // no shutdown between the epochs: the engine may have dropped epoch 1's work
  REQUIRE(f.skeleton.deliver(make_batch(2, {}, std::nullopt)) == delivery_result::accepted);  // a scan chunk
  REQUIRE(f.barrier());
  CHECK(f.engine.applies == 2);
  CHECK_FALSE(f.engine.stored);                        // the barrier committed no cursor
  CHECK_FALSE(f.skeleton.durable_cursor().value());    // and none is reported durable
}

TEST_CASE("applier: an engine hook that throws poisons the backend and fails the pending barrier, the process goes on", "[adapter][backend][applier][failed]") {
  fixture f;
  f.engine.ready_throws = true;  // asked on the applier thread before the front batch is taken
  test::waiter pending;
  REQUIRE(f.skeleton.deliver(make_batch(1, {}, 1)) == delivery_result::accepted);
  f.skeleton.flush(flush_reason::age, pending.make());  // pending when the hook throws, or after
  REQUIRE(f.changes.wait_for(state_change_kind::failed));
  CHECK(f.engine.applies == 0);
  auto refused = pending.wait();
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::backend_failed);
  f.engine.ready_throws = false;
  test::waiter shut;
  f.skeleton.shutdown(1, shut.make());
  REQUIRE(shut.wait());  // a successful shutdown lifts the poisoning
  f.host.epoch = 2;
  REQUIRE(f.skeleton.deliver(make_batch(2, {}, 3)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(*f.skeleton.durable_cursor().value() == make_cursor(3));
}

TEST_CASE("applier: once stopped, flush, shutdown and reset complete at once with backend_failed", "[adapter][backend][applier]") {
  fixture f;
  f.skeleton.stop();
  CHECK(f.skeleton.deliver(make_batch(1, {}, 1)) == delivery_result::failed);
  auto flushed = f.barrier();
  REQUIRE_FALSE(flushed);
  CHECK(flushed.error().value() == errc::backend_failed);
  test::waiter shut, reset;
  f.skeleton.shutdown(1, shut.make());
  f.skeleton.reset(1, reset.make());
  auto s = shut.wait();
  auto r = reset.wait();
  REQUIRE_FALSE(s);
  REQUIRE_FALSE(r);
  CHECK(s.error().value() == errc::backend_failed);
  CHECK(r.error().value() == errc::backend_failed);
}

}  // namespace
}  // namespace dix
