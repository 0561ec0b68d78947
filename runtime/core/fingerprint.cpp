#include "core/fingerprint.hpp"

#include <algorithm>
#include <string>

namespace dix {
namespace {

struct fnv1a {
  std::uint64_t h = 0xcbf29ce484222325ull;
  void byte(std::uint8_t b) {
    h ^= b;
    h *= 0x100000001b3ull;
  }
  void bytes(std::string_view s) {
    for (char c : s) byte(static_cast<std::uint8_t>(c));
  }
  template <class Int>
  void le(Int v) {
    for (std::size_t i = 0; i < sizeof(Int); ++i) byte(static_cast<std::uint8_t>(static_cast<std::uint64_t>(v) >> (8 * i)));
  }
};

}  // namespace

result<std::uint64_t> registration_fingerprint(std::string_view kind, std::string_view id,
                                               std::string_view projection_version,
                                               std::vector<projected_table> tables) {
  if (kind.size() > 255) return error{errc::invalid_argument, "backend kind has " + std::to_string(kind.size()) + " bytes: at most 255"};
  if (id.size() > 255) return error{errc::invalid_argument, "backend id has " + std::to_string(id.size()) + " bytes: at most 255"};
  if (projection_version.size() > 256) {
    return error{errc::invalid_argument, "projection_version has " + std::to_string(projection_version.size()) + " bytes: at most 256"};
  }
  if (tables.size() > 0xFFFF) return error{errc::invalid_argument, "more than 65535 projected tables"};
  std::sort(tables.begin(), tables.end(), [](const projected_table& a, const projected_table& b) {
    return a.log != b.log ? a.log < b.log : a.table < b.table;
  });
  fnv1a f;
  f.byte(1);
  f.byte(static_cast<std::uint8_t>(kind.size()));
  f.bytes(kind);
  f.byte(static_cast<std::uint8_t>(id.size()));
  f.bytes(id);
  f.le(static_cast<std::uint16_t>(projection_version.size()));
  f.bytes(projection_version);
  f.le(static_cast<std::uint16_t>(tables.size()));
  for (const auto& t : tables) {
    if (t.log.size() > 255) return error{errc::invalid_argument, "log name has " + std::to_string(t.log.size()) + " bytes: at most 255"};
    f.byte(static_cast<std::uint8_t>(t.log.size()));
    f.bytes(t.log);
    f.le(t.table);
  }
  return f.h;
}

}  // namespace dix
