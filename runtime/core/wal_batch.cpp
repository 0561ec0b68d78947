#include "core/wal_batch.hpp"

namespace dix {
namespace {

result<wal_transaction> corrupt(const raw_batch& raw, std::string what) {
  return {errc::log_corrupt,
          "transaction at sequence " + std::to_string(raw.sequence) + ": " + std::move(what)};
}

}  // namespace

std::string_view to_string(raw_kind k) noexcept {
  switch (k) {
    case raw_kind::log_data: return "log_data";
    case raw_kind::put: return "put";
    case raw_kind::del: return "delete";
    case raw_kind::single_delete: return "single_delete";
    case raw_kind::delete_range: return "delete_range";
    case raw_kind::merge: return "merge";
    case raw_kind::put_entity: return "put_entity";
    case raw_kind::blob_index: return "blob_index";
    case raw_kind::begin_prepare: return "begin_prepare";
    case raw_kind::end_prepare: return "end_prepare";
    case raw_kind::commit: return "commit";
    case raw_kind::commit_with_timestamp: return "commit_with_timestamp";
    case raw_kind::rollback: return "rollback";
    case raw_kind::noop: return "noop";
  }
  return "unknown";
}

std::string_view to_string(op_kind k) noexcept {
  switch (k) {
    case op_kind::put: return "put";
    case op_kind::del: return "del";
    case op_kind::delete_range: return "delete_range";
  }
  return "unknown";
}

bool has_unknown_family(const raw_batch& raw, const family_map& families) noexcept {
  for (const auto& r : raw.records) {
    if (r.kind != raw_kind::log_data && families.find(r.family) == families.end()) return true;
  }
  return false;
}

bool is_recovery_marker(const raw_batch& raw) noexcept {
  return raw.count == 0 && raw.records.empty();
}

result<wal_transaction> decode_transaction(const raw_batch& raw, const family_map& families) {
  if (raw.records.empty() || raw.records.front().kind != raw_kind::log_data) {
    return corrupt(raw, "first record is not the dix header (LogData)");
  }
  auto header = decode_header(raw.records.front().key);
  if (!header) return corrupt(raw, header.error().message());
  if (raw.count == 0) return corrupt(raw, "Count() is 0");
  if (header->op_count != raw.count) {
    return corrupt(raw, "header op_count " + std::to_string(header->op_count) +
                            " differs from Count() " + std::to_string(raw.count));
  }
  const bool system = (header->flags & header_flag::system) != 0;
  const bool reload = (header->flags & header_flag::reload) != 0;

  wal_transaction txn;
  txn.sequence = raw.sequence;
  txn.count = raw.count;
  txn.time = header->time;
  txn.flags = header->flags;
  txn.data_size = raw.data_size;
  txn.ops.reserve(raw.records.size() - 1);
  auto role = families.end();
  for (std::size_t i = 1; i < raw.records.size(); ++i) {
    const auto& r = raw.records[i];
    wal_op op;
    switch (r.kind) {
      case raw_kind::log_data: return corrupt(raw, "second LogData record");
      case raw_kind::put: op.kind = op_kind::put; break;
      case raw_kind::del: op.kind = op_kind::del; break;
      case raw_kind::delete_range:
        if (!reload) return corrupt(raw, "DeleteRange without the reload flag");
        op.kind = op_kind::delete_range;
        break;
      default:
        return corrupt(raw, std::string(to_string(r.kind)) + " record is never written by dix");
    }
    // Consecutive operations usually hit one family: look it up once per run.
    if (role == families.end() || role->first != r.family) role = families.find(r.family);
    if (role == families.end()) {
      return corrupt(raw, "operation on unknown column family id " + std::to_string(r.family));
    }
    switch (role->second.kind) {
      case family_kind::default_family: return corrupt(raw, "operation on the default column family");
      case family_kind::meta:
        if (!system) return corrupt(raw, "dix.meta written outside a system transaction");
        op.meta = true;
        break;
      case family_kind::table:
        if (system) return corrupt(raw, "system transaction touches table " +
                                            std::to_string(role->second.table));
        op.table = role->second.table;
        break;
    }
    op.key = r.key;
    op.value = r.value;
    txn.ops.push_back(op);
  }
  if (txn.ops.size() != raw.count) {
    return corrupt(raw, "holds " + std::to_string(txn.ops.size()) + " operations but Count() is " +
                            std::to_string(raw.count));
  }
  return txn;
}

}  // namespace dix
