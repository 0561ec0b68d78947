#include "core/projection_digest.hpp"

#include <utility>
#include <variant>

#include "core/txn_header.hpp"  // decode_value

namespace dix {

projection_entries::projection_entries(store_snapshot& snapshot, std::string log, std::map<std::uint32_t, projection> tables,
                                       skip_filter skipped)
    : snapshot_(snapshot), tables_(std::move(tables)), table_(tables_.begin()), skipped_(std::move(skipped)) {
  e_.log = std::move(log);
  record_.log = e_.log;
  record_.state.kind = state_kind::record;
}

result<const digest_entry*> projection_entries::next() {
  while (table_ != tables_.end()) {
    if (!sought_) {
      if (auto ok = snapshot_.seek(table_->first, {}); !ok) return ok.error();
      sought_ = true;
    }
    auto next = snapshot_.next();
    if (!next) return next.error();
    if (!*next) {  // this table is done
      ++table_;
      sought_ = false;
      continue;
    }
    const auto& record = **next;
    auto value = decode_value(record.value);
    if (!value) continue;  // record-corrupt: unindexable, as the tailer delivers it
    const auto table = table_->first;
    const record_info info{e_.log, table, record.id, value->version, record.value.size()};
    projection_result projected;
    try {
      projected = table_->second(value->payload, info);
    } catch (...) {
      return error{errc::invalid_argument, "the projection of log " + e_.log + " table " + std::to_string(table) + " threw"};
    }
    const auto* bytes = std::get_if<std::string>(&projected);
    if (bytes == nullptr) continue;  // unindexable: not an entry
    if (skipped_) {
      record_.table = table;
      record_.record_id.assign(record.id);
      record_.state.version = value->version;
      record_.state.projection.assign(*bytes);
      if (skipped_(record_)) {
        ++skipped_count_;
        continue;
      }
    }
    e_.table = table;
    e_.record_id.assign(record.id);
    e_.version = value->version;
    e_.hash = entry_hash(e_.log, table, e_.record_id, e_.version, *bytes);
    return &e_;
  }
  return static_cast<const digest_entry*>(nullptr);
}

result<void> add_projection_digest(store_snapshot& snapshot, const std::string& log, std::uint32_t table,
                                   const projection& fn, index_digest& into,
                                   const std::function<bool(const digest_entry&)>& each) {
  projection_entries entries(snapshot, log, {{table, fn}});
  for (;;) {
    auto e = entries.next();
    if (!e) return e.error();
    if (*e == nullptr) return {};
    into.add((*e)->hash);
    if (each && !each(**e)) return {};
  }
}

}  // namespace dix
