// shared_reads (decision 0061): a recorded value stands in for a read only when that read began at
// or after the key's last occurrence; the newest read of a key is kept; memory turns over in two
// bounded generations; nothing is shared below min_followers.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/shared_reads.hpp"

using namespace dix;

namespace {

struct lookup_result {
  std::optional<std::size_t> shared;  // nullopt: not shared now
  std::size_t found = 0;
  std::vector<std::optional<std::string>> values;
  std::vector<bool> hit;
};

lookup_result look(shared_reads& s, std::uint32_t table, std::vector<std::string_view> ids, std::vector<std::uint64_t> at_least) {
  lookup_result r;
  r.shared = s.lookup(table, ids, at_least, r.values, r.hit);
  r.found = r.shared.value_or(0);
  return r;
}


}  // namespace

TEST_CASE("shared reads: a value read at or after the key's last occurrence stands in, an older read does not", "[core][shared_reads]") {
  shared_reads s;
  s.follow();
  s.follow();
  REQUIRE(s.active());
  s.record(1, {"a", "b"}, {std::string("A@10"), std::nullopt}, 10);
  auto r = look(s, 1, {"a", "b", "c"}, {10, 3, 1});
  CHECK(r.found == 2);
  CHECK(r.hit == std::vector<bool>{true, true, false});
  CHECK(r.values[0] == std::optional<std::string>("A@10"));
  CHECK_FALSE(r.values[1]);  // recorded absent: found, and absent
  // A later occurrence than the read: the read may not show it.
  auto later = look(s, 1, {"a"}, {11});
  CHECK(later.found == 0);
  CHECK_FALSE(later.hit[0]);
  // Another table is another key.
  CHECK(look(s, 2, {"a"}, {1}).found == 0);
  CHECK(s.count().hits == 2);
}

TEST_CASE("shared reads: a key keeps its newest read, not the last recorded", "[core][shared_reads]") {
  shared_reads s;
  s.follow();
  s.follow();
  s.record(1, {"a"}, {std::string("new")}, 20);
  s.record(1, {"a"}, {std::string("old")}, 15);  // a slower tailer's read that began earlier
  auto r = look(s, 1, {"a"}, {18});
  REQUIRE(r.found == 1);
  CHECK(r.values[0] == std::optional<std::string>("new"));
  s.record(1, {"a"}, {std::string("newer")}, 25);
  CHECK(look(s, 1, {"a"}, {25}).values[0] == std::optional<std::string>("newer"));
}

TEST_CASE("shared reads: a key recorded again is charged its new size, and a large value is not recorded", "[core][shared_reads]") {
  shared_reads s(shared_reads::limits{2000, 2});
  s.follow();
  s.follow();
  // 10 keys first recorded absent (129 or 130 bytes each) …
  for (int i = 0; i < 10; ++i) s.record(1, {std::to_string(i)}, {std::nullopt}, 1);
  CHECK(s.count().rotations == 0);
  // … then with 100-byte values: charged the difference, the table turns over.
  for (int i = 0; i < 10; ++i) s.record(1, {std::to_string(i)}, {std::string(100, 'v')}, 2);
  CHECK(s.count().rotations >= 1);
  // A value above max_bytes / 8 (250) is left to each tailer's own read.
  s.record(1, {"big"}, {std::string(300, 'x')}, 3);
  CHECK(look(s, 1, {"big"}, {0}).found == 0);
}

TEST_CASE("shared reads: the newer read wins across the two generations", "[core][shared_reads]") {
  shared_reads s(shared_reads::limits{2000, 2});
  s.follow();
  s.follow();
  s.record(1, {"a"}, {std::string("new")}, 50);
  // Fill the generation (132 + 13 × 140 bytes) so that `a` moves to the previous one.
  for (int i = 0; i < 14; ++i) s.record(1, {"f" + std::to_string(i)}, {std::string(10, 'x')}, 60);
  REQUIRE(s.count().rotations == 1);
  s.record(1, {"a"}, {std::string("old")}, 40);  // a slower tailer's older read: not recorded
  auto r = look(s, 1, {"a"}, {45});
  REQUIRE(r.found == 1);
  CHECK(r.values[0] == std::optional<std::string>("new"));
}

TEST_CASE("shared reads: below min_followers nothing is recorded or found, and leaving frees the memory", "[core][shared_reads]") {
  shared_reads s;
  s.follow();
  CHECK_FALSE(s.active());
  s.record(1, {"a"}, {std::string("A")}, 5);
  CHECK(s.count().recorded == 0);
  CHECK_FALSE(look(s, 1, {"a"}, {0}).shared);  // not shared: the caller reads and does not record
  s.follow();
  s.record(1, {"a"}, {std::string("A")}, 5);
  CHECK(look(s, 1, {"a"}, {5}).found == 1);
  s.unfollow();  // one left: nothing to share with
  s.follow();
  auto after = look(s, 1, {"a"}, {5});
  CHECK(after.shared == std::optional<std::size_t>(0));  // shared again, but the entries went
}

TEST_CASE("shared reads: two generations bound the memory and the previous one still answers", "[core][shared_reads]") {
  shared_reads s(shared_reads::limits{2000, 2});
  s.follow();
  s.follow();
  // Each entry costs its id, its value and 128 bytes (139 or 140): 14 fill a generation.
  for (int i = 0; i < 40; ++i) s.record(1, {std::to_string(i)}, {std::string(10, 'x')}, 100);
  CHECK(s.count().rotations == 2);
  // The newest entries are found; the oldest were dropped with their generation.
  CHECK(look(s, 1, {"39"}, {100}).found == 1);
  CHECK(look(s, 1, {"0"}, {100}).found == 0);
  // Two generations: the previous full one (14 to 27) and the current one (28 to 39).
  std::size_t held = 0;
  for (int i = 0; i < 40; ++i) held += look(s, 1, {std::to_string(i)}, {0}).found;
  CHECK(held == 26);
  s.forget();
  CHECK(look(s, 1, {"19"}, {0}).found == 0);
}

TEST_CASE("shared reads: thousands of keys in one generation, each found with its own value, absent ones too", "[core][shared_reads]") {
  shared_reads s;  // 4 MiB per generation: 5 000 entries of ~140 bytes fit in one
  s.follow();
  s.follow();
  for (int i = 0; i < 5000; ++i) {
    const auto id = "k" + std::to_string(i);
    s.record(1 + static_cast<std::uint32_t>(i % 3), {id},
             {i % 7 == 0 ? std::optional<std::string>() : std::optional<std::string>("v" + std::to_string(i))}, 10);
  }
  // A second read of every tenth key, later and with another value, takes its place.
  for (int i = 0; i < 5000; i += 10) {
    s.record(1 + static_cast<std::uint32_t>(i % 3), {"k" + std::to_string(i)}, {std::string("w")}, 20);
  }
  CHECK(s.count().rotations == 0);
  std::size_t wrong = 0;
  for (int i = 0; i < 5000; ++i) {
    const auto id = "k" + std::to_string(i);
    const auto table = 1 + static_cast<std::uint32_t>(i % 3);
    auto r = look(s, table, {id}, {10});
    const auto expected = i % 10 == 0 ? std::optional<std::string>("w")
                          : i % 7 == 0 ? std::optional<std::string>()
                                       : std::optional<std::string>("v" + std::to_string(i));
    if (r.found != 1 || r.values[0] != expected) ++wrong;
    if (look(s, table + 3, {id}, {0}).found != 0) ++wrong;  // the same id in another table
  }
  CHECK(wrong == 0);
  CHECK(look(s, 1, {"k0"}, {21}).found == 0);  // the newest read began before 21
}

TEST_CASE("shared reads: a newer read of a key whose recording turns the table over lands in the new generation", "[core][shared_reads]") {
  shared_reads s(shared_reads::limits{2000, 2});
  s.follow();
  s.follow();
  s.record(1, {"a"}, {std::string(10, 'x')}, 10);  // 139 bytes charged
  // 13 more of 140 bytes: 1 959 of 2 000, so the next entry turns the table over.
  for (int i = 0; i < 13; ++i) s.record(1, {"f" + std::to_string(i)}, {std::string(10, 'y')}, 10);
  REQUIRE(s.count().rotations == 0);
  s.record(1, {"a"}, {std::string("new")}, 20);  // `a` is in the current generation as this begins
  CHECK(s.count().rotations == 1);
  auto r = look(s, 1, {"a"}, {20});
  REQUIRE(r.found == 1);
  CHECK(r.values[0] == std::optional<std::string>("new"));
  // The others went to the previous generation with their values.
  auto f = look(s, 1, {"f0", "f12"}, {10, 10});
  CHECK(f.found == 2);
  CHECK(f.values[1] == std::optional<std::string>(std::string(10, 'y')));
}
