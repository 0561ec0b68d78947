#include <dix/errc.hpp>
#include <dix/result.hpp>

#include <array>
#include <string>

namespace dix {
namespace {

constexpr std::array<std::string_view, errc_count> names{
    "none",           "invalid_argument", "store_format_mismatch", "segment_layout_mismatch",
    "segment_full",   "cursor_invalid",   "log_corrupt",           "log_retention",
    "log_missing",    "record_corrupt",   "index_lagging",         "unavailable",
    "rebuilding",     "timeout",          "cancelled",             "stopped",
    "backend_failed", "not_registered",   "already_registered",    "io_error",
    "message_invalid", "not_supported"};

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "dix"; }
  std::string message(int value) const override {
    return std::string(to_string(static_cast<errc>(value)));
  }
};

}  // namespace

const std::error_category& dix_category() noexcept {
  static const category instance;
  return instance;
}

std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), dix_category()};
}

bool is_retryable(errc e) noexcept {
  return e == errc::index_lagging || e == errc::rebuilding || e == errc::timeout ||
         e == errc::io_error;
}

std::string_view to_string(errc e) noexcept {
  auto index = static_cast<std::size_t>(e);
  return index < names.size() ? names[index] : std::string_view{"unknown"};
}

std::string error::to_string() const {
  std::string text(dix::to_string(code_));
  if (!message_.empty()) {
    text += ": ";
    text += message_;
  }
  return text;
}

}  // namespace dix
