#include "core/projection_digest.hpp"

#include <utility>
#include <variant>

#include "core/txn_header.hpp"  // decode_value

namespace dix {

result<void> add_projection_digest(store_snapshot& snapshot, const std::string& log, std::uint32_t table,
                                   const projection& fn, index_digest& into,
                                   const std::function<bool(const digest_entry&)>& each) {
  if (auto ok = snapshot.seek(table, {}); !ok) return ok;
  digest_entry e;
  e.log = log;
  e.table = table;
  for (;;) {
    auto next = snapshot.next();
    if (!next) return next.error();
    if (!*next) return {};
    const auto& record = **next;
    auto value = decode_value(record.value);
    if (!value) continue;  // record-corrupt: unindexable, as the tailer delivers it
    const record_info info{log, table, record.id, value->version, record.value.size()};
    projection_result projected;
    try {
      projected = fn(value->payload, info);
    } catch (...) {
      return error{errc::invalid_argument, "the projection of log " + log + " table " + std::to_string(table) + " threw"};
    }
    const auto* bytes = std::get_if<std::string>(&projected);
    if (bytes == nullptr) continue;  // unindexable: not an entry
    e.record_id.assign(record.id);
    e.version = value->version;
    e.hash = entry_hash(log, table, e.record_id, e.version, *bytes);
    into.add(e.hash);
    if (each && !each(e)) return {};
  }
}

}  // namespace dix
