// <dix/segment.hpp> (runtime/adapters/segment_reader.cpp): the readiness table of every claimed
// slot, read as read_readiness reads one id, and the wait on the segment's change counter.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <thread>

#include <dix/segment.hpp>

#include "adapters/readiness_segment.hpp"
#include "adapters/test_support.hpp"
#include "core/bytes.hpp"

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
