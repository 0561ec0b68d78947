// Tests of the 24-byte transaction header (formats.md §1.3) and the 8-byte record value prefix
// (formats.md §2).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "core/txn_header.hpp"

namespace {

using dix::errc;
using dix::txn_header;

void require_log_corrupt(std::string_view bytes, std::string_view needle) {
  auto r = dix::decode_header(bytes);
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::log_corrupt);
  CHECK_THAT(r.error().message(), Catch::Matchers::Contains(std::string(needle)));
}

std::string valid_header() { return dix::encode_header(txn_header{0, 1000, 3}); }

}  // namespace

TEST_CASE("txn_header: encode and decode round-trip", "[core][txn_header]") {
  for (std::uint8_t flags = 0; flags <= dix::header_flag::all; ++flags) {
    txn_header h{flags, 0x0123456789ABCDEFull, 0xFEDCBA98u};
    auto bytes = dix::encode_header(h);
    REQUIRE(bytes.size() == dix::txn_header_bytes);
    auto r = dix::decode_header(bytes);
    REQUIRE(r);
    CHECK(r->flags == flags);
    CHECK(r->time == 0x0123456789ABCDEFull);
    CHECK(r->op_count == 0xFEDCBA98u);
  }
  auto r = dix::decode_header(dix::encode_header(txn_header{0, 1, 0}));
  REQUIRE(r);
  CHECK(r->time == 1);
  CHECK(r->op_count == 0);  // the header alone does not judge the count
}

TEST_CASE("txn_header: byte layout is exactly formats.md §1.3", "[core][txn_header]") {
  auto bytes = dix::encode_header(txn_header{0x0B, 0x0807060504030201ull, 0x0D0C0B0Au});
  const std::string expected{
      'D', 'I', 'X', 'T',                                     // magic at 0
      '\x01',                                                 // format at 4
      '\x0B',                                                 // flags at 5
      '\x00', '\x00',                                         // reserved at 6
      '\x01', '\x02', '\x03', '\x04', '\x05', '\x06', '\x07', '\x08',  // time LE at 8
      '\x0A', '\x0B', '\x0C', '\x0D',                         // op_count LE at 16
      '\x00', '\x00', '\x00', '\x00'};                        // reserved at 20
  CHECK(bytes == expected);
  CHECK(dix::txn_header_bytes == 24);
}

TEST_CASE("txn_header: decode rejects sizes other than 24", "[core][txn_header]") {
  auto bytes = valid_header();
  require_log_corrupt(bytes.substr(0, 23), "23 bytes");
  require_log_corrupt(bytes + '\0', "25 bytes");
  require_log_corrupt("", "0 bytes");
}

TEST_CASE("txn_header: decode rejects a wrong magic", "[core][txn_header]") {
  for (std::size_t i = 0; i < 4; ++i) {
    auto bytes = valid_header();
    bytes[i] = static_cast<char>(bytes[i] ^ 0x20);
    require_log_corrupt(bytes, "wrong magic");
  }
  auto bytes = valid_header();
  bytes[3] = 'C';  // the cursor magic "DIXC"
  require_log_corrupt(bytes, "wrong magic");
}

TEST_CASE("txn_header: decode rejects format 2 (and 0)", "[core][txn_header]") {
  auto bytes = valid_header();
  bytes[4] = 2;
  require_log_corrupt(bytes, "format 2");
  bytes[4] = 0;
  require_log_corrupt(bytes, "format 0");
}

TEST_CASE("txn_header: decode rejects each reserved flag bit 4-7", "[core][txn_header]") {
  for (int bit = 4; bit < 8; ++bit) {
    CAPTURE(bit);
    auto bytes = valid_header();
    bytes[5] = static_cast<char>(1u << bit);
    require_log_corrupt(bytes, "reserved flag bits");
    bytes[5] = static_cast<char>((1u << bit) | dix::header_flag::all);
    require_log_corrupt(bytes, "reserved flag bits");
  }
}

TEST_CASE("txn_header: decode rejects non-zero reserved bytes 6-7", "[core][txn_header]") {
  for (std::size_t at : {6u, 7u}) {
    CAPTURE(at);
    auto bytes = valid_header();
    bytes[at] = 1;
    require_log_corrupt(bytes, "reserved bytes 6-7");
  }
}

TEST_CASE("txn_header: decode rejects non-zero reserved bytes 20-23", "[core][txn_header]") {
  for (std::size_t at = 20; at < 24; ++at) {
    CAPTURE(at);
    auto bytes = valid_header();
    bytes[at] = static_cast<char>(0x80);
    require_log_corrupt(bytes, "reserved bytes 20-23");
  }
}

TEST_CASE("txn_header: decode rejects time 0", "[core][txn_header]") {
  require_log_corrupt(dix::encode_header(txn_header{0, 0, 1}), "time 0");
}

TEST_CASE("txn_header: flags_to_string names the set bits", "[core][txn_header]") {
  CHECK(dix::flags_to_string(0) == "none");
  CHECK(dix::flags_to_string(dix::header_flag::replicated) == "replicated");
  CHECK(dix::flags_to_string(dix::header_flag::recovery) == "recovery");
  CHECK(dix::flags_to_string(dix::header_flag::system) == "system");
  CHECK(dix::flags_to_string(dix::header_flag::reload) == "reload");
  CHECK(dix::flags_to_string(dix::header_flag::system | dix::header_flag::reload) ==
        "system|reload");
  CHECK(dix::flags_to_string(dix::header_flag::all) == "replicated|recovery|system|reload");
  CHECK(dix::header_flag::replicated == 1);
  CHECK(dix::header_flag::recovery == 2);
  CHECK(dix::header_flag::system == 4);
  CHECK(dix::header_flag::reload == 8);
}

TEST_CASE("record value: encode and decode round-trip", "[core][txn_header]") {
  auto stored = dix::encode_value(0x0102030405060708ull, "payload");
  REQUIRE(stored.size() == 8 + 7);
  CHECK(stored.substr(0, 8) == std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
  CHECK(stored.substr(8) == "payload");
  auto r = dix::decode_value(stored);
  REQUIRE(r);
  CHECK(r->version == 0x0102030405060708ull);
  CHECK(r->payload == "payload");
  CHECK(r->payload.data() == stored.data() + 8);  // a view into the stored bytes

  // Binary payloads survive.
  const std::string binary("\0\xFF\0", 3);
  const auto stored_binary = dix::encode_value(1, binary);  // the result views into it
  auto b = dix::decode_value(stored_binary);
  REQUIRE(b);
  CHECK(b->payload == binary);
}

TEST_CASE("record value: encode_value_into replaces the output", "[core][txn_header]") {
  std::string out = "previous contents";
  dix::encode_value_into(out, 9, "x");
  CHECK(out == dix::encode_value(9, "x"));
  CHECK(out.size() == 9);
}

TEST_CASE("record value: an empty payload is allowed", "[core][txn_header]") {
  auto stored = dix::encode_value(5, "");
  CHECK(stored.size() == 8);
  auto r = dix::decode_value(stored);
  REQUIRE(r);
  CHECK(r->version == 5);
  CHECK(r->payload.empty());
}

TEST_CASE("record value: shorter than 8 bytes is record_corrupt", "[core][txn_header]") {
  auto stored = dix::encode_value(5, "");
  for (std::size_t n = 0; n < 8; ++n) {
    CAPTURE(n);
    auto r = dix::decode_value(std::string_view(stored).substr(0, n));
    REQUIRE_FALSE(r);
    CHECK(r.error().value() == errc::record_corrupt);
  }
}

TEST_CASE("record value: version 0 is record_corrupt", "[core][txn_header]") {
  for (std::string payload : {"", "x", "payload"}) {
    CAPTURE(payload);
    auto r = dix::decode_value(dix::encode_value(0, payload));
    REQUIRE_FALSE(r);
    CHECK(r.error().value() == errc::record_corrupt);
    CHECK_THAT(r.error().message(), Catch::Matchers::Contains("version 0"));
  }
}
