// [core] core/publication_fence.hpp (decision 0008:
// an owner's unlock waits until every publication it sent has landed, and every effect after the
// unlock waits behind it), driven with plain calls — the test plays the runner shell (it sends
// publications and runs effects through the fence) and the publisher (it lands them).
#include <catch2/catch.hpp>

#include <deque>
#include <string>
#include <vector>

#include "core/publication_fence.hpp"

using namespace dix;

namespace {

// What ran, in order.
struct journal {
  std::vector<std::string> steps;
  publication_fence::step note(std::string name) {
    return [this, name = std::move(name)] { steps.push_back(name); };
  }
};

using names = std::vector<std::string>;

}  // namespace

TEST_CASE("publication fence: with nothing waiting an effect runs at once, publications in flight or not", "[core][fence]") {
  publication_fence fence;
  journal j;
  fence.then(j.note("a"));
  CHECK(j.steps == names{"a"});
  fence.sent();
  fence.then(j.note("b"));  // only the unlock waits for publications
  CHECK(j.steps == names{"a", "b"});
  CHECK(fence.in_flight() == 1);
}

TEST_CASE("publication fence: an unlock with no publication in flight runs at once", "[core][fence]") {
  publication_fence fence;
  journal j;
  fence.sent();
  fence.landed();
  fence.after_landed(j.note("unlock"));
  CHECK(j.steps == names{"unlock"});
  CHECK(fence.in_flight() == 0);
}

TEST_CASE("publication fence: the unlock runs only when the publication in flight is acknowledged, and the effects after it wait behind it in order", "[core][fence]") {
  publication_fence fence;
  journal j;
  fence.sent();  // unavailable/backend-failed, say
  fence.after_landed(j.note("unlock"));
  fence.then(j.note("stopped"));
  fence.then(j.note("reply"));
  CHECK(j.steps.empty());
  fence.landed();
  CHECK(j.steps == names{"unlock", "stopped", "reply"});
  fence.then(j.note("later"));  // nothing waits any more
  CHECK(j.steps == names{"unlock", "stopped", "reply", "later"});
}

TEST_CASE("publication fence: with several publications in flight the unlock waits for the last acknowledgement", "[core][fence]") {
  publication_fence fence;
  journal j;
  fence.sent();
  fence.sent();
  fence.sent();
  fence.after_landed(j.note("unlock"));
  fence.landed();
  fence.landed();
  CHECK(j.steps.empty());
  CHECK(fence.in_flight() == 1);
  fence.landed();  // an error answer counts as well: that publication will not land later
  CHECK(j.steps == names{"unlock"});
}

TEST_CASE("publication fence: a publication sent by an effect released behind the unlock holds the next unlock back", "[core][fence]") {
  publication_fence fence;
  journal j;
  fence.sent();
  fence.after_landed(j.note("unlock 1"));
  fence.then([&] {
    j.steps.push_back("publish");
    fence.sent();  // run while the fence drains
  });
  fence.after_landed(j.note("unlock 2"));
  fence.then(j.note("after"));
  fence.landed();
  CHECK(j.steps == names{"unlock 1", "publish"});
  CHECK(fence.in_flight() == 1);
  fence.landed();
  CHECK(j.steps == names{"unlock 1", "publish", "unlock 2", "after"});
}

TEST_CASE("publication fence: an acknowledgement that arrives inside a step keeps the order of the waiting effects", "[core][fence]") {
  publication_fence fence;
  journal j;
  fence.sent();
  fence.after_landed(j.note("unlock 1"));
  fence.then([&] {
    j.steps.push_back("publish and land");
    fence.sent();
    fence.landed();  // a publisher that answered at once: the drain below goes on, not a nested one
  });
  fence.after_landed(j.note("unlock 2"));
  fence.then(j.note("after"));
  fence.landed();
  CHECK(j.steps == names{"unlock 1", "publish and land", "unlock 2", "after"});
  CHECK(fence.in_flight() == 0);
}

TEST_CASE("publication fence: an acknowledgement with nothing in flight changes nothing", "[core][fence]") {
  publication_fence fence;
  journal j;
  fence.landed();
  CHECK(fence.in_flight() == 0);
  fence.sent();
  fence.after_landed(j.note("unlock"));
  CHECK(j.steps.empty());  // the spare acknowledgement above did not count for this publication
  fence.landed();
  CHECK(j.steps == names{"unlock"});
}

// Two runtimes of one process have two publishers: an old owner's publication may still sit in
// its publisher's mailbox when the lock table hands the id to a new owner, whose own publisher is
// idle. The model: the old owner's publication reaches the slot when the test lands it; the
// handover runs the new owner, which publishes straight to the slot.
TEST_CASE("publication fence: the old owner's late publication lands before the new owner gets the lock, so it never overwrites the new owner's", "[core][fence]") {
  std::string slot = "ready (old owner)";
  std::deque<std::string> old_publisher;  // in flight, not yet in the slot
  publication_fence fence;
  auto hand_over = [&] { slot = "ready (new owner)"; };  // the new owner acquires and publishes
  auto land_old = [&] {
    slot = old_publisher.front();
    old_publisher.pop_front();
    fence.landed();
  };

  old_publisher.push_back("unavailable (old owner)");
  fence.sent();
  fence.after_landed(hand_over);
  CHECK(slot == "ready (old owner)");  // the lock is not handed over yet
  land_old();
  CHECK(slot == "ready (new owner)");  // the old value landed first, then the new owner published
  CHECK(old_publisher.empty());
}
