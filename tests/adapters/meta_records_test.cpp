// [adapter] The metadata records of formats.md §5 over a real primary store: their keys and
// encodings, and the meta_store of one id (adapters/meta_records).
#include <catch2/catch.hpp>

#include <limits>

#include "adapters/meta_records.hpp"
#include "adapters/primary_store_impl.hpp"
#include "adapters/test_support.hpp"

using namespace dix;
using dix::test::temp_dir;

TEST_CASE("meta records: keys and values are formats.md §5's", "[adapter][meta]") {
  CHECK(meta::epoch_key("idx") == "epoch/idx");
  CHECK(meta::condemned_key("idx") == "condemned/idx");
  CHECK(meta::registration_key("idx") == "registration/idx");
  CHECK(meta::encode_u64(0x0102030405060708ull) == std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
  CHECK(*meta::decode_u64("epoch/idx", meta::encode_u64(42)) == 42);
  auto bad = meta::decode_u64("epoch/idx", "1234");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().value() == errc::record_corrupt);
  CHECK(bad.error().message() == "epoch/idx holds 4 bytes, not 8");
  CHECK(meta::marker_value == std::string_view("\x01", 1));
}

TEST_CASE("meta records: one id's store writes synced system transactions and reads them back", "[adapter][meta]") {
  temp_dir dir;
  auto store = test::open_store(dir / "db");
  meta::home_meta_store records(store, "idx");
  CHECK_FALSE(*meta::read_epoch(*store, "idx"));
  auto none = records.read_records();
  REQUIRE(none);
  CHECK_FALSE(none->condemned);
  CHECK_FALSE(none->fingerprint);

  REQUIRE(records.persist_epoch(7));
  CHECK(**meta::read_epoch(*store, "idx") == 7);
  REQUIRE(records.write_marker());
  CHECK(records.read_records()->condemned);
  CHECK(read_meta(*store, "condemned/idx").value() == std::optional<std::string>(std::string("\x01", 1)));
  const auto before = synced_sequence(*store);
  REQUIRE(records.settle(0xfeedface));
  auto settled = records.read_records();
  CHECK_FALSE(settled->condemned);  // deleted in the same transaction
  CHECK(settled->fingerprint == std::optional<std::uint64_t>(0xfeedface));
  CHECK(synced_sequence(*store) > before);  // sync = true
  CHECK_FALSE(*meta::read_epoch(*store, "other"));  // records are per id
}

TEST_CASE("meta records: epoch/<id> holds the highest epoch persisted: a late write of an older one leaves it (two runtimes' tailers persist independently)", "[adapter][meta][epoch]") {
  temp_dir dir;
  auto store = test::open_store(dir / "db");
  meta::home_meta_store one(store, "idx"), other(store, "idx");
  REQUIRE(other.persist_epoch(8));
  const auto before = latest_sequence(*store);
  REQUIRE(one.persist_epoch(7));  // minted earlier, written later: nothing to write
  CHECK(**meta::read_epoch(*store, "idx") == 8);
  CHECK(latest_sequence(*store) == before);
  REQUIRE(one.persist_epoch(8));  // the same again: already there
  REQUIRE(one.persist_epoch(9));
  CHECK(**meta::read_epoch(*store, "idx") == 9);
}

TEST_CASE("meta records: a record of the wrong size is record_corrupt naming the key, a closed store io_error", "[adapter][meta]") {
  temp_dir dir;
  auto store = test::open_store(dir / "db");
  REQUIRE(commit_system(*store, {meta_op{op_kind::put, "registration/idx", "short"}}));
  REQUIRE(commit_system(*store, {meta_op{op_kind::put, "epoch/idx", "x"}}));
  meta::home_meta_store records(store, "idx");
  auto r = records.read_records();
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::record_corrupt);
  CHECK_THAT(r.error().message(), Catch::Contains("registration/idx"));
  CHECK(meta::read_epoch(*store, "idx").error().value() == errc::record_corrupt);
  REQUIRE(store->close());
  auto closed = records.read_records();
  REQUIRE_FALSE(closed);
  CHECK(closed.error().value() == errc::io_error);
  CHECK_THAT(closed.error().message(), Catch::StartsWith("reading condemned/idx"));
  CHECK_FALSE(records.persist_epoch(8));
}

TEST_CASE("meta records: an epoch/<id> of 2^64-1 cannot be incremented and reads record_corrupt", "[adapter][meta][epoch]") {
  temp_dir dir;
  auto store = test::open_store(dir / "db");
  constexpr auto top = std::numeric_limits<epoch_t>::max();
  REQUIRE(commit_system(*store, {meta_op{op_kind::put, "epoch/idx", meta::encode_u64(top - 1)}}));
  CHECK(**meta::read_epoch(*store, "idx") == top - 1);  // the floor of one more mint
  REQUIRE(commit_system(*store, {meta_op{op_kind::put, "epoch/idx", meta::encode_u64(top)}}));
  auto refused = meta::read_epoch(*store, "idx");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::record_corrupt);
  CHECK(refused.error().message() == "epoch/idx holds 2^64-1, an epoch that cannot be incremented");
}
