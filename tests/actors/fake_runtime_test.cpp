// <dix/testing/fake_runtime.hpp> answers data requests as the real runtime actor does (decision
// 0066): only to an actor of its own node that can hear the answer. Under CAF's test coordinator.
#include <catch2/catch.hpp>

#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <dix/testing/fake_runtime.hpp>

#include "support/caf_fixture.hpp"

using dix::errc;

TEST_CASE_METHOD(dix::test::caf_fixture,
                 "fake runtime: an anonymous commit or query is refused, as the real runtime refuses it, and a local "
                 "request is answered",
                 "[actor][fake]") {
  dix::testing::fake_runtime fake{sys};
  caf::scoped_actor self{sys};
  // Anonymous: nobody hears the refusal, but nothing is committed (the next sequence stays 1).
  caf::anon_send(fake.actor(), dix::commit_transaction{"", {dix::write_op{dix::write_kind::put, 1, "a", "b"}},
                                                        dix::commit_sync::store_default});
  run();
  self->send(fake.actor(), dix::commit_transaction{"", {dix::write_op{dix::write_kind::put, 1, "c", "d"}},
                                                   dix::commit_sync::store_default});
  run();
  auto committed = try_receive<dix::transaction_committed>(self);
  REQUIRE(committed);
  CHECK(committed->sequence == 1);
  CHECK(committed->log == "main");
}
