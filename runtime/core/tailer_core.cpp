#include "core/tailer_core.hpp"

#include <algorithm>
#include <set>
#include <string_view>

#include "core/assert.hpp"
#include "core/record_projection.hpp"
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

constexpr std::size_t check_every = 16;  // time-budget checks: every 16 operations / keys

}  // namespace

tailer_core::tailer_core(std::vector<tailer_log> logs, std::map<table_ref, projection> projections,
                         std::vector<attached_log> attached)
    : attached_(std::move(attached)), projections_(std::move(projections)) {
  for (auto& l : logs) {
    log_state s;
    s.port = l;
    s.name = l.source->log_name();
    s.identity = l.source->identity();
    for (const auto& [ref, fn] : projections_) {
      if (ref.log == s.name) s.projected.emplace_back(ref.table, &fn);  // map order: by table
    }
    DIX_ASSERT(std::any_of(attached_.begin(), attached_.end(),
                       [&](const attached_log& a) { return a.name == s.name && a.identity == s.identity; }));
    logs_.push_back(std::move(s));
  }
}

tailer_core::~tailer_core() { set_installed(false); }

void tailer_core::set_installed(bool installed) noexcept {
  // A tailer shares its store's reads while it reads (decision 0061): not while it scans, waits
  // for a reinstall after a fault, or merely exists (every process wires every registration).
  if (installed == installed_) return;
  installed_ = installed;
  for (auto& l : logs_) {
    if (auto* shared = l.port.store->shared()) installed ? shared->follow() : shared->unfollow();
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
  set_installed(false);
  scan_.reset();  // an abandoned rebuild's scan: its snapshots are released (never resumed)
  fence_.reset();  // a fence dies with the reading it fenced
  carried_.clear();
  carried_op_keys_.clear();
  carried_key_hashes_.clear();
  through_.reset();
  // Each entry on its own first (log-missing), only then the set of logs (registration-changed).
  for (const auto& entry : c.logs()) {
    auto store = std::find_if(attached_.begin(), attached_.end(), [&](const attached_log& a) { return a.name == entry.log; });
    if (store == attached_.end()) {
      out.fault = suspect(readiness_reason::log_missing, "the cursor names log " + entry.log + ", which is not attached");
      return out;
    }
    if (store->identity != entry.identity) {
      out.fault = suspect(readiness_reason::log_missing,
                          "log " + entry.log + " has identity " + store->identity + ", the cursor names " + entry.identity);
      return out;
    }
  }
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
    auto anchor = l.port.source->open(entry->sequence, entry->time);
    if (!anchor) {
      out.fault = fault_from(anchor.error(), l.name);
      return out;
    }
    l.read_end = anchor->end_sequence();
    l.through = *entry;
    l.through_end = l.read_end;
    out.anchor_ends.push_back(l.read_end);
  }
  std::vector<log_source*> sources;
  for (auto& l : logs_) sources.push_back(l.port.source);
  merge_ = std::make_unique<log_merge>(std::move(sources));  // no look-ahead survives a re-install
  through_ = c;
  set_installed(true);
  out.installed = c;
  return out;
}

install_outcome tailer_core::install_from_start() {
  install_outcome out;
  scan_.reset();
  fence_.reset();
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
  out = open_txn{(*next)->source, std::move((*next)->txn), 0};
  return std::nullopt;
}

// What the phases of one pull() hand on to each other; the larger scratch lives in members.
struct tailer_core::turn {
  const turn_budgets& budgets;
  const clock& time;
  clock::steady_time start;
  std::vector<record_entry> records;  // resolve: the resolved keys, first-occurrence order
  std::uint64_t estimate = 0;         // resolve: the records' size estimate (§4.3)
  std::shared_ptr<batch> delivery;    // cut: the batch, when something advanced or was resolved (§4.7)

  bool spent() const { return time.steady_now() - start >= budgets.max_milliseconds_per_turn; }
};

pull_outcome tailer_core::pull(const turn_budgets& budgets, epoch_t epoch, const clock& time, bool capture) {
  pull_outcome out;
  if (!installed_) {
    out.fault = transient("tailer pulled before a cursor was installed");
    return out;
  }
  if (capture) {
    // Before anything is read: the turn then reads at least up to the captured positions.
    coverage_capture c;
    for (auto& l : logs_) {
      auto point = l.port.store->capture_coverage();
      if (!point) {
        out.fault = transient("log " + l.name + ": coverage capture: " + point.error().message());
        set_installed(false);
        fence_.reset();
        return out;
      }
      c.time = c.time == 0 ? point->time : std::min(c.time, point->time);
      c.positions[l.name] = point->latest_sequence;
    }
    out.chunk.capture = std::move(c);
  }
  turn t{budgets, time, time.steady_now(), {}, 0, nullptr};
  out.fault = collect(t, out.chunk);
  if (!out.fault) out.fault = resolve(t, out.chunk);
  if (!out.fault) out.fault = cut(t, epoch, out.chunk);
  if (!out.fault) out.fault = sync(t, out.chunk);
  if (out.fault) {
    set_installed(false);
    fence_.reset();
  }
  return out;
}

result<std::vector<std::uint64_t>> tailer_core::fence() {
  if (!installed_ || scan_) return error{errc::invalid_argument, "the tailer can fence only while it reads the logs"};
  if (fence_) return error{errc::invalid_argument, "the tailer is already fenced"};
  fence_state state;
  std::vector<std::uint64_t> last;
  for (const auto& l : logs_) {
    auto snapshot = l.port.store->snapshot();
    if (!snapshot) return error{errc::io_error, "log " + l.name + ": taking the verify snapshot: " + snapshot.error().message()};
    const auto sequence = (*snapshot)->sequence();
    // What was read is in the snapshot only when the WAL shows nothing the snapshot lacks.
    if (l.read_end > sequence) {
      return error{errc::io_error, "log " + l.name + ": the tailer read up to sequence " + std::to_string(l.read_end) +
                                       ", beyond the snapshot's " + std::to_string(sequence) + ": fence again later"};
    }
    last.push_back(sequence);
    state.snapshots.push_back(std::move(*snapshot));
  }
  merge_->hold(last);
  fence_ = std::move(state);
  return last;
}

std::vector<std::unique_ptr<store_snapshot>> tailer_core::lift_fence() {
  if (!fence_) return {};
  auto snapshots = std::move(fence_->snapshots);
  fence_.reset();
  if (merge_) merge_->hold({});
  return snapshots;
}

std::optional<tailer_fault> tailer_core::collect(turn& t, tailer_chunk& chunk) {
  const auto& budgets = t.budgets;
  all_caught_up_ = false;
  // The carried remainder is collected first, operation by operation as before, but its keys
  // come from the last turn (replay_*, through renumber_: the last turn's key → this turn's)
  // until it is used up; only then does keys_ build its index and hash record ids.
  replay_op_keys_.swap(carried_op_keys_);
  replay_key_hashes_.swap(carried_key_hashes_);
  carried_op_keys_.clear();
  carried_key_hashes_.clear();
  constexpr std::uint32_t unnumbered = ~std::uint32_t{0};
  renumber_.assign(replay_key_hashes_.size(), unnumbered);
  std::size_t replayed = 0;
  ops_.clear();
  ops_.reserve(replay_op_keys_.size() + 256);
  keys_.clear(std::min<std::size_t>(budgets.max_chunk_records, 1024));
  std::uint64_t turn_bytes = 0;
  std::size_t turn_txns = 0, since_check = 0;
  // The turn reads up to each log's latest sequence as it begins, not after it: a tailer that
  // follows a busy writer would otherwise chase its end, and each time it reaches the WAL file's
  // end RocksDB's reader reads the file again (a read(2) per one or two transactions at 60 000
  // commits/s, measured). What is committed meanwhile rings the commit bell for the next turn.
  // Caught up at the turn's start is the end of the log as the source's own check sees it,
  // only taken a little earlier. Unknown (the store failed to answer): no bound.
  turn_end_.assign(logs_.size(), 0);
  bool bounded = true;
  for (std::size_t i = 0; i < logs_.size() && bounded; ++i) {
    auto latest = logs_[i].port.store->latest_sequence();
    if (latest) turn_end_[i] = *latest;
    bounded = latest.has_value();
  }
  const auto reached_turn_end = [&] {
    for (std::size_t i = 0; i < logs_.size(); ++i) {
      if (logs_[i].read_end < turn_end_[i]) return false;
    }
    return true;
  };
  bool stop = false;
  for (std::size_t ti = 0; !stop; ++ti) {
    if (ti == carried_.size()) {
      // Between complete transactions only: the turn's transaction and byte budgets.
      if (turn_txns >= budgets.max_transactions_per_turn || turn_bytes >= budgets.max_bytes_per_turn) break;
      if (bounded && reached_turn_end()) {
        all_caught_up_ = true;
        break;
      }
      std::optional<open_txn> next;
      if (auto f = read_next(next, chunk.bytes_read)) return f;
      if (!next) break;  // the end of every log
      ++chunk.transactions_read;
      const auto& txn = next->txn;
      if (txn.has_flag(header_flag::reload) && !txn.has_flag(header_flag::system)) {
        for (const auto& o : txn.ops) {
          if (!o.meta && projection_of(next->log, o.table) != nullptr) {
            return suspect(readiness_reason::reload, "log " + logs_[next->log].name + ": a reload transaction at sequence " +
                                                         std::to_string(txn.sequence) + " replaced table " +
                                                         std::to_string(o.table));
          }
        }
      }
      carried_.push_back(std::move(*next));
    }
    const auto& work = carried_[ti];
    const auto& txn = work.txn;
    ++turn_txns;
    turn_bytes += txn.data_size;
    for (std::size_t op = work.done_ops; op < txn.ops.size(); ++op) {
      const auto& o = txn.ops[op];
      collected_op c{ti, op, -1};
      bool new_key = false;
      if (replayed < replay_op_keys_.size()) {
        const auto last = replay_op_keys_[replayed++];
        DIX_ASSERT((last >= 0) == (!o.meta && o.kind != op_kind::delete_range && projection_of(work.log, o.table)));
        if (last >= 0) {
          auto& number = renumber_[static_cast<std::size_t>(last)];
          if (number == unnumbered) {
            // The id is taken from this occurrence: the last turn's may lie in a delivered transaction.
            number = keys_.add(key_table::key{work.log, o.table, o.key, replay_key_hashes_[static_cast<std::size_t>(last)],
                                              ops_.size(), 0});
            new_key = true;
          }
          keys_[number].last_version = txn.time;
          keys_[number].last_sequence = txn.end_sequence();
          c.key = static_cast<std::ptrdiff_t>(number);
        }
      } else if (!o.meta && o.kind != op_kind::delete_range && projection_of(work.log, o.table) != nullptr) {
        const auto [index, added] = keys_.find_or_add(work.log, o.table, o.key, ops_.size());
        new_key = added;
        keys_[index].last_version = txn.time;
        keys_[index].last_sequence = txn.end_sequence();
        c.key = static_cast<std::ptrdiff_t>(index);
      }
      ops_.push_back(c);
      // Both bounds may cut a transaction (§4.2).
      if (new_key && keys_.size() >= budgets.max_chunk_records) stop = true;
      if (++since_check == check_every) {
        since_check = 0;
        if (t.spent()) stop = true;
      }
      if (stop) break;
    }
  }
  return std::nullopt;
}

std::optional<tailer_fault> tailer_core::resolve(turn& t, tailer_chunk& chunk) {
  auto& records = t.records;
  records.reserve(keys_.size());
  logs_read_.assign(logs_.size(), false);
  constexpr std::size_t group_size = 16;
  std::size_t group_begin = 0, group_end = 0;
  std::vector<std::optional<std::string>> group_values;
  for (std::size_t k = 0; k < keys_.size(); ++k) {
    if (!records.empty() && t.estimate >= t.budgets.max_chunk_bytes) break;
    if (k > 0 && k % check_every == 0 && t.spent()) break;
    const auto& key = keys_[k];
    if (k >= group_end) {
      // Read this key and up to 15 following keys of the same log and table in one group, in
      // first-occurrence order (§4.3); a group read after the chunk closes is simply unused.
      group_begin = k;
      group_end = k + 1;
      while (group_end < keys_.size() && group_end - k < group_size && keys_[group_end].log == key.log &&
             keys_[group_end].table == key.table) {
        ++group_end;
      }
      group_ids_.clear();
      for (auto g = k; g < group_end; ++g) group_ids_.push_back(keys_[g].id);
      // Whatever the values' source, the sync before delivery covers them (§4.8).
      logs_read_[key.log] = true;
      if (auto f = read_group(key.log, key.table, k, chunk, group_values)) return f;
    }
    const auto& stored = group_values[k - group_begin];
    record_entry e;
    e.log_version = key.last_version;
    const std::size_t stored_size = stored ? stored->size() : 0;
    if (auto f = project(key.log, key.table, key.id,
                         stored ? std::optional<std::string_view>(*stored) : std::nullopt, e, chunk.unindexable)) {
      return f;
    }
    t.estimate += key.id.size() + stored_size + e.state.projection.size();
    records.push_back(std::move(e));
  }
  return std::nullopt;
}

std::optional<tailer_fault> tailer_core::read_group(std::size_t log, std::uint32_t table, std::size_t first,
                                                    tailer_chunk& chunk, std::vector<std::optional<std::string>>& values) {
  auto& l = logs_[log];
  const auto failed = [&](const error& e) {
    auto f = fault_from(e, l.name);
    f.transient = true;  // a failed primary read is never the log's fault
    return f;
  };
  // One read of `ids`: fenced, at the fence's snapshot (nothing beyond it may reach the index,
  // fence()); else the latest state.
  const auto read = [&](const std::vector<std::string_view>& ids) {
    ++chunk.primary_reads;
    return fence_ ? fence_->snapshots[log]->read_many(table, ids) : l.port.store->read_many(table, ids);
  };
  // Shared (decision 0061): a key's value may come from another tailer's read that began at or
  // after its last collected occurrence, the rule a read of our own meets; the rest are read
  // here, after the latest sequence is taken, and recorded for the others. A fenced tailer never
  // shares: the others read the latest state.
  auto* shared = fence_ ? nullptr : l.port.store->shared();
  std::optional<std::size_t> found;
  if (shared != nullptr) {
    group_at_least_.clear();
    for (std::size_t g = 0; g < group_ids_.size(); ++g) group_at_least_.push_back(keys_[first + g].last_sequence);
    found = shared->lookup(table, group_ids_, group_at_least_, values, group_found_);  // nullopt: not shared now
    if (found && *found == group_ids_.size()) return std::nullopt;
  }
  if (!found) {
    auto group = read(group_ids_);
    if (!group) return failed(group.error());
    values = std::move(*group);
    return std::nullopt;
  }
  auto read_at = l.port.store->latest_sequence();
  if (!read_at) return failed(read_at.error());
  miss_ids_.clear();
  for (std::size_t g = 0; g < group_ids_.size(); ++g) {
    if (!group_found_[g]) miss_ids_.push_back(group_ids_[g]);
  }
  auto group = read(miss_ids_);
  if (!group) return failed(group.error());
  shared->record(table, miss_ids_, *group, *read_at);
  for (std::size_t g = 0, m = 0; g < group_ids_.size(); ++g) {
    if (!group_found_[g]) values[g] = std::move((*group)[m++]);
  }
  return std::nullopt;
}

std::optional<tailer_fault> tailer_core::project(std::size_t log, std::uint32_t table, std::string_view id,
                                                 const std::optional<std::string_view>& stored, record_entry& e,
                                                 std::uint64_t& unindexable_count) const {
  const auto& l = logs_[log];
  e.log = l.name;
  e.table = table;
  e.record_id = std::string(id);
  if (!project_stored(*projection_of(log, table), l.name, table, id, stored, e.state)) {
    return suspect(readiness_reason::runner_failed,
                   "the projection of log " + l.name + " table " + std::to_string(table) + " threw");
  }
  if (e.state.kind == state_kind::unindexable) ++unindexable_count;
  return std::nullopt;
}

std::optional<tailer_fault> tailer_core::cut(turn& t, epoch_t epoch, tailer_chunk& chunk) {
  // The chunk: the longest prefix of collected operations whose keys are resolved (§4.5).
  const std::size_t chunk_ops = t.records.size() == keys_.size() ? ops_.size() : keys_[t.records.size()].first_op;
  auto b = std::make_shared<batch>();
  b->epoch = epoch;
  b->bytes = t.estimate;
  consumed_.resize(carried_.size());
  for (std::size_t i = 0; i < carried_.size(); ++i) consumed_[i] = carried_[i].done_ops;
  for (std::size_t i = 0; i < chunk_ops; ++i) {
    const auto& c = ops_[i];
    consumed_[c.txn] = c.op + 1;
    const auto& work = carried_[c.txn];
    logs_read_[work.log] = true;
    if (c.key < 0) continue;
    if (b->transactions.empty() || b->transactions.back().sequence != work.txn.sequence ||
        b->transactions.back().log != logs_[work.log].name) {
      b->transactions.push_back(log_transaction{logs_[work.log].name, work.txn.sequence, work.txn.time, {}});
    }
    b->transactions.back().mutations.push_back(mutation{static_cast<std::uint32_t>(c.key), work.txn.time});
  }
  b->records = std::move(t.records);

  // Complete transactions advance `through`; a cut one stays at the front with its progress.
  bool advanced = false;
  std::size_t complete = 0;
  while (complete < carried_.size() && consumed_[complete] == carried_[complete].txn.ops.size()) {
    auto& work = carried_[complete];
    auto& l = logs_[work.log];
    l.through.sequence = work.txn.sequence;
    l.through.time = work.txn.time;
    l.through_end = work.txn.end_sequence();
    advanced = true;
    ++complete;
  }
  if (complete < carried_.size()) carried_[complete].done_ops = consumed_[complete];
  carried_.erase(carried_.begin(), carried_.begin() + static_cast<std::ptrdiff_t>(complete));
  // The operations collected beyond the chunk start exactly where carried_ now resumes.
  if (chunk_ops < ops_.size()) {
    carried_op_keys_.reserve(ops_.size() - chunk_ops);
    for (std::size_t i = chunk_ops; i < ops_.size(); ++i) carried_op_keys_.push_back(static_cast<std::int32_t>(ops_[i].key));
    carried_key_hashes_.reserve(keys_.size());
    for (const auto& k : keys_) carried_key_hashes_.push_back(k.hash);
  }
  chunk.cut_open = !carried_.empty() && carried_.front().done_ops > 0;

  if (advanced) {
    std::vector<log_position> entries;
    for (const auto& l : logs_) entries.push_back(l.through);
    auto made = cursor::make(std::move(entries));
    if (!made) return suspect(readiness_reason::log_corrupt, "cannot form a cursor: " + made.error().message());
    through_ = std::move(*made);
  }
  if (advanced || !b->records.empty()) {
    b->through = through_;
    t.delivery = std::move(b);
  }
  return std::nullopt;
}

std::optional<tailer_fault> tailer_core::sync(turn& t, tailer_chunk& chunk) {
  for (std::size_t i = 0; i < logs_.size(); ++i) {
    auto& l = logs_[i];
    auto latest = l.port.store->latest_sequence();
    if (!latest) {
      auto f = fault_from(latest.error(), l.name);
      f.transient = true;
      return f;
    }
    if (t.delivery && logs_read_[i] && l.port.store->synced_sequence() < *latest) {
      auto synced = l.port.store->sync_wal(*latest);
      if (!synced) return transient("log " + l.name + ": " + synced.error().message());
      if (*synced) ++chunk.wal_syncs;  // not when another tailer's sync covered it
    }
    chunk.logs.push_back(log_progress{l.name, l.read_end, *latest});
    chunk.through_ends[l.name] = l.through_end;
    chunk.log_reopens += l.port.source->reopens();
  }
  const bool drained = carried_.empty() && all_caught_up_;
  // Caught up only when nothing waits beyond a fence: a fenced tailer is not at the end of its logs.
  chunk.end_of_log = drained && !merge_->holding();
  // Reached when every transaction up to each snapshot is read and delivered: a source may answer
  // "nothing yet" (a WAL switch, a reopen) before it has shown all of them, and the WAL's
  // continuity makes "read up to the snapshot's sequence" exact.
  if (fence_ && drained) {
    chunk.fence_reached = true;
    for (std::size_t i = 0; i < logs_.size(); ++i) {
      if (logs_[i].read_end < fence_->snapshots[i]->sequence()) chunk.fence_reached = false;
    }
  }
  // Only now, with what it read synced, is the batch handed out.
  chunk.delivery = std::move(t.delivery);
  return std::nullopt;
}

// ---- rebuild -------------------------------------------------------------------------------------

boundary_outcome tailer_core::capture_boundary(std::string_view id, epoch_t epoch, std::uint64_t scan_bytes_per_s,
                                               const clock& time) {
  boundary_outcome out;
  set_installed(false);
  scan_.reset();
  fence_.reset();
  carried_.clear();
  carried_op_keys_.clear();
  carried_key_hashes_.clear();
  std::vector<log_position> boundary;
  for (auto& l : logs_) {
    auto committed = l.port.store->commit_boundary(id, epoch);
    if (!committed) {
      out.fault = suspect(readiness_reason::rebuild_failed,
                          "log " + l.name + ": committing the rebuild boundary: " + committed.error().message());
      return out;
    }
    boundary.push_back(log_position{l.name, l.identity, committed->sequence, committed->time});
  }
  // Snapshots only after every boundary: each store's snapshot then holds its boundary, so every
  // earlier transaction is scanned and every later one replayed from the boundary (§11.5).
  scan_state state;
  for (auto& l : logs_) {
    auto snapshot = l.port.store->snapshot();
    if (!snapshot) {
      out.fault = transient("log " + l.name + ": taking the rebuild snapshot: " + snapshot.error().message());
      return out;
    }
    state.snapshots.push_back(std::move(*snapshot));
    for (const auto& [table, fn] : l.projected) {
      auto e = l.port.store->estimate(table);
      if (!e) {
        out.fault = transient("log " + l.name + ": estimating table " + std::to_string(table) + ": " + e.error().message());
        return out;
      }
      out.found.estimated_records += e->keys;
      out.found.estimated_bytes += e->live_bytes;
    }
    auto latest = l.port.store->latest_sequence();
    if (!latest) {
      out.fault = transient("log " + l.name + ": " + latest.error().message());
      return out;
    }
    if (l.port.store->synced_sequence() < *latest) {
      auto synced = l.port.store->sync_wal(*latest);
      if (!synced) {
        out.fault = transient("log " + l.name + ": " + synced.error().message());
        return out;
      }
      if (*synced) ++out.found.wal_syncs;
    }
  }
  // The retention fit: the drain resumes from the boundary only after the scan; a WAL TTL
  // shorter than the scan would purge the boundary first.
  const auto rate = std::max<std::uint64_t>(scan_bytes_per_s, 1);
  const auto scan_s = out.found.estimated_bytes / rate;
  for (const auto& l : logs_) {
    if (l.port.wal_ttl_s != 0 && scan_s > l.port.wal_ttl_s) {
      out.fault = suspect(readiness_reason::log_retention,
                          "log " + l.name + ": the scan of about " + std::to_string(out.found.estimated_bytes) + " bytes at " +
                              std::to_string(rate) + " bytes/s takes about " + std::to_string(scan_s) +
                              " s, longer than the WAL TTL of " + std::to_string(l.port.wal_ttl_s) +
                              " s: the boundary would be purged before the drain resumes from it");
      return out;
    }
    // The size half: what the store writes to its WAL meanwhile, against the room its size limit
    // leaves (§13.2 retention_headroom_bytes), would purge the boundary too.
    auto wal = l.port.source->retention(0, time.wall_now_ns());
    if (!wal) {
      out.fault = transient("log " + l.name + ": " + wal.error().message());
      return out;
    }
    if (wal->retention_headroom_bytes < 0 || wal->wal_write_bytes_per_s == 0 || scan_s == 0) continue;
    const auto headroom = static_cast<std::uint64_t>(wal->retention_headroom_bytes);
    if (wal->wal_write_bytes_per_s > headroom / scan_s) {  // rate × scan_s > headroom, without overflow
      out.fault = suspect(readiness_reason::log_retention,
                          "log " + l.name + ": the scan of about " + std::to_string(out.found.estimated_bytes) + " bytes at " +
                              std::to_string(rate) + " bytes/s takes about " + std::to_string(scan_s) +
                              " s, while the store writes about " + std::to_string(wal->wal_write_bytes_per_s) +
                              " WAL bytes/s and its WAL size limit leaves " + std::to_string(headroom) +
                              " bytes: the boundary would be purged before the drain resumes from it");
      return out;
    }
  }
  auto made = cursor::make(std::move(boundary));
  if (!made) {
    out.fault = suspect(readiness_reason::rebuild_failed, "cannot form the boundary cursor: " + made.error().message());
    return out;
  }
  state.boundary = *made;
  out.found.boundary = std::move(*made);
  scan_ = std::move(state);
  return out;
}

scan_outcome tailer_core::scan(const turn_budgets& budgets, epoch_t epoch, const clock& time) {
  scan_outcome out;
  if (!scan_) {
    out.fault = transient("tailer scanned without a rebuild boundary");
    return out;
  }
  auto& s = *scan_;
  const auto start = time.steady_now();
  auto b = std::make_shared<batch>();
  b->epoch = epoch;
  b->rebuild = true;
  auto fail = [&](tailer_fault f) {
    scan_.reset();
    out.fault = std::move(f);
    return std::move(out);
  };
  while (s.log < logs_.size()) {
    const auto& l = logs_[s.log];
    if (s.table == l.projected.size()) {
      ++s.log;
      s.table = 0;
      s.sought = false;
      continue;
    }
    const auto table = l.projected[s.table].first;
    auto& snapshot = *s.snapshots[s.log];
    if (!s.sought) {
      if (auto sought = snapshot.seek(table, {}); !sought) {
        return fail(transient("log " + l.name + ": scanning table " + std::to_string(table) + ": " + sought.error().message()));
      }
      s.sought = true;
    }
    // Checked per entry: a chunk closes at its bounds, and a slow range yields (§11.6).
    if (b->records.size() >= budgets.max_chunk_records || b->bytes >= budgets.max_chunk_bytes) break;
    if (time.steady_now() - start >= budgets.max_milliseconds_per_turn) break;
    auto entry = snapshot.next();
    if (!entry) {
      return fail(transient("log " + l.name + ": scanning table " + std::to_string(table) + ": " + entry.error().message()));
    }
    if (!*entry) {
      ++s.table;
      s.sought = false;
      continue;
    }
    record_entry e;
    if (auto f = project(s.log, table, (*entry)->id, (*entry)->value, e, out.step.unindexable)) return fail(std::move(*f));
    e.log_version = e.state.version;
    b->bytes += (*entry)->id.size() + (*entry)->value.size() + e.state.projection.size();
    b->records.push_back(std::move(e));
  }
  out.step.scanned = b->records.size();
  if (s.log == logs_.size()) {
    // The boundary chunk (§11.7): the drain resumes from the boundary once it is accepted.
    b->through = s.boundary;
    out.step.last = true;
    scan_.reset();
  }
  if (out.step.last || !b->records.empty()) out.step.delivery = std::move(b);
  return out;
}

}  // namespace dix
