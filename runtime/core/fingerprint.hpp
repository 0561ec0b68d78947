// The registration fingerprint (formats.md §5, protocol.md §2.5): FNV-1a 64 over format byte 1,
// the backend's kind and id, projection_version and the projected (log, table) pairs sorted by
// log name bytes, then table. Stored little-endian as registration/<id>.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include <dix/result.hpp>

namespace dix {

struct projected_table {
  std::string_view log;
  std::uint32_t table = 0;
};

// invalid_argument when a length exceeds its field (kind, id or a log name over 255 bytes,
// projection_version over 256, more than 65535 pairs).
result<std::uint64_t> registration_fingerprint(std::string_view kind, std::string_view id,
                                               std::string_view projection_version,
                                               std::vector<projected_table> tables);

}  // namespace dix
