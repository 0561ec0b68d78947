#include <dix/cursor.hpp>

#include <algorithm>

#include "core/bytes.hpp"
#include "core/crc32.hpp"
#include "core/names.hpp"

namespace dix {
namespace {

constexpr std::string_view cursor_magic{"DIXC", 4};
constexpr std::uint8_t cursor_format = 1;
constexpr std::size_t header_bytes = 8;  // magic, format, flags, n
constexpr std::size_t crc_bytes = 4;

result<void> invalid(std::string what) {
  return {errc::cursor_invalid, "cursor: " + std::move(what)};
}

result<void> check_entry(const log_position& p) {
  if (!is_valid_log_name(p.log)) return invalid("log name \"" + escape_bytes(p.log) + "\" out of pattern");
  if (p.identity.empty() || p.identity.size() > 64) {
    return invalid("identity of log " + p.log + " has " + std::to_string(p.identity.size()) +
                   " bytes; must be 1…64");
  }
  if (p.sequence == 0) return invalid("sequence of log " + p.log + " is 0");
  if (p.time == 0) return invalid("time of log " + p.log + " is 0");
  return {};
}

// Entries must already be strictly ascending by name bytes and individually valid.
std::string encode_entries(const std::vector<log_position>& logs) {
  std::string out;
  out.reserve(header_bytes + logs.size() * 96 + crc_bytes);
  out.append(cursor_magic);
  out.push_back(static_cast<char>(cursor_format));
  out.push_back(0);  // flags
  put_le<std::uint16_t>(out, static_cast<std::uint16_t>(logs.size()));
  for (const auto& p : logs) {
    out.push_back(static_cast<char>(p.log.size()));
    out += p.log;
    out.push_back(static_cast<char>(p.identity.size()));
    out += p.identity;
    put_le<std::uint64_t>(out, p.sequence);
    put_le<std::uint64_t>(out, p.time);
  }
  put_le<std::uint32_t>(out, crc32_ieee(out));
  return out;
}

}  // namespace

bool same_positions(const positions& a, const positions& b) noexcept { return a == b; }

result<cursor> cursor::make(std::vector<log_position> logs) {
  if (logs.empty() || logs.size() > max_logs) {
    return invalid("has " + std::to_string(logs.size()) + " logs; must be 1…32").error();
  }
  for (const auto& p : logs) {
    if (auto ok = check_entry(p); !ok) return ok.error();
  }
  std::sort(logs.begin(), logs.end(),
            [](const log_position& a, const log_position& b) { return a.log < b.log; });
  for (std::size_t i = 1; i < logs.size(); ++i) {
    if (logs[i - 1].log == logs[i].log) return invalid("log " + logs[i].log + " named twice").error();
  }
  auto encoded = encode_entries(logs);
  return cursor{std::move(logs), std::move(encoded)};
}

result<cursor> cursor::decode(std::string_view bytes) {
  if (bytes.size() > max_encoded_bytes) {
    return invalid(std::to_string(bytes.size()) + " bytes; at most 8192").error();
  }
  if (bytes.size() < header_bytes + crc_bytes) {
    return invalid(std::to_string(bytes.size()) + " bytes; too short").error();
  }
  if (bytes.substr(0, 4) != cursor_magic) return invalid("wrong magic").error();
  auto format = static_cast<std::uint8_t>(bytes[4]);
  if (format != cursor_format) return invalid("format " + std::to_string(format) + "; must be 1").error();
  if (bytes[5] != 0) return invalid("reserved flags set").error();
  auto body = bytes.substr(0, bytes.size() - crc_bytes);
  if (get_le<std::uint32_t>(bytes, bytes.size() - crc_bytes) != crc32_ieee(body)) {
    return invalid("CRC mismatch").error();
  }
  auto n = get_le<std::uint16_t>(bytes, 6);
  if (n == 0 || n > max_logs) return invalid(std::to_string(n) + " logs; must be 1…32").error();

  std::vector<log_position> logs;
  logs.reserve(n);
  std::size_t at = header_bytes;
  auto take_string = [&](std::string& out, const char* what) -> result<void> {
    if (at >= body.size()) return invalid(std::string("truncated before ") + what);
    auto len = static_cast<std::uint8_t>(body[at++]);
    if (len == 0 || len > 64) return invalid(std::string(what) + " length " + std::to_string(len) + "; must be 1…64");
    if (body.size() - at < len) return invalid(std::string("truncated ") + what);
    out.assign(body.substr(at, len));
    at += len;
    return {};
  };
  for (std::uint16_t i = 0; i < n; ++i) {
    log_position p;
    if (auto ok = take_string(p.log, "log name"); !ok) return ok.error();
    if (auto ok = take_string(p.identity, "identity"); !ok) return ok.error();
    if (body.size() - at < 16) return invalid("truncated sequence/time").error();
    p.sequence = get_le<std::uint64_t>(body, at);
    p.time = get_le<std::uint64_t>(body, at + 8);
    at += 16;
    if (auto ok = check_entry(p); !ok) return ok.error();
    if (!logs.empty() && !(logs.back().log < p.log)) {
      return invalid("log names not strictly ascending at " + p.log).error();
    }
    logs.push_back(std::move(p));
  }
  if (at != body.size()) return invalid(std::to_string(body.size() - at) + " trailing bytes").error();
  return cursor{std::move(logs), std::string(bytes)};
}

const log_position* cursor::find(std::string_view log) const noexcept {
  for (const auto& p : logs_) {
    if (p.log == log) return &p;
  }
  return nullptr;
}

std::string cursor::to_json() const {
  std::string out = "{\"format\":1,\"logs\":{";
  bool first = true;
  for (const auto& p : logs_) {
    if (!first) out += ",";
    first = false;
    out += "\"" + p.log + "\":{\"identity\":\"" + escape_bytes(p.identity) +
           "\",\"sequence\":" + std::to_string(p.sequence) +
           ",\"time\":" + std::to_string(p.time) + "}";
  }
  out += "}}";
  return out;
}

}  // namespace dix
