// Tests of the index digest (<dix/digest.hpp>): SipHash-2-4-128 against the reference
// implementation's published vectors, incremental feeding, the entry encoding's separation of
// fields, the order independence of the sum, and the 24-byte codec.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <dix/digest.hpp>

namespace {

using dix::entry_hash;
using dix::hash128;
using dix::index_digest;
using dix::siphash128;

// The reference key 00 01 … 0f.
constexpr std::uint64_t k0 = 0x0706050403020100ull;
constexpr std::uint64_t k1 = 0x0f0e0d0c0b0a0908ull;

// The tag's 16 bytes in order (lo, then hi, little-endian), as the reference prints them.
std::string tag_bytes(const hash128& h) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (const auto word : {h.lo, h.hi}) {
    for (int i = 0; i < 8; ++i) {
      const auto b = (word >> (8 * i)) & 0xFF;
      out.push_back(digits[b >> 4]);
      out.push_back(digits[b & 0xF]);
    }
  }
  return out;
}

std::string message(std::size_t n) {
  std::string m;
  for (std::size_t i = 0; i < n; ++i) m.push_back(static_cast<char>(i));
  return m;
}

}  // namespace

TEST_CASE("digest: SipHash-2-4-128 matches the reference vectors (key 00..0f, message 00..n-1)", "[core][digest]") {
  // From the reference implementation's vectors.h (vectors_sip128), lengths around the word size.
  const std::vector<std::pair<std::size_t, std::string>> vectors = {
      {0, "a3817f04ba25a8e66df67214c7550293"},  {1, "da87c1d86b99af44347659119b22fc45"},
      {7, "a1f1ebbed8dbc153c0b84aa61ff08239"},  {8, "3b62a9ba6258f5610f83e264f31497b4"},
      {9, "264499060ad9baabc47f8b02bb6d71ed"},  {15, "5493e99933b0a8117e08ec0f97cfc3d9"},
      {16, "6ee2a4ca67b054bbfd3315bf85230577"}, {17, "473d06e8738db89854c066c47ae47740"},
      {63, "5150d1772f50834a503e069a973fbd7c"},
  };
  for (const auto& [n, expected] : vectors) {
    siphash128 h(k0, k1);
    h.update(message(n));
    CHECK(tag_bytes(h.finish()) == expected);
  }
}

TEST_CASE("digest: feeding in pieces of any size gives the one-shot tag", "[core][digest]") {
  const auto m = message(63);
  siphash128 whole(k0, k1);
  whole.update(m);
  const auto expected = whole.finish();
  for (std::size_t piece = 1; piece <= 17; ++piece) {
    siphash128 h(k0, k1);
    for (std::size_t at = 0; at < m.size(); at += piece) h.update(m.substr(at, piece));
    CHECK(h.finish() == expected);
  }
  // finish() leaves the hasher as it was: more input continues the same stream.
  siphash128 h(k0, k1);
  h.update(m.substr(0, 20));
  (void)h.finish();
  h.update(m.substr(20));
  CHECK(h.finish() == expected);
}

TEST_CASE("digest: an entry's hash depends on every field, and moving bytes between fields changes it", "[core][digest]") {
  const auto base = entry_hash("main", 7, "rec-1", 42, "projection");
  CHECK(entry_hash("main", 7, "rec-1", 42, "projection") == base);
  CHECK(entry_hash("mainx", 7, "rec-1", 42, "projection") != base);
  CHECK(entry_hash("main", 8, "rec-1", 42, "projection") != base);
  CHECK(entry_hash("main", 7, "rec-2", 42, "projection") != base);
  CHECK(entry_hash("main", 7, "rec-1", 43, "projection") != base);
  CHECK(entry_hash("main", 7, "rec-1", 42, "projectioN") != base);
  CHECK(entry_hash("main", 7, "rec-1", 42, "") != base);
  // The length prefixes keep field boundaries: the same bytes split differently differ.
  CHECK(entry_hash("main", 7, "ab", 42, "c") != entry_hash("main", 7, "a", 42, "bc"));
  CHECK(entry_hash("ma", 7, "inab", 42, "c") != entry_hash("main", 7, "ab", 42, "c"));
}

TEST_CASE("digest: the sum is independent of order, and removing an entry undoes adding it", "[core][digest]") {
  std::vector<hash128> entries;
  for (int i = 0; i < 200; ++i) entries.push_back(entry_hash("main", 1, "r" + std::to_string(i), 1, "p"));
  index_digest forward;
  for (const auto& e : entries) forward.add(e);
  std::mt19937_64 rng(7);
  auto shuffled = entries;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  index_digest backward;
  for (const auto& e : shuffled) backward.add(e);
  CHECK(forward == backward);
  CHECK(forward.records == 200);
  // An update is a removal of the old entry and an addition of the new one.
  auto updated = forward;
  updated.remove(entries[5]);
  updated.add(entry_hash("main", 1, "r5", 2, "p"));
  CHECK(updated != forward);
  CHECK(updated.records == 200);
  updated.remove(entry_hash("main", 1, "r5", 2, "p"));
  updated.add(entries[5]);
  CHECK(updated == forward);
  // Removing everything returns to the empty digest, carries and borrows included.
  for (const auto& e : shuffled) backward.remove(e);
  CHECK(backward == index_digest{});
}

TEST_CASE("digest: 128-bit arithmetic carries and borrows across the halves", "[core][digest]") {
  const hash128 max_lo{~0ull, 0};
  CHECK(max_lo + hash128{1, 0} == hash128{0, 1});
  CHECK(hash128{0, 1} - hash128{1, 0} == max_lo);
  CHECK(hash128{0, 0} - hash128{1, 0} == hash128{~0ull, ~0ull});
  CHECK(hash128{~0ull, ~0ull} + hash128{1, 0} == hash128{0, 0});
  CHECK(dix::to_hex(hash128{0x0123456789abcdefull, 0xfedcba9876543210ull}) == "fedcba98765432100123456789abcdef");
}

TEST_CASE("digest: the codec round-trips and refuses any other length", "[core][digest]") {
  index_digest d;
  d.add(entry_hash("main", 1, "a", 1, "x"));
  d.add(entry_hash("main", 1, "b", 1, "y"));
  const auto bytes = d.encode();
  REQUIRE(bytes.size() == index_digest::encoded_size);
  const auto back = index_digest::decode(bytes);
  REQUIRE(back);
  CHECK(*back == d);
  CHECK_FALSE(index_digest::decode(bytes.substr(1)));
  CHECK_FALSE(index_digest::decode(bytes + "x"));
  CHECK_FALSE(index_digest::decode(""));
}

TEST_CASE("digest: an entry's hash is SipHash-2-4-128 of formats.md 7's layout under its key, for short and long entries alike", "[core][digest]") {
  auto layout = [](std::string_view log, std::uint32_t table, std::string_view id, std::uint64_t version, std::string_view projection) {
    std::string m(1, static_cast<char>(log.size()));
    m += log;
    for (int i = 0; i < 4; ++i) m.push_back(static_cast<char>((table >> (8 * i)) & 0xFF));
    for (int i = 0; i < 4; ++i) m.push_back(static_cast<char>((id.size() >> (8 * i)) & 0xFF));
    m += id;
    for (int i = 0; i < 8; ++i) m.push_back(static_cast<char>((version >> (8 * i)) & 0xFF));
    m += projection;
    return m;
  };
  // Short entries are hashed in one pass of a buffer, long ones (over 512 bytes) piece by piece.
  for (const std::size_t projection_size : {std::size_t{0}, std::size_t{14}, std::size_t{480}, std::size_t{600}, std::size_t{5000}}) {
    const std::string projection(projection_size, 'p');
    siphash128 h(0x7869642d64696765ull, 0x2e31762d74736564ull);
    h.update(layout("main", 0x01020304, "record-7", 0x1122334455667788ull, projection));
    CHECK(entry_hash("main", 0x01020304, "record-7", 0x1122334455667788ull, projection) == h.finish());
  }
}
