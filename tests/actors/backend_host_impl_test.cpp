// [actor] The backend host a registration hands its backend (actors/backend_host_impl.hpp, api.md
// §5), over the slot of a real readiness segment in a temporary directory: what it answers while
// the registration lives, and after end() (the registration ended, the host stays callable).
// Plain calls: the host sends nothing itself, its rebuild function is the test's.
#include <catch2/catch.hpp>

#include <memory>
#include <stdexcept>

#include "actors/backend_host_impl.hpp"
#include "adapters/readiness_segment.hpp"
#include "support/temp_dir.hpp"

using namespace dix;

namespace {

struct host_fixture {
  test::temp_dir home;
  std::shared_ptr<readiness_segment> segment = readiness_segment::attach(home.path()).value();
  std::shared_ptr<segment_slot> slot = segment->claim("idx").value();
  int rebuilds = 0;
  backend_host_impl host{slot, [this] { ++rebuilds; }};
};

// Through the interface, as a backend calls it (the default cancel token is the interface's).
errc refusal(backend_host& host) {
  auto r = host.admit_query(coverage_mode{});
  REQUIRE_FALSE(r);
  return r.error().value();
}

}  // namespace

TEST_CASE("backend host: while the registration lives, exactly the slot's current owner epoch is the backend's", "[actor][host]") {
  host_fixture f;
  const auto first = f.slot->mint_epoch().value();
  CHECK(f.host.is_owner_epoch(first));
  CHECK_FALSE(f.host.is_owner_epoch(first + 1));
  const auto second = f.slot->mint_epoch().value();  // a new owner (a takeover, a rebuild)
  CHECK(f.host.is_owner_epoch(second));
  CHECK_FALSE(f.host.is_owner_epoch(first));  // the old epoch's work is dropped
  CHECK_FALSE(f.host.ended());
}

TEST_CASE("backend host: while the registration lives, readiness is the slot's, unindexable records are counted and rebuild requests are passed on", "[actor][host]") {
  host_fixture f;
  const auto epoch = f.slot->mint_epoch().value();
  f.slot->publish(readiness_state::rebuilding, readiness_reason::rebuild_requested, 3);
  auto r = f.host.readiness();
  CHECK(r.state == readiness_state::rebuilding);
  CHECK(r.reason == readiness_reason::rebuild_requested);
  CHECK(r.rebuild_attempts == 3);
  CHECK(r.owner_epoch == epoch);
  f.slot->publish(readiness_state::ready, readiness_reason::none, 0);
  CHECK(f.host.readiness().state == readiness_state::ready);  // read now, not cached
  CHECK(f.host.unindexable() == 0);
  f.host.note_unindexable("too long");
  f.host.note_unindexable("bad vector");
  CHECK(f.host.unindexable() == 2);
  f.host.request_rebuild();
  f.host.request_rebuild();
  CHECK(f.rebuilds == 2);  // each one posted; the runtime's answer is the backend's no concern
}

TEST_CASE("backend host: admit_query follows readiness first: rebuilding refuses rebuilding, any state but ready unavailable, and ready without coverage services reads unknown, which a bounded query refuses", "[actor][host][query]") {
  host_fixture f;
  CHECK(refusal(f.host) == errc::unavailable);  // a fresh slot reads unknown
  f.slot->publish(readiness_state::ready, readiness_reason::none, 0);
  coverage_mode mode;
  mode.tolerance = std::chrono::milliseconds(1234);
  auto refused = static_cast<backend_host&>(f.host).admit_query(mode);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::index_lagging);  // retryable, and the slot is untouched
  CHECK(f.slot->read().state == readiness_state::ready);
  mode.kind = coverage_kind::wait;
  CHECK(static_cast<backend_host&>(f.host).admit_query(mode).error().value() == errc::unavailable);
  f.slot->publish(readiness_state::rebuilding, readiness_reason::rebuild_requested, 1);
  CHECK(refusal(f.host) == errc::rebuilding);
  f.slot->publish(readiness_state::needs_rebuild, readiness_reason::cursor_missing, 0);
  CHECK(refusal(f.host) == errc::unavailable);
  f.slot->publish(readiness_state::unavailable, readiness_reason::backend_failed, 0);
  CHECK(refusal(f.host) == errc::unavailable);
}

TEST_CASE("backend host: after end() no epoch is the backend's, readiness stays the value at the end, queries are not_registered and the other calls do nothing", "[actor][host][end]") {
  host_fixture f;
  const auto epoch = f.slot->mint_epoch().value();
  f.slot->publish(readiness_state::ready, readiness_reason::none, 0);
  f.host.note_unindexable("before");
  f.host.end();
  CHECK(f.host.ended());
  CHECK_FALSE(f.host.is_owner_epoch(epoch));  // the slot still holds it, but the registration is over
  // A successor owns the slot now and publishes; the ended host does not follow it.
  const auto successor = f.slot->mint_epoch().value();
  f.slot->publish(readiness_state::rebuilding, readiness_reason::rebuild_requested, 1);
  CHECK_FALSE(f.host.is_owner_epoch(successor));
  auto r = f.host.readiness();
  CHECK(r.state == readiness_state::ready);
  CHECK(r.owner_epoch == epoch);
  CHECK(refusal(f.host) == errc::not_registered);
  f.host.note_unindexable("late");
  CHECK(f.host.unindexable() == 1);
  f.host.request_rebuild();
  CHECK(f.rebuilds == 0);
}

TEST_CASE("backend host: end() is idempotent: a second call keeps the value of the first end", "[actor][host][end]") {
  host_fixture f;
  f.slot->publish(readiness_state::ready, readiness_reason::none, 0);
  f.host.end();
  f.slot->publish(readiness_state::unavailable, readiness_reason::shutdown_failed, 0);
  f.host.end();
  CHECK(f.host.ended());
  CHECK(f.host.readiness().state == readiness_state::ready);
}

TEST_CASE("backend host: request_rebuild never throws: a rebuild function that throws is contained, and a host without one does nothing", "[actor][host]") {
  test::temp_dir home;
  auto segment = readiness_segment::attach(home.path()).value();
  auto slot = segment->claim("idx").value();
  int calls = 0;
  backend_host_impl throwing{slot, [&calls] {
                               ++calls;
                               throw std::runtime_error("mailbox closed (test)");
                             }};
  throwing.request_rebuild();  // noexcept: an escaping exception would terminate the test binary
  CHECK(calls == 1);
  backend_host_impl without{slot, nullptr};
  without.request_rebuild();
  CHECK_FALSE(without.ended());
  CHECK_FALSE(slot->rebuild_requested());  // the host stores no request itself: the runtime does
}

TEST_CASE("backend host: a backend's hold reaches the slot only for the owner's epoch and while the registration lives (decision 0013)", "[actor][host][space]") {
  host_fixture f;
  const auto epoch = f.slot->mint_epoch().value();
  backend_host& host = f.host;
  host.note_hold(epoch + 1, backend_hold::low_disk_space);  // not the owner's work
  CHECK(f.slot->hold() == backend_hold::none);
  host.note_hold(epoch, backend_hold::low_disk_space);
  CHECK(f.slot->hold() == backend_hold::low_disk_space);
  host.note_hold(epoch, backend_hold::none);
  CHECK(f.slot->hold() == backend_hold::none);
  host.note_hold(epoch, backend_hold::low_disk_space);
  f.host.end();
  host.note_hold(epoch, backend_hold::none);  // ended: nothing changes
  CHECK(f.slot->hold() == backend_hold::low_disk_space);
}
