// A small command-line parser for `dix` subcommands and `dix bench` drivers: --name value,
// --name=value and --flag, nothing else. Every failure is a clear message (the callers exit 2).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dix::tool {

class args {
 public:
  // `flags` take no value; `options` take one. Unknown names and missing values are errors.
  static std::optional<args> parse(const std::vector<std::string>& argv, const std::set<std::string>& options,
                                   const std::set<std::string>& flags, std::string& error);

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string get(const std::string& name, const std::string& fallback = {}) const;
  // Parses an unsigned decimal in [min, max]; sets error and returns nullopt otherwise.
  std::optional<std::uint64_t> number(const std::string& name, std::uint64_t fallback, std::uint64_t min,
                                      std::uint64_t max, std::string& error) const;
  // The position of the value in `choices` (the fallback when absent); sets error and returns
  // nullopt for any other value.
  std::optional<std::size_t> choice(const std::string& name, const std::vector<std::string>& choices,
                                    std::size_t fallback, std::string& error) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

}  // namespace dix::tool
