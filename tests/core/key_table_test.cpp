// key_table: the distinct keys of a turn in first-occurrence order, found by (log, table, id),
// with an index built lazily and kept across clear() for its capacity.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/key_table.hpp"

using namespace dix;

TEST_CASE("key table: a key is found again by its log, table and id, and only then", "[core][key_table]") {
  key_table keys;
  keys.clear(16);
  const std::string a = "a", a_again = "a", b = "b";
  auto first = keys.find_or_add(0, 1, a, 7);
  CHECK(first == std::pair<std::uint32_t, bool>{0, true});
  CHECK(keys[0].first_op == 7);
  CHECK(keys[0].hash == key_table::hash_of(0, 1, "a"));
  // Equal bytes elsewhere are the same key; another table, log or id is another key.
  CHECK(keys.find_or_add(0, 1, a_again, 9) == std::pair<std::uint32_t, bool>{0, false});
  CHECK(keys[0].first_op == 7);
  CHECK(keys.find_or_add(0, 2, a, 10) == std::pair<std::uint32_t, bool>{1, true});
  CHECK(keys.find_or_add(1, 1, a, 11) == std::pair<std::uint32_t, bool>{2, true});
  CHECK(keys.find_or_add(0, 1, b, 12) == std::pair<std::uint32_t, bool>{3, true});
  REQUIRE(keys.size() == 4);
  CHECK(keys[1].table == 2);
  CHECK(keys[2].log == 1);
  CHECK(keys[3].id == "b");
}

TEST_CASE("key table: keys keep first-occurrence order and the caller's bookkeeping", "[core][key_table]") {
  key_table keys;
  keys.clear(16);
  std::vector<std::string> ids{"k3", "k1", "k3", "k2", "k1"};
  for (std::size_t op = 0; op < ids.size(); ++op) {
    auto [index, added] = keys.find_or_add(0, 1, ids[op], op);
    keys[index].last_version = 100 + op;
    CHECK(added == (op < 2 || op == 3));
  }
  std::vector<std::string> order;
  for (const auto& k : keys) order.emplace_back(k.id);
  CHECK(order == std::vector<std::string>{"k3", "k1", "k2"});
  CHECK(keys[0].first_op == 0);
  CHECK(keys[0].last_version == 102);
  CHECK(keys[1].first_op == 1);
  CHECK(keys[1].last_version == 104);
  CHECK(keys[2].first_op == 3);
  CHECK(keys[2].last_version == 103);
}

TEST_CASE("key table: keys added as carried are indexed at the first lookup", "[core][key_table]") {
  key_table keys;
  keys.clear(16);
  const std::string x = "x", y = "y";
  CHECK(keys.add(key_table::key{0, 1, x, key_table::hash_of(0, 1, x), 0, 5}) == 0);
  CHECK(keys.add(key_table::key{0, 1, y, key_table::hash_of(0, 1, y), 1, 6}) == 1);
  CHECK(keys.test_slot_count() == 0);  // nothing hashed or indexed yet
  CHECK(keys.find_or_add(0, 1, y, 2) == std::pair<std::uint32_t, bool>{1, false});
  CHECK(keys.test_slot_count() == 64);
  CHECK(keys.find_or_add(0, 1, "z", 3) == std::pair<std::uint32_t, bool>{2, true});
  // Once indexed, an added key is found too.
  const std::string w = "w";
  CHECK(keys.add(key_table::key{0, 1, w, key_table::hash_of(0, 1, w), 4, 7}) == 3);
  CHECK(keys.find_or_add(0, 1, w, 5) == std::pair<std::uint32_t, bool>{3, false});
}

TEST_CASE("key table: the index grows to stay at most half full and finds every key after growing", "[core][key_table]") {
  key_table keys;
  keys.clear(16);
  std::vector<std::string> ids;
  for (int i = 0; i < 1000; ++i) ids.push_back("id" + std::to_string(i));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    REQUIRE(keys.find_or_add(0, 1, ids[i], i).second);
    CHECK(2 * keys.size() <= keys.test_slot_count());
  }
  CHECK(keys.test_slot_count() == 2048);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto found = keys.find_or_add(0, 1, ids[i], 0);
    CHECK(found == std::pair<std::uint32_t, bool>{static_cast<std::uint32_t>(i), false});
  }
}

TEST_CASE("key table: clear forgets every key and keeps the grown index", "[core][key_table]") {
  key_table keys;
  keys.clear(1024);  // the first index holds 1024 keys at most half full
  const std::string a = "a";
  (void)keys.find_or_add(0, 1, a, 0);
  CHECK(keys.test_slot_count() == 2048);
  keys.clear(16);
  CHECK(keys.empty());
  CHECK(keys.test_slot_count() == 0);
  // A smaller first index reuses the allocation; the forgotten key is new again.
  CHECK(keys.find_or_add(0, 1, a, 3) == std::pair<std::uint32_t, bool>{0, true});
  CHECK(keys.test_slot_count() == 64);
  CHECK(keys.test_slot_capacity() >= 2048);
  CHECK(keys[0].first_op == 3);
}
