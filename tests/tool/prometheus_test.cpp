// tool/prometheus: the text exposition writer, read back by the tests' own parser and, where it
// is installed, by promtool.
#include <catch2/catch.hpp>

#include <limits>

#include "support/prom_text.hpp"
#include "tool/prometheus.hpp"

using namespace dix;
using tool::metric_type;

TEST_CASE("prometheus text: families keep their order, each with one HELP and one TYPE line before its samples", "[core][prometheus]") {
  tool::metrics_text t;
  t.add("dix_lag_seconds", metric_type::gauge, "The lag", {{"index", "a"}}, 1.5);
  t.add("dix_delivered_batches_total", metric_type::counter, "Batches", {{"index", "a"}}, 7);
  t.add("dix_lag_seconds", metric_type::gauge, "ignored: the first help wins", {{"index", "b"}}, 0);
  CHECK(t.families() == 2);
  CHECK(t.str() ==
        "# HELP dix_lag_seconds The lag\n"
        "# TYPE dix_lag_seconds gauge\n"
        "dix_lag_seconds{index=\"a\"} 1.5\n"
        "dix_lag_seconds{index=\"b\"} 0\n"
        "# HELP dix_delivered_batches_total Batches\n"
        "# TYPE dix_delivered_batches_total counter\n"
        "dix_delivered_batches_total{index=\"a\"} 7\n");
  auto parsed = test::parse_prometheus(t.str());
  CHECK(parsed.problems.empty());
  CHECK(parsed.samples.size() == 3);
  CHECK(parsed.value("dix_lag_seconds", {{"index", "a"}}) == 1.5);
}

TEST_CASE("prometheus text: label values escape backslash, double quote and line feed, help text backslash and line feed", "[core][prometheus]") {
  CHECK(tool::escape_label_value("a\\b\"c\nd") == "a\\\\b\\\"c\\nd");
  CHECK(tool::escape_help("x\\y\nz \"q\"") == "x\\\\y\\nz \"q\"");
  tool::metrics_text t;
  const std::string odd = "we\"ird\\id\nname";
  t.add("dix_owner", metric_type::gauge, "help with a \\ and a\nline feed", {{"index", odd}, {"log", "main"}}, 1);
  const auto text = t.str();
  auto parsed = test::parse_prometheus(text);
  INFO(text);
  CHECK(parsed.problems.empty());
  REQUIRE(parsed.samples.size() == 1);
  CHECK(parsed.samples[0].labels.at("index") == odd);  // read back exactly
  CHECK(parsed.samples[0].labels.at("log") == "main");
  if (auto verdict = test::promtool_problems(text)) {
    CHECK(*verdict == "");
  } else {
    WARN("promtool is not installed (Debian package prometheus): the promtool check is skipped");
  }
}

TEST_CASE("prometheus text: values are integers while exact, else shortest round trip, and the special values", "[core][prometheus]") {
  CHECK(tool::format_value(0) == "0");
  CHECK(tool::format_value(18446744073709551615.0) == "1.8446744073709552e+19");
  CHECK(tool::format_value(4096) == "4096");
  CHECK(tool::format_value(0.25) == "0.25");
  CHECK(tool::format_value(0.53) == "0.53");  // not 0.53000000000000003
  CHECK(tool::format_value(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(tool::format_value(-std::numeric_limits<double>::infinity()) == "-Inf");
  CHECK(tool::format_value(std::numeric_limits<double>::quiet_NaN()) == "NaN");
  CHECK(tool::valid_metric_name("dix_lag_seconds"));
  CHECK_FALSE(tool::valid_metric_name("9lag"));
  CHECK_FALSE(tool::valid_label_name("__reserved"));
  CHECK_FALSE(tool::valid_label_name("a:b"));
}

TEST_CASE("prometheus text: the tests' parser rejects what the format forbids", "[core][prometheus]") {
  CHECK_FALSE(test::parse_prometheus("dix_x 1\n").problems.empty());  // no TYPE
  CHECK_FALSE(test::parse_prometheus("# HELP dix_x h\n# TYPE dix_x gauge\ndix_x{a=\"1} 1\n").problems.empty());
  CHECK_FALSE(test::parse_prometheus("# HELP dix_x h\n# TYPE dix_x gauge\ndix_x{a=\"\\q\"} 1\n").problems.empty());
  CHECK_FALSE(test::parse_prometheus("# HELP dix_x h\n# TYPE dix_x gauge\ndix_x one\n").problems.empty());
  CHECK(test::parse_prometheus("# HELP dix_x h\n# TYPE dix_x gauge\ndix_x{a=\"1\",b=\"2\"} 1e3\n").problems.empty());
}

TEST_CASE("prometheus text: the bytes of a label value that are not UTF-8 become the four characters backslash x N N, and well-formed UTF-8 passes unchanged", "[core][prometheus]") {
  // A corrupt id byte from a segment (0x8b), and the ill-formed sequences the UTF-8 rules name.
  CHECK(tool::escape_label_value("full\x8b" "ext") == "full\\\\x8bext");
  CHECK(tool::escape_label_value("\xC0\xAF") == "\\\\xc0\\\\xaf");              // overlong '/'
  CHECK(tool::escape_label_value("\xED\xA0\x80") == "\\\\xed\\\\xa0\\\\x80");  // a surrogate
  CHECK(tool::escape_label_value("\xF4\x90\x80\x80") == "\\\\xf4\\\\x90\\\\x80\\\\x80");  // above U+10FFFF
  CHECK(tool::escape_label_value("a\xE2\x82") == "a\\\\xe2\\\\x82");             // cut short
  CHECK(tool::escape_label_value("\xFF\"") == "\\\\xff\\\"");
  const std::string fine = "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xED\x9F\xBF \xF4\x8F\xBF\xBF";  // é € 😀 U+D7FF U+10FFFF
  CHECK(tool::escape_label_value(fine) == fine);

  tool::metrics_text t;
  t.add("dix_owner", metric_type::gauge, "h", {{"index", "full\x8b" "ext"}}, 1);
  t.add("dix_owner", metric_type::gauge, "h", {{"index", "full\x8c" "ext"}}, 1);
  const auto text = t.str();
  INFO(text);
  for (std::size_t i = 0; i < text.size();) {
    const auto length = tool::utf8_sequence_length(text, i);
    REQUIRE(length > 0);
    i += length;
  }
  auto parsed = test::parse_prometheus(text);
  CHECK(parsed.problems.empty());
  REQUIRE(parsed.samples.size() == 2);
  CHECK(parsed.samples[0].labels.at("index") == "full\\x8bext");  // distinct bytes stay distinct series
  CHECK(parsed.samples[1].labels.at("index") == "full\\x8cext");
  if (auto verdict = test::promtool_problems(text)) CHECK(*verdict == "");
}
