#include "adapters/primary_store_impl.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include <rocksdb/env.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/table.h>
#include <rocksdb/transaction_log.h>
#include <rocksdb/write_batch.h>

#include <dix/memory.hpp>

#include "adapters/wal_sample.hpp"
#include "adapters/write_batch_reader.hpp"
#include "core/bytes.hpp"
#include "core/clock.hpp"
#include "core/index_time.hpp"
#include "core/names.hpp"
#include "core/txn_header.hpp"

namespace dix {
namespace {

constexpr std::string_view table_prefix = "table.";

std::string table_family_name(std::uint32_t table) {
  return std::string(table_prefix) + std::to_string(table);
}

// "table.<id>", id in decimal without leading zeros, 1 ≤ id ≤ 4 294 967 295.
std::optional<std::uint32_t> parse_table_family(std::string_view name) {
  if (name.substr(0, table_prefix.size()) != table_prefix) return std::nullopt;
  auto digits = name.substr(table_prefix.size());
  if (digits.empty() || digits.front() == '0') return std::nullopt;
  std::uint32_t id = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
  if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
  return id;
}

rocksdb::DBOptions db_options(const store_options& o) {
  rocksdb::DBOptions d;
  d.create_if_missing = o.create_if_missing;
  d.create_missing_column_families = false;
  // formats.md §1.1: one WriteBatch = one WAL record, WAL never recycled, SyncWAL allowed.
  d.unordered_write = false;
  d.two_write_queues = false;
  d.recycle_log_file_num = 0;
  d.manual_wal_flush = false;
  d.allow_mmap_writes = false;
  // No fallocate (decision 0013): a preallocation larger than the free space (a WAL file asks
  // for 1.1 × write_buffer_size) fills the filesystem until it fails, and every other writer —
  // the LOG, an index, another store — meets ENOSPC meanwhile.
  d.allow_fallocate = false;
  // Decision 0034: recovery tolerates only an incomplete last record (a crash's torn, unsynced
  // tail) and fails the open on damage anywhere else. RocksDB's default, kPointInTimeRecovery,
  // stops at the first damaged record without an error and drops every transaction after it.
  d.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  d.WAL_ttl_seconds = o.wal_ttl_s;
  d.WAL_size_limit_MB = o.wal_size_limit_mb;
  if (o.max_total_wal_size != 0) d.max_total_wal_size = o.max_total_wal_size;
  join_memory_budget(d);  // the process's memory budget (decision 0014)
  return d;
}

// Every column family's options: RocksDB's, with the store's memtable size when it sets one and
// the block cache of the process's memory budget.
rocksdb::ColumnFamilyOptions family_options(const store_options& o) {
  rocksdb::ColumnFamilyOptions c;
  if (o.write_buffer_size != 0) c.write_buffer_size = static_cast<std::size_t>(o.write_buffer_size);
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = budget_block_cache();
  c.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return c;
}

rocksdb::Slice slice(std::string_view s) { return {s.data(), s.size()}; }


// The header time of the newest batch in the WAL, 0 if there is none (formats.md §1.4).
std::uint64_t newest_wal_time(rocksdb::DB& db) {
  rocksdb::VectorLogPtr files;
  if (!db.GetSortedWalFiles(files).ok() || files.empty()) return 0;
  auto latest = db.GetLatestSequenceNumber();
  for (auto file = files.rbegin(); file != files.rend(); ++file) {
    auto start = (*file)->StartSequence();
    if (start == 0 || start > latest) continue;
    std::unique_ptr<rocksdb::TransactionLogIterator> it;
    if (!db.GetUpdatesSince(start, &it).ok()) continue;
    std::uint64_t newest = 0;
    raw_batch raw;
    for (; it->Valid(); it->Next()) {
      auto batch = it->GetBatch();
      if (!read_write_batch(*batch.writeBatchPtr, batch.sequence, raw)) continue;
      if (raw.records.empty() || raw.records.front().kind != raw_kind::log_data) continue;
      if (auto h = decode_header(raw.records.front().key)) newest = std::max(newest, h->time);
    }
    if (newest != 0) return newest;
  }
  return 0;
}

struct open_families {
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  bool has_meta = false;
  bool existing = false;  // a database was found (its MANIFEST listed the families)
};

// Whether `path/CURRENT` exists; a failed look (a loop, a name too long, no search permission)
// is io_error naming the path instead of an exception.
result<bool> has_current(const std::filesystem::path& path) {
  std::error_code ec;
  const auto current = path / "CURRENT";
  const bool found = std::filesystem::exists(current, ec);
  if (ec) return error{errc::io_error, "cannot look for " + current.string() + ": " + ec.message()};
  return found;
}

result<open_families> list_families(const std::filesystem::path& path, bool may_be_new) {
  std::vector<std::string> names;
  open_families out;
  auto s = rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions{}, path.string(), &names);
  out.existing = s.ok();
  if (!s.ok()) {
    auto found = has_current(path);
    if (!found) return found.error();
    if (may_be_new && !*found) names = {"default"};
    else return error{errc::io_error, "cannot list column families of " + path.string() + ": " + s.ToString()};
  }
  for (const auto& name : names) {
    if (name == meta_family_name) {
      out.has_meta = true;
    } else if (name != rocksdb::kDefaultColumnFamilyName && !parse_table_family(name)) {
      return error{errc::store_format_mismatch,
                   path.string() + " has column family \"" + escape_bytes(name) +
                       "\", which a dix primary store never creates"};
    }
    out.descriptors.emplace_back(name, rocksdb::ColumnFamilyOptions{});
  }
  return out;
}

error foreign_with_data(const std::filesystem::path& path) {
  return error{errc::store_format_mismatch, path.string() + " is a RocksDB database with data but no dix.meta column "
                                                            "family: not a dix primary store"};
}

void install_handles(primary_store::impl& p, std::vector<rocksdb::ColumnFamilyHandle*> handles) {
  p.handles = std::move(handles);
  for (auto* h : p.handles) {
    if (h->GetName() == meta_family_name) p.meta = h;
    else if (auto table = parse_table_family(h->GetName())) p.tables[*table] = h;
  }
}

result<void> check_format(primary_store::impl& p) {
  std::string value;
  auto s = p.db->Get(rocksdb::ReadOptions{}, p.meta, "format", &value);
  if (s.IsNotFound()) {
    return error{errc::store_format_mismatch, p.path.string() + " has no `format` record"};
  }
  if (!s.ok()) return error{errc::io_error, "reading `format` of " + p.path.string() + ": " + s.ToString()};
  if (value.size() != 4 || get_le<std::uint32_t>(value, 0) != store_format_version) {
    return error{errc::store_format_mismatch,
                 p.path.string() + " has store format " +
                     (value.size() == 4 ? std::to_string(get_le<std::uint32_t>(value, 0))
                                        : "of " + std::to_string(value.size()) + " bytes") +
                     "; this dix reads format 1"};
  }
  return {};
}

// Raises the process-wide index-time floor from `clock` and the newest WAL header.
result<void> raise_time_floor(primary_store::impl& p) {
  std::string value;
  auto s = p.db->Get(rocksdb::ReadOptions{}, p.meta, "clock", &value);
  if (!s.ok() && !s.IsNotFound()) {
    return error{errc::io_error, "reading `clock` of " + p.path.string() + ": " + s.ToString()};
  }
  std::uint64_t floor = newest_wal_time(*p.db);
  if (s.ok() && value.size() == 8) floor = std::max(floor, get_le<std::uint64_t>(value, 0));
  process_index_time().raise_floor(floor);
  return {};
}

// Caller holds lifecycle.
result<commit_info> write_meta(primary_store::impl& p, const std::vector<meta_op>& ops) {
  batch_builder batch;
  for (const auto& op : ops) {
    if (op.kind == op_kind::del) batch.del(p.meta, op.key);
    else batch.put_plain(p.meta, op.key, op.value);
  }
  return p.write_locked(header_flag::system, batch, true);
}

result<void> write_clock(primary_store::impl& p) {
  std::string value;
  put_le<std::uint64_t>(value, process_index_time().next(system_clock().wall_now_ns()));
  auto done = write_meta(p, {meta_op{op_kind::put, "clock", std::move(value)}});
  if (!done) return done.error();
  return {};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// impl

family_map primary_store::impl::families() const {
  family_map map;
  for (auto* h : handles) {
    family_role role;
    if (h == meta) role.kind = family_kind::meta;
    else if (auto table = parse_table_family(h->GetName())) role = {family_kind::table, *table};
    map[h->GetID()] = role;
  }
  return map;
}

result<commit_info> primary_store::impl::write(std::uint8_t flags, batch_builder& batch, bool sync) {
  std::shared_lock lock(lifecycle);
  return write_locked(flags, batch, sync);
}

result<commit_info> primary_store::impl::write_locked(std::uint8_t flags, batch_builder& batch, bool sync) {
  if (!open) return error{errc::io_error, "primary store " + path.string() + " is closed"};
  if (read_only) return error{errc::invalid_argument, "primary store " + path.string() + " is open read-only"};
  const auto ops = batch.ops();
  if (ops == 0) return commit_info{};
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  wo.disableWAL = false;
  std::unique_lock guard(commit_mutex);
  // The WAL record now and the memtable's flush later: each takes about the batch's size.
  if (auto room = admit_space(flags, 2 * std::uint64_t{batch.GetDataSize()}); !room) return room.error();
  commit_info info;
  info.time = process_index_time().next(system_clock().wall_now_ns());
  batch.stamp(flags, info.time);
  auto s = db->Write(wo, &batch);
  if (!s.ok()) return error{errc::io_error, "writing to " + path.string() + ": " + s.ToString()};
  info.sequence = db->GetLatestSequenceNumber() - ops + 1;
  if (sync) {
    auto end = info.sequence + ops - 1;
    auto prev = synced_sequence.load(std::memory_order_relaxed);
    while (prev < end && !synced_sequence.compare_exchange_weak(prev, end)) {
    }
  }
  guard.unlock();
  notify(commit_event{info, flags});
  return info;
}

bool primary_store::impl::flush_for_space(std::uint64_t floor) {
  if (space.own_pending_bytes() < (64u << 10) || space.available_bytes() < space.pending_bytes() + floor / 2) return false;
  rocksdb::FlushOptions fo;
  fo.wait = true;
  fo.allow_write_stall = true;
  return db->Flush(fo, handles).ok();
}

namespace {
// What the gate counted as used beside the reading: the store's unflushed WAL, and what the
// process's other writers on the filesystem (its indexes) will still write.
// "of A available, W of unflushed WAL [and I its indexes in this process will still write]
// counted as used": the free figure the refusal shows is A less these (issue 34).
std::string pending_words(const space_gate& space) {
  std::string words = "of " + describe_bytes(space.available_bytes()) + " available, " +
                      describe_bytes(space.own_pending_bytes()) + " of unflushed WAL";
  const auto others = space.pending_bytes() - std::min(space.pending_bytes(), space.own_pending_bytes());
  if (others != 0) words += " and " + describe_bytes(others) + " its indexes in this process will still write";
  return words + " counted as used";
}
}  // namespace

result<void> primary_store::impl::admit_space(std::uint8_t flags, std::uint64_t bytes) {
  const bool system = (flags & header_flag::system) != 0;
  auto floor = [&] {
    const auto reserve = store_reserve_bytes(options.free_space_reserve_bytes, space.capacity_bytes());
    return system ? reserve / 2 : reserve;
  };
  const auto now = system_clock().steady_now();
  auto read_again = [&]() -> result<void> {
    auto reading = probe(path);
    if (!reading) return reading.error();
    space.record(*reading, live_wal_bytes(path), now);
    return {};
  };
  if (space.due(now, bytes, floor())) {
    if (auto read = read_again(); !read) return read;
  }
  if (space.admits(bytes, floor())) {
    space.charge(bytes);
    return {};
  }
  // The unflushed WAL counts as used because its memtables' flush will write about as much. When
  // that is what keeps the store below its reserve, flush now — what it writes is real then, not
  // an estimate (deduplicated, compressed: usually far less) — and measure again (issue 34: with
  // no more commits nothing else would flush, and the store stayed refused with room to spare).
  // Only with room for the flush itself above half the reserve; under the commit mutex, so no
  // commit waits behind it that was not refused anyway.
  if (flush_for_space(floor())) {
    if (auto read = read_again(); !read) return read;
    if (space.admits(bytes, floor())) {
      space.charge(bytes);
      return {};
    }
  }
  auto limit = system ? "half its free-space reserve, " + describe_bytes(floor()) + " (a system transaction)"
                      : "its free-space reserve of " + describe_bytes(floor());
  // Free at or above the reserve itself, this commit is what would take it below (issue 34: "X
  // free, below a reserve smaller than X" read wrong).
  if (space.free_bytes() >= floor()) limit += " plus this commit's " + describe_bytes(bytes);
  return error{errc::io_error, describe_shortage("primary store " + path.string(), space.free_bytes(), limit) +
                                   " (" + pending_words(space) + "); nothing written, retry once space is freed"};
}

void primary_store::impl::notify(const commit_event& e) {
  const auto copy = std::atomic_load(&listener_copy);
  for (const auto& fn : *copy) fn(e);
}

void primary_store::impl::publish_listeners() {
  auto copy = std::make_shared<listener_list>();
  for (const auto& [id, fn] : listeners) copy->push_back(fn);
  std::atomic_store(&listener_copy, std::shared_ptr<const listener_list>(std::move(copy)));
}

result<void> primary_store::impl::close(bool record_clock) {
  std::unique_lock lock(lifecycle);
  if (!open) return {};
  result<void> outcome;
  if (!read_only && record_clock) outcome = write_clock(*this);
  {
    std::lock_guard g(hooks_mutex);
    for (auto& [id, fn] : close_listeners) fn();
  }
  for (auto* h : handles) {
    auto s = db->DestroyColumnFamilyHandle(h);
    (void)s;  // only fails for the default handle, which RocksDB keeps itself
  }
  handles.clear();
  tables.clear();
  meta = nullptr;
  auto s = db->Close();
  db.reset();
  open = false;
  if (!s.ok() && outcome) {
    outcome = error{errc::io_error, "closing " + path.string() + ": " + s.ToString()};
  }
  return outcome;
}

// ---------------------------------------------------------------------------------------------
// opening

primary_store::primary_store(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

primary_store::~primary_store() {
  if (impl_) ignore_result(impl_->close(), "a destructor cannot report; close() explicitly to see errors");
}

namespace {

// After RocksDB opened: identity, format, time floor, then (read-write) `format` for a new store
// and `clock`. Closes the database again on any failure.
result<std::shared_ptr<primary_store>> finish_open(std::unique_ptr<primary_store::impl> p,
                                                   bool created) {
  auto fail = [&](error e) -> result<std::shared_ptr<primary_store>> {
    ignore_result(p->close(false), "already failing with a more precise error");
    return e;
  };
  std::string identity;
  auto s = p->db->GetDbIdentity(identity);
  if (!s.ok()) return fail({errc::io_error, "reading the identity of " + p->path.string() + ": " + s.ToString()});
  while (!identity.empty() && (identity.back() == '\n' || identity.back() == '\r')) identity.pop_back();
  p->identity = identity;
  if (created) {
    std::string format;
    put_le<std::uint32_t>(format, store_format_version);
    std::shared_lock lock(p->lifecycle);
    auto written = write_meta(*p, {meta_op{op_kind::put, "format", std::move(format)}});
    if (!written) {
      lock.unlock();
      return fail(written.error());
    }
  }
  if (auto ok = check_format(*p); !ok) return fail(ok.error());
  if (auto ok = raise_time_floor(*p); !ok) return fail(ok.error());
  if (!p->read_only) {
    {
      std::shared_lock lock(p->lifecycle);
      if (auto ok = write_clock(*p); !ok) return fail(ok.error());
    }
    // Everything recovered at open is durable now: recovery flushed older WAL files and the
    // `clock` write above synced the live one.
    p->synced_sequence.store(p->db->GetLatestSequenceNumber());
  }
  return primary_store_access::make(std::move(p));
}

std::string open_failure(const std::filesystem::path& path, const rocksdb::Status& s) {
  std::string text = "cannot open primary store " + path.string() + ": " + s.ToString();
  if (s.ToString().find("lock hold by current process") != std::string::npos) {
    text = "primary store " + path.string() + " is already open in this process";
  } else if (s.ToString().find("While lock file") != std::string::npos) {
    // RocksDB's text stays in the message: lock_conflict() below looks for it.
    text = "primary store " + path.string() + " is held by another process (" + s.ToString() + ")";
  }
  return text;
}

// A logger that keeps nothing: RocksDB's own would rotate LOG into LOG.old.* even read-only.
class discarding_logger final : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const char*, va_list) override {}
};

// The families a read-only look opens: of a dix store only default and dix.meta, so the WAL's
// other records are skipped rather than replayed into memtables; of another database all.
std::vector<rocksdb::ColumnFamilyDescriptor> look_families(const open_families& families) {
  std::vector<rocksdb::ColumnFamilyDescriptor> wanted;
  for (const auto& f : families.descriptors) {
    if (!families.has_meta || f.name == meta_family_name || f.name == rocksdb::kDefaultColumnFamilyName) wanted.push_back(f);
  }
  return wanted;
}

// The latest sequence of a read-only open that replays the WAL in `mode`; nullopt if it fails.
std::optional<std::uint64_t> latest_replayed(const std::filesystem::path& path, const open_families& families,
                                             const store_options& options, rocksdb::WALRecoveryMode mode) {
  auto d = db_options(options);
  d.create_if_missing = false;
  d.wal_recovery_mode = mode;
  d.info_log = std::make_shared<discarding_logger>();
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  if (!rocksdb::DB::OpenForReadOnly(d, path.string(), look_families(families), &handles, &raw).ok()) return std::nullopt;
  std::unique_ptr<rocksdb::DB> db(raw);
  const std::uint64_t latest = db->GetLatestSequenceNumber();
  for (auto* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();  // read-only: nothing to lose
  return latest;
}

// Decision 0034: what an open that failed with Corruption `s` says about the WAL. It failed on
// the WAL when the same read-only open succeeds replaying with kSkipAnyCorruptedRecords (the mode
// changes nothing but the WAL's replay). Readable records after the damage: log_corrupt, saying
// where replay stops (kPointInTimeRecovery, the mode that dropped the rest without a word) and how
// far they reach. None (`torn_tail`): the damage ends the log — what a power loss leaves when a
// file's size reached the disk before its last bytes (XFS, ext4 data=writeback), as well as a
// torn write — and the open is made again replaying up to it. Neither for any other failure.
// Reads only, as look_before_open does.
struct wal_verdict {
  std::optional<error> refusal;
  bool torn_tail = false;
};

wal_verdict judge_wal(const std::filesystem::path& path, const open_families& families, const store_options& options,
                      const rocksdb::Status& s) {
  if (!s.IsCorruption()) return {};
  const auto salvaged = latest_replayed(path, families, options, rocksdb::WALRecoveryMode::kSkipAnyCorruptedRecords);
  if (!salvaged) return {};
  const auto stops = latest_replayed(path, families, options, rocksdb::WALRecoveryMode::kPointInTimeRecovery);
  // RocksDB looks for records again only from the next 32 KiB block of the file: records in the
  // rest of the damaged block are not seen either way.
  if (stops && *salvaged <= *stops) return {std::nullopt, true};
  std::string where = stops ? "replay stops after sequence " + std::to_string(*stops) : "replay stops at the damage";
  where += ", and readable transactions up to sequence " + std::to_string(*salvaged) + " follow the damage";
  return {error{errc::log_corrupt,
               "primary store " + path.string() + ": its write-ahead log is corrupt (" + s.ToString() + "): " + where +
                   "; the store was not opened and nothing was dropped. Restore it from a backup, or keep a copy "
                   "and see \"A corrupt WAL\" in docs/operations.md to keep what precedes the damage"},
          false};
}

// Runs `open(options)` (an Open or OpenForReadOnly of the caller's); when it fails on a torn tail
// (judge_wal), once more replaying up to the damage. The status of the last open, or the
// log_corrupt refusal.
template <class Open>
result<rocksdb::Status> open_past_torn_tail(const std::filesystem::path& path, const open_families& families,
                                            const store_options& options, rocksdb::DBOptions d, Open open) {
  auto s = open(d);
  if (s.ok()) return s;
  auto wal = judge_wal(path, families, options, s);
  if (wal.refusal) return *wal.refusal;
  if (!wal.torn_tail) return s;
  d.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;  // up to the damage
  return open(d);
}

// Decision 0010 §3: an existing database is judged from a read-only open (no LOCK, no LOG, no
// OPTIONS, no flush) before anything opens it read-write, so a database dix refuses is left
// byte for byte as it was. Refuses one without dix.meta that holds data, and one whose `format`
// record is absent or not 1. A read-only open that fails refuses nothing: the read-write open
// reports the real trouble (a lock held by another process, a missing file).
result<void> look_before_open(const std::filesystem::path& path, const open_families& families,
                              const store_options& options) {
  auto d = db_options(options);
  d.create_if_missing = false;
  d.info_log = std::make_shared<discarding_logger>();
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  // A dix store is judged by its `format` record alone (look_families; a standby's takeover
  // pays this look too). A corrupt WAL is refused here, before anything writes (decision 0034).
  auto s = open_past_torn_tail(path, families, options, d, [&](const rocksdb::DBOptions& o) {
    return rocksdb::DB::OpenForReadOnly(o, path.string(), look_families(families), &handles, &raw);
  });
  if (!s) return s.error();
  if (!s->ok()) return {};
  primary_store::impl look;
  look.path = path;
  look.options = options;
  look.read_only = true;
  look.db.reset(raw);
  look.open = true;
  install_handles(look, std::move(handles));
  result<void> verdict;
  if (!families.has_meta) {
    if (look.db->GetLatestSequenceNumber() != 0) verdict = foreign_with_data(path);
  } else {
    verdict = check_format(look);
  }
  ignore_result(look.close(false), "a read-only look: nothing to keep");
  return verdict;
}

// Decision 0013: DB::Open writes — LOG, MANIFEST, OPTIONS, a new WAL, the flush of the WAL it
// recovers — and Debian's RocksDB aborts on ENOSPC there, so a store is not opened below half
// its reserve (what system transactions may use) with that WAL counted as used.
result<void> check_open_space(primary_store::impl& p) {
  auto reading = p.probe(p.path);
  if (!reading) return reading.error();
  const auto wal = live_wal_bytes(p.path);
  p.space.record(*reading, wal, system_clock().steady_now());
  const auto floor = store_reserve_bytes(p.options.free_space_reserve_bytes, reading->capacity_bytes) / 2;
  if (p.space.admits(0, floor)) return {};
  return error{errc::io_error,
               describe_shortage("cannot open primary store " + p.path.string(), p.space.free_bytes(),
                                 "half its free-space reserve, " + describe_bytes(floor)) +
                   " (the " + describe_bytes(wal) + " of WAL to recover counted as used); retry once space is freed"};
}

// Names RocksDB itself writes into a store directory before CURRENT exists (an open killed
// while creating the store leaves them): they do not make the directory someone else's.
bool rocksdb_leftover(const std::string& name) {
  auto starts = [&](const char* prefix) { return name.rfind(prefix, 0) == 0; };
  auto ends = [&](const char* suffix) {
    const std::string_view s(suffix);
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  // `archive` (WAL TTL and size limit set, as dix's defaults are) is made before CURRENT too;
  // `lost+found` is what a file system of its own holds at its root.
  return name == "LOCK" || name == "LOG" || name == "IDENTITY" || name == "archive" || name == "lost+found" ||
         starts("LOG.old.") || starts("MANIFEST-") || starts("OPTIONS-") || ends(".log") || ends(".dbtmp");
}

// Decision 0035: a store is made only in a new path whose parent exists or in a directory that
// holds nothing but what RocksDB writes before CURRENT. A directory with other files is someone
// else's (a Xapian database, a home directory) and a missing parent is most likely a typo: both
// are refused before anything is written. The directory this call makes is never writable by
// group or others, whatever the umask (issue 12); an existing one keeps its mode.
result<void> make_store_directory(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return error{errc::io_error, "cannot open primary store " + path.string() + ": not a directory"};
    auto found = has_current(path);
    if (!found) return found.error();
    if (*found) return {};
    std::error_code ec;
    for (std::filesystem::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
      const auto name = it->path().filename().string();
      if (!rocksdb_leftover(name)) {
        return error{errc::store_format_mismatch,
                     path.string() + " is a directory that holds files (\"" + escape_bytes(name) +
                         "\") but no RocksDB database (no CURRENT file): not a dix primary store; a store is made "
                         "only in an empty directory or a new path"};
      }
    }
    if (ec) return error{errc::io_error, "cannot list " + path.string() + ": " + ec.message()};
    return {};
  }
  if (errno != ENOENT) return error{errc::io_error, "cannot open primary store " + path.string() + ": " + std::strerror(errno)};
  const auto named = path.has_filename() ? path : path.parent_path();  // "a/db/" names "a/db"
  const auto parent = named.has_parent_path() ? named.parent_path() : std::filesystem::path(".");
  const int looked = ::stat(parent.c_str(), &st);
  const int err = errno;
  if (looked != 0 || !S_ISDIR(st.st_mode)) {
    const std::string why = looked != 0 ? std::strerror(err) : "not a directory";
    return error{errc::io_error, "cannot create primary store " + path.string() + ": its parent " + parent.string() +
                                     ": " + why + " (only the store's own directory is created)"};
  }
  // A store is private to its user (issue 34, decision 0040): its directory is made 0700 whatever
  // the umask, so the files RocksDB creates inside (0644 less the umask) reach nobody else.
  if (::mkdir(path.c_str(), 0700) != 0) {
    if (errno == EEXIST) return {};
    return error{errc::io_error, "cannot create " + path.string() + ": " + std::strerror(errno)};
  }
  if (::chmod(path.c_str(), 0700) != 0) {
    return error{errc::io_error, "cannot make " + path.string() + " private (chmod 0700): " + std::strerror(errno)};
  }
  return {};
}

// `look`: judge an existing database before the read-write open (look_before_open). A standby
// that waited for another process's LOCK skips it for a store with dix.meta: a dix process had
// it open, and its takeover should not read the WAL twice (the format is still checked after
// the open). Without dix.meta the look runs whoever held the LOCK (any RocksDB program can).
result<std::shared_ptr<primary_store>> open_store(const std::filesystem::path& path, const store_options& options,
                                                  bool look) {
  if (auto ok = validate(options); !ok) return ok.error();
  if (options.create_if_missing) {
    if (auto ok = make_store_directory(path); !ok) return ok.error();
  }
  auto families = list_families(path, options.create_if_missing);
  if (!families) return families.error();
  for (auto& d : families->descriptors) d.options = family_options(options);
  if (families->existing && (look || !families->has_meta)) {
    if (auto ok = look_before_open(path, *families, options); !ok) return ok.error();
  }
  auto p = std::make_unique<primary_store::impl>();
  p->path = path;
  p->options = options;
  if (auto room = check_open_space(*p); !room) return room.error();
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  // A torn tail is replayed up to, once; the next open finds the log ending there (decision 0034).
  auto opened = open_past_torn_tail(path, *families, options, db_options(options), [&](const rocksdb::DBOptions& o) {
    return rocksdb::DB::Open(o, path.string(), families->descriptors, &handles, &raw);
  });
  if (!opened) return opened.error();
  if (!opened->ok()) return error{errc::io_error, open_failure(path, *opened)};
  p->db.reset(raw);
  p->open = true;
  install_handles(*p, std::move(handles));
  bool created = false;
  if (!families->has_meta) {
    if (p->db->GetLatestSequenceNumber() != 0) {
      ignore_result(p->close(false), "already failing with the format error");
      return foreign_with_data(path);  // it got data since the look
    }
    rocksdb::ColumnFamilyHandle* meta = nullptr;
    auto s = p->db->CreateColumnFamily(family_options(options), meta_family_name, &meta);
    if (!s.ok()) {
      ignore_result(p->close(false), "already failing");
      return error{errc::io_error, "creating dix.meta in " + path.string() + ": " + s.ToString()};
    }
    p->handles.push_back(meta);
    p->meta = meta;
    created = true;
  }
  return finish_open(std::move(p), created);
}

}  // namespace

result<std::shared_ptr<primary_store>> primary_store::open(const std::filesystem::path& path,
                                                           const store_options& options) {
  return open_store(path, options, true);
}

// ---------------------------------------------------------------------------------------------
// the standby (protocol.md §9.8)

namespace {

// One standby per store path in this process at a time: a second thread blocked on the same LOCK
// would be granted together with the first (POSIX locks do not conflict within a process) and its
// close() would drop the lock the first one's DB::Open just took.
std::mutex& standby_mutex(const std::filesystem::path& path) {
  static std::mutex table_mutex;
  static std::map<std::string, std::unique_ptr<std::mutex>> table;
  std::error_code ec;
  auto key = std::filesystem::weakly_canonical(path, ec);
  std::lock_guard guard(table_mutex);
  auto& m = table[(ec ? path.lexically_normal() : key).string()];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

enum class lock_probe { free, other_process, this_process, unknown };

// A non-blocking probe through RocksDB's own LockFile, which consults the process's table of
// locked files before it opens LOCK: it never opens a second descriptor of a LOCK this process
// holds. Free: taken and released again at once.
lock_probe probe_lock(const std::filesystem::path& lock_path) {
  auto* env = rocksdb::Env::Default();
  rocksdb::FileLock* lock = nullptr;
  auto s = env->LockFile(lock_path.string(), &lock);
  if (s.ok()) {
    env->UnlockFile(lock).PermitUncheckedError();  // the next DB::Open reports any real trouble
    return lock_probe::free;
  }
  auto text = s.ToString();
  if (text.find("lock hold by current process") != std::string::npos) return lock_probe::this_process;
  if (text.find("While lock file") != std::string::npos) return lock_probe::other_process;
  return lock_probe::unknown;  // e.g. no directory yet: open() creates it or says why not
}

// DB::Open failed because another process holds the store (open_failure keeps RocksDB's text).
bool lock_conflict(const error& e) { return e.message().find("While lock file") != std::string::npos; }

// Blocks until this process is granted a write lock on the whole of `lock_path`, i.e. until no
// other process holds one; then closes the descriptor, which releases the probe. Never polls.
result<void> wait_for_lock(const std::filesystem::path& lock_path) {
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return {};  // nothing to wait for; the open decides
    return {errc::io_error, "cannot open " + lock_path.string() + " to wait for the store: " + std::strerror(err)};
  }
  struct flock want {};
  want.l_type = F_WRLCK;
  want.l_whence = SEEK_SET;
  want.l_start = 0;
  want.l_len = 0;  // the whole file, as RocksDB locks it
  int rc = 0;
  int err = 0;
  do {
    rc = ::fcntl(fd, F_SETLKW, &want);
    err = rc == -1 ? errno : 0;
  } while (rc == -1 && err == EINTR);
  ::close(fd);  // before DB::Open, always (§9.8)
  if (rc == -1) {
    return {errc::io_error, "waiting for the lock on " + lock_path.string() + ": " + std::strerror(err)};
  }
  return {};
}

}  // namespace

result<std::shared_ptr<primary_store>> primary_store::open_standby(const std::filesystem::path& path,
                                                                   const store_options& options,
                                                                   const standby_events& events) {
  if (auto ok = validate(options); !ok) return ok.error();
  // Before the probe, which creates LOCK: a directory that is not ours gets nothing (decision 0035).
  if (options.create_if_missing) {
    if (auto ok = make_store_directory(path); !ok) return ok.error();
  }
  std::lock_guard one_standby(standby_mutex(path));
  const auto lock_path = path / "LOCK";
  for (;;) {
    auto probe = probe_lock(lock_path);
    if (probe == lock_probe::this_process) {
      return error{errc::io_error, "primary store " + path.string() + " is already open in this process"};
    }
    if (probe == lock_probe::other_process) {
      if (events.waiting) events.waiting();
      if (auto ok = wait_for_lock(lock_path); !ok) return ok.error();
      if (events.granted) events.granted();
    }
    auto store = open_store(path, options, probe != lock_probe::other_process);
    if (store || !lock_conflict(store.error())) return store;
    // Another process took the store between the grant (or the free probe) and DB::Open.
  }
}

result<std::shared_ptr<primary_store>> open_read_only(const std::filesystem::path& path,
                                                      const std::string& log_name) {
  store_options options;
  options.log_name = log_name;
  options.create_if_missing = false;
  if (auto ok = validate(options); !ok) return ok.error();
  // What is at the path first: "no CURRENT file" would be a riddle for a file or nothing.
  struct stat st {};
  const int looked = ::stat(path.c_str(), &st);
  const int err = errno;
  if (looked == 0 && !S_ISDIR(st.st_mode)) return error{errc::io_error, path.string() + " is not a directory"};
  if (looked != 0 && err == ENOENT) return error{errc::io_error, path.string() + ": no such directory"};
  auto found = has_current(path);
  if (!found) return found.error();
  if (!*found) return error{errc::io_error, path.string() + " is not a RocksDB database (no CURRENT file)"};
  auto families = list_families(path, false);
  if (!families) return families.error();
  if (!families->has_meta) {
    return error{errc::store_format_mismatch, path.string() + " has no dix.meta column family: not a dix primary store"};
  }
  auto p = std::make_unique<primary_store::impl>();
  p->path = path;
  p->options = options;
  p->read_only = true;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  auto s = open_past_torn_tail(path, *families, options, db_options(options), [&](const rocksdb::DBOptions& o) {
    return rocksdb::DB::OpenForReadOnly(o, path.string(), families->descriptors, &handles, &raw);
  });
  if (!s) return s.error();
  if (!s->ok()) return error{errc::io_error, open_failure(path, *s)};
  p->db.reset(raw);
  p->open = true;
  install_handles(*p, std::move(handles));
  return finish_open(std::move(p), false);
}

// ---------------------------------------------------------------------------------------------
// primary_store

result<void> primary_store::create_table(std::uint32_t table) {
  if (table == 0) return {errc::invalid_argument, "table id 0: must be in [1, 4294967295]"};
  std::unique_lock lock(impl_->lifecycle);
  if (!impl_->open) return {errc::io_error, "primary store " + impl_->path.string() + " is closed"};
  if (impl_->tables.count(table) != 0) return {};
  if (impl_->read_only) return {errc::invalid_argument, "primary store " + impl_->path.string() + " is open read-only"};
  rocksdb::ColumnFamilyHandle* handle = nullptr;
  auto s = impl_->db->CreateColumnFamily(family_options(impl_->options), table_family_name(table), &handle);
  if (!s.ok()) return {errc::io_error, "creating table " + std::to_string(table) + ": " + s.ToString()};
  impl_->handles.push_back(handle);
  impl_->tables[table] = handle;
  return {};
}

bool primary_store::has_table(std::uint32_t table) const {
  std::shared_lock lock(impl_->lifecycle);
  return impl_->tables.count(table) != 0;
}

transaction primary_store::begin(txn_flags flags) {
  auto st = std::make_unique<transaction::state>();
  st->store = shared_from_this();
  st->flags = flags;
  st->sync = impl_->options.sync_commits;
  return transaction(std::move(st));
}

result<std::optional<record>> primary_store::get(std::uint32_t table, std::string_view id) const {
  std::shared_lock lock(impl_->lifecycle);
  if (!impl_->open) return error{errc::io_error, "primary store " + impl_->path.string() + " is closed"};
  auto family = impl_->tables.find(table);
  if (family == impl_->tables.end()) {
    return error{errc::invalid_argument, "unknown table " + std::to_string(table)};
  }
  rocksdb::PinnableSlice value;
  auto s = impl_->db->Get(rocksdb::ReadOptions{}, family->second, slice(id), &value);
  if (s.IsNotFound()) return std::optional<record>{};
  if (!s.ok()) return error{errc::io_error, "reading table " + std::to_string(table) + ": " + s.ToString()};
  auto decoded = decode_value(value.ToStringView());
  if (!decoded) {
    return error{errc::record_corrupt, "table " + std::to_string(table) + ": " + decoded.error().message()};
  }
  return std::optional<record>{record{decoded->version, std::string(decoded->payload)}};
}

result<void> primary_store::scan(std::uint32_t table, std::string_view from,
                                 const std::function<bool(std::string_view, const record&)>& fn) const {
  std::shared_lock lock(impl_->lifecycle);
  if (!impl_->open) return {errc::io_error, "primary store " + impl_->path.string() + " is closed"};
  auto family = impl_->tables.find(table);
  if (family == impl_->tables.end()) return {errc::invalid_argument, "unknown table " + std::to_string(table)};
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(rocksdb::ReadOptions{}, family->second));
  record r;
  for (it->Seek(slice(from)); it->Valid(); it->Next()) {
    auto decoded = decode_value(it->value().ToStringView());
    if (!decoded) {
      return {errc::record_corrupt, "table " + std::to_string(table) + ": " + decoded.error().message()};
    }
    r.version = decoded->version;
    r.payload.assign(decoded->payload);
    if (!fn(it->key().ToStringView(), r)) return {};
  }
  if (!it->status().ok()) return {errc::io_error, "scanning table " + std::to_string(table) + ": " + it->status().ToString()};
  return {};
}

index_time_t primary_store::index_time() {
  return process_index_time().next(system_clock().wall_now_ns());
}

admission primary_store::admit(std::uint32_t table) const {
  if (impl_->has_admission_hook.load(std::memory_order_acquire)) {
    std::function<admission(std::uint32_t)> hook;
    {
      std::lock_guard g(impl_->hooks_mutex);
      hook = impl_->admission_hook;
    }
    if (hook) return hook(table);
  }
  if (impl_->gate.empty()) return admission{};
  return impl_->gate.admit({table}, false);
}

const std::string& primary_store::log_name() const noexcept { return impl_->options.log_name; }
const std::string& primary_store::identity() const noexcept { return impl_->identity; }
const std::filesystem::path& primary_store::path() const noexcept { return impl_->path; }

result<void> primary_store::close() { return impl_->close(); }

// ---------------------------------------------------------------------------------------------
// batch_builder

batch_builder::batch_builder() {
  // The header is the first record; its bytes are the last 24 of the rep after PutLogData.
  auto s = PutLogData(encode_header(txn_header{}));
  (void)s;  // appending to an in-memory batch cannot fail
  header_offset_ = rep_.size() - txn_header_bytes;
}

void batch_builder::put_versioned(rocksdb::ColumnFamilyHandle* family, std::string_view key,
                                  std::string_view payload) {
  static constexpr char zero_version[value_version_bytes] = {};
  rocksdb::Slice k = slice(key);
  rocksdb::Slice parts[2] = {rocksdb::Slice(zero_version, value_version_bytes), slice(payload)};
  auto s = Put(family, rocksdb::SliceParts(&k, 1), rocksdb::SliceParts(parts, 2));
  (void)s;  // sizes were validated (≤ 4096-byte ids); RocksDB's only failure is > 4 GiB
  // A Put record ends with its value, so the version starts value-length bytes from the end.
  version_offsets_.push_back(rep_.size() - value_version_bytes - payload.size());
  ++ops_;
}

void batch_builder::put_plain(rocksdb::ColumnFamilyHandle* family, std::string_view key, std::string_view value) {
  auto s = Put(family, slice(key), slice(value));
  (void)s;
  ++ops_;
}

void batch_builder::del(rocksdb::ColumnFamilyHandle* family, std::string_view key) {
  auto s = Delete(family, slice(key));
  (void)s;
  ++ops_;
}

void batch_builder::delete_range(rocksdb::ColumnFamilyHandle* family, std::string_view begin, std::string_view end) {
  auto s = DeleteRange(family, slice(begin), slice(end));
  (void)s;
  ++ops_;
}

void batch_builder::stamp(std::uint8_t flags, index_time_t time) {
  auto header = encode_header(txn_header{flags, time, ops_});
  rep_.replace(header_offset_, txn_header_bytes, header);
  std::string version;
  put_le<std::uint64_t>(version, time);
  for (auto offset : version_offsets_) rep_.replace(offset, value_version_bytes, version);
}

// ---------------------------------------------------------------------------------------------
// transaction

namespace {

// Records the first failure; later operations are ignored and commit() reports it.
void fail_txn(transaction::state& st, errc code, std::string message) {
  if (!st.failed) st.failed = error{code, std::move(message)};
}

// The handle of `table` for an operation, or null after recording why not. Caller holds lifecycle.
rocksdb::ColumnFamilyHandle* table_handle(transaction::state& st, primary_store::impl& p, std::uint32_t table,
                                          std::size_t op_index) {
  if (!p.open) {
    fail_txn(st, errc::io_error, "primary store " + p.path.string() + " is closed");
    return nullptr;
  }
  if (st.cached_handle != nullptr && st.cached_table == table) return st.cached_handle;
  auto where = "operation " + std::to_string(op_index) + ": ";
  if (table == 0) {
    fail_txn(st, errc::invalid_argument, where + "table id 0: must be in [1, 4294967295]");
    return nullptr;
  }
  auto it = p.tables.find(table);
  if (it == p.tables.end()) {
    fail_txn(st, errc::invalid_argument, where + "unknown table " + std::to_string(table) + " (create_table first)");
    return nullptr;
  }
  if (std::find(st.tables.begin(), st.tables.end(), table) == st.tables.end()) st.tables.push_back(table);
  st.cached_table = table;
  st.cached_handle = it->second;
  return it->second;
}

// Record ids are 1…4096 bytes; anything else fails the transaction.
bool valid_record_id(transaction::state& st, std::string_view id) {
  if (!id.empty() && id.size() <= max_record_id_bytes) return true;
  fail_txn(st, errc::invalid_argument, "operation " + std::to_string(st.batch.ops()) + ": record id of " +
                                           std::to_string(id.size()) + " bytes: must be 1…4096");
  return false;
}

bool usable(const std::unique_ptr<transaction::state>& st) { return st && !st->committed && !st->failed; }

}  // namespace

transaction::transaction(std::unique_ptr<state> s) : state_(std::move(s)) {}
transaction::transaction(transaction&&) noexcept = default;
transaction& transaction::operator=(transaction&&) noexcept = default;
transaction::~transaction() = default;

namespace {

// Checks a keyed operation and, under the lifecycle lock, hands the table's handle to `add`.
template <class Add>
void add_keyed(std::unique_ptr<transaction::state>& state, std::uint32_t table, std::string_view id, Add add) {
  if (!usable(state)) return;
  auto& st = *state;
  auto& p = primary_store_access::get(*st.store);
  std::shared_lock lock(p.lifecycle);
  auto* handle = table_handle(st, p, table, st.batch.ops());
  if (handle == nullptr || !valid_record_id(st, id)) return;
  add(st.batch, handle);
}

}  // namespace

void transaction::put(std::uint32_t table, std::string_view id, std::string_view payload) {
  add_keyed(state_, table, id, [&](batch_builder& b, rocksdb::ColumnFamilyHandle* h) { b.put_versioned(h, id, payload); });
}

void transaction::del(std::uint32_t table, std::string_view id) {
  add_keyed(state_, table, id, [&](batch_builder& b, rocksdb::ColumnFamilyHandle* h) { b.del(h, id); });
}

void transaction::delete_range(std::uint32_t table, std::string_view begin, std::string_view end) {
  if (!usable(state_)) return;
  auto& st = *state_;
  auto where = "operation " + std::to_string(st.batch.ops()) + ": ";
  if ((st.flags & txn_flags::reload) != txn_flags::reload) {
    return fail_txn(st, errc::invalid_argument, where + "delete_range needs a transaction flagged reload");
  }
  if (begin.size() > max_record_id_bytes || end.size() > max_record_id_bytes || !(begin < end)) {
    return fail_txn(st, errc::invalid_argument, where + "delete_range needs begin < end, each at most 4096 bytes");
  }
  auto& p = primary_store_access::get(*st.store);
  std::shared_lock lock(p.lifecycle);
  auto* handle = table_handle(st, p, table, st.batch.ops());
  if (handle == nullptr) return;
  st.batch.delete_range(handle, begin, end);
}

void transaction::set_sync(bool sync) {
  if (state_) state_->sync = sync;
}

std::size_t transaction::size() const noexcept { return state_ ? state_->batch.ops() : 0; }

result<commit_info> transaction::commit() {
  if (!state_ || state_->committed) return error{errc::invalid_argument, "transaction already committed"};
  auto& st = *state_;
  st.committed = true;
  if (st.failed) return *st.failed;
  auto& store = *st.store;
  // protocol.md §13.5: never gated are replicated and recovery transactions (system ones do not
  // come here), and tables nobody projects; a store no registration gates pays two atomic loads.
  const auto never_gated = txn_flags::replicated | txn_flags::recovery;
  auto& impl = primary_store_access::get(store);
  const bool hooked = impl.has_admission_hook.load(std::memory_order_acquire);
  if ((st.flags & never_gated) == txn_flags::none && (hooked || !impl.gate.empty())) {
    std::chrono::microseconds delay{0};
    auto refuse = [](const admission& a, const std::string& tables) {
      return error{errc::index_lagging, "index " + a.backend_id + " lags too far behind " + tables +
                                            "; nothing was written, retry after a pause"};
    };
    if (hooked) {
      for (auto table : st.tables) {
        auto a = store.admit(table);
        if (a.kind == admit_kind::reject) return refuse(a, "table " + std::to_string(table));
        if (a.kind == admit_kind::delay) delay = std::max(delay, a.delay);
      }
    } else {
      auto a = impl.gate.admit(st.tables, true);  // a refusal wakes the id's local runners
      if (a.kind == admit_kind::reject) return refuse(a, "the tables written");
      if (a.kind == admit_kind::delay) delay = a.delay;
    }
    // Throttled: wait outside the commit mutex (protocol.md §13.5), then commit.
    if (delay.count() > 0) impl.gate.wait(delay);
  }
  return primary_store_access::get(store).write(static_cast<std::uint8_t>(st.flags), st.batch, st.sync);
}

// ---------------------------------------------------------------------------------------------
// internal hooks

result<commit_info> commit_system(primary_store& s, const std::vector<meta_op>& ops) {
  auto& p = primary_store_access::get(s);
  std::shared_lock lock(p.lifecycle);
  return write_meta(p, ops);
}

result<std::optional<std::string>> read_meta(const primary_store& s, std::string_view key) {
  auto& p = primary_store_access::get(s);
  std::shared_lock lock(p.lifecycle);
  if (!p.open) return error{errc::io_error, "primary store " + p.path.string() + " is closed"};
  std::string value;
  auto st = p.db->Get(rocksdb::ReadOptions{}, p.meta, slice(key), &value);
  if (st.IsNotFound()) return std::optional<std::string>{};
  if (!st.ok()) return error{errc::io_error, "reading dix.meta: " + st.ToString()};
  return std::optional<std::string>{std::move(value)};
}

std::uint64_t add_commit_listener(primary_store& s, std::function<void(const commit_event&)> fn) {
  auto& p = primary_store_access::get(s);
  std::lock_guard g(p.hooks_mutex);
  auto id = p.next_hook_id++;
  p.listeners.emplace(id, std::move(fn));
  p.publish_listeners();
  return id;
}

void remove_commit_listener(primary_store& s, std::uint64_t id) {
  auto& p = primary_store_access::get(s);
  std::lock_guard g(p.hooks_mutex);
  p.listeners.erase(id);
  p.publish_listeners();
}

std::uint64_t add_close_listener(primary_store& s, std::function<void()> fn) {
  auto& p = primary_store_access::get(s);
  std::lock_guard g(p.hooks_mutex);
  auto id = p.next_hook_id++;
  p.close_listeners.emplace(id, std::move(fn));
  return id;
}

void remove_close_listener(primary_store& s, std::uint64_t id) {
  auto& p = primary_store_access::get(s);
  std::lock_guard g(p.hooks_mutex);
  p.close_listeners.erase(id);
}

write_gate& gate_of(primary_store& s) noexcept { return primary_store_access::get(s).gate; }

void set_admission_hook(primary_store& s, std::function<admission(std::uint32_t)> hook) {
  auto& p = primary_store_access::get(s);
  std::lock_guard g(p.hooks_mutex);
  p.has_admission_hook.store(static_cast<bool>(hook), std::memory_order_release);
  p.admission_hook = std::move(hook);
}

result<std::vector<wal_file_info>> list_wal_files(const primary_store::impl& p) {
  rocksdb::VectorLogPtr files;
  auto s = p.db->GetSortedWalFiles(files);
  if (!s.ok()) return error{errc::io_error, "listing WAL files of " + p.path.string() + ": " + s.ToString()};
  std::vector<wal_file_info> out;
  out.reserve(files.size());
  for (const auto& f : files) {
    out.push_back(wal_file_info{f->StartSequence(), f->SizeFileBytes(), f->Type() == rocksdb::kArchivedLogFile,
                                p.path.string() + f->PathName()});
  }
  return out;
}

wal_retention retention_of(const std::vector<wal_file_info>& files, const store_options& o,
                           std::uint64_t anchor_sequence, std::uint64_t wall_now_ns) {
  wal_retention r;
  const wal_file_info* holder = nullptr;
  for (const auto& f : files) {
    r.wal_retained_bytes += f.size;
    if (f.archived) r.archived_bytes += f.size;
    if (r.wal_oldest_sequence == 0 && f.start_sequence != 0) r.wal_oldest_sequence = f.start_sequence;
    if (anchor_sequence != 0 && f.start_sequence <= anchor_sequence) holder = &f;
  }
  r.wal_files = files.size();
  if (anchor_sequence == 0 && !files.empty()) holder = &files.front();
  if (o.wal_size_limit_mb != 0) {
    r.retention_headroom_bytes = static_cast<std::int64_t>(o.wal_size_limit_mb << 20) -
                                 static_cast<std::int64_t>(r.archived_bytes);
  }
  auto mtime_ns_of = [](const wal_file_info& f) -> std::optional<std::int64_t> {
    struct stat st{};
    if (::stat(f.path.c_str(), &st) != 0) return std::nullopt;
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  };
  if (files.size() >= 2) {
    const auto oldest = mtime_ns_of(files.front());
    const auto span_ns = oldest ? static_cast<std::int64_t>(wall_now_ns) - *oldest : 0;
    if (span_ns > 0) {
      const auto bytes = static_cast<long double>(r.wal_retained_bytes - files.front().size);
      r.wal_write_bytes_per_s = static_cast<std::uint64_t>(bytes * 1e9L / static_cast<long double>(span_ns));
    }
  }
  // RocksDB's own TTL purge goes by mtime: the archive age is now − the holder's mtime.
  if (o.wal_ttl_s != 0 && holder != nullptr && holder->archived) {
    struct stat st{};
    if (::stat(holder->path.c_str(), &st) == 0) {
      auto mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
      auto age_ms = (static_cast<std::int64_t>(wall_now_ns) - mtime_ns) / 1'000'000;
      r.retention_headroom_ms = static_cast<std::int64_t>(o.wal_ttl_s) * 1000 - age_ms;
    }
  }
  return r;
}

struct primary_store::impl::wal_sample {
  std::chrono::steady_clock::time_point at;
  std::vector<wal_file_info> files;
};

result<wal_retention> sampled_retention(primary_store& s, std::uint64_t anchor_sequence, std::uint64_t wall_now_ns,
                                        std::chrono::steady_clock::time_point now, std::chrono::milliseconds max_age) {
  auto& p = primary_store_access::get(s);
  std::shared_ptr<const primary_store::impl::wal_sample> sample;
  {
    std::lock_guard g(p.wal_sample_mutex);
    sample = p.last_wal_sample;
  }
  if (!sample || now < sample->at || now - sample->at >= max_age) {
    std::shared_lock lock(p.lifecycle);
    if (!p.open) return error{errc::io_error, "primary store " + p.path.string() + " is closed"};
    auto files = list_wal_files(p);
    if (!files) return files.error();
    auto fresh = std::make_shared<primary_store::impl::wal_sample>();
    fresh->at = now;
    fresh->files = std::move(*files);
    std::lock_guard g(p.wal_sample_mutex);
    p.last_wal_sample = fresh;
    sample = std::move(fresh);
  }
  return retention_of(sample->files, p.options, anchor_sequence, wall_now_ns);
}

std::uint64_t latest_sequence(const primary_store& s) {
  auto& p = primary_store_access::get(s);
  std::shared_lock lock(p.lifecycle);
  return p.open ? p.db->GetLatestSequenceNumber() : 0;
}

void set_space_probe(primary_store& s, space_probe probe, std::chrono::milliseconds max_age) {
  auto& p = primary_store_access::get(s);
  std::lock_guard guard(p.commit_mutex);
  p.probe = std::move(probe);
  p.space = space_gate(max_age);
}

std::uint64_t free_space_reserve(primary_store& s) {
  auto& p = primary_store_access::get(s);
  std::lock_guard guard(p.commit_mutex);
  return store_reserve_bytes(p.options.free_space_reserve_bytes, p.space.capacity_bytes());
}

std::uint64_t synced_sequence(const primary_store& s) noexcept {
  return primary_store_access::get(s).synced_sequence.load(std::memory_order_acquire);
}

result<std::uint64_t> sync_wal(primary_store& s) {
  auto& p = primary_store_access::get(s);
  std::shared_lock lock(p.lifecycle);
  if (!p.open) return error{errc::io_error, "primary store " + p.path.string() + " is closed"};
  // Read first: SyncWAL makes at least everything written before it durable.
  auto latest = p.db->GetLatestSequenceNumber();
  auto st = p.db->SyncWAL();
  if (!st.ok()) return error{errc::io_error, "SyncWAL on " + p.path.string() + ": " + st.ToString()};
  p.wal_syncs.fetch_add(1, std::memory_order_relaxed);
  auto prev = p.synced_sequence.load(std::memory_order_relaxed);
  while (prev < latest && !p.synced_sequence.compare_exchange_weak(prev, latest)) {
  }
  return latest;
}

namespace {

// `read(p)` under the store's commit mutex (so no commit is between its reads), the lifecycle
// held shared so the store cannot close meanwhile. io_error when it is closed.
template <class T, class Read>
result<T> under_commit_mutex(primary_store& s, Read read) {
  auto& p = primary_store_access::get(s);
  std::shared_lock lock(p.lifecycle);
  if (!p.open) return error{errc::io_error, "primary store " + p.path.string() + " is closed"};
  std::lock_guard guard(p.commit_mutex);
  return read(p);
}

}  // namespace

result<coverage_point> capture_coverage_point(primary_store& s) {
  return under_commit_mutex<coverage_point>(s, [](auto& p) {
    coverage_point point;
    point.latest_sequence = p.db->GetLatestSequenceNumber();
    point.time = process_index_time().next(system_clock().wall_now_ns());
    return point;
  });
}

result<std::uint64_t> latest_sequence_under_commit_mutex(primary_store& s) {
  return under_commit_mutex<std::uint64_t>(s, [](auto& p) { return static_cast<std::uint64_t>(p.db->GetLatestSequenceNumber()); });
}

}  // namespace dix
