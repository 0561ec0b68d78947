#include "core/tailer_core.hpp"

#include <algorithm>
#include <cassert>
#include <functional>
#include <set>
#include <string_view>

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

// Hash of a key's identity (log index, table, record id), for the turn's key table.
std::uint64_t key_hash(std::size_t log, std::uint32_t table, std::string_view id) {
  std::uint64_t h = std::hash<std::string_view>{}(id);
  h ^= ((static_cast<std::uint64_t>(table) << 8) ^ static_cast<std::uint64_t>(log)) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return h;
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
    for (const auto& [ref, fn] : projections_) {
      if (ref.log == s.name) s.projected.emplace_back(ref.table, &fn);  // map order: by table
    }
    logs_.push_back(std::move(s));
  }
}

const projection* tailer_core::projection_of(std::size_t log, std::uint32_t table) const {
  const auto& tables = logs_[log].projected;
  auto it = std::lower_bound(tables.begin(), tables.end(), table,
                             [](const auto& entry, std::uint32_t t) { return entry.first < t; });
  return it != tables.end() && it->first == table ? it->second : nullptr;
}

install_outcome tailer_core::install(const cursor& c) {
  install_outcome out;
  installed_ = false;
  carried_.clear();
  carried_op_keys_.clear();
  carried_key_hashes_.clear();
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
  for (std::size_t i = 0; i < logs_.size(); ++i) {
    auto& l = logs_[i];
    auto first = l.port.source->open(1, 0);
    if (!first) {
      out.fault = fault_from(first.error(), l.name);
      return out;
    }
    for (const auto& o : first->ops) {
      if (!o.meta && projection_of(i, o.table) != nullptr) {
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
    std::uint64_t hash;
    std::size_t first_op;
    index_time_t last_version = 0;
  };
  std::vector<collected> ops;
  std::vector<key_info> keys;
  // The carried remainder is collected first, operation by operation as before, but its keys
  // come from the last turn (`replay`, through `renumber`: the last turn's key → this turn's)
  // until it is used up; only then is the key table built and record ids hashed.
  const auto replay = std::move(carried_op_keys_);
  const auto replay_hashes = std::move(carried_key_hashes_);
  carried_op_keys_.clear();
  carried_key_hashes_.clear();
  constexpr std::uint32_t unnumbered = ~std::uint32_t{0};
  std::vector<std::uint32_t> renumber(replay_hashes.size(), unnumbered);
  std::size_t replayed = 0;
  ops.reserve(replay.size() + 256);
  keys.reserve(std::min<std::size_t>(budget.max_chunk_records, replay_hashes.size() + 256));
  // The key table: open addressing with linear probing, slot = key index + 1 (0: empty), at
  // most half full. Built once the replay is used up.
  bool table_built = false;
  std::size_t mask = 0;
  auto place = [&](std::uint64_t hash) -> std::uint32_t& {
    auto at = static_cast<std::size_t>(hash) & mask;
    while (key_slots_[at] != 0) at = (at + 1) & mask;
    return key_slots_[at];
  };
  auto build_table = [&](std::size_t capacity) {
    std::size_t size = 64;
    while (size < 2 * capacity) size *= 2;
    key_slots_.assign(size, 0);
    mask = size - 1;
    for (std::size_t k = 0; k < keys.size(); ++k) place(keys[k].hash) = static_cast<std::uint32_t>(k + 1);
    table_built = true;
  };
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
          if (!o.meta && projection_of(next->log, o.table) != nullptr) {
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
    ++turn_txns;
    turn_bytes += t.data_size;
    for (std::size_t op = work.done_ops; op < t.ops.size(); ++op) {
      const auto& o = t.ops[op];
      collected c{ti, op, -1};
      bool new_key = false;
      if (replayed < replay.size()) {
        const auto last = replay[replayed++];
        assert((last >= 0) == (!o.meta && o.kind != op_kind::delete_range && projection_of(work.log, o.table)));
        if (last >= 0) {
          auto& number = renumber[static_cast<std::size_t>(last)];
          if (number == unnumbered) {
            number = static_cast<std::uint32_t>(keys.size());
            // The id is taken from this occurrence: the last turn's may lie in a delivered transaction.
            keys.push_back(key_info{work.log, o.table, o.key, replay_hashes[static_cast<std::size_t>(last)], ops.size(), t.time});
            new_key = true;
          }
          keys[number].last_version = t.time;
          c.key = static_cast<std::ptrdiff_t>(number);
        }
      } else if (!o.meta && o.kind != op_kind::delete_range && projection_of(work.log, o.table) != nullptr) {
        if (!table_built || 2 * (keys.size() + 1) > key_slots_.size()) {
          build_table(std::max<std::size_t>(2 * keys.size(), std::min<std::size_t>(budget.max_chunk_records, 1024)));
        }
        const auto hash = key_hash(work.log, o.table, o.key);
        auto at = static_cast<std::size_t>(hash) & mask;
        std::size_t index = keys.size();
        for (; key_slots_[at] != 0; at = (at + 1) & mask) {
          const auto& k = keys[key_slots_[at] - 1];
          if (k.hash == hash && k.id == o.key && k.table == o.table && k.log == work.log) {
            index = key_slots_[at] - 1;
            break;
          }
        }
        if (index == keys.size()) {
          key_slots_[at] = static_cast<std::uint32_t>(index + 1);
          keys.push_back(key_info{work.log, o.table, o.key, hash, ops.size(), t.time});
          new_key = true;
        }
        keys[index].last_version = t.time;
        c.key = static_cast<std::ptrdiff_t>(index);
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
        const auto& fn = *projection_of(key.log, key.table);
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
  // The operations collected beyond the chunk start exactly where carried_ now resumes.
  if (chunk_ops < ops.size()) {
    carried_op_keys_.reserve(ops.size() - chunk_ops);
    for (std::size_t i = chunk_ops; i < ops.size(); ++i) carried_op_keys_.push_back(static_cast<std::int32_t>(ops[i].key));
    carried_key_hashes_.reserve(keys.size());
    for (const auto& k : keys) carried_key_hashes_.push_back(k.hash);
  }
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
