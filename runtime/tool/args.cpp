#include "tool/args.hpp"

#include <charconv>

namespace dix::tool {

std::optional<args> args::parse(const std::vector<std::string>& argv, const std::set<std::string>& options,
                                const std::set<std::string>& flags, std::string& error) {
  args out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const auto& a = argv[i];
    if (a.rfind("--", 0) != 0) {
      out.positional_.push_back(a);
      continue;
    }
    auto name = a.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (flags.count(name) != 0 && !inline_value) {
      out.values_[name] = "1";
    } else if (options.count(name) != 0) {
      if (inline_value) {
        out.values_[name] = *inline_value;
      } else if (i + 1 < argv.size()) {
        out.values_[name] = argv[++i];
      } else {
        error = "--" + name + " needs a value";
        return std::nullopt;
      }
    } else {
      error = "unknown option --" + name;
      return std::nullopt;
    }
  }
  return out;
}

std::string args::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::optional<std::uint64_t> args::number(const std::string& name, std::uint64_t fallback, std::uint64_t min,
                                          std::uint64_t max, std::string& error) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const auto& text = it->second;
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < min || value > max) {
    error = "--" + name + " = \"" + text + "\": must be a whole number in [" + std::to_string(min) + ", " +
            std::to_string(max) + "]";
    return std::nullopt;
  }
  return value;
}

std::optional<std::size_t> args::choice(const std::string& name, const std::vector<std::string>& choices,
                                        std::size_t fallback, std::string& error) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (choices[i] == it->second) return i;
  }
  error = "--" + name + " = \"" + it->second + "\": must be one of";
  for (std::size_t i = 0; i < choices.size(); ++i) error += (i == 0 ? " " : ", ") + choices[i];
  return std::nullopt;
}

}  // namespace dix::tool
