// Tests of the cursor codec (formats.md §3): canonical encoding, every decoder rejection rule,
// the CRC-32 it relies on, and a seeded fuzz of the decoder.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <dix/cursor.hpp>

#include "core/crc32.hpp"

namespace {

using dix::cursor;
using dix::errc;
using dix::log_position;

// Hand-built cursor bytes, so each rejection test breaks exactly one rule of formats.md §3 and
// still carries a correct CRC.
void put_u8(std::string& out, std::uint64_t v) { out.push_back(static_cast<char>(v & 0xFFu)); }

void put_le(std::string& out, std::uint64_t v, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) put_u8(out, v >> (8 * i));
}

std::string header(std::uint64_t n, std::string_view magic = "DIXC", std::uint64_t format = 1,
                   std::uint64_t flags = 0) {
  std::string out(magic);
  put_u8(out, format);
  put_u8(out, flags);
  put_le(out, n, 2);
  return out;
}

// One log entry; the length bytes are the real lengths of name and identity.
void entry(std::string& out, std::string_view name, std::string_view identity,
           std::uint64_t sequence, std::uint64_t time) {
  put_u8(out, name.size());
  out.append(name);
  put_u8(out, identity.size());
  out.append(identity);
  put_le(out, sequence, 8);
  put_le(out, time, 8);
}

std::string with_crc(std::string body) {
  auto crc = dix::crc32_ieee(body);
  put_le(body, crc, 4);
  return body;
}

// A valid two-log body (without CRC) to start from.
std::string valid_body() {
  auto out = header(2);
  entry(out, "alpha", "id-a", 10, 1000);
  entry(out, "beta", "id-b", 20, 2000);
  return out;
}

void require_cursor_invalid(const dix::result<cursor>& r, std::string_view needle) {
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::cursor_invalid);
  CHECK_THAT(r.error().message(), Catch::Matchers::Contains(std::string(needle)));
}

log_position pos(std::string log, std::string identity, std::uint64_t sequence,
                 std::uint64_t time) {
  return log_position{std::move(log), std::move(identity), sequence, time};
}

}  // namespace

TEST_CASE("crc32: the IEEE check value of \"123456789\" is 0xCBF43926", "[core][cursor]") {
  CHECK(dix::crc32_ieee("123456789") == 0xCBF43926u);
  CHECK(dix::crc32_ieee("") == 0u);
  CHECK(dix::crc32_ieee("a") == 0xE8B7BE43u);
  // Longer than one 8-byte step, and continued: known values (zlib.crc32).
  CHECK(dix::crc32_ieee("The quick brown fox jumps over the lazy dog") == 0x414FA339u);
  CHECK(dix::crc32_ieee(" over the lazy dog", dix::crc32_ieee("The quick brown fox jumps")) == 0x414FA339u);
}

TEST_CASE("crc32: eight bytes at a time equals the bit-by-bit definition at every length, offset and split", "[core][cursor]") {
  // The definition itself, one bit at a time: no table shared with the code under test.
  auto bitwise = [](std::string_view bytes, std::uint32_t previous) {
    std::uint32_t c = previous ^ 0xFFFFFFFFu;
    for (unsigned char b : bytes) {
      c ^= b;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
  };
  std::mt19937_64 random(20261207);
  std::string buffer(4096 + 8, '\0');
  for (auto& ch : buffer) ch = static_cast<char>(random());
  for (std::size_t offset = 0; offset < 8; ++offset) {
    for (std::size_t length = 0; length <= 80; ++length) {
      const std::string_view piece(buffer.data() + offset, length);
      INFO("offset " << offset << ", length " << length);
      REQUIRE(dix::crc32_ieee(piece) == bitwise(piece, 0));
      const std::size_t split = random() % (length + 1);
      REQUIRE(dix::crc32_ieee(piece.substr(split), dix::crc32_ieee(piece.substr(0, split))) == bitwise(piece, 0));
    }
  }
  const std::string_view whole(buffer.data() + 3, 4096);
  CHECK(dix::crc32_ieee(whole) == bitwise(whole, 0));
  CHECK(dix::crc32_ieee(whole, 0x12345678u) == bitwise(whole, 0x12345678u));
}

TEST_CASE("cursor: a hand-built valid encoding decodes to its fields", "[core][cursor]") {
  auto bytes = with_crc(valid_body());
  auto r = cursor::decode(bytes);
  REQUIRE(r);
  REQUIRE(r->logs().size() == 2);
  CHECK(r->logs()[0] == pos("alpha", "id-a", 10, 1000));
  CHECK(r->logs()[1] == pos("beta", "id-b", 20, 2000));
  CHECK(r->bytes() == bytes);
  CHECK(r->encode() == bytes);
  // make() produces the very same bytes: the encoding is canonical.
  auto made = cursor::make({pos("beta", "id-b", 20, 2000), pos("alpha", "id-a", 10, 1000)});
  REQUIRE(made);
  CHECK(made->bytes() == bytes);
}

TEST_CASE("cursor: one log round-trips through encode and decode", "[core][cursor]") {
  auto made = cursor::make({pos("main", "identity-1", 42, 1733000000000000000ull)});
  REQUIRE(made);
  auto bytes = made->encode();
  CHECK(bytes.size() == 8 + (1 + 4 + 1 + 10 + 16) + 4);
  CHECK(bytes.substr(0, 4) == "DIXC");
  CHECK(bytes[4] == 1);
  CHECK(bytes[5] == 0);
  CHECK(bytes[6] == 1);
  CHECK(bytes[7] == 0);
  auto decoded = cursor::decode(bytes);
  REQUIRE(decoded);
  CHECK(*decoded == *made);
  CHECK(decoded->logs() == made->logs());
  REQUIRE(decoded->find("main") != nullptr);
  CHECK(decoded->find("main")->sequence == 42);
  CHECK(decoded->find("other") == nullptr);
}

TEST_CASE("cursor: 32 logs with maximum-length names and identities round-trip",
          "[core][cursor]") {
  std::vector<log_position> logs;
  for (int i = 0; i < 32; ++i) {
    // 64-character names, distinct in their last two characters.
    std::string name(62, 'n');
    name += static_cast<char>('a' + i / 10);
    name += static_cast<char>('0' + i % 10);
    // 64-byte identities with every byte value class, including NUL and 0xFF.
    std::string identity;
    for (int b = 0; b < 64; ++b) identity.push_back(static_cast<char>((i * 64 + b) * 7));
    logs.push_back(pos(name, identity, static_cast<std::uint64_t>(i) + 1,
                       std::uint64_t{0xFFFFFFFFFFFFFFFFull} - static_cast<std::uint64_t>(i)));
  }
  auto made = cursor::make(logs);
  REQUIRE(made);
  CHECK(made->bytes().size() == 8 + 32 * (1 + 64 + 1 + 64 + 16) + 4);
  auto decoded = cursor::decode(made->bytes());
  REQUIRE(decoded);
  CHECK(decoded->logs() == logs);
  CHECK(*decoded == *made);
}

TEST_CASE("cursor: make sorts the logs by name bytes", "[core][cursor]") {
  auto made = cursor::make({pos("zeta", "z", 3, 30), pos("alpha", "a", 1, 10),
                            pos("mid.log", "m", 2, 20), pos("alpha-2", "b", 4, 40)});
  REQUIRE(made);
  std::vector<std::string> names;
  for (const auto& p : made->logs()) names.push_back(p.log);
  CHECK(names == std::vector<std::string>{"alpha", "alpha-2", "mid.log", "zeta"});
  auto decoded = cursor::decode(made->bytes());
  REQUIRE(decoded);
  CHECK(decoded->logs() == made->logs());
}

TEST_CASE("cursor: equality is byte equality of the encodings", "[core][cursor]") {
  auto a = cursor::make({pos("a", "x", 1, 10), pos("b", "y", 2, 20)});
  auto b = cursor::make({pos("b", "y", 2, 20), pos("a", "x", 1, 10)});
  auto c = cursor::make({pos("a", "x", 1, 10), pos("b", "y", 2, 21)});
  auto d = cursor::make({pos("a", "x", 1, 10), pos("b", "y", 3, 20)});
  auto e = cursor::make({pos("a", "x", 1, 10), pos("b", "Y", 2, 20)});
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  REQUIRE(d);
  REQUIRE(e);
  CHECK(*a == *b);
  CHECK(a->bytes() == b->bytes());
  for (const auto* other : {&*c, &*d, &*e}) {
    CHECK(*a != *other);
    CHECK(a->bytes() != other->bytes());
  }
}

TEST_CASE("cursor: to_json renders the diagnostic form", "[core][cursor]") {
  auto made = cursor::make({pos("main", "id", 42, 7)});
  REQUIRE(made);
  CHECK(made->to_json() ==
        R"({"format":1,"logs":{"main":{"identity":"id","sequence":42,"time":7}}})");
}

TEST_CASE("cursor: make rejects every rule of formats.md §3", "[core][cursor]") {
  auto rejects = [](std::vector<log_position> logs) {
    auto r = cursor::make(std::move(logs));
    return !r && r.error().value() == errc::cursor_invalid;
  };
  CHECK(rejects({}));
  std::vector<log_position> many;
  for (int i = 0; i < 33; ++i) many.push_back(pos("log" + std::to_string(i), "id", 1, 1));
  CHECK(rejects(many));
  many.pop_back();
  CHECK_FALSE(rejects(many));
  CHECK(rejects({pos("", "id", 1, 1)}));
  CHECK(rejects({pos(std::string(65, 'a'), "id", 1, 1)}));
  CHECK_FALSE(rejects({pos(std::string(64, 'a'), "id", 1, 1)}));
  CHECK(rejects({pos("Main", "id", 1, 1)}));
  CHECK(rejects({pos(".main", "id", 1, 1)}));
  CHECK(rejects({pos("_main", "id", 1, 1)}));
  CHECK(rejects({pos("-main", "id", 1, 1)}));
  CHECK(rejects({pos("ma in", "id", 1, 1)}));
  CHECK(rejects({pos("main", "", 1, 1)}));
  CHECK(rejects({pos("main", std::string(65, 'i'), 1, 1)}));
  CHECK(rejects({pos("main", "id", 0, 1)}));
  CHECK(rejects({pos("main", "id", 1, 0)}));
  CHECK(rejects({pos("main", "id", 1, 1), pos("main", "other", 2, 2)}));
}

// ---- decode: one test per rejection rule ----------------------------------------------------

TEST_CASE("cursor: decode rejects a wrong magic", "[core][cursor]") {
  auto body = valid_body();
  body[3] = 'T';  // "DIXT", the transaction header magic
  require_cursor_invalid(cursor::decode(with_crc(body)), "magic");
  body = valid_body();
  body[0] = 'd';
  require_cursor_invalid(cursor::decode(with_crc(body)), "magic");
}

TEST_CASE("cursor: decode rejects a format other than 1", "[core][cursor]") {
  for (std::uint64_t format : {0u, 2u, 255u}) {
    auto body = header(2, "DIXC", format);
    entry(body, "alpha", "id-a", 10, 1000);
    entry(body, "beta", "id-b", 20, 2000);
    require_cursor_invalid(cursor::decode(with_crc(body)), "format");
  }
}

TEST_CASE("cursor: decode rejects non-zero flags", "[core][cursor]") {
  for (int bit = 0; bit < 8; ++bit) {
    auto body = header(2, "DIXC", 1, std::uint64_t{1} << bit);
    entry(body, "alpha", "id-a", 10, 1000);
    entry(body, "beta", "id-b", 20, 2000);
    require_cursor_invalid(cursor::decode(with_crc(body)), "flags");
  }
}

TEST_CASE("cursor: decode rejects n = 0", "[core][cursor]") {
  require_cursor_invalid(cursor::decode(with_crc(header(0))), "logs; must be 1");
}

TEST_CASE("cursor: decode rejects n = 33", "[core][cursor]") {
  auto body = header(33);
  for (int i = 0; i < 33; ++i) {
    entry(body, "log" + std::string(1, static_cast<char>('a' + i / 10)) +
                    std::string(1, static_cast<char>('0' + i % 10)),
          "id", 1, 1);
  }
  require_cursor_invalid(cursor::decode(with_crc(body)), "33 logs");
  // n far out of range (the field is 16 bits) is rejected the same way.
  require_cursor_invalid(cursor::decode(with_crc(header(0xFFFF))), "65535 logs");
}

TEST_CASE("cursor: decode accepts n = 32, the maximum", "[core][cursor]") {
  auto body = header(32);
  for (int i = 0; i < 32; ++i) {
    entry(body, "log" + std::string(1, static_cast<char>('a' + i / 10)) +
                    std::string(1, static_cast<char>('0' + i % 10)),
          "id", 1, 1);
  }
  auto r = cursor::decode(with_crc(body));
  REQUIRE(r);
  CHECK(r->logs().size() == 32);
}

TEST_CASE("cursor: decode rejects a name of length 0", "[core][cursor]") {
  auto body = header(1);
  entry(body, "", "id", 1, 1);
  require_cursor_invalid(cursor::decode(with_crc(body)), "log name length 0");
}

TEST_CASE("cursor: decode rejects a name of length 65", "[core][cursor]") {
  auto body = header(1);
  entry(body, std::string(65, 'a'), "id", 1, 1);
  require_cursor_invalid(cursor::decode(with_crc(body)), "log name length 65");
  // 64 is the maximum and accepted.
  body = header(1);
  entry(body, std::string(64, 'a'), "id", 1, 1);
  CHECK(cursor::decode(with_crc(body)));
}

TEST_CASE("cursor: decode rejects names out of pattern", "[core][cursor]") {
  const std::vector<std::string> bad{"Main",  "mAin",  ".main", "_main",
                                     "-main", "ma in", "main ", "ma/in",
                                     std::string("ma\0in", 5), std::string("m\xC3\xA9", 3)};
  for (const auto& name : bad) {
    CAPTURE(name);
    auto body = header(1);
    entry(body, name, "id", 1, 1);
    require_cursor_invalid(cursor::decode(with_crc(body)), "out of pattern");
  }
  // The pattern's other characters are fine after the first one.
  for (std::string_view name : {"main", "0", "a.b_c-d", "9.-_"}) {
    CAPTURE(name);
    auto body = header(1);
    entry(body, name, "id", 1, 1);
    CHECK(cursor::decode(with_crc(body)));
  }
}

TEST_CASE("cursor: decode rejects an identity of length 0", "[core][cursor]") {
  auto body = header(1);
  entry(body, "main", "", 1, 1);
  require_cursor_invalid(cursor::decode(with_crc(body)), "identity length 0");
}

TEST_CASE("cursor: decode rejects an identity of length 65", "[core][cursor]") {
  auto body = header(1);
  entry(body, "main", std::string(65, 'i'), 1, 1);
  require_cursor_invalid(cursor::decode(with_crc(body)), "identity length 65");
}

TEST_CASE("cursor: decode rejects unsorted names", "[core][cursor]") {
  auto body = header(2);
  entry(body, "beta", "id-b", 20, 2000);
  entry(body, "alpha", "id-a", 10, 1000);
  require_cursor_invalid(cursor::decode(with_crc(body)), "not strictly ascending");
  // A prefix sorts first: "alpha" < "alpha-2"; the reverse order is unsorted.
  body = header(2);
  entry(body, "alpha-2", "id", 1, 1);
  entry(body, "alpha", "id", 1, 1);
  require_cursor_invalid(cursor::decode(with_crc(body)), "not strictly ascending");
}

TEST_CASE("cursor: decode rejects duplicate names", "[core][cursor]") {
  auto body = header(2);
  entry(body, "alpha", "id-a", 10, 1000);
  entry(body, "alpha", "id-b", 20, 2000);
  require_cursor_invalid(cursor::decode(with_crc(body)), "not strictly ascending");
}

TEST_CASE("cursor: decode rejects a zero sequence", "[core][cursor]") {
  auto body = header(2);
  entry(body, "alpha", "id-a", 10, 1000);
  entry(body, "beta", "id-b", 0, 2000);
  require_cursor_invalid(cursor::decode(with_crc(body)), "sequence of log beta is 0");
}

TEST_CASE("cursor: decode rejects a zero time", "[core][cursor]") {
  auto body = header(2);
  entry(body, "alpha", "id-a", 10, 0);
  entry(body, "beta", "id-b", 20, 2000);
  require_cursor_invalid(cursor::decode(with_crc(body)), "time of log alpha is 0");
}

TEST_CASE("cursor: decode rejects trailing bytes", "[core][cursor]") {
  for (std::size_t extra : {1u, 3u, 100u}) {
    auto body = valid_body() + std::string(extra, '\0');
    require_cursor_invalid(cursor::decode(with_crc(body)), "trailing bytes");
  }
}

TEST_CASE("cursor: decode rejects a size over 8192 bytes", "[core][cursor]") {
  // Exactly 8192 bytes passes the size rule (and fails on the trailing bytes instead) …
  auto body = valid_body();
  body.resize(8192 - 4, '\0');
  auto at_limit = with_crc(body);
  REQUIRE(at_limit.size() == 8192);
  require_cursor_invalid(cursor::decode(at_limit), "trailing bytes");
  // … one byte more is rejected for its size.
  body.push_back('\0');
  auto over = with_crc(body);
  REQUIRE(over.size() == 8193);
  require_cursor_invalid(cursor::decode(over), "at most 8192");
  require_cursor_invalid(cursor::decode(std::string(100000, 'x')), "at most 8192");
}

TEST_CASE("cursor: decode rejects a CRC mismatch", "[core][cursor]") {
  auto bytes = with_crc(valid_body());
  REQUIRE(cursor::decode(bytes));
  for (std::size_t i = bytes.size() - 4; i < bytes.size(); ++i) {
    auto bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    require_cursor_invalid(cursor::decode(bad), "CRC mismatch");
  }
  // A changed field with the old CRC is caught by the CRC.
  auto bad = bytes;
  bad[bytes.size() - 5] = static_cast<char>(bad[bytes.size() - 5] ^ 0x40);
  require_cursor_invalid(cursor::decode(bad), "CRC mismatch");
}

TEST_CASE("cursor: decode rejects truncated input", "[core][cursor]") {
  auto body = valid_body();
  auto bytes = with_crc(body);
  // Plain prefixes of a valid encoding.
  for (std::size_t k = 0; k < bytes.size(); ++k) {
    CAPTURE(k);
    auto r = cursor::decode(std::string_view(bytes).substr(0, k));
    REQUIRE_FALSE(r);
    CHECK(r.error().value() == errc::cursor_invalid);
  }
  // Truncated bodies with a correct CRC: the entry parser itself must notice.
  for (std::size_t k = 8; k < body.size(); ++k) {
    CAPTURE(k);
    require_cursor_invalid(cursor::decode(with_crc(body.substr(0, k))), "truncated");
  }
  // Shorter than magic + format + flags + n + CRC.
  for (std::size_t k = 0; k < 8; ++k) {
    CAPTURE(k);
    require_cursor_invalid(cursor::decode(with_crc(body.substr(0, k))), "too short");
  }
}

// ---- fuzz -------------------------------------------------------------------------------------

namespace {

// Accepting is fine only for a canonical encoding: re-making the decoded logs gives the input.
bool decode_is_sound(std::string_view bytes) {
  auto r = cursor::decode(bytes);
  if (!r) return r.error().value() == errc::cursor_invalid;
  auto again = cursor::make(r->logs());
  return again && again->bytes() == bytes;
}

std::string random_name(std::mt19937_64& rng) {
  static constexpr std::string_view first = "abcdefghijklmnopqrstuvwxyz0123456789";
  static constexpr std::string_view rest = "abcdefghijklmnopqrstuvwxyz0123456789._-";
  std::uniform_int_distribution<std::size_t> len(1, 64);
  std::string name(1, first[std::uniform_int_distribution<std::size_t>(0, first.size() - 1)(rng)]);
  auto n = len(rng);
  while (name.size() < n) {
    name += rest[std::uniform_int_distribution<std::size_t>(0, rest.size() - 1)(rng)];
  }
  return name;
}

}  // namespace

TEST_CASE("cursor: seeded fuzz — decode never crashes and rejects every one-byte mutation",
          "[core][cursor][fuzz]") {
  constexpr std::uint64_t seed = 0xD1C5C0FFEEull;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  INFO("seed " << seed);

  // Random byte strings: nothing valid, nothing crashing.
  int unsound = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s(static_cast<std::size_t>(std::uniform_int_distribution<int>(0, 300)(rng)), '\0');
    for (auto& c : s) c = static_cast<char>(byte(rng));
    if (!decode_is_sound(s)) ++unsound;
  }
  CHECK(unsound == 0);

  // Random bodies behind a valid header and with a valid CRC reach the entry parser.
  unsound = 0;
  for (int i = 0; i < 20000; ++i) {
    auto body = header(static_cast<std::uint64_t>(std::uniform_int_distribution<int>(0, 34)(rng)));
    auto len = std::uniform_int_distribution<int>(0, 300)(rng);
    for (int k = 0; k < len; ++k) body.push_back(static_cast<char>(byte(rng)));
    if (!decode_is_sound(with_crc(body))) ++unsound;
  }
  CHECK(unsound == 0);

  // One-byte mutations of valid encodings are always rejected, with cursor_invalid.
  int accepted = 0;
  int wrong_code = 0;
  int mutated = 0;
  for (int i = 0; i < 2000; ++i) {
    std::vector<log_position> logs;
    auto n = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int k = 0; k < n; ++k) {
      std::string identity(static_cast<std::size_t>(std::uniform_int_distribution<int>(1, 64)(rng)),
                           '\0');
      for (auto& c : identity) c = static_cast<char>(byte(rng));
      logs.push_back(pos(random_name(rng) + std::to_string(k), identity,
                         std::uniform_int_distribution<std::uint64_t>(1, ~0ull)(rng),
                         std::uniform_int_distribution<std::uint64_t>(1, ~0ull)(rng)));
    }
    for (std::size_t a = 0; a < logs.size(); ++a) {
      if (logs[a].log.size() > 64) logs[a].log.resize(64);
    }
    auto made = cursor::make(logs);
    if (!made) continue;  // a truncated name collided; skip it
    auto bytes = made->bytes();
    REQUIRE(cursor::decode(bytes));
    auto at = std::uniform_int_distribution<std::size_t>(0, bytes.size() - 1)(rng);
    auto flip = std::uniform_int_distribution<int>(1, 255)(rng);
    bytes[at] = static_cast<char>(static_cast<unsigned char>(bytes[at]) ^ flip);
    ++mutated;
    auto r = cursor::decode(bytes);
    if (r) {
      ++accepted;
    } else if (r.error().value() != errc::cursor_invalid) {
      ++wrong_code;
    }
  }
  CHECK(mutated > 1900);
  CHECK(accepted == 0);
  CHECK(wrong_code == 0);
}

TEST_CASE("cursor: same_positions compares logs and sequences", "[core][cursor]") {
  dix::positions a{{"main", 10}, {"other", 0}};
  dix::positions b{{"other", 0}, {"main", 10}};
  CHECK(dix::same_positions(a, b));
  CHECK(dix::same_positions({}, {}));
  auto c = a;
  c["main"] = 11;
  CHECK_FALSE(dix::same_positions(a, c));
  auto d = a;
  d.erase("other");
  CHECK_FALSE(dix::same_positions(a, d));
  auto e = a;
  e["third"] = 10;
  CHECK_FALSE(dix::same_positions(a, e));
}
