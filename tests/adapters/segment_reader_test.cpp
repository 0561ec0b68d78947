// <dix/segment.hpp> (runtime/adapters/segment_reader.cpp): the readiness table of every claimed
// slot, read as read_readiness reads one id, and the wait on the segment's change counter.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <thread>

#include <dix/segment.hpp>

#include "adapters/metrics_segment.hpp"
#include "adapters/readiness_segment.hpp"
#include "adapters/test_support.hpp"
#include "core/bytes.hpp"
#include "support/file_bytes.hpp"

using namespace dix;
using dix::test::temp_dir;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// A home store directory: the segment needs nothing of RocksDB but the directory.
fs::path make_home(const temp_dir& dir) {
  fs::create_directories(dir / "db");
  return dir / "db";
}

// The reader of an existing segment (value() throws, failing the test, on an error).
std::unique_ptr<segment_reader> open_reader(const fs::path& home) {
  auto reader = segment_reader::open(home).value();
  REQUIRE(reader);
  return reader;
}

}  // namespace

TEST_CASE("segment_reader: no segment opens as nullptr and creates nothing", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto none = segment_reader::open(home);
  REQUIRE(none);
  CHECK(*none == nullptr);
  auto missing = segment_reader::open(dir / "missing");
  REQUIRE(missing);
  CHECK(*missing == nullptr);
  CHECK_FALSE(fs::exists(home / "dix"));
}

TEST_CASE("segment_reader: every claimed slot in slot order while attached, unknown with the stored epoch once detached", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  {
    auto s = readiness_segment::attach(home).value();
    auto b = s->claim("b-index").value();
    auto a = s->claim("a-index").value();
    b->raise_epoch_floor(6);
    CHECK(b->mint_epoch().value() == 7);
    b->publish(readiness_state::ready, readiness_reason::none, 0);
    a->publish(readiness_state::needs_rebuild, readiness_reason::rebuild_requested, 2);

    auto table = open_reader(home)->read();
    REQUIRE(table);
    CHECK(table->attached);
    REQUIRE(table->entries.size() == 2);
    CHECK(table->entries[0].id == "b-index");  // slot order, not name order
    CHECK(table->entries[0].readiness.state == readiness_state::ready);
    CHECK(table->entries[0].readiness.owner_epoch == 7);
    CHECK(table->entries[1].id == "a-index");
    CHECK(table->entries[1].readiness.state == readiness_state::needs_rebuild);
    CHECK(table->entries[1].readiness.reason == readiness_reason::rebuild_requested);
    CHECK(table->entries[1].readiness.rebuild_attempts == 2);
  }
  auto table = open_reader(home)->read();
  REQUIRE(table);
  CHECK_FALSE(table->attached);
  REQUIRE(table->entries.size() == 2);
  for (const auto& e : table->entries) {
    CHECK(e.readiness.state == readiness_state::unknown);
    CHECK(e.readiness.reason == readiness_reason::none);
    CHECK(e.readiness.rebuild_attempts == 0);
  }
  CHECK(table->entries[0].readiness.owner_epoch == 7);
}

TEST_CASE("segment_reader: the change counter moves with a publication and wait_change returns it, or the seen value on timeout", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = readiness_segment::attach(home).value();
  auto slot = s->claim("idx").value();
  auto reader = open_reader(home);

  auto seen = reader->change_counter();
  CHECK(reader->wait_change(seen, 1ms) == seen);
  slot->publish(readiness_state::ready, readiness_reason::none, 0);
  auto moved = reader->change_counter();
  CHECK(moved != seen);
  CHECK(reader->wait_change(seen, 10s) == moved);  // already moved: at once

  // A waiter sleeping on the counter wakes for a publication made after it loaded the counter.
  std::uint64_t woke = moved;
  std::thread waiter([&] { woke = reader->wait_change(moved, 30s); });
  slot->publish(readiness_state::unknown, readiness_reason::none, 0);
  waiter.join();
  CHECK(woke == reader->change_counter());
  CHECK(woke != moved);
}

TEST_CASE("segment_reader: a segment of another layout fails segment_layout_mismatch", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  readiness_segment::attach(home).value().reset();
  std::string version;
  put_le(version, std::uint32_t{2});
  {
    std::fstream f(fs::canonical(home) / "dix" / "readiness.seg", std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(8);
    f.write(version.data(), static_cast<std::streamsize>(version.size()));
    REQUIRE(f.good());
  }
  auto r = segment_reader::open(home);
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::segment_layout_mismatch);
}

TEST_CASE("segment_reader: an id's progress is the owner's metrics block of the slot's current epoch, only while a runtime is attached", "[adapter][segment][metrics]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = readiness_segment::attach(home).value();
  auto slot = s->claim("idx").value();
  const auto epoch = slot->mint_epoch().value();
  slot->publish(readiness_state::rebuilding, readiness_reason::rebuild_requested, 1);
  auto reader = open_reader(home);
  CHECK_FALSE(reader->read().value().entries.at(0).progress);  // nothing written yet

  const rebuild_progress p{epoch, 300, 1000, 6000, 116, false};
  s->metrics().write(slot->index(), metrics_block{123'456, p});
  auto entry = reader->read().value().entries.at(0);
  REQUIRE(entry.progress);
  CHECK(entry.progress->rebuilt_records == 300);
  CHECK(entry.progress->estimated_records == 1000);
  CHECK(entry.progress->scan_records_per_s == 6000);
  CHECK(entry.progress->rebuild_eta_ms == 116);
  CHECK(entry.progress_written_ns == 123'456);

  // A newer epoch (the next attempt, another owner) makes the block an earlier one's: not shown.
  CHECK(slot->mint_epoch().value() == epoch + 1);
  CHECK_FALSE(reader->read().value().entries.at(0).progress);
  s->metrics().write(slot->index(), metrics_block{123'999, rebuild_progress{epoch + 1, 5, 1000, 0, 0, false}});
  CHECK(reader->read().value().entries.at(0).progress->rebuilt_records == 5);

  s.reset();
  slot.reset();  // detached: no figures, as no readiness
  auto detached = reader->read().value().entries.at(0);
  CHECK(detached.readiness.state == readiness_state::unknown);
  CHECK_FALSE(detached.progress);
}

TEST_CASE("segment_reader: a metrics segment created after the reader opened is mapped at the next read, and one of another layout fails it", "[adapter][segment][metrics]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = readiness_segment::attach(home).value();
  auto slot = s->claim("idx").value();
  slot->publish(readiness_state::rebuilding, readiness_reason::rebuild_requested, 1);
  const auto metrics = fs::canonical(home) / "dix" / "metrics.seg";
  fs::rename(metrics, dir / "metrics.seg");  // as a readiness segment an older dix made
  auto reader = open_reader(home);
  CHECK(reader->read().value().entries.size() == 1);
  fs::rename(dir / "metrics.seg", metrics);
  s->metrics().write(slot->index(), metrics_block{1, rebuild_progress{slot->owner_epoch(), 7, 9, 0, 0, false}});
  CHECK(reader->read().value().entries.at(0).progress->rebuilt_records == 7);

  test::patch_file(metrics, 8, test::le(std::uint32_t{3}));  // layout_version
  auto other = segment_reader::open(home);
  REQUIRE_FALSE(other);
  CHECK(other.error().value() == errc::segment_layout_mismatch);
  CHECK_THAT(other.error().message(), Catch::Contains(metrics.string()) && Catch::Contains("found layout version 3"));
}
