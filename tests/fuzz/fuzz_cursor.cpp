// Fuzz target: the cursor codec (formats.md §3, core/cursor.cpp). A backend hands back whatever
// bytes it stored, so cursor::decode sees outside bytes. Properties: a rejection is
// cursor_invalid; an accepted encoding is canonical (it re-encodes to the same bytes) and
// cursor::make of its logs gives an equal cursor.
#include <dix/cursor.hpp>

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = dix::fuzz::as_view(data, size);
  auto decoded = dix::cursor::decode(bytes);
  if (!decoded) {
    FUZZ_CHECK(decoded.error().value() == dix::errc::cursor_invalid);
    return 0;
  }
  FUZZ_CHECK(decoded->encode() == bytes);
  FUZZ_CHECK(decoded->logs().size() <= dix::cursor::max_logs);
  for (const auto& position : decoded->logs()) FUZZ_CHECK(decoded->find(position.log) == &position);
  auto made = dix::cursor::make(decoded->logs());
  FUZZ_CHECK(made && *made == *decoded);
  FUZZ_CHECK(!decoded->to_json().empty());
  return 0;
}
