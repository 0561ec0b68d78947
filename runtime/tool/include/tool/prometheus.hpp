// The Prometheus text exposition format (version 0.0.4), standard library only (decision 0021):
// metric families with their HELP and TYPE lines, samples with labels, label values and help
// text escaped as the format asks (label values: backslash, double quote, line feed, and bytes
// that are not UTF-8; help text: backslash, line feed). `dix status --prometheus` and `dix serve --metrics-listen` write with it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dix::tool {

enum class metric_type { gauge, counter };

using metric_labels = std::vector<std::pair<std::string, std::string>>;  // name, value

// Collects samples grouped by family in the order the families were first added; a family's
// name, help and type are those of its first sample. Names must match [a-zA-Z_:][a-zA-Z0-9_:]*
// and label names [a-zA-Z_][a-zA-Z0-9_]* (asserted: they are the program's own constants).
class metrics_text {
 public:
  void add(std::string_view name, metric_type type, std::string_view help, metric_labels labels, double value);
  std::size_t families() const noexcept { return families_.size(); }
  // The exposition: per family "# HELP", "# TYPE", then its samples, one line each, "\n" ended.
  std::string str() const;

 private:
  struct family {
    std::string name, help;
    metric_type type;
    std::vector<std::pair<metric_labels, double>> samples;
  };
  std::vector<family> families_;
};

// Backslash, double quote and line feed escaped; a byte that is not part of a well-formed UTF-8
// sequence (a corrupt id in a segment) becomes the four characters \xNN, so the exposition is
// always valid UTF-8 and distinct bytes stay distinct values.
std::string escape_label_value(std::string_view value);
// The length of the well-formed UTF-8 sequence that starts at text[at] (1 to 4), 0 when the
// bytes there are not one (overlong forms, surrogates and code points above U+10FFFF included).
std::size_t utf8_sequence_length(std::string_view text, std::size_t at);
std::string escape_help(std::string_view text);
// Integral values below 2^53 as integers, others shortest round-trip ("NaN", "+Inf", "-Inf").
std::string format_value(double value);
bool valid_metric_name(std::string_view name);
bool valid_label_name(std::string_view name);

}  // namespace dix::tool
