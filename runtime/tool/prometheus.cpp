#include "tool/prometheus.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace dix::tool {
namespace {

bool name_char(char c, bool first, bool colon) {
  const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
  return letter || (!first && c >= '0' && c <= '9');
}

bool valid_name(std::string_view name, bool colon) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (!name_char(name[i], i == 0, colon)) return false;
  }
  return true;
}

}  // namespace

std::size_t utf8_sequence_length(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const auto b0 = byte(at);
  if (b0 < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) length = 2;
  else if (b0 >= 0xE0 && b0 <= 0xEF) length = 3;
  else if (b0 >= 0xF0 && b0 <= 0xF4) length = 4;
  else return 0;  // a continuation byte, C0 or C1 (overlong), F5..FF
  if (b0 == 0xE0) low = 0xA0;   // no overlong form
  if (b0 == 0xED) high = 0x9F;  // no UTF-16 surrogate
  if (b0 == 0xF0) low = 0x90;   // no overlong form
  if (b0 == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  if (at + length > text.size()) return 0;
  if (byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if (byte(at + i) < 0x80 || byte(at + i) > 0xBF) return 0;
  }
  return length;
}

bool valid_metric_name(std::string_view name) { return valid_name(name, true); }
bool valid_label_name(std::string_view name) { return valid_name(name, false) && name.substr(0, 2) != "__"; }

std::string escape_label_value(std::string_view value) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(value.size());
  for (std::size_t i = 0; i < value.size();) {
    const char c = value[i];
    const auto length = utf8_sequence_length(value, i);
    if (length == 0) {
      // The format has no escape for a byte: the value carries the text \xNN instead (its
      // backslash escaped), as escape_bytes shows such a byte in dix's plain output.
      const auto b = static_cast<unsigned char>(c);
      out += "\\\\x";
      out.push_back(hex[b >> 4]);
      out.push_back(hex[b & 0xF]);
      ++i;
      continue;
    }
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out.append(value.substr(i, length));
    i += length;
  }
  return out;
}

std::string escape_help(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
  return out;
}

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[40];
  if (value == std::floor(value) && std::fabs(value) < 9007199254740992.0) {
    std::snprintf(text, sizeof text, "%.0f", value);
  } else {
    // The shortest of 15 and 17 significant digits that reads back as the same double.
    std::snprintf(text, sizeof text, "%.15g", value);
    if (std::strtod(text, nullptr) != value) std::snprintf(text, sizeof text, "%.17g", value);
  }
  return text;
}

void metrics_text::add(std::string_view name, metric_type type, std::string_view help, metric_labels labels,
                       double value) {
  // Names come from our code, never from input: a bad one is a bug, refused in every build.
  if (!valid_metric_name(name)) throw std::invalid_argument("metrics_text: invalid metric name " + std::string(name));
  for (const auto& [label, _] : labels) {
    if (!valid_label_name(label)) throw std::invalid_argument("metrics_text: invalid label name " + std::string(label));
  }
  for (auto& f : families_) {
    if (f.name == name) {
      f.samples.emplace_back(std::move(labels), value);
      return;
    }
  }
  families_.push_back(family{std::string(name), std::string(help), type, {}});
  families_.back().samples.emplace_back(std::move(labels), value);
}

std::string metrics_text::str() const {
  std::string out;
  for (const auto& f : families_) {
    out += "# HELP " + f.name + " " + escape_help(f.help) + "\n";
    out += "# TYPE " + f.name + (f.type == metric_type::counter ? " counter\n" : " gauge\n");
    for (const auto& [labels, value] : f.samples) {
      out += f.name;
      if (!labels.empty()) {
        out += "{";
        for (std::size_t i = 0; i < labels.size(); ++i) {
          out += (i == 0 ? "" : ",") + labels[i].first + "=\"" + escape_label_value(labels[i].second) + "\"";
        }
        out += "}";
      }
      out += " " + format_value(value) + "\n";
    }
  }
  return out;
}

}  // namespace dix::tool
