#include "messages/errors.hpp"

#include <string_view>
#include <utility>

#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/sec.hpp>
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

// CAF's own errors a dix caller can receive (a request to a runtime actor, a backend proxy or an
// index node; issue 29), each as the errc whose retry advice fits it.
errc of_sec(caf::sec s) noexcept {
  switch (s) {
    case caf::sec::request_timeout:
    case caf::sec::connection_timeout:
      return errc::timeout;  // a deadline passed: retry
    case caf::sec::request_receiver_down:
    case caf::sec::cannot_forward_to_invalid_actor:
      return errc::stopped;  // the actor asked is gone (a stopped runtime, an ended index node)
    case caf::sec::unexpected_message:
    case caf::sec::unexpected_response:
    case caf::sec::unexpected_actor_messaging_interface:
    case caf::sec::unknown_type:
    case caf::sec::incompatible_versions:
    case caf::sec::incompatible_application_ids:
    case caf::sec::malformed_basp_message:
    case caf::sec::serializing_basp_payload_failed:
      return errc::message_invalid;  // a message the receiver does not speak
    case caf::sec::cannot_connect_to_node:
    case caf::sec::no_route_to_receiving_node:
    case caf::sec::disconnect_during_handshake:
    case caf::sec::remote_lookup_failed:
    case caf::sec::no_actor_published_at_port:
    case caf::sec::remote_linking_failed:
      return errc::unavailable;  // a node that cannot be reached, as remote_query_client says
    case caf::sec::network_syscall_failed:
    case caf::sec::socket_invalid:
    case caf::sec::socket_disconnected:
    case caf::sec::socket_operation_failed:
    case caf::sec::unavailable_or_would_block:
    case caf::sec::cannot_open_port:
    case caf::sec::cannot_open_file:
      return errc::io_error;  // a system call failed: transient
    case caf::sec::invalid_argument:
      return errc::invalid_argument;
    case caf::sec::feature_disabled:
      return errc::not_supported;
    default:
      return errc::backend_failed;  // an internal failure (runtime_error, bad_function_call, …)
  }
}

// An actor's exit reason delivered as an error (a linked or monitored actor that ended).
errc of_exit(caf::exit_reason r) noexcept {
  switch (r) {
    case caf::exit_reason::normal:
    case caf::exit_reason::user_shutdown:
    case caf::exit_reason::kill:
      return errc::stopped;
    case caf::exit_reason::remote_link_unreachable:
      return errc::unavailable;
    default:
      return errc::backend_failed;  // unhandled_exception, out_of_workers, unreachable, unknown
  }
}

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
  if (e.category() == caf::atom("system")) return of_sec(static_cast<caf::sec>(e.code()));
  if (e.category() == caf::atom("exit")) return of_exit(static_cast<caf::exit_reason>(e.code()));
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
