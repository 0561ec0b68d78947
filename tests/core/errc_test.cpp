// Tests of dix::errc (api.md §1): stable values and names, the "dix" error category, the
// retryable set, and the result<T> / result<void> value-or-error types.
#include <catch2/catch.hpp>

#include <memory>
#include <set>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

#include <dix/errc.hpp>
#include <dix/result.hpp>

namespace {

using dix::errc;

// api.md §1's table, in value order: values never change, they travel as CAF codes.
constexpr std::string_view expected_names[] = {
    "none",           "invalid_argument", "store_format_mismatch", "segment_layout_mismatch",
    "segment_full",   "cursor_invalid",   "log_corrupt",           "log_retention",
    "log_missing",    "record_corrupt",   "index_lagging",         "unavailable",
    "rebuilding",     "timeout",          "cancelled",             "stopped",
    "backend_failed", "not_registered",   "already_registered",    "io_error",
    "message_invalid", "not_supported"};

errc code_at(std::size_t i) { return static_cast<errc>(static_cast<std::uint8_t>(i)); }

}  // namespace

TEST_CASE("errc: every value has its api.md name and number", "[core][errc]") {
  STATIC_REQUIRE(std::is_same_v<std::underlying_type_t<errc>, std::uint8_t>);
  REQUIRE(dix::errc_count == 22);
  REQUIRE(std::size(expected_names) == dix::errc_count);
  for (std::size_t i = 0; i < dix::errc_count; ++i) {
    CAPTURE(i);
    CHECK(dix::to_string(code_at(i)) == expected_names[i]);
  }
  CHECK(static_cast<int>(errc::cursor_invalid) == 5);
  CHECK(static_cast<int>(errc::log_retention) == 7);
  CHECK(static_cast<int>(errc::index_lagging) == 10);
  CHECK(static_cast<int>(errc::io_error) == 19);
  CHECK(static_cast<int>(errc::not_supported) == 21);
}

TEST_CASE("errc: a value outside the enum is named unknown", "[core][errc]") {
  CHECK(dix::to_string(code_at(22)) == "unknown");
  CHECK(dix::to_string(code_at(255)) == "unknown");
}

TEST_CASE("errc: the category is named dix and renders enumerator names", "[core][errc]") {
  const auto& category = dix::dix_category();
  CHECK(std::string(category.name()) == "dix");
  CHECK(&category == &dix::dix_category());
  for (std::size_t i = 0; i < dix::errc_count; ++i) {
    CAPTURE(i);
    CHECK(category.message(static_cast<int>(i)) == expected_names[i]);
  }
  CHECK(category.message(200) == "unknown");
}

TEST_CASE("errc: make_error_code carries the value and the dix category", "[core][errc]") {
  auto ec = dix::make_error_code(errc::log_retention);
  CHECK(ec.value() == 7);
  CHECK(&ec.category() == &dix::dix_category());
  CHECK(ec.message() == "log_retention");
  CHECK(std::string(ec.category().name()) == "dix");
  CHECK(ec);  // non-zero value: an error
  CHECK_FALSE(dix::make_error_code(errc::none));
}

TEST_CASE("errc: converts implicitly to std::error_code through is_error_code_enum",
          "[core][errc]") {
  STATIC_REQUIRE(std::is_error_code_enum<errc>::value);
  STATIC_REQUIRE(std::is_convertible_v<errc, std::error_code>);
  std::error_code ec = errc::timeout;
  CHECK(ec.value() == 13);
  CHECK(&ec.category() == &dix::dix_category());
  CHECK(ec == errc::timeout);
  CHECK(ec != errc::io_error);
  // Same number, other category: not equal.
  CHECK(ec != std::error_code(13, std::generic_category()));
  ec = errc::stopped;
  CHECK(ec.message() == "stopped");
}

TEST_CASE("errc: is_retryable is true exactly for index_lagging, rebuilding, timeout, io_error",
          "[core][errc]") {
  const std::set<errc> retryable{errc::index_lagging, errc::rebuilding, errc::timeout,
                                 errc::io_error};
  for (std::size_t i = 0; i < dix::errc_count; ++i) {
    CAPTURE(expected_names[i]);
    CHECK(dix::is_retryable(code_at(i)) == (retryable.count(code_at(i)) == 1));
  }
}

TEST_CASE("error: carries code, message and renders both", "[core][errc]") {
  dix::error e{errc::log_retention, "sequence 1 purged (oldest retained 201)"};
  CHECK(e.value() == errc::log_retention);
  CHECK(e.code() == errc::log_retention);
  CHECK(e.message() == "sequence 1 purged (oldest retained 201)");
  CHECK(e.to_string() == "log_retention: sequence 1 purged (oldest retained 201)");
  dix::error bare{errc::timeout};
  CHECK(bare.message().empty());
  CHECK(bare.to_string() == "timeout");
  CHECK(e == dix::error{errc::log_retention, "sequence 1 purged (oldest retained 201)"});
  CHECK_FALSE(e == dix::error{errc::log_retention, "other"});
  CHECK_FALSE(e == dix::error{errc::log_missing, "sequence 1 purged (oldest retained 201)"});
}

TEST_CASE("result: a value is present and accessible", "[core][errc]") {
  dix::result<int> r = 5;
  CHECK(r.has_value());
  CHECK(static_cast<bool>(r));
  CHECK(r.value() == 5);
  CHECK(*r == 5);
  r.value() = 6;
  CHECK(*r == 6);
  const dix::result<std::string> s = std::string("abc");
  CHECK(s.value() == "abc");
  CHECK(s->size() == 3);
  STATIC_REQUIRE_FALSE(std::is_convertible_v<dix::result<int>, bool>);  // explicit operator bool
}

TEST_CASE("result: an error is held and value() throws bad_result_access with it",
          "[core][errc]") {
  dix::result<int> r = dix::error{errc::timeout, "connect to remote"};
  CHECK_FALSE(r.has_value());
  CHECK_FALSE(r);
  CHECK(r.error().value() == errc::timeout);
  CHECK(r.error().message() == "connect to remote");
  bool thrown = false;
  try {
    (void)r.value();
  } catch (const dix::bad_result_access& e) {
    thrown = true;
    CHECK(e.error() == dix::error{errc::timeout, "connect to remote"});
    CHECK_THAT(std::string(e.what()), Catch::Matchers::Contains("connect to remote"));
  }
  CHECK(thrown);
  const auto& cr = r;
  CHECK_THROWS_AS(cr.value(), dix::bad_result_access);
  CHECK_THROWS_AS(std::move(r).value(), dix::bad_result_access);
  // bad_result_access is a logic_error.
  CHECK_THROWS_AS(cr.value(), std::logic_error);
}

// api.md §1: `class bad_result_access : public std::logic_error { // what() = the error's message`.
TEST_CASE("result: bad_result_access what() is the error's message as api.md §1 states",
          "[core][errc]") {
  dix::result<int> r = dix::error{errc::timeout, "connect to remote"};
  try {
    (void)r.value();
    FAIL("value() did not throw");
  } catch (const dix::bad_result_access& e) {
    CHECK(std::string(e.what()) == e.error().message());
  }
}

TEST_CASE("result: result(errc, message) equals result(error{errc, message})", "[core][errc]") {
  dix::result<std::string> a(errc::record_corrupt, "version 0");
  dix::result<std::string> b(dix::error{errc::record_corrupt, "version 0"});
  REQUIRE_FALSE(a);
  REQUIRE_FALSE(b);
  CHECK(a.error() == b.error());
  CHECK(a.error().value() == errc::record_corrupt);
  CHECK(a.error().message() == "version 0");
}

TEST_CASE("result: value() && moves a move-only value out", "[core][errc]") {
  dix::result<std::unique_ptr<int>> r = std::make_unique<int>(42);
  REQUIRE(r);
  auto p = std::move(r).value();
  REQUIRE(p != nullptr);
  CHECK(*p == 42);
}

TEST_CASE("result<void>: default is success, an error throws from value()", "[core][errc]") {
  dix::result<void> ok;
  CHECK(ok.has_value());
  CHECK(static_cast<bool>(ok));
  CHECK_NOTHROW(ok.value());

  dix::result<void> bad(errc::invalid_argument, "x = 0: must be in [1, 2]");
  CHECK_FALSE(bad.has_value());
  CHECK_FALSE(bad);
  CHECK(bad.error().value() == errc::invalid_argument);
  CHECK(bad.error().message() == "x = 0: must be in [1, 2]");
  bool thrown = false;
  try {
    bad.value();
  } catch (const dix::bad_result_access& e) {
    thrown = true;
    CHECK(e.error().value() == errc::invalid_argument);
    CHECK(e.error().message() == "x = 0: must be in [1, 2]");
  }
  CHECK(thrown);

  dix::result<void> from_error = dix::error{errc::stopped};
  CHECK_FALSE(from_error);
  CHECK(from_error.error().value() == errc::stopped);
  CHECK_THROWS_AS(from_error.value(), dix::bad_result_access);
}

TEST_CASE("result: ignore_result accepts a result without using it", "[core][errc]") {
  auto make = []() -> dix::result<int> { return dix::error{errc::cancelled}; };
  dix::ignore_result(make(), "the test only checks that this compiles and does not throw");
  CHECK_NOTHROW(dix::ignore_result(dix::result<void>{}, "success"));
}
