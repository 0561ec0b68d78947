// An in-memory primary store for core tests and the simulation: a log of transactions (with the
// header times, sequences and operations the RocksDB store would write) and the table contents
// they produce, behind the log_source and store_reader ports. It behaves like the real thing in
// the ways the cores can observe: sequences advance by the operation count, header times
// strictly increase, values are stored as version + payload, next() after caught up continues
// with later commits, a purged anchor or a reused sequence is log-retention, and an OS crash
// loses exactly the transactions beyond the synced sequence.
#pragma once

#include <functional>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/bytes.hpp"
#include "core/commit_tail.hpp"
#include "core/shared_reads.hpp"
#include "core/txn_header.hpp"
#include "ports/log_source.hpp"
#include "ports/store_reader.hpp"

namespace dix::test {

struct fake_op {
  op_kind kind = op_kind::put;
  std::uint32_t table = 0;
  std::string id;
  std::string payload;  // put only
  bool meta = false;
};

inline fake_op put(std::uint32_t table, std::string id, std::string payload) {
  return fake_op{op_kind::put, table, std::move(id), std::move(payload), false};
}
inline fake_op del(std::uint32_t table, std::string id) { return fake_op{op_kind::del, table, std::move(id), {}, false}; }

class fake_store {
 public:
  fake_store(std::string log, std::string identity) : log_name_(std::move(log)), identity_(std::move(identity)) {}
  // What the log source's retention() answers (the §13.2 figures; the default: no size limit).
  wal_retention retention_figures;
  // Called at the start of every source's next(): a test's writer committing during a turn.
  std::function<void()> before_log_next;

  const std::string& log_name() const { return log_name_; }
  const std::string& identity() const { return identity_; }

  // Commits one transaction; returns {sequence, time}.
  std::pair<std::uint64_t, index_time_t> commit(std::vector<fake_op> ops, std::uint8_t flags = 0, bool sync = false) {
    auto stored = std::make_shared<std::vector<fake_op>>(std::move(ops));
    wal_transaction t;
    t.sequence = latest_ + 1;
    t.count = static_cast<std::uint32_t>(stored->size());
    t.time = ++clock_;
    t.flags = flags;
    t.data_size = 0;
    auto values = std::make_shared<std::vector<std::string>>();
    values->reserve(stored->size());
    for (auto& o : *stored) {
      // Table values carry their version (the header time); dix.meta values are stored as
      // given, as the RocksDB store writes them (formats.md §5).
      if (o.kind != op_kind::put) values->push_back(std::string());
      else values->push_back(o.meta ? o.payload : encode_value(t.time, o.payload));
      t.data_size += o.id.size() + values->back().size() + 8;
    }
    for (std::size_t i = 0; i < stored->size(); ++i) {
      const auto& o = (*stored)[i];
      wal_op w;
      w.kind = o.kind;
      w.meta = o.meta;
      w.table = o.table;
      w.key = o.id;
      w.value = (*values)[i];
      t.ops.push_back(w);
      if (o.meta) continue;  // dix.meta is not a table
      auto& slot = tables_[o.table][o.id];
      if (o.kind == op_kind::put) slot = (*values)[i];
      else slot.reset();
    }
    t.storage = std::make_shared<std::pair<decltype(stored), decltype(values)>>(stored, values);
    latest_ = t.end_sequence();
    if (sync) synced_ = latest_;
    history_.push_back(t);
    // As the RocksDB store's commit path: the transaction it wrote, to the tail while followed, else
    // the tail told it missed one; a test's skip_tail_once is a write that failed after its WAL
    // record was written (the tail is reset).
    if (tail_ && skip_tail_once) tail_->reset();
    else if (tail_ && tail_->wanted()) tail_->append(std::make_shared<const wal_transaction>(t));
    else if (tail_) tail_->missed();
    skip_tail_once = false;
    log_.push_back(std::move(t));
    return {log_.back().sequence, log_.back().time};
  }

  // Writes a stored value directly (e.g. a corrupt one), as a tool outside dix could.
  void poke(std::uint32_t table, const std::string& id, std::optional<std::string> stored) {
    tables_[table][id] = std::move(stored);
  }

  // An OS crash: every transaction beyond the synced sequence is lost, the tables revert, and
  // the next commits reuse the lost sequences (with new header times).
  void crash() {
    if (shares_) shares_->forget();  // what was read may be gone; a real crash takes the process
    if (tail_) tail_->reset();        // and the commits its tailers took from memory
    while (!log_.empty() && log_.back().sequence > synced_) log_.pop_back();
    while (!history_.empty() && history_.back().sequence > synced_) history_.pop_back();
    latest_ = history_.empty() ? 0 : history_.back().end_sequence();
    tables_.clear();
    for (const auto& t : history_) {
      for (const auto& o : t.ops) {
        if (o.meta) continue;
        auto& slot = tables_[o.table][std::string(o.key)];
        if (o.kind == op_kind::put) slot = std::string(o.value);
        else slot.reset();
      }
    }
  }
  // Drops every transaction before `sequence` from the log (a WAL purge).
  void purge_before(std::uint64_t sequence) {
    while (!log_.empty() && log_.front().end_sequence() < sequence) {
      log_.erase(log_.begin());
      ++purged_;
    }
  }

  std::uint64_t latest() const { return latest_; }
  std::uint64_t synced() const { return synced_; }
  std::uint64_t syncs() const { return syncs_; }
  std::uint64_t reads() const { return reads_; }
  // The log's opens and the transactions its sources' next() returned (not those of a tail).
  std::uint64_t log_opens() const { return log_opens_; }
  std::uint64_t log_reads() const { return log_reads_; }
  const std::vector<wal_transaction>& transactions() const { return log_; }
  // Every transaction the store holds the effects of, purged ones included (a crash drops what
  // it lost): what checkers compare an index against.
  const std::vector<wal_transaction>& history() const { return history_; }
  std::optional<std::string> value(std::uint32_t table, const std::string& id) const {
    auto t = tables_.find(table);
    if (t == tables_.end()) return std::nullopt;
    auto v = t->second.find(id);
    return v == t->second.end() ? std::nullopt : v->second;
  }
  const std::map<std::string, std::optional<std::string>>& table(std::uint32_t table) { return tables_[table]; }

  // The tailers that follow this store share their reads (core/shared_reads.hpp), as those of a
  // RocksDB store do; with min_followers 1 even a lone tailer takes its own earlier reads.
  void share_reads(shared_reads::limits l) { shares_ = std::make_unique<shared_reads>(l); }
  shared_reads* shares() const { return shares_.get(); }
  // The store's commits go to a commit tail (core/commit_tail.hpp) its tailers may read through
  // (tail_source), as the RocksDB store's do.
  void share_tail(commit_tail::limits l) { tail_ = std::make_shared<commit_tail>(l); }
  const std::shared_ptr<commit_tail>& tail() const { return tail_; }
  // The next commit is written to the log, and the tail is reset instead of appended to: what the
  // RocksDB store does when a write fails after its WAL record may have been written.
  bool skip_tail_once = false;
  // A source over this store's log, through its tail when it has one.
  std::unique_ptr<log_source> tail_source();

  // Faults the next read / sync with io_error.
  bool fail_reads = false;
  int live_snapshots = 0;  // snapshots taken and not yet released (as RocksDB pins them)
  bool fail_sync = false;
  bool fail_boundary = false;
  std::uint64_t scanned() const { return scanned_; }

  class source final : public log_source {
   public:
    explicit source(fake_store& s) : s_(s) {}
    const std::string& log_name() const noexcept override { return s_.log_name_; }
    const std::string& identity() const noexcept override { return s_.identity_; }
    result<wal_transaction> open(std::uint64_t sequence, index_time_t time) override {
      open_ = false;
      ++s_.log_opens_;
      for (std::size_t i = 0; i < s_.log_.size(); ++i) {
        const auto& t = s_.log_[i];
        if (t.sequence < sequence) continue;
        if (t.sequence != sequence) break;
        if (time != 0 && t.time != time) return error{errc::log_retention, "header time differs"};
        open_ = true;
        last_end_ = t.end_sequence();
        return t;
      }
      return error{errc::log_retention, "sequence " + std::to_string(sequence) + " not retained"};
    }
    result<std::optional<wal_transaction>> next() override {
      if (!open_) return error{errc::io_error, "not open"};
      if (s_.before_log_next) s_.before_log_next();  // a writer that commits while the log is read
      auto it = std::upper_bound(s_.log_.begin(), s_.log_.end(), last_end_,
                                 [](std::uint64_t seq, const wal_transaction& t) { return seq < t.sequence; });
      if (it == s_.log_.end()) return std::optional<wal_transaction>{};
      if (it->sequence != last_end_ + 1) {
        open_ = false;
        return error{errc::log_retention, "gap after " + std::to_string(last_end_)};
      }
      last_end_ = it->end_sequence();
      ++s_.log_reads_;
      return std::optional<wal_transaction>{*it};
    }
    void release() noexcept override { open_ = false; }
    result<std::uint64_t> latest_sequence() const override { return s_.latest_; }
    result<wal_retention> retention(std::uint64_t, std::uint64_t) const override { return s_.retention_figures; }
    std::uint64_t reopens() const noexcept override { return 0; }

   private:
    fake_store& s_;
    bool open_ = false;
    std::uint64_t last_end_ = 0;
  };

  class fake_snapshot final : public store_snapshot {
   public:
    explicit fake_snapshot(fake_store& s) : s_(s), sequence_(s.latest_) {
      ++s.live_snapshots;
      for (const auto& [table, rows] : s.tables_) {
        auto& copy = tables_[table];
        for (const auto& [id, v] : rows) {
          if (v) copy.emplace(id, *v);
        }
      }
    }
    ~fake_snapshot() override { --s_.live_snapshots; }
    fake_snapshot(const fake_snapshot&) = delete;
    fake_snapshot& operator=(const fake_snapshot&) = delete;
    result<void> seek(std::uint32_t table, std::string_view after) override {
      if (s_.fail_reads) return error{errc::io_error, "scan failed (injected)"};
      rows_ = &tables_[table];
      at_ = after.empty() ? rows_->begin() : rows_->upper_bound(std::string(after));
      return {};
    }
    result<std::optional<scan_entry>> next() override {
      if (s_.fail_reads) return error{errc::io_error, "scan failed (injected)"};
      if (!rows_) return error{errc::io_error, "scan not positioned"};
      if (at_ == rows_->end()) return std::optional<scan_entry>{};
      scan_entry e{at_->first, at_->second};
      ++at_;
      ++s_.scanned_;
      return std::optional<scan_entry>{e};
    }
    std::uint64_t sequence() const noexcept override { return sequence_; }
    result<std::vector<std::optional<std::string>>> read_many(std::uint32_t table,
                                                              const std::vector<std::string_view>& ids) override {
      if (s_.fail_reads) return error{errc::io_error, "read failed (injected)"};
      ++s_.reads_;
      std::vector<std::optional<std::string>> out;
      const auto t = tables_.find(table);
      for (auto id : ids) {
        if (t == tables_.end()) {
          out.emplace_back();
          continue;
        }
        const auto v = t->second.find(std::string(id));
        out.push_back(v == t->second.end() ? std::nullopt : std::optional<std::string>(v->second));
      }
      return out;
    }

   private:
    fake_store& s_;
    std::uint64_t sequence_;
    std::map<std::uint32_t, std::map<std::string, std::string>> tables_;
    std::map<std::string, std::string>* rows_ = nullptr;
    std::map<std::string, std::string>::iterator at_;
  };

  class reader final : public store_reader {
   public:
    explicit reader(fake_store& s) : s_(s) {}
    result<std::optional<std::string>> read(std::uint32_t table, std::string_view id) override {
      if (s_.fail_reads) return error{errc::io_error, "read failed (injected)"};
      ++s_.reads_;
      return s_.value(table, std::string(id));
    }
    result<std::uint64_t> latest_sequence() override { return s_.latest_; }
    // As under the commit mutex: a time of the store's clock between the commits before and after.
    result<coverage_point> capture_coverage() override {
      if (s_.fail_reads) return error{errc::io_error, "capture failed (injected)"};
      return coverage_point{s_.latest_, ++s_.clock_};
    }
    std::uint64_t synced_sequence() const noexcept override { return s_.synced_; }
    shared_reads* shared() noexcept override { return s_.shares_.get(); }
    result<bool> sync_wal(std::uint64_t covering) override {
      if (s_.fail_sync) return error{errc::io_error, "SyncWAL failed (injected)"};
      if (covering != 0 && s_.synced_ >= covering) return false;
      ++s_.syncs_;
      s_.synced_ = s_.latest_;
      return true;
    }
    // A system transaction of one meta put, synced, as the RocksDB store commits it.
    result<boundary_commit> commit_boundary(std::string_view id, epoch_t epoch) override {
      if (s_.fail_boundary) return error{errc::io_error, "boundary commit failed (injected)"};
      std::string value;
      put_le(value, epoch);
      fake_op o{op_kind::put, 0, "boundary/" + std::string(id), std::move(value), true};
      auto [sequence, time] = s_.commit({std::move(o)}, header_flag::system, true);
      return boundary_commit{sequence, time};
    }
    // A copy of the tables as they are now: later commits do not change it, as with a RocksDB
    // snapshot. Deleted records are not in it.
    result<std::unique_ptr<store_snapshot>> snapshot() override {
      if (s_.fail_reads) return error{errc::io_error, "snapshot failed (injected)"};
      return std::unique_ptr<store_snapshot>(std::make_unique<fake_snapshot>(s_));
    }
    result<table_estimate> estimate(std::uint32_t table) override {
      table_estimate e;
      auto t = s_.tables_.find(table);
      if (t == s_.tables_.end()) return e;
      for (const auto& [id, v] : t->second) {
        if (!v) continue;
        ++e.keys;
        e.live_bytes += id.size() + v->size();
      }
      return e;
    }

   private:
    fake_store& s_;
  };

 private:
  std::string log_name_;
  std::string identity_;
  std::vector<wal_transaction> log_;
  std::vector<wal_transaction> history_;
  std::map<std::uint32_t, std::map<std::string, std::optional<std::string>>> tables_;
  std::uint64_t latest_ = 0;
  std::uint64_t synced_ = 0;
  std::uint64_t syncs_ = 0;
  std::uint64_t reads_ = 0;
  std::uint64_t purged_ = 0;
  std::uint64_t scanned_ = 0;
  std::uint64_t log_opens_ = 0, log_reads_ = 0;
  index_time_t clock_ = 1000;
  std::unique_ptr<shared_reads> shares_;
  std::shared_ptr<commit_tail> tail_;
};

inline std::unique_ptr<log_source> fake_store::tail_source() {
  auto own = std::make_unique<source>(*this);
  if (!tail_) return own;
  return std::make_unique<tail_log_source>(std::move(own), tail_);
}

}  // namespace dix::test
