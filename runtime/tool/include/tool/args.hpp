// A small command-line parser for `dix` subcommands and `dix bench` drivers, with one set of
// rules for all of them (docs/operations.md, "Arguments"):
//   * options are `--name VALUE` or `--name=VALUE`, flags are `--name`; each at most once;
//   * a value is never empty (an empty path would silently mean the current directory);
//   * anything else that starts with `-` is refused (`-records 5` is not `--records 5`);
//   * positional arguments only as many as the command takes;
//   * `--help` is always understood.
// Every failure is one message that names the argument (the callers refuse() with it: exit 2).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace dix::tool {

inline constexpr int exit_ok = 0;
inline constexpr int exit_usage = 2;

// What one command accepts.
struct syntax {
  std::set<std::string> options;  // take one value
  std::set<std::string> flags;    // take none
  // How many positional arguments the command takes, and what to call one in a message.
  std::size_t min_positional = 0;
  std::size_t max_positional = 0;
  std::string positional_name = "argument";
};

// A refusal of bad arguments, the one way every command and benchmark words it: prints the line
// "<name>: <problem> (<name> --help for usage)" to stderr and returns exit_usage, for the caller
// to exit with. `name` as parse_command takes it ("dix status").
int refuse(std::string_view name, std::string_view problem);

class args {
 public:
  // Parses `argv` by the rules above; nullopt with `error` set on the first argument that breaks
  // one. `--help` in an option's place stops parsing: help() is true and nothing else is checked.
  static std::optional<args> parse(const std::vector<std::string>& argv, const syntax& accepted, std::string& error);

  // parse() for the command `name` ("dix demo"): on --help prints `usage` to stdout and sets
  // `exit_status` to exit_ok; on a bad argument prints one line "<name>: <error>" to stderr and
  // sets it to exit_usage. Returns the arguments only when the command should run.
  static std::optional<args> parse_command(const std::vector<std::string>& argv, const syntax& accepted,
                                           std::string_view name, std::string_view usage, int& exit_status);

  bool help() const { return help_; }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string get(const std::string& name, const std::string& fallback = {}) const;
  // Parses an unsigned decimal in [min, max]; sets error and returns nullopt otherwise.
  std::optional<std::uint64_t> number(const std::string& name, std::uint64_t fallback, std::uint64_t min,
                                      std::uint64_t max, std::string& error) const;
  // The position of the value in `choices` (the fallback when absent); sets error and returns
  // nullopt for any other value.
  std::optional<std::size_t> choice(const std::string& name, const std::vector<std::string>& choices,
                                    std::size_t fallback, std::string& error) const;
  // A comma-separated list of `choices` ("a,c"), each at most once, in `choices`' order (every
  // choice when absent); sets error and returns nullopt for an unknown or repeated item or an
  // empty one.
  std::optional<std::vector<std::string>> subset(const std::string& name, const std::vector<std::string>& choices,
                                                 std::string& error) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
  bool help_ = false;
};

}  // namespace dix::tool
