// Tests of decode_transaction (formats.md §1.2, §1.3): one test per rejection rule, the accepted
// shapes, has_unknown_family, and a seeded fuzz over random raw batches.
#include <catch2/catch.hpp>

#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "core/txn_header.hpp"
#include "core/wal_batch.hpp"

namespace {

using dix::errc;
using dix::raw_kind;
namespace flag = dix::header_flag;

constexpr std::uint32_t default_cf = 0;
constexpr std::uint32_t meta_cf = 1;
constexpr std::uint32_t table7_cf = 2;
constexpr std::uint32_t unknown_cf = 9;

const dix::family_map families{
    {default_cf, {dix::family_kind::default_family, 0}},
    {meta_cf, {dix::family_kind::meta, 0}},
    {table7_cf, {dix::family_kind::table, 7}},
};

// Owns the bytes the raw records' views point into (deque: stable element addresses).
class batch_builder {
 public:
  std::string_view keep(std::string s) {
    strings_.push_back(std::move(s));
    return strings_.back();
  }

  dix::raw_record header_blob(std::string blob) {
    return {raw_kind::log_data, 0, keep(std::move(blob)), {}};
  }
  dix::raw_record header(std::uint8_t flags, std::uint64_t time, std::uint32_t op_count) {
    return header_blob(dix::encode_header(dix::txn_header{flags, time, op_count}));
  }
  dix::raw_record record(raw_kind kind, std::uint32_t family, std::string key,
                         std::string value = {}) {
    return {kind, family, keep(std::move(key)), keep(std::move(value))};
  }
  dix::raw_record put(std::uint32_t family, std::string key, std::string value = "v") {
    return record(raw_kind::put, family, std::move(key), std::move(value));
  }

  // Count() = the records that are not LogData, as a WriteBatch would count them.
  static dix::raw_batch batch(std::uint64_t sequence, std::vector<dix::raw_record> records) {
    dix::raw_batch b;
    b.sequence = sequence;
    for (const auto& r : records) {
      if (r.kind != raw_kind::log_data) ++b.count;
    }
    b.data_size = 12 + 64 * records.size();
    b.records = std::move(records);
    return b;
  }

 private:
  std::deque<std::string> strings_;
};

void require_log_corrupt(const dix::raw_batch& raw, std::string_view needle) {
  auto r = dix::decode_transaction(raw, families);
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::log_corrupt);
  CHECK_THAT(r.error().message(),
             Catch::Matchers::StartsWith("transaction at sequence " + std::to_string(raw.sequence)));
  CHECK_THAT(r.error().message(), Catch::Matchers::Contains(std::string(needle)));
}

// A batch that is valid except for the header bytes given.
dix::raw_batch with_header_bytes(batch_builder& b, std::string blob) {
  return batch_builder::batch(50, {b.header_blob(std::move(blob)), b.put(table7_cf, "k")});
}

std::string header_bytes(std::uint8_t flags = 0, std::uint32_t op_count = 1) {
  return dix::encode_header(dix::txn_header{flags, 1000, op_count});
}

}  // namespace

// ---- accepted shapes --------------------------------------------------------------------------

TEST_CASE("wal_batch: a put/delete batch decodes into its operations", "[core][wal_batch]") {
  batch_builder b;
  auto value = dix::encode_value(5000, "payload");
  auto raw = batch_builder::batch(
      100, {b.header(flag::replicated | flag::recovery, 5000, 2), b.put(table7_cf, "k1", value),
            b.record(raw_kind::del, table7_cf, "k2")});
  raw.data_size = 777;
  auto r = dix::decode_transaction(raw, families);
  REQUIRE(r);
  CHECK(r->sequence == 100);
  CHECK(r->count == 2);
  CHECK(r->end_sequence() == 101);
  CHECK(r->time == 5000);
  CHECK(r->flags == (flag::replicated | flag::recovery));
  CHECK(r->has_flag(flag::replicated));
  CHECK(r->has_flag(flag::recovery));
  CHECK_FALSE(r->has_flag(flag::system));
  CHECK_FALSE(r->has_flag(flag::reload));
  CHECK(r->data_size == 777);
  REQUIRE(r->ops.size() == 2);
  CHECK(r->ops[0].kind == dix::op_kind::put);
  CHECK_FALSE(r->ops[0].meta);
  CHECK(r->ops[0].table == 7);
  CHECK(r->ops[0].key == "k1");
  CHECK(r->ops[0].value == value);
  // Views into the raw batch's bytes, not copies.
  CHECK(r->ops[0].key.data() == raw.records[1].key.data());
  CHECK(r->ops[0].value.data() == raw.records[1].value.data());
  CHECK(r->ops[1].kind == dix::op_kind::del);
  CHECK(r->ops[1].table == 7);
  CHECK(r->ops[1].key == "k2");
}

TEST_CASE("wal_batch: a one-operation batch ends at its own sequence", "[core][wal_batch]") {
  batch_builder b;
  auto r = dix::decode_transaction(
      batch_builder::batch(1, {b.header(0, 1, 1), b.put(table7_cf, "k")}), families);
  REQUIRE(r);
  CHECK(r->sequence == 1);
  CHECK(r->end_sequence() == 1);
  CHECK(r->flags == 0);
}

TEST_CASE("wal_batch: a system batch on dix.meta is accepted", "[core][wal_batch]") {
  batch_builder b;
  auto raw = batch_builder::batch(
      10, {b.header(flag::system, 2000, 2), b.put(meta_cf, "clock", "\x01\x02"),
           b.record(raw_kind::del, meta_cf, "epoch/x")});
  auto r = dix::decode_transaction(raw, families);
  REQUIRE(r);
  CHECK(r->has_flag(flag::system));
  REQUIRE(r->ops.size() == 2);
  CHECK(r->ops[0].meta);
  CHECK(r->ops[0].table == 0);
  CHECK(r->ops[0].key == "clock");
  CHECK(r->ops[1].meta);
  CHECK(r->ops[1].kind == dix::op_kind::del);
}

TEST_CASE("wal_batch: a reload batch may hold a DeleteRange", "[core][wal_batch]") {
  batch_builder b;
  auto raw = batch_builder::batch(
      20, {b.header(flag::reload, 3000, 2), b.record(raw_kind::delete_range, table7_cf, "a", "z"),
           b.put(table7_cf, "m")});
  auto r = dix::decode_transaction(raw, families);
  REQUIRE(r);
  CHECK(r->has_flag(flag::reload));
  REQUIRE(r->ops.size() == 2);
  CHECK(r->ops[0].kind == dix::op_kind::delete_range);
  CHECK(r->ops[0].table == 7);
  CHECK(r->ops[0].key == "a");
  CHECK(r->ops[0].value == "z");
  CHECK(r->ops[1].kind == dix::op_kind::put);
  CHECK(r->end_sequence() == 21);
}

// ---- rejections (formats.md §1.3), all log_corrupt ---------------------------------------------

TEST_CASE("wal_batch: rejects a batch whose first record is not LogData", "[core][wal_batch]") {
  batch_builder b;
  require_log_corrupt(batch_builder::batch(5, {b.put(table7_cf, "k")}), "first record");
  // The header later in the batch does not count.
  require_log_corrupt(batch_builder::batch(5, {b.put(table7_cf, "k"), b.header(0, 1000, 1)}),
                      "first record");
  dix::raw_batch empty;
  empty.sequence = 5;
  empty.count = 0;
  require_log_corrupt(empty, "first record");
}

TEST_CASE("wal_batch: rejects a LogData that is not 24 bytes", "[core][wal_batch]") {
  batch_builder b;
  auto bytes = header_bytes();
  require_log_corrupt(with_header_bytes(b, bytes.substr(0, 23)), "23 bytes");
  require_log_corrupt(with_header_bytes(b, bytes + '\0'), "25 bytes");
  require_log_corrupt(with_header_bytes(b, ""), "0 bytes");
}

TEST_CASE("wal_batch: rejects a second LogData", "[core][wal_batch]") {
  batch_builder b;
  require_log_corrupt(
      batch_builder::batch(5, {b.header(0, 1000, 1), b.put(table7_cf, "k"), b.header(0, 1001, 1)}),
      "second LogData");
  require_log_corrupt(
      batch_builder::batch(5, {b.header(0, 1000, 1), b.header(0, 1000, 1), b.put(table7_cf, "k")}),
      "second LogData");
}

TEST_CASE("wal_batch: rejects a header with a wrong magic", "[core][wal_batch]") {
  batch_builder b;
  auto bytes = header_bytes();
  bytes[0] = 'X';
  require_log_corrupt(with_header_bytes(b, bytes), "wrong magic");
}

TEST_CASE("wal_batch: rejects a header format other than 1", "[core][wal_batch]") {
  batch_builder b;
  auto bytes = header_bytes();
  bytes[4] = 2;
  require_log_corrupt(with_header_bytes(b, bytes), "format 2");
}

TEST_CASE("wal_batch: rejects reserved header bits and bytes", "[core][wal_batch]") {
  batch_builder b;
  auto bytes = header_bytes();
  bytes[5] = static_cast<char>(0x10);
  require_log_corrupt(with_header_bytes(b, bytes), "reserved flag bits");
  bytes = header_bytes();
  bytes[7] = 1;
  require_log_corrupt(with_header_bytes(b, bytes), "reserved bytes 6-7");
  bytes = header_bytes();
  bytes[23] = 1;
  require_log_corrupt(with_header_bytes(b, bytes), "reserved bytes 20-23");
}

TEST_CASE("wal_batch: rejects a header op_count that differs from Count()", "[core][wal_batch]") {
  batch_builder b;
  require_log_corrupt(batch_builder::batch(5, {b.header(0, 1000, 2), b.put(table7_cf, "k")}),
                      "op_count 2 differs from Count() 1");
  require_log_corrupt(batch_builder::batch(5, {b.header(0, 1000, 1), b.put(table7_cf, "k"),
                                               b.put(table7_cf, "l")}),
                      "op_count 1 differs from Count() 2");
}

TEST_CASE("wal_batch: rejects Count() that differs from the records held", "[core][wal_batch]") {
  batch_builder b;
  // Header and Count() agree on 2 but only one operation record is present.
  auto raw = batch_builder::batch(5, {b.header(0, 1000, 2), b.put(table7_cf, "k")});
  raw.count = 2;
  require_log_corrupt(raw, "holds 1 operations but Count() is 2");
}

TEST_CASE("wal_batch: rejects Count() == 0", "[core][wal_batch]") {
  batch_builder b;
  require_log_corrupt(batch_builder::batch(5, {b.header(0, 1000, 0)}), "Count() is 0");
}

TEST_CASE("wal_batch: only a batch with no record at all is RocksDB's recovery marker", "[core][wal_batch]") {
  batch_builder b;
  CHECK(dix::is_recovery_marker(batch_builder::batch(1003, {})));
  // A dix header with Count() 0 is a corrupt dix batch, not a marker.
  auto header_only = batch_builder::batch(1003, {b.header(0, 1000, 0)});
  CHECK_FALSE(dix::is_recovery_marker(header_only));
  require_log_corrupt(header_only, "Count() is 0");
  // A foreign batch without a header is not a marker either.
  CHECK_FALSE(dix::is_recovery_marker(batch_builder::batch(1003, {b.put(table7_cf, "k")})));
  // decode_transaction itself still rejects the empty batch; skipping it is the log reader's call.
  require_log_corrupt(batch_builder::batch(1003, {}), "LogData");
}

TEST_CASE("wal_batch: rejects a system batch touching a table family", "[core][wal_batch]") {
  batch_builder b;
  require_log_corrupt(batch_builder::batch(5, {b.header(flag::system, 1000, 2),
                                               b.put(meta_cf, "clock"), b.put(table7_cf, "k")}),
                      "system transaction touches table 7");
  require_log_corrupt(batch_builder::batch(5, {b.header(flag::system, 1000, 1),
                                               b.record(raw_kind::del, table7_cf, "k")}),
                      "system transaction touches table 7");
}

TEST_CASE("wal_batch: rejects a DeleteRange without the reload flag", "[core][wal_batch]") {
  batch_builder b;
  require_log_corrupt(
      batch_builder::batch(5, {b.header(flag::replicated, 1000, 1),
                               b.record(raw_kind::delete_range, table7_cf, "a", "z")}),
      "DeleteRange without the reload flag");
  require_log_corrupt(
      batch_builder::batch(5, {b.header(flag::system, 1000, 1),
                               b.record(raw_kind::delete_range, meta_cf, "a", "z")}),
      "DeleteRange without the reload flag");
}

namespace {

// A batch whose only fault is one record of `kind` (header op_count and Count() agree).
void require_kind_rejected(raw_kind kind) {
  batch_builder b;
  auto raw = batch_builder::batch(
      5, {b.header(0, 1000, 2), b.put(table7_cf, "k"), b.record(kind, table7_cf, "x", "y")});
  require_log_corrupt(raw, std::string(dix::to_string(kind)) + " record is never written by dix");
  // Also as the only operation, and under every flag combination.
  for (std::uint8_t flags = 0; flags <= flag::all; ++flags) {
    auto alone = batch_builder::batch(
        6, {b.header(flags, 1000, 1), b.record(kind, (flags & flag::system) ? meta_cf : table7_cf,
                                                "x", "y")});
    require_log_corrupt(alone, std::string(dix::to_string(kind)));
  }
}

}  // namespace

TEST_CASE("wal_batch: rejects a Merge", "[core][wal_batch]") {
  require_kind_rejected(raw_kind::merge);
}
TEST_CASE("wal_batch: rejects a SingleDelete", "[core][wal_batch]") {
  require_kind_rejected(raw_kind::single_delete);
}
TEST_CASE("wal_batch: rejects a PutEntity", "[core][wal_batch]") {
  require_kind_rejected(raw_kind::put_entity);
}
TEST_CASE("wal_batch: rejects a PutBlobIndex", "[core][wal_batch]") {
  require_kind_rejected(raw_kind::blob_index);
}
TEST_CASE("wal_batch: rejects a MarkBeginPrepare", "[core][wal_batch]") {
  require_kind_rejected(raw_kind::begin_prepare);
}
TEST_CASE("wal_batch: rejects a MarkEndPrepare", "[core][wal_batch]") {
  require_kind_rejected(raw_kind::end_prepare);
}
TEST_CASE("wal_batch: rejects a MarkCommit", "[core][wal_batch]") {
  require_kind_rejected(raw_kind::commit);
}
TEST_CASE("wal_batch: rejects a MarkCommitWithTimestamp", "[core][wal_batch]") {
  require_kind_rejected(raw_kind::commit_with_timestamp);
}
TEST_CASE("wal_batch: rejects a MarkRollback", "[core][wal_batch]") {
  require_kind_rejected(raw_kind::rollback);
}
TEST_CASE("wal_batch: rejects a MarkNoop", "[core][wal_batch]") {
  require_kind_rejected(raw_kind::noop);
}

TEST_CASE("wal_batch: rejects an operation on the default family", "[core][wal_batch]") {
  batch_builder b;
  require_log_corrupt(batch_builder::batch(5, {b.header(0, 1000, 1), b.put(default_cf, "k")}),
                      "default column family");
  require_log_corrupt(batch_builder::batch(5, {b.header(flag::system, 1000, 1),
                                               b.record(raw_kind::del, default_cf, "k")}),
                      "default column family");
  require_log_corrupt(
      batch_builder::batch(5, {b.header(flag::reload, 1000, 1),
                               b.record(raw_kind::delete_range, default_cf, "a", "z")}),
      "default column family");
}

TEST_CASE("wal_batch: rejects an operation on an unknown family id", "[core][wal_batch]") {
  batch_builder b;
  auto raw = batch_builder::batch(5, {b.header(0, 1000, 2), b.put(table7_cf, "k"),
                                      b.put(unknown_cf, "k")});
  CHECK(dix::has_unknown_family(raw, families));
  require_log_corrupt(raw, "unknown column family id 9");
}

TEST_CASE("wal_batch: rejects dix.meta written by a non-system transaction",
          "[core][wal_batch]") {
  batch_builder b;
  for (std::uint8_t flags : {std::uint8_t{0}, flag::replicated, flag::recovery, flag::reload}) {
    CAPTURE(flags);
    require_log_corrupt(
        batch_builder::batch(5, {b.header(flags, 1000, 1), b.put(meta_cf, "clock")}),
        "dix.meta written outside a system transaction");
  }
}

TEST_CASE("wal_batch: has_unknown_family looks at operation records only", "[core][wal_batch]") {
  batch_builder b;
  CHECK_FALSE(dix::has_unknown_family(
      batch_builder::batch(5, {b.header(0, 1000, 2), b.put(table7_cf, "k"),
                               b.put(meta_cf, "m"), b.put(default_cf, "d")}),
      families));
  // A LogData record's family field means nothing.
  auto log_data_only = batch_builder::batch(5, {b.header(0, 1000, 1), b.put(table7_cf, "k")});
  log_data_only.records[0].family = 77;
  CHECK_FALSE(dix::has_unknown_family(log_data_only, families));
  CHECK(dix::has_unknown_family(
      batch_builder::batch(5, {b.header(0, 1000, 1), b.record(raw_kind::merge, 42, "k")}),
      families));
  CHECK_FALSE(dix::has_unknown_family(dix::raw_batch{}, families));
  // Once the map knows the family (a table created after the tailer started), it decodes.
  auto raw = batch_builder::batch(5, {b.header(0, 1000, 1), b.put(unknown_cf, "k")});
  CHECK(dix::has_unknown_family(raw, families));
  auto refreshed = families;
  refreshed[unknown_cf] = {dix::family_kind::table, 12};
  CHECK_FALSE(dix::has_unknown_family(raw, refreshed));
  auto r = dix::decode_transaction(raw, refreshed);
  REQUIRE(r);
  CHECK(r->ops.at(0).table == 12);
}

TEST_CASE("wal_batch: kinds render their names", "[core][wal_batch]") {
  CHECK(dix::to_string(raw_kind::log_data) == "log_data");
  CHECK(dix::to_string(raw_kind::merge) == "merge");
  CHECK(dix::to_string(raw_kind::commit_with_timestamp) == "commit_with_timestamp");
  CHECK(dix::to_string(dix::op_kind::put) == "put");
  CHECK(dix::to_string(dix::op_kind::del) == "del");
  CHECK(dix::to_string(dix::op_kind::delete_range) == "delete_range");
}

// ---- fuzz ---------------------------------------------------------------------------------------

TEST_CASE("wal_batch: seeded fuzz — random raw batches never crash and decode consistently",
          "[core][wal_batch][fuzz]") {
  constexpr std::uint64_t seed = 0x5EED0001ull;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto blob = [&](int max_len) {
    std::string s(static_cast<std::size_t>(pick(0, max_len)), '\0');
    for (auto& c : s) c = static_cast<char>(pick(0, 255));
    return s;
  };

  int accepted = 0;
  int inconsistent = 0;
  for (int i = 0; i < 20000; ++i) {
    batch_builder b;
    std::vector<dix::raw_record> records;
    auto n = pick(0, 6);
    auto flags = static_cast<std::uint8_t>(pick(0, 3) == 0 ? pick(0, 255) : pick(0, 15));
    for (int k = 0; k < n; ++k) {
      // Mostly plausible records, so the accepting paths are exercised too.
      raw_kind kind;
      if (k == 0 && pick(0, 9) != 0) {
        kind = raw_kind::log_data;
      } else if (pick(0, 3) != 0) {
        kind = pick(0, 1) == 0 ? raw_kind::put : raw_kind::del;
      } else {
        kind = static_cast<raw_kind>(pick(0, 13));
      }
      if (kind == raw_kind::log_data) {
        if (pick(0, 4) != 0) {
          records.push_back(b.header(flags, static_cast<std::uint64_t>(pick(0, 3)),
                                     static_cast<std::uint32_t>(pick(0, 6))));
        } else {
          records.push_back(b.header_blob(blob(30)));
        }
      } else {
        records.push_back(
            b.record(kind, static_cast<std::uint32_t>(pick(0, 3)), blob(8), blob(16)));
      }
    }
    auto raw = batch_builder::batch(static_cast<std::uint64_t>(pick(0, 1000)), std::move(records));
    if (pick(0, 4) == 0) raw.count = static_cast<std::uint32_t>(pick(0, 7));

    auto r = dix::decode_transaction(raw, families);
    if (!r) {
      if (r.error().value() != errc::log_corrupt) ++inconsistent;
      continue;
    }
    ++accepted;
    // Whatever is accepted satisfies formats.md §1.3.
    bool ok = r->count == raw.count && r->ops.size() == raw.count && raw.count > 0 &&
              r->time != 0 && (r->flags & ~flag::all) == 0 && r->sequence == raw.sequence &&
              !raw.records.empty() && raw.records[0].kind == raw_kind::log_data;
    for (const auto& op : r->ops) {
      if (op.meta != r->has_flag(flag::system)) ok = false;
      if (!op.meta && op.table != 7) ok = false;
      if (op.kind == dix::op_kind::delete_range && !r->has_flag(flag::reload)) ok = false;
    }
    if (!ok) ++inconsistent;
  }
  CHECK(inconsistent == 0);
  CHECK(accepted > 0);  // the generator reaches the accepting paths
}
