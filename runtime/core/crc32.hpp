// CRC-32 (IEEE 802.3: reflected polynomial 0x04C11DB7, init and xorout 0xFFFFFFFF), the checksum
// of the cursor encoding (formats.md §3). Same values as boost::crc_32_type.
#pragma once

#include <cstdint>
#include <string_view>

namespace dix {

// `previous` continues a checksum: crc32_ieee(b, crc32_ieee(a)) == crc32_ieee(a + b), so a file
// can be checked in pieces. Default 0: the checksum of `bytes` alone.
std::uint32_t crc32_ieee(std::string_view bytes, std::uint32_t previous = 0) noexcept;

}  // namespace dix
