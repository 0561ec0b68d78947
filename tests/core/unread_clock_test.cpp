// core/unread_clock: §13.1's unread age as decision 0065 keeps it, with plain calls on a fixed
// time axis.
#include <catch2/catch.hpp>

#include <vector>

#include "core/unread_clock.hpp"

using namespace dix;
using std::chrono::milliseconds;

namespace {

const unread_clock::steady_time t0{};

unread_clock::steady_time at(long long ms) { return t0 + milliseconds(ms); }

std::vector<unread_clock::log_seen> one(std::uint64_t read, std::uint64_t latest) { return {{read, latest}}; }

}  // namespace

TEST_CASE("unread clock: stamped by a commit while caught up or by a turn that leaves work unread, cleared at the end of the log",
          "[core][gate][unread]") {
  unread_clock c;
  CHECK_FALSE(c.since().has_value());
  c.commit_seen(at(10));
  CHECK(c.since() == at(10));
  c.commit_seen(at(20));  // stamped already
  CHECK(c.since() == at(10));
  c.read(at(30), one(100, 100), true, at(31));  // read to the end
  CHECK_FALSE(c.since().has_value());
  CHECK(c.marks() == 0);
  // A reader that has not reached the end since it started: the first turn that shows more
  // stamps it at once.
  c.read(at(40), one(100, 500), false, at(41));
  CHECK(c.since() == at(41));
  c.reset();
  CHECK_FALSE(c.since().has_value());
  CHECK(c.marks() == 0);
}

TEST_CASE("unread clock: a reader a few turns behind a steady writer shows the age of what it has not read, not the time since it was last at the end",
          "[core][gate][unread]") {
  // A writer of 10 sequences per ms; each turn starts 25 ms after the last and reads what the
  // log held when the previous turn ended, so the reader is always one turn behind and never at
  // the end. §13.1's stamp alone grew by a second a second.
  unread_clock c;
  c.commit_seen(at(0));
  std::uint64_t latest_before = 0;
  for (long long t = 0; t <= 10'000; t += 25) {
    const std::uint64_t latest = static_cast<std::uint64_t>(t) * 10;
    c.read(at(t), one(latest_before, latest), false, at(t + 1));
    latest_before = latest;
  }
  // What is unread was committed after the turn that began at 9 975 ms: 26 ms old, not 10 s.
  REQUIRE(c.since().has_value());
  CHECK(*c.since() == at(9'975));
  CHECK(c.marks() == 1);
}

TEST_CASE("unread clock: a reader that falls behind keeps its stamp, so it cannot hide", "[core][gate][unread]") {
  unread_clock c;
  c.commit_seen(at(0));
  // It reads 5 sequences a turn while the writer adds 10: it never reads up to any mark after
  // the first turns'.
  for (long long t = 0; t <= 2'000; t += 10) {
    const std::uint64_t read = static_cast<std::uint64_t>(t) / 2, latest = static_cast<std::uint64_t>(t);
    c.read(at(t), one(read, latest), false, at(t + 1));
  }
  // Read 1 000 at 2 s: the log held 1 000 at the turn of 1 s, so nothing older than 1 s waits.
  REQUIRE(c.since().has_value());
  CHECK(*c.since() == at(1'000));
  // A stalled reader (no progress at all) moves nothing.
  for (long long t = 2'010; t <= 3'000; t += 10) c.read(at(t), one(1'000, static_cast<std::uint64_t>(t)), false, at(t + 1));
  CHECK(*c.since() == at(1'000));
}

TEST_CASE("unread clock: every log must be read up to a mark, marks are spaced and bounded, a new set of logs drops them",
          "[core][gate][unread]") {
  unread_clock c;
  c.read(at(0), {{0, 100}, {0, 50}}, false, at(1));
  REQUIRE(c.since() == at(1));
  c.read(at(10), {{100, 200}, {40, 60}}, false, at(11));  // the first log past the mark, not the second
  CHECK(c.since() == at(1));
  c.read(at(20), {{150, 250}, {60, 60}}, false, at(21));  // both past the first mark
  CHECK(c.since() == at(1));                              // at(0) is older than the stamp: unchanged
  c.read(at(30), {{200, 300}, {60, 70}}, false, at(31));  // past the mark of 10 ms
  CHECK(c.since() == at(10));
  // Turns closer than the spacing merge into the newest mark (later, higher): the clock moves
  // less, never more.
  unread_clock d;
  d.read(at(0), one(0, 10), false, at(0));
  d.read(at(1), one(0, 20), false, at(1));
  CHECK(d.marks() == 1);
  d.read(at(5), one(10, 30), false, at(5));  // read 10: the first mark (0 ms, 10) was merged away
  CHECK(d.since() == at(0));
  d.read(at(9), one(20, 40), false, at(9));  // read up to the merged mark (1 ms, 20)
  CHECK(d.since() == at(1));
  // Bounded: a writer far ahead of a reader that reads nothing keeps at most max_marks.
  unread_clock e;
  for (long long t = 0; t < 10'000; t += 3) e.read(at(t), one(0, static_cast<std::uint64_t>(t) + 1), false, at(t));
  CHECK(e.marks() == unread_clock::max_marks);
  // Another set of logs: the marks are dropped, the stamp stays.
  e.read(at(10'000), {{0, 5}, {0, 5}}, false, at(10'000));
  CHECK(e.since() == at(0));
  CHECK(e.marks() == 1);
}

TEST_CASE("unread clock: logs opened again put the stamp back to protocol 13.1's own", "[core][gate][unread]") {
  // A retry re-opens the logs at the last offered cursor: what a turn had cut into the chunk that
  // failed is unread again, though the marks were passed by it.
  unread_clock c;
  c.commit_seen(at(0));
  c.read(at(10), one(100, 300), false, at(11));
  c.read(at(20), one(300, 500), false, at(21));
  REQUIRE(c.since() == at(10));
  c.reopened();
  CHECK(c.since() == at(0));
  CHECK(c.marks() == 0);
  // And from there it moves up again as the reader reads.
  c.read(at(30), one(300, 600), false, at(31));
  c.read(at(40), one(600, 700), false, at(41));
  CHECK(c.since() == at(30));
  // Reopened with nothing stamped: nothing stamped.
  unread_clock d;
  d.reopened();
  CHECK_FALSE(d.since().has_value());
}
