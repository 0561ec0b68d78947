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
  std::size_t found = 0;
  std::vector<std::optional<std::string>> values;
  std::vector<bool> hit;
};

lookup_result look(shared_reads& s, std::uint32_t table, std::vector<std::string_view> ids, std::vector<std::uint64_t> at_least) {
  lookup_result r;
  r.found = s.lookup(table, ids, at_least, r.values, r.hit);
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
  CHECK(s.hits() == 2);
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

TEST_CASE("shared reads: below min_followers nothing is recorded or found, and leaving frees the memory", "[core][shared_reads]") {
  shared_reads s;
  s.follow();
  CHECK_FALSE(s.active());
  s.record(1, {"a"}, {std::string("A")}, 5);
  CHECK(s.recorded() == 0);
  s.follow();
  s.record(1, {"a"}, {std::string("A")}, 5);
  CHECK(look(s, 1, {"a"}, {5}).found == 1);
  s.unfollow();  // one left: nothing to share with
  s.follow();
  CHECK(look(s, 1, {"a"}, {5}).found == 0);
}

TEST_CASE("shared reads: two generations bound the memory and the previous one still answers", "[core][shared_reads]") {
  shared_reads s(shared_reads::limits{1000, 2});
  s.follow();
  s.follow();
  // Each entry costs its id, its value and 96 bytes: 7 entries of ~107 bytes fill a generation.
  for (int i = 0; i < 20; ++i) s.record(1, {std::to_string(i)}, {std::string(10, 'x')}, 100);
  CHECK(s.rotations() >= 2);
  // The newest entries are found; the oldest were dropped with their generation.
  CHECK(look(s, 1, {"19"}, {100}).found == 1);
  CHECK(look(s, 1, {"0"}, {100}).found == 0);
  // At most two generations of ≤ 1000 bytes: fewer than 2 × 1000 / 96 entries are found.
  std::size_t held = 0;
  for (int i = 0; i < 20; ++i) held += look(s, 1, {std::to_string(i)}, {0}).found;
  CHECK(held >= 9);
  CHECK(held <= 2 * 1000 / 96);
  s.forget();
  CHECK(look(s, 1, {"19"}, {0}).found == 0);
}
