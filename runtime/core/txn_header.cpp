#include "core/txn_header.hpp"

#include "core/bytes.hpp"

namespace dix {
namespace {

constexpr std::string_view header_magic{"DIXT", 4};
constexpr std::uint8_t header_format = 1;

result<txn_header> corrupt(std::string what) {
  return {errc::log_corrupt, "transaction header: " + std::move(what)};
}

}  // namespace

std::string encode_header(const txn_header& h) {
  std::string out;
  out.reserve(txn_header_bytes);
  out.append(header_magic);
  out.push_back(static_cast<char>(header_format));
  out.push_back(static_cast<char>(h.flags));
  put_le<std::uint16_t>(out, 0);
  put_le<std::uint64_t>(out, h.time);
  put_le<std::uint32_t>(out, h.op_count);
  put_le<std::uint32_t>(out, 0);
  return out;
}

result<txn_header> decode_header(std::string_view b) {
  if (b.size() != txn_header_bytes) {
    return corrupt(std::to_string(b.size()) + " bytes; must be 24");
  }
  if (b.substr(0, 4) != header_magic) return corrupt("wrong magic");
  auto format = static_cast<std::uint8_t>(b[4]);
  if (format != header_format) return corrupt("format " + std::to_string(format) + "; must be 1");
  txn_header h;
  h.flags = static_cast<std::uint8_t>(b[5]);
  if ((h.flags & ~header_flag::all) != 0) return corrupt("reserved flag bits set");
  if (get_le<std::uint16_t>(b, 6) != 0) return corrupt("reserved bytes 6-7 not zero");
  h.time = get_le<std::uint64_t>(b, 8);
  h.op_count = get_le<std::uint32_t>(b, 16);
  if (get_le<std::uint32_t>(b, 20) != 0) return corrupt("reserved bytes 20-23 not zero");
  if (h.time == 0) return corrupt("time 0");
  return h;
}

std::string flags_to_string(std::uint8_t flags) {
  std::string out;
  auto add = [&](std::uint8_t bit, const char* name) {
    if ((flags & bit) == 0) return;
    if (!out.empty()) out += '|';
    out += name;
  };
  add(header_flag::replicated, "replicated");
  add(header_flag::recovery, "recovery");
  add(header_flag::system, "system");
  add(header_flag::reload, "reload");
  return out.empty() ? "none" : out;
}

std::string encode_value(std::uint64_t version, std::string_view payload) {
  std::string out;
  encode_value_into(out, version, payload);
  return out;
}

void encode_value_into(std::string& out, std::uint64_t version, std::string_view payload) {
  out.clear();
  out.reserve(value_version_bytes + payload.size());
  put_le<std::uint64_t>(out, version);
  out.append(payload);
}

result<decoded_value> decode_value(std::string_view stored) {
  if (stored.size() < value_version_bytes) {
    return {errc::record_corrupt,
            "stored value has " + std::to_string(stored.size()) + " bytes; at least 8 needed"};
  }
  decoded_value v{get_le<std::uint64_t>(stored, 0), stored.substr(value_version_bytes)};
  if (v.version == 0) return {errc::record_corrupt, "stored value has version 0"};
  return v;
}

}  // namespace dix
