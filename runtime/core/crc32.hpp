// CRC-32 (IEEE 802.3: reflected polynomial 0x04C11DB7, init and xorout 0xFFFFFFFF), the checksum
// of the cursor encoding (formats.md §3). Same values as boost::crc_32_type.
#pragma once

#include <cstdint>
#include <string_view>

namespace dix {

std::uint32_t crc32_ieee(std::string_view bytes) noexcept;

}  // namespace dix
