// Checks of Prometheus text exposition output for the tests (decision 0021): a parser of our own
// that every test runs (each sample's metric has a TYPE line before it, labels are well formed
// with only the format's escapes, values are numbers), and `promtool check metrics` (Debian's
// prometheus package) where it is installed. Standard library only.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

namespace dix::test {

struct prom_sample {
  std::string name;
  std::map<std::string, std::string> labels;  // unescaped values
  double value = 0;
};

struct prom_parse {
  std::vector<prom_sample> samples;
  std::map<std::string, std::string> types;  // name → gauge, counter, …
  std::vector<std::string> problems;          // one line each, naming the line number

  // The value of the one sample of `name` whose labels include `want`; nullopt if none.
  std::optional<double> value(const std::string& name, const std::map<std::string, std::string>& want = {}) const {
    for (const auto& s : samples) {
      if (s.name != name) continue;
      bool all = true;
      for (const auto& [k, v] : want) {
        auto it = s.labels.find(k);
        if (it == s.labels.end() || it->second != v) all = false;
      }
      if (all) return s.value;
    }
    return std::nullopt;
  }
};

inline bool prom_name_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (!first && c >= '0' && c <= '9');
}

inline prom_parse parse_prometheus(const std::string& text) {
  prom_parse out;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  std::set<std::string> helped;
  auto problem = [&](const std::string& what) { out.problems.push_back("line " + std::to_string(number) + ": " + what + ": " + line); };
  if (!text.empty() && text.back() != '\n') out.problems.push_back("the text does not end with a line feed");
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    if (line.rfind("# HELP ", 0) == 0) {
      helped.insert(line.substr(7, line.find(' ', 7) - 7));
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream t(line.substr(7));
      std::string name, type;
      t >> name >> type;
      if (type != "gauge" && type != "counter" && type != "histogram" && type != "summary" && type != "untyped") problem("bad type");
      if (out.types.count(name) != 0) problem("a second TYPE line");
      out.types[name] = type;
      continue;
    }
    if (line[0] == '#') continue;
    std::size_t i = 0;
    while (i < line.size() && prom_name_char(line[i], i == 0)) ++i;
    prom_sample s;
    s.name = line.substr(0, i);
    if (s.name.empty()) {
      problem("no metric name");
      continue;
    }
    if (out.types.count(s.name) == 0) problem("sample of a metric without a TYPE line");
    if (helped.count(s.name) == 0) problem("sample of a metric without a HELP line");
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        std::size_t start = i;
        while (i < line.size() && prom_name_char(line[i], i == start) && line[i] != ':') ++i;
        std::string label = line.substr(start, i - start);
        if (label.empty() || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') {
          problem("bad label");
          break;
        }
        i += 2;
        std::string value;
        bool closed = false;
        while (i < line.size()) {
          char c = line[i++];
          if (c == '"') {
            closed = true;
            break;
          }
          if (c == '\\') {
            if (i >= line.size()) break;
            char e = line[i++];
            if (e == 'n') value.push_back('\n');
            else if (e == '\\' || e == '"') value.push_back(e);
            else problem("bad escape in a label value");
          } else {
            value.push_back(c);
          }
        }
        if (!closed) {
          problem("unterminated label value");
          break;
        }
        if (s.labels.count(label) != 0) problem("a label twice");
        s.labels[label] = value;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size() || line[i] != '}') {
        problem("labels not closed");
        continue;
      }
      ++i;
    }
    if (i >= line.size() || line[i] != ' ') {
      problem("no space before the value");
      continue;
    }
    std::string value = line.substr(i + 1);
    if (auto space = value.find(' '); space != std::string::npos) value = value.substr(0, space);  // a timestamp follows
    if (value == "NaN" || value == "+Inf" || value == "-Inf") {
      s.value = value == "NaN" ? 0 : value == "+Inf" ? 1e308 : -1e308;
    } else {
      char* end = nullptr;
      s.value = std::strtod(value.c_str(), &end);
      if (value.empty() || end != value.c_str() + value.size()) problem("value is not a number");
    }
    out.samples.push_back(std::move(s));
  }
  return out;
}

// The naming conventions of Prometheus (https://prometheus.io/docs/practices/naming/) that
// promtool does not check: a counter ends in _total and nothing else does; durations, times and
// sizes are in base units (seconds, bytes), so no name ends in _ms, _milliseconds,
// _nanoseconds, _time or _timestamp (a timestamp is _timestamp_seconds). One line per problem.
inline std::vector<std::string> metric_name_problems(const prom_parse& parsed) {
  std::vector<std::string> out;
  auto ends_with = [](const std::string& name, const std::string& suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  for (const auto& [name, type] : parsed.types) {
    if ((type == "counter") != ends_with(name, "_total")) out.push_back(name + ": a " + type + " whose name " + (type == "counter" ? "lacks" : "has") + " _total");
    for (const char* unit : {"_ms", "_milliseconds", "_nanoseconds", "_time", "_timestamp"}) {
      if (ends_with(name, unit)) out.push_back(name + ": not in a base unit (" + unit + ")");
    }
  }
  return out;
}

// `promtool check metrics` on `text`: nullopt when promtool is not installed; else its verdict,
// empty when it found nothing wrong, its output otherwise.
inline std::optional<std::string> promtool_problems(const std::string& text) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) return std::nullopt;
  temp_dir dir;
  const auto input = dir / "metrics.txt";
  const auto output = dir / "promtool.txt";
  std::ofstream(input) << text;
  const std::string command = "promtool check metrics < '" + input.string() + "' > '" + output.string() + "' 2>&1";
  const int rc = std::system(command.c_str());
  std::ifstream in(output);
  std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (rc == 0) return std::string();
  return said.empty() ? std::string("promtool exited ") + std::to_string(rc) : said;
}

}  // namespace dix::test
