// Fuzz target: the 24-byte transaction header and the 8-byte version prefix of stored values
// (formats.md §1.3, §2; core/txn_header.cpp), both read from a store another process wrote. The
// first input byte picks the decoder, the rest is its input. Properties: a header rejection is
// log_corrupt and an accepted header re-encodes to the same bytes; a value rejection is
// record_corrupt and an accepted value re-encodes to the same bytes.
#include "core/txn_header.hpp"

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto bytes = dix::fuzz::as_view(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    auto header = dix::decode_header(bytes);
    if (!header) {
      FUZZ_CHECK(header.error().value() == dix::errc::log_corrupt);
      return 0;
    }
    FUZZ_CHECK(dix::encode_header(*header) == bytes);
  } else {
    auto value = dix::decode_value(bytes);
    if (!value) {
      FUZZ_CHECK(value.error().value() == dix::errc::record_corrupt);
      return 0;
    }
    FUZZ_CHECK(value->version != 0);
    FUZZ_CHECK(dix::encode_value(value->version, value->payload) == bytes);
  }
  return 0;
}
