#include "messages/errors.hpp"

#include <string_view>
#include <utility>

#include <caf/actor_system_config.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>

namespace dix {

namespace {

// The context as text: our own errors carry exactly one string; anything else (a context
// another sender attached) is rendered by CAF.
std::string context_text(const caf::message& context) {
  if (context.empty()) return {};
  if (context.match_elements<std::string>()) return context.get_as<std::string>(0);
  return to_string(context);
}

bool known_code(std::uint8_t code) noexcept { return code < errc_count; }

}  // namespace

caf::error make_error(errc code, std::string context) {
  if (code == errc::none) return caf::error{};
  auto value = static_cast<std::uint8_t>(code);
  if (context.empty()) return caf::error{value, caf_error_category};
  return caf::error{value, caf_error_category, caf::make_message(std::move(context))};
}

caf::error make_error(const dix::error& e) { return make_error(e.value(), e.message()); }

errc to_errc(const caf::error& e) noexcept {
  if (!e) return errc::none;
  if (e.category() != caf_error_category || !known_code(e.code())) return errc::backend_failed;
  return static_cast<errc>(e.code());
}

std::string error_text(const caf::error& e) {
  if (!e) return {};
  if (e.category() != caf_error_category) return to_string(e);
  return context_text(e.context());
}

dix::error to_dix_error(const caf::error& e) { return dix::error{to_errc(e), error_text(e)}; }

std::string render_error(std::uint8_t code, const caf::message& context) {
  std::string out = "dix: ";
  if (known_code(code)) {
    out += to_string(static_cast<errc>(code));
  } else {
    out += "unknown(";
    out += std::to_string(code);
    out += ')';
  }
  auto text = context_text(context);
  if (!text.empty()) {
    out += " (";
    out += text;
    out += ')';
  }
  return out;
}

void add_dix_error_category(caf::actor_system_config& cfg) {
  cfg.add_error_category(caf_error_category,
                         [](std::uint8_t code, caf::atom_value, const caf::message& context) {
                           return render_error(code, context);
                         });
}

}  // namespace dix
