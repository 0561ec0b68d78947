// The registration fingerprint (formats.md §5). The expected values were computed by an
// independent implementation of the same encoding (FNV-1a 64 over the documented bytes).
#include <catch2/catch.hpp>

#include "core/fingerprint.hpp"

using namespace dix;

TEST_CASE("fingerprint: FNV-1a 64 over the formats.md encoding, pairs sorted by log bytes then table", "[core][fingerprint]") {
  auto a = registration_fingerprint("rocksdb_index", "by-category", "v1", {{"main", 2}, {"aux", 7}, {"main", 1}});
  REQUIRE(a);
  CHECK(*a == 0xdaf82868652a2404ull);
  auto reordered = registration_fingerprint("rocksdb_index", "by-category", "v1", {{"main", 1}, {"main", 2}, {"aux", 7}});
  CHECK(*reordered == *a);  // the order of the projections does not matter
  auto v2 = registration_fingerprint("rocksdb_index", "by-category", "v2", {{"main", 2}, {"aux", 7}, {"main", 1}});
  CHECK(*v2 == 0x672fb1388a6da5d1ull);
  auto other_table = registration_fingerprint("rocksdb_index", "by-category", "v1", {{"main", 2}, {"aux", 7}, {"main", 3}});
  CHECK(*other_table != *a);
  auto other_kind = registration_fingerprint("xapian", "by-category", "v1", {{"main", 2}, {"aux", 7}, {"main", 1}});
  CHECK(*other_kind != *a);
}

TEST_CASE("fingerprint: fields over their length are invalid_argument", "[core][fingerprint]") {
  CHECK(registration_fingerprint(std::string(256, 'k'), "id", "", {{"main", 1}}).error().value() == errc::invalid_argument);
  CHECK(registration_fingerprint("k", "id", std::string(257, 'v'), {{"main", 1}}).error().value() == errc::invalid_argument);
  CHECK(registration_fingerprint("k", "id", std::string(256, 'v'), {{"main", 1}}));
}
