#include "core/record_projection.hpp"

#include <utility>
#include <variant>

#include "core/txn_header.hpp"  // decode_value

namespace dix {

bool project_stored(const projection& fn, std::string_view log, std::uint32_t table, std::string_view id,
                    const std::optional<std::string_view>& stored, record_state& out) {
  out.projection.clear();
  out.reason.clear();
  if (!stored) {
    out.kind = state_kind::absent;
    out.version = 0;
    return true;
  }
  auto value = decode_value(*stored);
  if (!value) {
    out.kind = state_kind::unindexable;
    out.version = 0;
    out.reason = "record-corrupt";
    return true;
  }
  out.version = value->version;
  const record_info info{log, table, id, value->version, stored->size()};
  projection_result projected;
  try {
    projected = fn(value->payload, info);
  } catch (...) {
    return false;
  }
  if (auto* bytes = std::get_if<std::string>(&projected)) {
    out.kind = state_kind::record;
    out.projection = std::move(*bytes);
  } else {
    out.kind = state_kind::unindexable;
    out.reason = normalize_unindexable_reason(std::get<unindexable>(projected).reason);
  }
  return true;
}

}  // namespace dix
