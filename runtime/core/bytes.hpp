// Little-endian fixed-width integer encoding used by every dix format (formats.md: "all integers
// are unsigned little-endian unless stated").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dix {

template <class T>
void put_le(std::string& out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out.push_back(static_cast<char>(static_cast<std::uint8_t>(value >> (8 * i))));
  }
}

// Precondition: bytes.size() >= offset + sizeof(T).
template <class T>
T get_le(std::string_view bytes, std::size_t offset) noexcept {
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    value = static_cast<T>(value |
                           static_cast<T>(static_cast<T>(static_cast<std::uint8_t>(bytes[offset + i]))
                                          << (8 * i)));
  }
  return value;
}

}  // namespace dix
