#include "core/tailer_core.hpp"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/txn_header.hpp"

namespace dix {
namespace {

// `e` already names its log (log_merge prefixes it) when `log` is empty.
tailer_fault fault_from(const error& e, const std::string& log) {
  tailer_fault f;
  f.text = log.empty() ? e.message() : "log " + log + ": " + e.message();
  switch (e.value()) {
    case errc::log_retention: f.reason = readiness_reason::log_retention; break;
    case errc::log_corrupt: f.reason = readiness_reason::log_corrupt; break;
    case errc::log_missing: f.reason = readiness_reason::log_missing; break;
    default: f.transient = true; break;  // the store is closed or unreadable: retry later
  }
  return f;
}

tailer_fault suspect(readiness_reason reason, std::string text) {
  return tailer_fault{false, reason, std::move(text)};
}

tailer_fault transient(std::string text) { return tailer_fault{true, readiness_reason::none, std::move(text)}; }

// Identity of a key across logs and tables: log index, table, record id.
std::string key_of(std::size_t log, std::uint32_t table, std::string_view id) {
  std::string k;
  k.reserve(5 + id.size());
  k.push_back(static_cast<char>(log));
  for (int shift = 0; shift < 32; shift += 8) k.push_back(static_cast<char>((table >> shift) & 0xFF));
  k.append(id);
  return k;
}

constexpr std::size_t check_every = 16;  // time-budget checks: every 16 operations / keys

}  // namespace

tailer_core::tailer_core(std::vector<tailer_log> logs, std::map<table_ref, projection> projections)
    : projections_(std::move(projections)) {
  for (auto& l : logs) {
    log_state s;
    s.port = l;
    s.name = l.source->log_name();
    s.identity = l.source->identity();
    logs_.push_back(std::move(s));
  }
}

bool tailer_core::projected(const std::string& log, std::uint32_t table) const {
  return projections_.count(table_ref{log, table}) != 0;
}

install_outcome tailer_core::install(const cursor& c) {
  install_outcome out;
  installed_ = false;
  carried_.clear();
  through_.reset();
  std::set<std::string> named, ours;
  for (const auto& p : c.logs()) named.insert(p.log);
  for (const auto& l : logs_) ours.insert(l.name);
  if (named != ours) {
    out.fault = suspect(readiness_reason::registration_changed,
                        "the cursor names other logs than the registration reads");
    return out;
  }
  for (auto& l : logs_) {
    const auto* entry = c.find(l.name);
    if (entry->identity != l.identity) {
      out.fault = suspect(readiness_reason::log_missing,
                          "log " + l.name + " has identity " + l.identity + ", the cursor names " + entry->identity);
      return out;
    }
  }
  for (auto& l : logs_) {
    const auto* entry = c.find(l.name);
    auto anchor = l.port.source->open(entry->sequence, entry->time);
    if (!anchor) {
      out.fault = fault_from(anchor.error(), l.name);
      return out;
    }
    l.read_end = anchor->end_sequence();
    l.through = *entry;
    out.anchor_ends.push_back(l.read_end);
  }
  std::vector<log_source*> sources;
  for (auto& l : logs_) sources.push_back(l.port.source);
  merge_ = std::make_unique<log_merge>(std::move(sources));  // no look-ahead survives a re-install
  through_ = c;
  installed_ = true;
  out.installed = c;
  return out;
}

install_outcome tailer_core::install_from_start() {
  install_outcome out;
  std::vector<log_position> start;
  for (auto& l : logs_) {
    auto first = l.port.source->open(1, 0);
    if (!first) {
      out.fault = fault_from(first.error(), l.name);
      return out;
    }
    for (const auto& o : first->ops) {
      if (!o.meta && projected(l.name, o.table)) {
        out.fault = suspect(readiness_reason::cursor_missing,
                            "log " + l.name + " starts with a transaction on a projected table");
        return out;
      }
    }
    start.push_back(log_position{l.name, l.identity, first->sequence, first->time});
  }
  auto c = cursor::make(std::move(start));
  if (!c) {
    out.fault = suspect(readiness_reason::cursor_missing, c.error().message());
    return out;
  }
  return install(*c);
}

std::optional<tailer_fault> tailer_core::read_next(std::optional<open_txn>& out, std::uint64_t& bytes_read) {
  auto next = merge_->next();
  if (!next) return fault_from(next.error(), {});
  if (!*next) {
    all_caught_up_ = true;
    return std::nullopt;
  }
  auto& l = logs_[(*next)->source];
  bytes_read += (*next)->txn.data_size;
  l.read_end = (*next)->txn.end_sequence();
  out = open_txn{(*next)->source, std::make_shared<const wal_transaction>(std::move((*next)->txn)), 0};
  return std::nullopt;
}

pull_outcome tailer_core::pull(const runner_options& budget, epoch_t epoch, const clock& time) {
  pull_outcome out;
  auto& chunk = out.chunk;
  if (!installed_) {
    out.fault = transient("tailer pulled before a cursor was installed");
    return out;
  }
  const auto start = time.steady_now();
  auto spent = [&] { return time.steady_now() - start >= budget.max_milliseconds_per_turn; };
  all_caught_up_ = false;

  // ---- collection (identities only, §4.2) ----
  struct collected {
    std::size_t txn;  // index into carried_
    std::size_t op;
    std::ptrdiff_t key = -1;  // index into keys; -1: not projected (still advances `through`)
  };
  struct key_info {
    std::size_t log;
    std::uint32_t table;
    std::string_view id;
    std::size_t first_op;
    index_time_t last_version = 0;
  };
  std::vector<collected> ops;
  std::vector<key_info> keys;
  std::unordered_map<std::string, std::size_t> key_index;
  std::uint64_t turn_bytes = 0;
  std::size_t turn_txns = 0, since_check = 0;
  bool stop = false;
  for (std::size_t ti = 0; !stop; ++ti) {
    if (ti == carried_.size()) {
      // Between complete transactions only: the turn's transaction and byte budgets.
      if (turn_txns >= budget.max_transactions_per_turn || turn_bytes >= budget.max_bytes_per_turn) break;
      std::optional<open_txn> next;
      if (auto f = read_next(next, chunk.bytes_read)) {
        out.fault = std::move(f);
        installed_ = false;
        return out;
      }
      if (!next) break;  // the end of every log
      ++chunk.transactions_read;
      const auto& t = *next->txn;
      const auto& log_name = logs_[next->log].name;
      if (t.has_flag(header_flag::reload) && !t.has_flag(header_flag::system)) {
        for (const auto& o : t.ops) {
          if (!o.meta && projected(log_name, o.table)) {
            out.fault = suspect(readiness_reason::reload, "log " + log_name + ": a reload transaction at sequence " +
                                                              std::to_string(t.sequence) + " replaced table " +
                                                              std::to_string(o.table));
            installed_ = false;
            return out;
          }
        }
      }
      carried_.push_back(std::move(*next));
    }
    const auto& work = carried_[ti];
    const auto& t = *work.txn;
    const auto& log_name = logs_[work.log].name;
    ++turn_txns;
    turn_bytes += t.data_size;
    for (std::size_t op = work.done_ops; op < t.ops.size(); ++op) {
      const auto& o = t.ops[op];
      collected c{ti, op, -1};
      bool new_key = false;
      if (!o.meta && o.kind != op_kind::delete_range && projected(log_name, o.table)) {
        auto [it, inserted] = key_index.emplace(key_of(work.log, o.table, o.key), keys.size());
        if (inserted) {
          keys.push_back(key_info{work.log, o.table, o.key, ops.size(), t.time});
          new_key = true;
        }
        keys[it->second].last_version = t.time;
        c.key = static_cast<std::ptrdiff_t>(it->second);
      }
      ops.push_back(c);
      // Both bounds may cut a transaction (§4.2).
      if (new_key && keys.size() >= budget.max_chunk_records) stop = true;
      if (++since_check == check_every) {
        since_check = 0;
        if (spent()) stop = true;
      }
      if (stop) break;
    }
  }

  // ---- resolution (§4.3): each distinct key once, in first-occurrence order ----
  std::vector<record_entry> records;
  records.reserve(keys.size());
  std::uint64_t estimate = 0;
  std::set<std::size_t> logs_read;
  constexpr std::size_t read_group = 16;
  std::size_t group_begin = 0, group_end = 0;
  std::vector<std::optional<std::string>> group_values;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (!records.empty() && estimate >= budget.max_chunk_bytes) break;
    if (k > 0 && k % check_every == 0 && spent()) break;
    const auto& key = keys[k];
    auto& l = logs_[key.log];
    if (k >= group_end) {
      // Read this key and up to 15 following keys of the same log and table in one group, in
      // first-occurrence order (§4.3); a group read after the chunk closes is simply unused.
      group_begin = k;
      group_end = k + 1;
      while (group_end < keys.size() && group_end - k < read_group && keys[group_end].log == key.log &&
             keys[group_end].table == key.table) {
        ++group_end;
      }
      std::vector<std::string_view> ids;
      for (auto g = k; g < group_end; ++g) ids.push_back(keys[g].id);
      auto group = l.port.store->read_many(key.table, ids);
      ++chunk.primary_reads;
      logs_read.insert(key.log);
      if (!group) {
        out.fault = fault_from(group.error(), l.name);
        out.fault->transient = true;  // a failed primary read is never the log's fault
        installed_ = false;
        return out;
      }
      group_values = std::move(*group);
    }
    auto& stored = group_values[k - group_begin];
    record_entry e;
    e.log = l.name;
    e.table = key.table;
    e.record_id = std::string(key.id);
    e.log_version = key.last_version;
    std::size_t stored_size = 0;
    if (!stored) {
      e.state.kind = state_kind::absent;
    } else {
      stored_size = stored->size();
      auto value = decode_value(*stored);
      if (!value) {
        e.state.kind = state_kind::unindexable;
        e.state.reason = "record-corrupt";
        ++chunk.unindexable;
      } else {
        e.state.version = value->version;
        const auto& fn = projections_.at(table_ref{l.name, key.table});
        record_info info{l.name, key.table, key.id, value->version, stored_size};
        projection_result projected_value;
        try {
          projected_value = fn(value->payload, info);
        } catch (...) {
          out.fault = suspect(readiness_reason::runner_failed,
                              "the projection of log " + l.name + " table " + std::to_string(key.table) + " threw");
          installed_ = false;
          return out;
        }
        if (auto* bytes = std::get_if<std::string>(&projected_value)) {
          e.state.kind = state_kind::record;
          e.state.projection = std::move(*bytes);
        } else {
          e.state.kind = state_kind::unindexable;
          e.state.reason = normalize_unindexable_reason(std::get<unindexable>(projected_value).reason);
          ++chunk.unindexable;
        }
      }
    }
    estimate += key.id.size() + stored_size + e.state.projection.size();
    records.push_back(std::move(e));
  }

  // ---- the chunk: the longest prefix of collected operations whose keys are resolved (§4.5) ----
  const std::size_t chunk_ops = records.size() == keys.size() ? ops.size() : keys[records.size()].first_op;
  auto b = std::make_shared<batch>();
  b->epoch = epoch;
  b->bytes = estimate;
  std::vector<std::size_t> consumed(carried_.size(), 0);
  for (std::size_t i = 0; i < carried_.size(); ++i) consumed[i] = carried_[i].done_ops;
  for (std::size_t i = 0; i < chunk_ops; ++i) {
    const auto& c = ops[i];
    consumed[c.txn] = c.op + 1;
    const auto& work = carried_[c.txn];
    logs_read.insert(work.log);
    if (c.key < 0) continue;
    if (b->transactions.empty() || b->transactions.back().sequence != work.txn->sequence ||
        b->transactions.back().log != logs_[work.log].name) {
      b->transactions.push_back(log_transaction{logs_[work.log].name, work.txn->sequence, work.txn->time, {}});
    }
    b->transactions.back().mutations.push_back(mutation{static_cast<std::uint32_t>(c.key), work.txn->time});
  }
  b->records = std::move(records);

  // Complete transactions advance `through`; a cut one stays at the front with its progress.
  bool advanced = false;
  std::size_t complete = 0;
  while (complete < carried_.size() && consumed[complete] == carried_[complete].txn->ops.size()) {
    auto& work = carried_[complete];
    auto& l = logs_[work.log];
    l.through.sequence = work.txn->sequence;
    l.through.time = work.txn->time;
    advanced = true;
    ++complete;
  }
  if (complete < carried_.size()) carried_[complete].done_ops = consumed[complete];
  carried_.erase(carried_.begin(), carried_.begin() + static_cast<std::ptrdiff_t>(complete));
  chunk.cut_open = !carried_.empty() && carried_.front().done_ops > 0;

  if (advanced) {
    std::vector<log_position> entries;
    for (const auto& l : logs_) entries.push_back(l.through);
    auto made = cursor::make(std::move(entries));
    if (!made) {
      out.fault = suspect(readiness_reason::log_corrupt, "cannot form a cursor: " + made.error().message());
      installed_ = false;
      return out;
    }
    through_ = std::move(*made);
  }
  const bool deliver = advanced || !b->records.empty();
  if (deliver) b->through = through_;

  // ---- progress and the sync before delivery (§4.8) ----
  for (std::size_t i = 0; i < logs_.size(); ++i) {
    auto& l = logs_[i];
    auto latest = l.port.store->latest_sequence();
    if (!latest) {
      out.fault = fault_from(latest.error(), l.name);
      out.fault->transient = true;
      installed_ = false;
      return out;
    }
    if (deliver && logs_read.count(i) != 0 && l.port.store->synced_sequence() < *latest) {
      auto synced = l.port.store->sync_wal();
      if (!synced) {
        out.fault = transient("log " + l.name + ": " + synced.error().message());
        installed_ = false;
        return out;
      }
      ++chunk.wal_syncs;
    }
    chunk.logs.push_back(log_progress{l.name, l.read_end, *latest});
    chunk.log_reopens += l.port.source->reopens();
  }
  chunk.end_of_log = carried_.empty() && all_caught_up_;
  if (deliver) chunk.delivery = std::move(b);
  return out;
}

}  // namespace dix
