// Minimal JSON text helpers for the CLI and benchmark reports (standard library only).
#pragma once

#include <string>
#include <string_view>

namespace dix::tool {

// A quoted JSON string; control characters and bytes ≥ 0x80 become \u00XX (lossless for ASCII,
// and always valid JSON whatever the bytes).
std::string json_string(std::string_view bytes);

}  // namespace dix::tool
