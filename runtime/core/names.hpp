// The name rules are public API (<dix/names.hpp>, implemented in core/names.cpp); internal code
// may include either header.
#pragma once

#include <string_view>

#include <dix/names.hpp>
#include <dix/result.hpp>

namespace dix {

// The one answer to a backend id outside the rules: invalid_argument naming the id and the rule.
// `context` (e.g. "wait_for_coverage"), when given, prefixes the message.
result<void> check_backend_id(std::string_view id, std::string_view context = {});

}  // namespace dix
