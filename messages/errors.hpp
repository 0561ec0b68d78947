// The dix error category on CAF 0.17: the public part (make_error, to_errc, error_text,
// to_dix_error) is <dix/caf/error.hpp>; this header adds what only the runtime and the tests use.
#pragma once

#include <cstdint>
#include <string>

#include <caf/fwd.hpp>

#include <dix/caf/error.hpp>

namespace dix {

// The renderer registered for the "dix" category: "dix: <errc name>" plus " (<context>)" when
// the error carries one. Codes outside the enum render as "dix: unknown(<code>)".
std::string render_error(std::uint8_t code, const caf::message& context);

// Registers render_error for category "dix" with the two-argument add_error_category.
void add_dix_error_category(caf::actor_system_config& cfg);

}  // namespace dix
