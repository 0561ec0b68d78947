// [core] remote_link (decision 0042): the owner side of a remote backend's connection — the
// window, cumulative acks, loss and the replay it owes, reconnect backoff — on a fake clock.
#include <catch2/catch.hpp>

#include "core/remote_link.hpp"

using namespace dix;
using namespace std::chrono_literals;

namespace {

const remote_link::time_point t0 = remote_link::time_point{} + std::chrono::hours(1);

remote_link connected_link(remote_link_limits limits = {}) {
  remote_link link(limits);
  REQUIRE(link.connect_due() == remote_link::time_point{});  // the first attempt at once
  link.connecting(t0);
  CHECK_FALSE(link.connected(t0, 7).work_lost);
  REQUIRE(link.current() == remote_link::phase::connected);
  return link;
}

// The connection drops at `at` (a delivery meanwhile is deferred) and comes back a second later
// to host `instance`: what the link owes the runtime then.
remote_link::on_connect drop_and_reconnect(remote_link& link, remote_link::time_point at, std::uint64_t instance) {
  link.lost(at);
  CHECK_FALSE(link.deliver(10, at));
  link.connecting(at);
  return link.connected(at + std::chrono::seconds(1), instance);
}

}  // namespace

TEST_CASE("remote link: deliveries are numbered from 1 and deferred beyond 16 batches or 64 MiB unacknowledged, and an empty window takes any one batch", "[core][remote]") {
  auto link = connected_link();
  for (std::uint64_t i = 1; i <= 16; ++i) CHECK(link.deliver(1000, t0) == i);
  CHECK_FALSE(link.deliver(1000, t0));  // the 17th waits
  CHECK(link.unacked_batches() == 16);
  CHECK(link.acked(16, t0));
  CHECK(link.unacked_batches() == 0);
  CHECK(link.deliver(70ull << 20, t0) == 17u);  // larger than the window, but alone
  CHECK_FALSE(link.deliver(1, t0));
  CHECK(link.acked(17, t0));
  CHECK(link.deliver(40ull << 20, t0) == 18u);
  CHECK_FALSE(link.deliver(30ull << 20, t0));  // 70 MiB together
  CHECK(link.deliver(24ull << 20, t0) == 19u);  // 64 MiB together
}

TEST_CASE("remote link: acks are cumulative, old or repeated ones change nothing, one beyond what was sent is the peer's error, and changed once the window is back to half after a deferral", "[core][remote]") {
  auto link = connected_link();
  for (int i = 0; i < 16; ++i) REQUIRE(link.deliver(10, t0));
  CHECK_FALSE(link.deliver(10, t0));
  CHECK_FALSE(link.take_changed());
  CHECK(link.acked(4, t0));
  CHECK_FALSE(link.take_changed());  // 12 unacknowledged: more than half
  CHECK(link.acked(2, t0));          // old: nothing
  CHECK(link.unacked_batches() == 12);
  CHECK(link.acked(8, t0));
  CHECK(link.unacked_batches() == 8);
  CHECK(link.take_changed());        // half: the deferral is answered, once
  CHECK_FALSE(link.take_changed());
  CHECK_FALSE(link.acked(17, t0));   // never sent
  CHECK(link.unacked_batches() == 8);
}

TEST_CASE("remote link: an ack missing past its deadline is a loss, and while disconnected every delivery is deferred", "[core][remote]") {
  remote_link_limits limits;
  limits.ack_deadline = 5000ms;
  auto link = connected_link(limits);
  REQUIRE(link.deliver(10, t0));
  CHECK_FALSE(link.ack_overdue(t0 + 5000ms));
  CHECK(link.ack_overdue(t0 + 5001ms));
  link.lost(t0 + 5001ms);
  CHECK(link.current() == remote_link::phase::disconnected);
  CHECK(link.unacked_batches() == 0);
  CHECK_FALSE(link.deliver(10, t0 + 5002ms));
  CHECK(link.connect_due() == t0 + 5001ms);  // at once
}

TEST_CASE("remote link: a loss with work sent after the last durable batch owes accepted_work_lost then changed at the next connection, and the replay is not in doubt again", "[core][remote]") {
  auto link = connected_link();
  REQUIRE(link.deliver(10, t0) == 1u);
  REQUIRE(link.deliver(10, t0) == 2u);
  link.durable_through(1);
  CHECK(link.work_in_doubt());
  const auto owed = drop_and_reconnect(link, t0 + 1s, 7);
  CHECK(owed.work_lost);
  CHECK(owed.changed);
  CHECK_FALSE(link.work_in_doubt());
  CHECK(link.deliver(10, t0 + 2s) == 3u);  // the replay: new numbers, never reused
  // A loss with everything durable owes nothing but the changed a deferral asked for.
  link.durable_through(3);
  const auto calm = drop_and_reconnect(link, t0 + 3s, 7);
  CHECK_FALSE(calm.work_lost);
  CHECK(calm.changed);
}

TEST_CASE("remote link: a restarted host (a new instance) owes a replay only for work in doubt when the connection was lost", "[core][remote]") {
  auto link = connected_link();
  REQUIRE(link.deliver(10, t0) == 1u);
  link.durable_through(0);
  // The shell sees the connection drop and come back with another host instance.
  CHECK(drop_and_reconnect(link, t0 + 1s, 8).work_lost);
  REQUIRE(link.deliver(10, t0 + 2s) == 2u);
  link.durable_through(2);
  CHECK_FALSE(drop_and_reconnect(link, t0 + 3s, 9).work_lost);  // a restart, but nothing in doubt
  CHECK(link.host_instance() == std::uint64_t{9});
}

TEST_CASE("remote link: failed connects back off from 100 ms doubling to 10 s, jittered down to half, for ever, and a connection resets it", "[core][remote]") {
  remote_link link;
  auto now = t0;
  std::vector<std::int64_t> delays;
  for (int i = 0; i < 10; ++i) {
    REQUIRE(link.connect_due());
    now = std::max(now, *link.connect_due());
    link.connecting(now);
    link.connect_failed(now, 0.0);
    delays.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(*link.connect_due() - now).count());
  }
  CHECK(delays == std::vector<std::int64_t>{100, 200, 400, 800, 1600, 3200, 6400, 10000, 10000, 10000});
  link.connecting(now);
  link.connect_failed(now, 1.0);  // the most jitter: half the delay
  CHECK(*link.connect_due() - now == 5000ms);
  link.connecting(now);
  link.connected(now, 1);
  link.lost(now);
  link.connecting(now);
  link.connect_failed(now, 0.0);
  CHECK(*link.connect_due() - now == 100ms);  // from the start again
}

TEST_CASE("remote link: a durable seq never moves back and never past what was sent", "[core][remote]") {
  auto link = connected_link();
  REQUIRE(link.deliver(10, t0) == 1u);
  REQUIRE(link.deliver(10, t0) == 2u);
  link.durable_through(2);
  link.durable_through(1);
  CHECK_FALSE(link.work_in_doubt());
  link.durable_through(99);
  REQUIRE(link.deliver(10, t0) == 3u);
  CHECK(link.work_in_doubt());  // 99 was clamped to 2: batch 3 is in doubt
}

TEST_CASE("remote link: a deferral the shell makes itself numbers nothing, sends nothing, and owes changed once", "[core][remote]") {
  auto link = connected_link();
  CHECK_FALSE(link.take_changed());
  link.note_deferred();  // e.g. a batch of an epoch whose session is not open yet
  CHECK(link.unacked_batches() == 0);
  CHECK_FALSE(link.work_in_doubt());
  CHECK_FALSE(link.ack_overdue(t0 + std::chrono::hours(1)));
  CHECK(link.take_changed());  // the window is empty: changed is due, once
  CHECK_FALSE(link.take_changed());
  CHECK(link.deliver(10, t0) == std::optional<std::uint64_t>{1});  // nothing was numbered
}

TEST_CASE("remote link: a new session for a new epoch forgets the window without owing accepted_work_lost, and a refusal backs off", "[core][remote]") {
  auto link = connected_link();
  REQUIRE(link.deliver(10, t0));
  REQUIRE(link.work_in_doubt());
  link.new_session(t0);
  CHECK(link.current() == remote_link::phase::connecting);
  CHECK(link.unacked_batches() == 0);
  CHECK_FALSE(link.work_in_doubt());
  auto owed = link.connected(t0, 7);
  CHECK_FALSE(owed.work_lost);

  link.refused(t0, 0.0);
  CHECK(link.current() == remote_link::phase::disconnected);
  CHECK(link.connect_due() == t0 + 100ms);  // not at once: a refused hello does not loop
  link.connecting(t0 + 100ms);
  link.refused(t0 + 100ms, 0.0);
  CHECK(link.connect_due() == t0 + 300ms);  // doubling
}
