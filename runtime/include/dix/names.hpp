// The name rules of formats.md §3 and §4.1 — log names (store_options::log_name, cursors) and
// backend ids (backend::id(), readiness slots) —, and how dix quotes bytes in its messages.
// Pure functions: thread-safe, never block.
#pragma once

#include <string>
#include <string_view>

namespace dix {

// Log names: 1…64 characters of [a-z0-9._-], the first one [a-z0-9].
bool is_valid_log_name(std::string_view name) noexcept;
// Backend ids: 1…64 characters of [A-Za-z0-9._-], not starting with '.'.
bool is_valid_backend_id(std::string_view id) noexcept;

// Renders bytes for diagnostics: printable ASCII as is, everything else as \xNN, quotes escaped.
std::string escape_bytes(std::string_view bytes);

}  // namespace dix
