// The 24-byte transaction header every primary-store WriteBatch starts with (formats.md §1.3),
// and the 8-byte version prefix of stored values (formats.md §2).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <dix/result.hpp>
#include <dix/wal.hpp>  // header_flag, flags_to_string

namespace dix {

struct txn_header {
  std::uint8_t flags = 0;
  index_time_t time = 0;
  std::uint32_t op_count = 0;  // WriteBatch::Count(); the LogData record is not counted
};

inline constexpr std::size_t txn_header_bytes = 24;

std::string encode_header(const txn_header& h);
// log_corrupt naming the rule for: size ≠ 24, wrong magic, format ≠ 1, reserved bits or bytes.
result<txn_header> decode_header(std::string_view bytes);

inline constexpr std::size_t value_version_bytes = 8;

// version (8 bytes LE) + payload
std::string encode_value(std::uint64_t version, std::string_view payload);
void encode_value_into(std::string& out, std::uint64_t version, std::string_view payload);

struct decoded_value {
  std::uint64_t version = 0;
  std::string_view payload;
};
// record_corrupt when shorter than 8 bytes or version 0.
result<decoded_value> decode_value(std::string_view stored);

}  // namespace dix
