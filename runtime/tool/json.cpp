#include "tool/json.hpp"

namespace dix::tool {

std::string json_string(std::string_view bytes) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "\"";
  out.reserve(bytes.size() + 2);
  for (char c : bytes) {
    auto b = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (b < 0x20 || b >= 0x7F) {
      out += "\\u00";
      out.push_back(hex[b >> 4]);
      out.push_back(hex[b & 0xF]);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace dix::tool
