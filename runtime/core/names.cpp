#include "core/names.hpp"

namespace dix {
namespace {

bool lower_alnum(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

}  // namespace

bool is_valid_log_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 64 || !lower_alnum(name.front())) return false;
  for (char c : name) {
    if (!lower_alnum(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

bool is_valid_backend_id(std::string_view id) noexcept {
  if (id.empty() || id.size() > 64 || id.front() == '.') return false;
  for (char c : id) {
    bool ok = lower_alnum(c) || (c >= 'A' && c <= 'Z') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

result<void> check_backend_id(std::string_view id, std::string_view context) {
  if (is_valid_backend_id(id)) return {};
  std::string message;
  if (!context.empty()) message.append(context).append(": ");
  message += "backend id \"" + escape_bytes(id) + "\": must be 1…64 of [A-Za-z0-9._-], not starting with '.'";
  return error{errc::invalid_argument, std::move(message)};
}

std::string escape_bytes(std::string_view bytes) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size());
  for (char c : bytes) {
    auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7F && c != '\\' && c != '"') {
      out.push_back(c);
    } else {
      out += "\\x";
      out.push_back(hex[b >> 4]);
      out.push_back(hex[b & 0xF]);
    }
  }
  return out;
}

}  // namespace dix
