// dix::errc on CAF 0.17 (api.md §1): a dix error travels as caf::error{code, category "dix",
// context}, where code is the errc value (values never change, so they survive the wire) and
// the context is the error's message text, when there is one.
//
//   caf::error e = dix::errc::log_retention;              // implicit (make_error found by ADL)
//   caf::error f = dix::make_error(dix::errc::io_error, "SyncWAL: disk full");
//   dix::errc c = dix::to_errc(f);                       // io_error; foreign → backend_failed
//
// dix::configure(cfg) (<dix/caf.hpp>) registers the renderer, so sys.render(e) prints
// "dix: io_error (SyncWAL: disk full)" instead of "error(19, dix, ...)".
#pragma once

#include <string>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>

#include <dix/errc.hpp>
#include <dix/result.hpp>

namespace dix {

// The category atom of every dix error in CAF.
inline constexpr caf::atom_value caf_error_category = caf::atom("dix");

// errc::none gives the empty caf::error (CAF's "no error"); any other code gives
// {code, "dix", context} with the context stored as one std::string, omitted when empty.
// Also CAF's conversion hook: with the default argument, caf::error's converting constructor
// and its operator== accept a dix::errc directly.
caf::error make_error(errc code, std::string context = {});

// Same code and message as a dix::error.
caf::error make_error(const dix::error& e);

// The errc of `e`: none for the empty error; the code for category "dix"; for CAF's own errors
// the errc whose retry advice fits (category "system", caf::sec): request_timeout and
// connection_timeout → timeout (retryable); request_receiver_down, cannot_forward_to_invalid_actor
// → stopped; unexpected_message/_response, unknown_type, incompatible_versions and the other
// malformed-message codes → message_invalid; cannot_connect_to_node, no_route_to_receiving_node,
// remote_lookup_failed and the other unreachable-node codes → unavailable; socket and system-call
// failures → io_error (retryable); invalid_argument → invalid_argument; feature_disabled →
// not_supported. Exit reasons (category "exit"): normal, user_shutdown, kill → stopped;
// remote_link_unreachable → unavailable. Anything else — another sec or exit reason, another
// category (pec, a peer's own codes), a dix code this build does not know (a newer peer) —
// backend_failed.
errc to_errc(const caf::error& e) noexcept;

// The context text of a dix error (empty when none); for a foreign error, CAF's to_string(e).
std::string error_text(const caf::error& e);

// to_errc and error_text together.
dix::error to_dix_error(const caf::error& e);

}  // namespace dix
