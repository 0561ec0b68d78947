// Fuzz target: the metadata records of formats.md §5 (adapters/meta_records.cpp): the 8-byte
// values of epoch/<id>, registration/<id> (and boundary/<id>, `clock`), read back from the home
// store. `condemned/<id>` is decided by presence alone, so only the u64 decoder reads its bytes.
// The first input byte picks the record kind, the rest is the stored value. Properties: a
// rejection is record_corrupt naming the key; an accepted value is 8 bytes and re-encodes to them.
#include <string>

#include "adapters/meta_records.hpp"

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto value = dix::fuzz::as_view(data + 1, size - 1);
  const std::string id = "fuzz-index";
  const std::string key = data[0] % 2 == 0 ? dix::meta::epoch_key(id) : dix::meta::registration_key(id);
  auto decoded = dix::meta::decode_u64(key, value);
  if (!decoded) {
    FUZZ_CHECK(decoded.error().value() == dix::errc::record_corrupt);
    FUZZ_CHECK(decoded.error().message().find(key) != std::string::npos);
    return 0;
  }
  FUZZ_CHECK(value.size() == 8);
  FUZZ_CHECK(dix::meta::encode_u64(*decoded) == value);
  return 0;
}
