// [core] The host side of a remote backend (decision 0042): epoch fencing and the checks every
// decoded message passes before the wrapped backend sees it.
#include <catch2/catch.hpp>

#include "core/remote_fence.hpp"

using namespace dix;

TEST_CASE("host fence: the highest epoch acts, a higher one is adopted after the older one is quiesced, a lower one is superseded", "[core][remote]") {
  host_fence fence;
  auto first = fence.on_message(3);
  CHECK(first.what == host_fence::decision::kind::adopt);
  CHECK_FALSE(first.quiesce);  // nothing older to shut down
  CHECK_FALSE(fence.is_owner_epoch(3));  // not before the shell persisted it
  fence.adopted(3);
  CHECK(fence.is_owner_epoch(3));
  CHECK(fence.on_message(3).what == host_fence::decision::kind::act);
  auto next = fence.on_message(5);
  CHECK(next.what == host_fence::decision::kind::adopt);
  CHECK(next.quiesce == epoch_t{3});
  fence.adopted(5);
  CHECK(fence.on_message(3).what == host_fence::decision::kind::superseded);  // the dead owner's queued work
  CHECK_FALSE(fence.is_owner_epoch(3));
  fence.adopted(4);  // never lowers
  CHECK(fence.highest() == 5);
  CHECK_FALSE(fence.is_owner_epoch(0));
}

TEST_CASE("host fence: the epoch persisted in the state directory survives a restart of the host", "[core][remote]") {
  host_fence restarted(7);
  CHECK(restarted.is_owner_epoch(7));
  CHECK(restarted.on_message(6).what == host_fence::decision::kind::superseded);
  CHECK(restarted.on_message(8).quiesce == epoch_t{7});
}

TEST_CASE("remote messages: hello, deliver and record indices violating a rule are message_invalid naming it", "[core][remote]") {
  CHECK(check_hello(1, "fulltext", "xapian", 2, "fulltext", "xapian"));
  auto version = check_hello(2, "fulltext", "xapian", 2, "fulltext", "xapian");
  REQUIRE_FALSE(version);
  CHECK(version.error().value() == errc::message_invalid);
  CHECK_THAT(version.error().message(), Catch::Contains("protocol version 2"));
  CHECK_THAT(check_hello(1, "fulltext", "xapian", 0, "fulltext", "xapian").error().message(), Catch::Contains("epoch 0"));
  CHECK_THAT(check_hello(1, "other", "xapian", 2, "fulltext", "xapian").error().message(), Catch::Contains("\"other\""));
  CHECK_THAT(check_hello(1, "fulltext", "hnsw", 2, "fulltext", "xapian").error().message(), Catch::Contains("kind \"hnsw\""));

  CHECK(check_deliver(2, 5, 5, max_remote_message_bytes, max_remote_records));
  CHECK_THAT(check_deliver(0, 5, 5, 10, 1).error().message(), Catch::Contains("epoch 0"));
  CHECK_THAT(check_deliver(2, 7, 5, 10, 1).error().message(), Catch::Contains("sequence 7 where the session expects 5"));
  CHECK_THAT(check_deliver(2, 5, 5, max_remote_message_bytes + 1, 1).error().message(), Catch::Contains("bytes, more than"));
  CHECK_THAT(check_deliver(2, 5, 5, 10, max_remote_records + 1).error().message(), Catch::Contains("records, more than"));

  CHECK(check_record_index(0, 1));
  CHECK_FALSE(check_record_index(1, 1));
  CHECK(check_record_index(1, 1).error().value() == errc::message_invalid);
}

TEST_CASE("remote messages: a delivery past the owner's window (16 batches, 64 MiB unacknowledged) is a window "
          "overrun, never queued",
          "[core][remote]") {
  using dix::check_window;
  CHECK(check_window(17, 1, 0, 100));                // 16 unacknowledged with this one: allowed
  CHECK_FALSE(check_window(18, 1, 0, 100));          // the 17th
  CHECK(check_window(1, 0, 0, 64ull << 20));         // one batch of the whole window
  CHECK(check_window(5, 0, 60ull << 20, 4ull << 20));
  auto over = check_window(5, 0, 60ull << 20, (4ull << 20) + 1);
  REQUIRE_FALSE(over);
  CHECK(over.error().value() == dix::errc::message_invalid);
  CHECK_THAT(over.error().message(), Catch::StartsWith("deliver: window overrun"));
  CHECK_FALSE(check_window(2, 1, std::uint64_t{1} << 63, 1));  // no overflow in the sum
}
