#include "tool/args.hpp"

#include <algorithm>
#include <charconv>
#include <iostream>

namespace dix::tool {
namespace {

std::string quoted(const std::string& text) { return "\"" + text + "\""; }

}  // namespace

int refuse(std::string_view name, std::string_view problem) {
  std::cerr << name << ": " << problem << " (" << name << " --help for usage)\n";
  return exit_usage;
}

std::optional<args> args::parse(const std::vector<std::string>& argv, const syntax& accepted, std::string& error) {
  args out;
  // --help (or -h) wherever it comes (docs/operations.md), before any other word is judged,
  // unless it is an option's value or follows "--".
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const auto& a = argv[i];
    if (a == "--") break;
    if (a == "--help" || a == "-h") {
      out.help_ = true;
      return out;
    }
    if (a.rfind("--", 0) == 0 && a.find('=') == std::string::npos && accepted.options.count(a.substr(2)) != 0) ++i;
  }
  bool options_ended = false;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const auto& a = argv[i];
    if (a == "--" && !options_ended) {  // what follows is positional, even "-x" (a backend id may start with '-')
      options_ended = true;
      continue;
    }
    if (options_ended || a.rfind("--", 0) != 0) {
      // A lone "-" is an ordinary word; "-x" is an option spelled wrong unless options ended.
      if (!options_ended && a.size() > 1 && a[0] == '-') {
        error = "unknown option " + a + (accepted.options.count(a.substr(1)) + accepted.flags.count(a.substr(1)) != 0
                                             ? " (options take two dashes: -" + a + ")"
                                             : "");
        return std::nullopt;
      }
      if (out.positional_.size() == accepted.max_positional) {
        error = "unexpected " + accepted.positional_name + " " + quoted(a);
        return std::nullopt;
      }
      out.positional_.push_back(a);
      continue;
    }
    auto name = a.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const bool flag = accepted.flags.count(name) != 0;
    if (!flag && accepted.options.count(name) == 0) {
      error = "unknown option --" + name;
      return std::nullopt;
    }
    if (out.values_.count(name) != 0) {
      error = "--" + name + " is given twice";
      return std::nullopt;
    }
    if (flag) {
      if (inline_value) {
        error = "--" + name + " takes no value";
        return std::nullopt;
      }
      out.values_[name] = "1";
      continue;
    }
    if (!inline_value && i + 1 == argv.size()) {
      error = "--" + name + " needs a value";
      return std::nullopt;
    }
    auto value = inline_value ? *inline_value : argv[++i];
    if (value.empty()) {
      error = "--" + name + " needs a value, not an empty string";
      return std::nullopt;
    }
    out.values_[name] = std::move(value);
  }
  if (out.positional_.size() < accepted.min_positional) {
    error = "missing " + accepted.positional_name;
    return std::nullopt;
  }
  return out;
}

std::optional<args> args::parse_command(const std::vector<std::string>& argv, const syntax& accepted,
                                        std::string_view name, std::string_view usage, int& exit_status) {
  std::string problem;
  auto parsed = parse(argv, accepted, problem);
  if (!parsed) {
    exit_status = refuse(name, problem);
    return std::nullopt;
  }
  if (parsed->help()) {
    std::cout << usage;
    exit_status = exit_ok;
    return std::nullopt;
  }
  return parsed;
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
    error = "--" + name + " = " + quoted(text) + ": must be a whole number in [" + std::to_string(min) + ", " +
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
  error = "--" + name + " = " + quoted(it->second) + ": must be one of";
  for (std::size_t i = 0; i < choices.size(); ++i) error += (i == 0 ? " " : ", ") + choices[i];
  return std::nullopt;
}

std::optional<std::vector<std::string>> args::subset(const std::string& name, const std::vector<std::string>& choices,
                                                     std::string& error) const {
  auto it = values_.find(name);
  if (it == values_.end()) return choices;
  std::vector<bool> chosen(choices.size(), false);
  const std::string& list = it->second;
  for (std::size_t at = 0; at <= list.size();) {
    auto end = std::min(list.find(',', at), list.size());
    const std::string item = list.substr(at, end - at);
    auto known = std::find(choices.begin(), choices.end(), item);
    if (known == choices.end()) {
      error = "--" + name + " = " + quoted(list) + ": " + (item.empty() ? std::string("an empty item") : quoted(item)) +
              " is not one of";
      for (std::size_t i = 0; i < choices.size(); ++i) error += (i == 0 ? " " : ", ") + choices[i];
      return std::nullopt;
    }
    auto i = static_cast<std::size_t>(known - choices.begin());
    if (chosen[i]) {
      error = "--" + name + " = " + quoted(list) + ": " + quoted(item) + " is given twice";
      return std::nullopt;
    }
    chosen[i] = true;
    at = end + 1;
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (chosen[i]) out.push_back(choices[i]);
  }
  return out;
}

}  // namespace dix::tool
