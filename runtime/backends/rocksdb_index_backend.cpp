#include <dix/backends/rocksdb_index_backend.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <dix/applier.hpp>
#include <dix/memory.hpp>

#include "backends/index_dir.hpp"
#include "backends/index_space.hpp"
#include "backends/rocksdb_index_probe.hpp"
#include "core/bytes.hpp"
#include "core/names.hpp"

namespace dix {
namespace {

constexpr std::size_t max_keys = 256;
constexpr std::size_t max_key_bytes = 1024;
constexpr const char* entries_family = "entries";
constexpr const char* reverse_family = "reverse";
constexpr const char* meta_family = "meta";
constexpr std::string_view cursor_key = "cursor";
// The last publish_coverage (protocol.md §12.3) beside the cursor: u64 epoch, u64 coverage_time,
// u32 count, then per log (u16 name length, name, u64 sequence), little-endian. Informational.
constexpr std::string_view coverage_key = "coverage";
// How many resets the database has seen (u64 little-endian; absent = 0): bumped by each reset in
// the synced batch that deletes the cursor, before any family is dropped, so a reader's secondary
// instance learns that its family handles may name dropped families (decision 0028).
constexpr std::string_view resets_key = "resets";
// The digest of the entries (<dix/digest.hpp>, formats.md §7): 24 bytes, written in every batch's
// WriteBatch beside its entries and cursor, so it is exactly as durable as they are. Absent in a
// database written before digests: computed once from `reverse` when first needed.
constexpr std::string_view digest_key = "digest";

rocksdb::Slice slice(std::string_view s) { return {s.data(), s.size()}; }

// The info log of an open retried after a failed one. RocksDB's own logger renames LOG to
// LOG.old.<microseconds> at every open, so a database that cannot be opened would gain one file
// per retry, forever; this one appends to LOG and renames nothing. When LOG cannot be opened
// either (the path is not a directory) it discards: RocksDB's error says what is wrong.
class appending_logger final : public rocksdb::Logger {
 public:
  explicit appending_logger(const std::filesystem::path& file) : file_(std::fopen(file.c_str(), "ae")) {}
  ~appending_logger() override {
    if (file_) std::fclose(file_);
  }
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    if (!file_) return;
    char stamp[32] = "";
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    if (localtime_r(&now, &local)) std::strftime(stamp, sizeof stamp, "%Y/%m/%d-%H:%M:%S", &local);
    // One line per call under the stream's lock: concurrent RocksDB threads do not interleave.
    flockfile(file_);
    std::fprintf(file_, "%s ", stamp);
    std::vfprintf(file_, format, ap);
    std::fputc('\n', file_);
    funlockfile(file_);
  }
  void Flush() override {
    if (file_) std::fflush(file_);
  }

 private:
  std::FILE* file_;
};

// Keeps nothing: the read-only look of a filesystem too full to open for writing writes no LOG.
class silent_logger final : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const char*, va_list) override {}
};

// Record ref: u8 log length, log, u32 big-endian table, record id.
std::string encode_ref(std::string_view log, std::uint32_t table, std::string_view id) {
  std::string out;
  out.reserve(1 + log.size() + 4 + id.size());
  out.push_back(static_cast<char>(log.size()));
  out.append(log);
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((table >> shift) & 0xFF));
  out.append(id);
  return out;
}

bool decode_ref(std::string_view bytes, record_ref& out) {
  if (bytes.empty()) return false;
  auto log_len = static_cast<std::uint8_t>(bytes[0]);
  if (bytes.size() < 1u + log_len + 4u) return false;
  out.log.assign(bytes.substr(1, log_len));
  std::uint32_t table = 0;
  for (std::size_t i = 0; i < 4; ++i) table = (table << 8) | static_cast<std::uint8_t>(bytes[1 + log_len + i]);
  out.table = table;
  out.record_id.assign(bytes.substr(1 + log_len + 4));
  return true;
}

// One `reverse` entry (formats.md §6.2: record ref → u64 version + projection) as the digest
// counts it (§7), into `out` (its buffers reused); false when the entry is malformed.
bool reverse_entry(std::string_view key, std::string_view value, digest_entry& out) {
  record_ref ref;
  ref.log = std::move(out.log);
  ref.record_id = std::move(out.record_id);
  if (!decode_ref(key, ref) || value.size() < 8) return false;
  out.log = std::move(ref.log);
  out.table = ref.table;
  out.record_id = std::move(ref.record_id);
  out.version = get_le<std::uint64_t>(value, 0);
  out.hash = entry_hash(out.log, out.table, out.record_id, out.version, value.substr(8));
  return true;
}

// Index key escaped (0x00 → 0x00 0xFF) so a terminator 0x00 0x01 keeps key order for ranges.
std::string escape_key(std::string_view key) {
  std::string out;
  out.reserve(key.size() + 2);
  for (char c : key) {
    out.push_back(c);
    if (c == '\0') out.push_back('\xFF');
  }
  return out;
}

std::string entry_key(std::string_view index_key, std::string_view ref) {
  auto out = escape_key(index_key);
  out.push_back('\0');
  out.push_back('\x01');
  out.append(ref);
  return out;
}

// The record ref after the 0x00 0x01 terminator of an entry key, or empty when malformed.
std::string_view ref_of_entry(std::string_view entry) {
  for (std::size_t i = 0; i + 1 < entry.size(); ++i) {
    if (entry[i] != '\0') continue;
    if (entry[i + 1] == '\x01') return entry.substr(i + 2);
    ++i;  // an escaped 0x00 0xFF
  }
  return {};
}

// Options of each family. `reverse` is read once per record of every batch, and on a fresh or
// growing index almost every read misses: a whole-key bloom filter in the memtable and in every
// SST answers a miss without searching the skiplist or reading a data block. `entries` is only
// read by prefix scans (lookup, range), which a whole-key filter cannot serve. Every family's
// blocks are cached in the process's memory budget (decision 0014).
rocksdb::ColumnFamilyOptions family_options(const std::string& name) {
  rocksdb::ColumnFamilyOptions o;
  if (name == entries_family || name == reverse_family) {
    // apply() hands each batch's writes over in key order. Without a hint the memtable reuses
    // the previous insert's position only when the next key falls in the very same gap, and
    // otherwise searches from the head; with one (an empty prefix: one hint per memtable, so no
    // memory per index key) it climbs from the previous position only as far as needed.
    o.memtable_insert_with_hint_prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(0));
  }
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = budget_block_cache();
  if (name == reverse_family) {
    o.memtable_prefix_bloom_size_ratio = 0.02;  // of write_buffer_size (64 MiB): a 1.3 MiB filter
    o.memtable_whole_key_filtering = true;
    table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  }
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return o;
}

}  // namespace

void rocksdb_index_open_options(rocksdb::DBOptions& db, std::vector<rocksdb::ColumnFamilyDescriptor>& families) {
  db = rocksdb::DBOptions{};
  db.create_if_missing = true;
  db.create_missing_column_families = true;
  join_memory_budget(db);  // the process's memory budget (decision 0014)
  families.clear();
  for (const std::string name : {rocksdb::kDefaultColumnFamilyName.c_str(), entries_family, reverse_family, meta_family}) {
    families.emplace_back(name, family_options(name));
  }
}

result<void> validate(const rocksdb_index_options& o) {
  if (o.path.empty()) return {errc::invalid_argument, "rocksdb_index_options.path = \"\": must name a directory"};
  if (o.max_queued_bytes < 1024 || o.max_queued_bytes > (16ull << 30)) {
    return {errc::invalid_argument, "rocksdb_index_options.max_queued_bytes = " + std::to_string(o.max_queued_bytes) +
                                        ": must be in [1024, 17179869184]"};
  }
  return check_reserve_option("rocksdb_index_options.free_space_reserve_bytes", o.free_space_reserve_bytes);
}

std::string encode_keys(const std::vector<std::string>& keys) {
  std::string out;
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(keys.size()));
  for (const auto& k : keys) {
    // Longer than a u16 can say: encode the first 65535 bytes, which decode as key_too_long.
    auto n = std::min<std::size_t>(k.size(), 0xFFFF);
    put_le<std::uint16_t>(out, static_cast<std::uint16_t>(n));
    out.append(k, 0, n);
  }
  return out;
}

result<std::vector<std::string>> decode_keys(std::string_view bytes) {
  auto bad = [](const char* code) { return error{errc::invalid_argument, code}; };
  if (bytes.size() < 4) return bad("bad_encoding");
  auto n = get_le<std::uint32_t>(bytes, 0);
  if (n > max_keys) return bad("too_many_keys");
  std::vector<std::string> keys;
  keys.reserve(n);
  std::size_t at = 4;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (bytes.size() - at < 2) return bad("bad_encoding");
    auto len = get_le<std::uint16_t>(bytes, at);
    at += 2;
    if (bytes.size() - at < len) return bad("bad_encoding");
    if (len == 0) return bad("bad_encoding");
    if (len > max_key_bytes) return bad("key_too_long");
    keys.emplace_back(bytes.substr(at, len));
    at += len;
  }
  if (at != bytes.size()) return bad("bad_encoding");
  return keys;
}

// ---------------------------------------------------------------------------------------------

// The engine under the applier skeleton (<dix/applier.hpp>, decision 0050): the skeleton owns
// the queue, the applier thread, fencing, barriers, poisoning and the callbacks; this is the
// database, its free-space holds (decision 0013) and its reset.
struct rocksdb_index_backend::impl final : applier_engine {
  std::string id;
  rocksdb_index_options options;

  // The database. Opened lazily, closed by shutdown. Queries and the applier hold `db_mutex`
  // shared; open, close and reset hold it exclusively.
  mutable std::shared_mutex db_mutex;
  std::unique_ptr<rocksdb::DB> db;
  rocksdb::ColumnFamilyHandle* entries = nullptr;
  rocksdb::ColumnFamilyHandle* reverse = nullptr;
  rocksdb::ColumnFamilyHandle* meta = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;

  // Free space (decision 0013): deliveries are held below the reserve (the skeleton watches for
  // room every poll_interval), batches wait below half of it.
  std::unique_ptr<index_space> space;

  // The test point before each step of reset (rocksdb_index_probe); empty in production.
  std::mutex hook_mutex;
  std::function<bool(reset_step)> reset_hook;
  // The digest view's bound on what it keeps to name records whose families disagree
  // (2^18; a test lowers it through rocksdb_index_probe).
  std::atomic<std::size_t> max_named{std::size_t{1} << 18};

  // Set by a failed open, cleared by a successful one: the next attempt logs through an
  // appending_logger, so retries leave no LOG.old.* behind (docs/operations.md).
  bool open_failed = false;

  // The digest of what the database holds, as its `digest` key has it: known on the applier
  // thread only (apply, reset), loaded (or computed from `reverse`) at the first batch after an
  // open; forgotten when the database closes.
  std::optional<index_digest> digest;

  // Last member: destroyed (its thread stopped) before the database it applies to.
  std::unique_ptr<applier> skeleton;

  ~impl() override {
    if (skeleton) skeleton->stop();
    close_db();
  }

  backend_host* host() const { return skeleton->host(); }
  // Caller holds db_mutex exclusively.
  result<void> open_db();
  error open_refusal(const rocksdb::Status& s) const;
  void close_db();
  // Opens under the exclusive lock if needed.
  result<void> ensure_open();
  bool database_open() const {
    std::shared_lock lock(db_mutex);
    return db != nullptr;
  }
  result<std::optional<std::string>> read_cursor_read_only();
  result<void> apply(const batch& b);
  // Caller holds db_mutex (shared is enough): the stored digest, or one computed from `reverse`.
  result<index_digest> read_digest(const rocksdb::Snapshot* at) const;
  result<void> run_reset();
  result<void> open_or_replace();
  static std::uint64_t weight(const batch& b) { return std::max<std::uint64_t>(b.bytes, 1); }

  // applier_engine
  result<std::optional<cursor>> load_cursor() override;
  result<apply_outcome> apply_batch(const batch& b) override {
    // Taken before space ran short, for a database not open yet: it waits at the front.
    if (!database_open() && !space->check_open()) return apply_outcome::later;
    if (auto ok = apply(b); !ok) return ok.error();
    return apply_outcome::applied;
  }
  result<bool> commit(const std::optional<cursor>& through, epoch_t epoch) override;
  result<void> close() override {
    std::unique_lock lock(db_mutex);
    close_db();
    return {};
  }
  result<void> reset_index() override { return run_reset(); }
  // Its entries now and their flush later: about twice the batch (decision 0013).
  backend_hold hold_for(const batch& b) override {
    return space->admits(index_space::level::deliver, 2 * weight(b)) ? backend_hold::none : backend_hold::low_disk_space;
  }
  bool ready(const batch& b) override { return space->admits(index_space::level::apply, 2 * weight(b)); }
  std::chrono::milliseconds poll_interval() override { return space->poll_interval(); }
  // Short of space: the live WAL counts as used until the memtables are flushed; with nothing
  // more applied nothing else would flush them, and a deferral that only they cause would last
  // forever (issue 34 item 4): flush them, and the next look sees what is really left.
  void on_poll() override {
    std::shared_lock db_lock(db_mutex);
    if (db && space->flush_would_help()) {
      rocksdb::FlushOptions fo;
      fo.wait = true;
      fo.allow_write_stall = true;
      db->Flush(fo, handles).PermitUncheckedError();
    }
  }
};

// An open that failed. A database damaged beyond opening — a corrupt file, or a file of its own
// missing (its directory is ours, decision 0038) — holds no cursor anyone can trust:
// cursor_invalid, which the runner condemns at once (cursor-missing) and a rebuild's reset
// replaces. Anything else (an I/O error, a lock) is io_error: a transient fault, retried.
error rocksdb_index_backend::impl::open_refusal(const rocksdb::Status& s) const {
  if (s.IsCorruption() || s.IsPathNotFound()) {
    return {errc::cursor_invalid, "index " + id + ": its database " + options.path.string() + " is damaged (" + s.ToString() +
                                      "): no cursor in it can be trusted; a rebuild replaces it"};
  }
  return {errc::io_error, "index " + id + ": cannot open " + options.path.string() + ": " + s.ToString()};
}

result<void> rocksdb_index_backend::impl::open_db() {
  if (db) return {};
  if (auto room = space->check_open(); !room) return room;
  rocksdb::DBOptions o;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  rocksdb_index_open_options(o, families);
  o.allow_fallocate = false;  // as the primary store (decision 0013): a failing preallocation fills the filesystem
  if (open_failed) o.info_log = std::make_shared<appending_logger>(options.path / "LOG");
  std::vector<rocksdb::ColumnFamilyHandle*> opened;
  rocksdb::DB* raw = nullptr;
  auto s = rocksdb::DB::Open(o, options.path.string(), families, &opened, &raw);
  open_failed = !s.ok();
  if (!s.ok()) return open_refusal(s);
  db.reset(raw);
  handles = opened;
  entries = opened[1];
  reverse = opened[2];
  meta = opened[3];
  return {};
}

result<std::optional<std::string>> rocksdb_index_backend::impl::read_cursor_read_only() {
  std::error_code ec;
  if (!std::filesystem::exists(options.path / "CURRENT", ec)) return std::optional<std::string>{};  // a new index
  rocksdb::DBOptions o;
  o.info_log = std::make_shared<silent_logger>();
  std::vector<rocksdb::ColumnFamilyDescriptor> families{{rocksdb::kDefaultColumnFamilyName, {}}, {meta_family, {}}};
  std::vector<rocksdb::ColumnFamilyHandle*> opened;
  rocksdb::DB* raw = nullptr;
  auto s = rocksdb::DB::OpenForReadOnly(o, options.path.string(), families, &opened, &raw);
  if (!s.ok()) return open_refusal(s);
  std::unique_ptr<rocksdb::DB> look(raw);
  std::string value;
  s = look->Get(rocksdb::ReadOptions{}, opened[1], slice(cursor_key), &value);
  for (auto* h : opened) look->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  look->Close().PermitUncheckedError();
  if (s.IsNotFound()) return std::optional<std::string>{};
  if (!s.ok()) return error{errc::io_error, "index " + id + ": reading the cursor: " + s.ToString()};
  return std::optional<std::string>{std::move(value)};
}

void rocksdb_index_backend::impl::close_db() {
  if (!db) return;
  for (auto* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  handles.clear();
  entries = reverse = meta = nullptr;
  digest.reset();
  db->Close().PermitUncheckedError();
  db.reset();
}

result<void> rocksdb_index_backend::impl::ensure_open() {
  {
    std::shared_lock lock(db_mutex);
    if (db) return {};
  }
  std::unique_lock lock(db_mutex);
  return open_db();
}


result<void> rocksdb_index_backend::impl::apply(const batch& b) {
  if (auto ok = ensure_open(); !ok) return ok;
  std::shared_lock lock(db_mutex);
  // The records of a batch are distinct keys: read every current reverse entry in one MultiGet.
  const auto n = b.records.size();
  std::vector<std::string> refs;
  refs.reserve(n);
  for (const auto& r : b.records) refs.push_back(encode_ref(r.log, r.table, r.record_id));
  std::vector<rocksdb::Slice> ref_slices(refs.begin(), refs.end());
  std::vector<rocksdb::PinnableSlice> old_values(n);
  std::vector<rocksdb::Status> statuses(n);
  if (n > 0) db->MultiGet(rocksdb::ReadOptions{}, reverse, n, ref_slices.data(), old_values.data(), statuses.data());
  // The writes are collected and handed to the batch in key order, per family: the memtable
  // then finds each insert's place from the previous one (see family_options). Refs are
  // distinct, so an entry key belongs to one record; an entry both removed and written again
  // (a key the record keeps) already exists and is not touched at all.
  struct entry_write {
    std::string key;
    bool put = false;
  };
  std::vector<entry_write> entry_writes;
  entry_writes.reserve(n);
  std::vector<std::string> reverse_values(n);  // per record: its reverse value; absent: deleted
  std::vector<bool> reverse_put(n, false);
  std::vector<std::string> old_entries;
  const bool keep_digest = options.digest;
  if (keep_digest && !digest) {
    auto stored = read_digest(nullptr);
    if (!stored) return stored.error();
    digest = *stored;
  }
  auto next_digest = keep_digest ? *digest : index_digest{};  // kept only if the batch is written
  for (std::size_t i = 0; i < n; ++i) {
    const auto& r = b.records[i];
    const auto& ref = refs[i];
    const auto& s = statuses[i];
    auto old_value = old_values[i].ToStringView();
    old_entries.clear();
    if (keep_digest && s.ok() && old_value.size() >= 8) {
      next_digest.remove(entry_hash(r.log, r.table, r.record_id, get_le<std::uint64_t>(old_value, 0), old_value.substr(8)));
    }
    if (s.ok() && old_value.size() >= 8) {
      if (auto old_keys = decode_keys(old_value.substr(8))) {
        for (const auto& k : *old_keys) old_entries.push_back(entry_key(k, ref));
        // A projection may repeat a key: one entry, which a kept key must clear entirely.
        std::sort(old_entries.begin(), old_entries.end());
        old_entries.erase(std::unique(old_entries.begin(), old_entries.end()), old_entries.end());
      }
    } else if (!s.ok() && !s.IsNotFound()) {
      return {errc::io_error, "index " + id + ": reading reverse entry: " + s.ToString()};
    }
    std::optional<std::vector<std::string>> keys;
    if (r.state.kind == state_kind::record) {
      auto decoded = decode_keys(r.state.projection);
      if (decoded) keys = std::move(*decoded);
      else if (auto* h = host(); h != nullptr) h->note_unindexable(decoded.error().message());
    }
    if (keys) {
      for (const auto& k : *keys) {
        auto key = entry_key(k, ref);
        auto kept = std::find(old_entries.begin(), old_entries.end(), key);
        if (kept != old_entries.end()) {
          kept->clear();  // present before and after: neither removed nor written
        } else {
          entry_writes.push_back(entry_write{std::move(key), true});
        }
      }
      auto& value = reverse_values[i];
      value.reserve(8 + r.state.projection.size());
      put_le<std::uint64_t>(value, r.state.version);
      value += r.state.projection;
      reverse_put[i] = true;
      if (keep_digest) next_digest.add(entry_hash(r.log, r.table, r.record_id, r.state.version, r.state.projection));
    }
    for (auto& old : old_entries) {
      if (!old.empty()) entry_writes.push_back(entry_write{std::move(old), false});
    }
  }
  // No key is both removed and written (old entries are unique, a kept one is cleared), so the
  // order among equal keys (repeated puts) does not matter.
  std::vector<std::size_t> order(entry_writes.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t x, std::size_t y) { return entry_writes[x].key < entry_writes[y].key; });
  rocksdb::WriteBatch wb;
  for (auto i : order) {
    const auto& w = entry_writes[i];
    if (w.put) wb.Put(entries, w.key, rocksdb::Slice()).PermitUncheckedError();
    else wb.Delete(entries, w.key).PermitUncheckedError();
  }
  order.resize(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  auto by_ref = [&](std::size_t x, std::size_t y) { return refs[x] < refs[y]; };
  if (!std::is_sorted(order.begin(), order.end(), by_ref)) std::sort(order.begin(), order.end(), by_ref);  // ids often ascend
  for (auto i : order) {
    if (reverse_put[i]) wb.Put(reverse, refs[i], reverse_values[i]).PermitUncheckedError();
    else wb.Delete(reverse, refs[i]).PermitUncheckedError();
  }
  if (b.through) wb.Put(meta, slice(cursor_key), slice(b.through->bytes())).PermitUncheckedError();
  if (keep_digest) wb.Put(meta, slice(digest_key), next_digest.encode()).PermitUncheckedError();
  else wb.Delete(meta, slice(digest_key)).PermitUncheckedError();
  rocksdb::WriteOptions wo;
  wo.sync = false;
  auto s = db->Write(wo, &wb);
  if (!s.ok()) return {errc::io_error, "index " + id + ": writing a batch: " + s.ToString()};
  if (keep_digest) digest = next_digest;
  return {};
}

result<index_digest> rocksdb_index_backend::impl::read_digest(const rocksdb::Snapshot* at) const {
  rocksdb::ReadOptions ro;
  ro.snapshot = at;
  std::string value;
  auto s = db->Get(ro, meta, slice(digest_key), &value);
  if (s.ok()) {
    if (auto d = index_digest::decode(value)) return *d;
    return error{errc::io_error, "index " + id + ": its stored digest is " + std::to_string(value.size()) + " bytes, not 24"};
  }
  if (!s.IsNotFound()) return error{errc::io_error, "index " + id + ": reading the digest: " + s.ToString()};
  // Written before digests: every reverse entry is one indexed record.
  index_digest d;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro, reverse));
  digest_entry e;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (!reverse_entry(it->key().ToStringView(), it->value().ToStringView(), e)) {
      return error{errc::io_error, "index " + id + ": a malformed reverse entry"};
    }
    d.add(e.hash);
  }
  if (!it->status().ok()) return error{errc::io_error, "index " + id + ": computing the digest: " + it->status().ToString()};
  return d;
}

// A closed database has applied nothing since it was (shut down or never) opened, so there is
// nothing to sync — and a filesystem too full to open it must not fail the barrier. With
// manual_wal_flush off every Write handed its bytes to the file already: FlushWAL(true) only syncs
// them and adds none (decision 0013). Each batch wrote its cursor with its entries.
result<bool> rocksdb_index_backend::impl::commit(const std::optional<cursor>&, epoch_t) {
  std::shared_lock lock(db_mutex);
  if (db) {
    auto s = db->FlushWAL(true);
    if (!s.ok()) return error{errc::io_error, "index " + id + ": FlushWAL: " + s.ToString()};
  }
  return true;
}

namespace {

// The files a RocksDB database writes in its directory (and its WAL archive): what a reset of a
// database that cannot be opened removes, by name (decision 0038).
bool is_rocksdb_file(std::string_view name) {
  auto starts = [&](std::string_view head) { return name.rfind(head, 0) == 0; };
  auto ends = [&](std::string_view tail) { return name.size() > tail.size() && name.substr(name.size() - tail.size()) == tail; };
  return name == "CURRENT" || name == "IDENTITY" || name == "LOCK" || name == "LOG" || name == "archive" ||
         starts("LOG.old.") || starts("MANIFEST-") || starts("OPTIONS-") || ends(".sst") || ends(".log") ||
         ends(".blob") || ends(".dbtmp");
}

// Whether another process holds the database's LOCK (RocksDB takes a POSIX write lock on it).
bool lock_held_elsewhere(const std::filesystem::path& lock_file) {
  const int fd = ::open(lock_file.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock probe {};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  const bool held = ::fcntl(fd, F_GETLK, &probe) == 0 && probe.l_type != F_UNLCK;
  ::close(fd);
  return held;
}

}  // namespace

// A database that cannot be opened (a corrupt CURRENT or MANIFEST, a lost file) is made anew: no
// cursor can be read from it, so nothing trusts it; its files go by name, CURRENT first (a crash
// from there leaves no database, never a torn one), then an empty one is created. Not while
// another process holds it, nor below the free-space reserve (that open failed for want of space,
// not for damage). Caller holds db_mutex exclusively.
result<void> rocksdb_index_backend::impl::open_or_replace() {
  if (auto room = space->check_open(); !room) return room;
  auto opened = open_db();
  if (opened) return opened;
  if (lock_held_elsewhere(options.path / "LOCK")) return opened;
  std::error_code ec;
  std::filesystem::remove(options.path / "CURRENT", ec);
  if (ec) return {errc::io_error, "index " + id + ": reset: removing " + (options.path / "CURRENT").string() + ": " + ec.message()};
  if (auto ok = index_dir::remove_own(options.path, is_rocksdb_file, "index " + id + ": reset"); !ok) return ok;
  if (auto again = open_db(); !again) {
    return {errc::io_error, again.error().message() + " (after removing the files of a database that could not be opened: " +
                                opened.error().message() + ")"};
  }
  return {};
}

result<void> rocksdb_index_backend::impl::run_reset() {
  std::unique_lock lock(db_mutex);
  if (auto ok = open_or_replace(); !ok) return ok;
  std::function<bool(reset_step)> hook;
  {
    std::lock_guard g(hook_mutex);
    hook = reset_hook;
  }
  auto injected = [&](reset_step step) { return hook && hook(step); };
  auto fail = [&](reset_step step, const std::string& what) -> result<void> {
    return {errc::io_error, "index " + id + ": reset, " + std::string(to_string(step)) + ": " + what};
  };
  if (injected(reset_step::delete_cursor)) return fail(reset_step::delete_cursor, "injected");
  rocksdb::WriteOptions sync;
  sync.sync = true;
  rocksdb::Status s;
  // The cursor goes first, durably: a crash from here on leaves a cursorless index. The coverage
  // positions stored beside it go with it: they describe entries about to be destroyed.
  std::string resets_value;
  s = db->Get(rocksdb::ReadOptions{}, meta, slice(resets_key), &resets_value);
  if (!s.ok() && !s.IsNotFound()) return fail(reset_step::delete_cursor, s.ToString());
  const std::uint64_t resets = s.ok() && resets_value.size() == 8 ? get_le<std::uint64_t>(resets_value, 0) : 0;
  resets_value.clear();
  put_le<std::uint64_t>(resets_value, resets + 1);
  rocksdb::WriteBatch gone;
  gone.Put(meta, slice(resets_key), resets_value).PermitUncheckedError();
  gone.Delete(meta, slice(cursor_key)).PermitUncheckedError();
  gone.Delete(meta, slice(coverage_key)).PermitUncheckedError();
  gone.Delete(meta, slice(digest_key)).PermitUncheckedError();
  digest.reset();  // whatever follows: read again (empty once the families are recreated)
  s = db->Write(sync, &gone);
  if (!s.ok()) return fail(reset_step::delete_cursor, s.ToString());
  // From here on no cursor exists on disk; the skeleton forgets its own after any outcome (a
  // failed reset's cursor is read again), never reporting one over half-destroyed entries.
  struct family_steps {
    rocksdb::ColumnFamilyHandle** handle;
    reset_step drop;
    reset_step create;
  };
  for (auto [family, drop, create] : {family_steps{&entries, reset_step::drop_entries, reset_step::create_entries},
                                      family_steps{&reverse, reset_step::drop_reverse, reset_step::create_reverse}}) {
    const auto name = (*family)->GetName();
    s = injected(drop) ? rocksdb::Status::IOError("injected") : db->DropColumnFamily(*family);
    if (!s.ok()) return fail(drop, s.ToString());  // the family and its handle are intact
    auto old = *family;
    s = injected(create) ? rocksdb::Status::IOError("injected")
                         : db->CreateColumnFamily(family_options(name), name, family);
    if (!s.ok()) {
      // The handle names a dropped family: close, so that the next use reopens a database whose
      // missing families are created again (empty), as after a crash at this step.
      *family = old;
      close_db();
      return fail(create, s.ToString());
    }
    for (auto& h : handles) {
      if (h == old) h = *family;
    }
    db->DestroyColumnFamilyHandle(old).PermitUncheckedError();
  }
  if (injected(reset_step::finished)) return fail(reset_step::finished, "injected");
  return {};
}

// ---------------------------------------------------------------------------------------------

rocksdb_index_backend::rocksdb_index_backend(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

result<std::shared_ptr<rocksdb_index_backend>> rocksdb_index_backend::create(std::string id,
                                                                             rocksdb_index_options options) {
  if (auto ok = check_backend_id(id); !ok) return ok.error();
  if (auto ok = validate(options); !ok) return ok.error();
  // Nothing of another program's, or a user's, is adopted (decision 0038).
  if (auto ok = index_dir::claim(options.path, "rocksdb_index", id); !ok) return ok.error();
  auto p = std::make_unique<impl>();
  p->id = std::move(id);
  p->options = std::move(options);
  p->space = std::make_unique<index_space>(p->options.path, p->options.free_space_reserve_bytes, index_space::pending::live_wal);
  p->skeleton = std::make_unique<applier>(p->id, *p, applier_limits{p->options.max_queued_bytes, 0});
  return std::shared_ptr<rocksdb_index_backend>(new rocksdb_index_backend(std::move(p)));
}

// Work still queued is dropped: it was never made durable, so nothing is lost that a restart
// would not replay from the durable cursor (~impl stops the applier, then closes the database).
rocksdb_index_backend::~rocksdb_index_backend() = default;

result<void> rocksdb_index_backend::open() { return impl_->ensure_open(); }

namespace {

void append_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint64_t read_le(std::string_view& in, int bytes, bool& ok) {
  if (in.size() < static_cast<std::size_t>(bytes)) {
    ok = false;
    return 0;
  }
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[static_cast<std::size_t>(i)])) << (8 * i);
  in.remove_prefix(static_cast<std::size_t>(bytes));
  return v;
}

std::string encode_coverage(const rocksdb_index_coverage& c) {
  std::string out;
  append_le(out, c.epoch, 8);
  append_le(out, c.coverage_time, 8);
  append_le(out, c.positions.size(), 4);
  for (const auto& [log, sequence] : c.positions) {
    append_le(out, log.size(), 2);
    out += log;
    append_le(out, sequence, 8);
  }
  return out;
}

result<rocksdb_index_coverage> decode_coverage(std::string_view in) {
  bool ok = true;
  rocksdb_index_coverage c;
  c.epoch = read_le(in, 8, ok);
  c.coverage_time = read_le(in, 8, ok);
  auto n = read_le(in, 4, ok);
  for (std::uint64_t i = 0; ok && i < n; ++i) {
    auto len = static_cast<std::size_t>(read_le(in, 2, ok));
    if (!ok || in.size() < len) {
      ok = false;
      break;
    }
    std::string log(in.substr(0, len));
    in.remove_prefix(len);
    c.positions[log] = read_le(in, 8, ok);
  }
  if (!ok || !in.empty()) return error{errc::record_corrupt, "the stored coverage record is malformed"};
  return c;
}

}  // namespace

// Best effort (api.md §5): a write of the current owner only, into an open database, unsynced —
// the next barrier's FlushWAL(true) makes it durable with the cursor. Never throws.
void rocksdb_index_backend::publish_coverage(const positions& p, index_time_t coverage_time, epoch_t epoch) noexcept {
  try {
    auto* host = impl_->host();
    if (host == nullptr || !host->is_owner_epoch(epoch)) return;
    std::shared_lock lock(impl_->db_mutex);
    if (!impl_->db) return;
    const auto value = encode_coverage(rocksdb_index_coverage{epoch, coverage_time, p});
    impl_->db->Put(rocksdb::WriteOptions{}, impl_->meta, slice(coverage_key), value).PermitUncheckedError();
  } catch (...) {
  }
}

result<std::optional<rocksdb_index_coverage>> rocksdb_index_backend::stored_coverage() {
  if (auto ok = impl_->ensure_open(); !ok) return ok.error();
  std::shared_lock lock(impl_->db_mutex);
  if (!impl_->db) return error{errc::io_error, "index " + impl_->id + " is closed"};
  std::string value;
  auto s = impl_->db->Get(rocksdb::ReadOptions{}, impl_->meta, slice(coverage_key), &value);
  if (s.IsNotFound()) return std::optional<rocksdb_index_coverage>{};
  if (!s.ok()) return error{errc::io_error, "index " + impl_->id + ": reading the coverage record: " + s.ToString()};
  auto decoded = decode_coverage(value);
  if (!decoded) return decoded.error();
  return std::optional<rocksdb_index_coverage>{std::move(*decoded)};
}

const std::string& rocksdb_index_backend::id() const noexcept { return impl_->id; }

void rocksdb_index_backend::attach(backend_host& host) { impl_->skeleton->attach(host); }

result<std::optional<cursor>> rocksdb_index_backend::impl::load_cursor() {
  std::optional<std::string> bytes;
  if (!database_open() && !space->check_open()) {
    // Too full to open for writing (decision 0013): the owner still learns its cursor, and its
    // deliveries are deferred until space returns.
    auto read = read_cursor_read_only();
    if (!read) return read.error();
    bytes = std::move(*read);
  } else {
    if (auto ok = ensure_open(); !ok) return ok.error();
    std::string value;
    rocksdb::Status s;
    {
      std::shared_lock lock(db_mutex);
      if (!db) return error{errc::io_error, "index " + id + " closed while reading its cursor"};
      s = db->Get(rocksdb::ReadOptions{}, meta, slice(cursor_key), &value);
    }
    if (!s.ok() && !s.IsNotFound()) return error{errc::io_error, "index " + id + ": reading the cursor: " + s.ToString()};
    if (s.ok()) bytes = std::move(value);
  }
  if (!bytes) return std::optional<cursor>{};
  auto decoded = cursor::decode(*bytes);
  if (!decoded) return decoded.error();
  return std::optional<cursor>{std::move(*decoded)};
}

result<std::optional<cursor>> rocksdb_index_backend::durable_cursor() { return impl_->skeleton->durable_cursor(); }
delivery_result rocksdb_index_backend::deliver(std::shared_ptr<const batch> b) { return impl_->skeleton->deliver(std::move(b)); }
void rocksdb_index_backend::flush(flush_reason reason, completion done) { impl_->skeleton->flush(reason, std::move(done)); }
void rocksdb_index_backend::shutdown(epoch_t epoch, completion done) { impl_->skeleton->shutdown(epoch, std::move(done)); }
void rocksdb_index_backend::reset(epoch_t epoch, completion done) { impl_->skeleton->reset(epoch, std::move(done)); }
subscription rocksdb_index_backend::on_state_change(std::function<void(state_change)> callback) {
  return impl_->skeleton->on_state_change(std::move(callback));
}

namespace {

using rows_result = result<query_result<std::vector<record_ref>>>;

// What a lookup or a range reads of `entries`: from `from`, while `prefix` matches (empty: any
// key) and below `stop` (empty: no bound).
struct entry_scan {
  std::string from, stop, prefix;
};

entry_scan lookup_scan(std::string_view key) {
  auto prefix = escape_key(key);
  prefix.push_back('\0');
  prefix.push_back('\x01');
  return {prefix, {}, prefix};
}

result<entry_scan> range_scan(std::string_view begin, std::string_view end) {
  if (!(begin < end)) return error{errc::invalid_argument, "range needs begin < end"};
  return entry_scan{escape_key(begin), escape_key(end), {}};
}

// The one query code of the backend and its reader: at most `limit` rows of `scan`, in entry
// order, each with the version `reverse` holds for it.
result<std::vector<record_ref>> read_entries(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* entries,
                                             rocksdb::ColumnFamilyHandle* reverse, const std::string& id,
                                             const entry_scan& scan, std::size_t limit) {
  std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions{}, entries));
  std::vector<std::string> refs;
  for (it->Seek(scan.from); it->Valid() && refs.size() < limit; it->Next()) {
    auto key = it->key().ToStringView();
    if (!scan.prefix.empty() && key.substr(0, scan.prefix.size()) != scan.prefix) break;
    if (!scan.stop.empty() && key >= std::string_view(scan.stop)) break;
    auto ref = ref_of_entry(key);
    if (!ref.empty()) refs.emplace_back(ref);
  }
  if (!it->status().ok()) return error{errc::io_error, "index " + id + ": " + it->status().ToString()};
  std::vector<rocksdb::Slice> keys(refs.begin(), refs.end());
  std::vector<std::string> values(refs.size());
  std::vector<rocksdb::ColumnFamilyHandle*> families(refs.size(), reverse);
  auto statuses = db.MultiGet(rocksdb::ReadOptions{}, families, keys, &values);
  std::vector<record_ref> rows;
  rows.reserve(refs.size());
  for (std::size_t i = 0; i < refs.size(); ++i) {
    record_ref row;
    if (!decode_ref(refs[i], row)) continue;
    if (statuses[i].ok() && values[i].size() >= 8) row.version = get_le<std::uint64_t>(values[i], 0);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

// Shared by lookup and range: admission first, then the entries of `scan`.
static rows_result query_entries(rocksdb_index_backend::impl& p, const coverage_mode& mode, const entry_scan& scan,
                                 std::size_t limit) {
  auto* host = p.host();
  if (host == nullptr) return error{errc::unavailable, "index " + p.id + " is not registered"};
  auto admitted = host->admit_query(mode);
  if (!admitted) return admitted.error();
  if (auto ok = p.ensure_open(); !ok) return ok.error();
  std::shared_lock lock(p.db_mutex);
  if (!p.db) return error{errc::unavailable, "index " + p.id + " is closed"};
  auto rows = read_entries(*p.db, p.entries, p.reverse, p.id, scan, limit);
  if (!rows) return rows.error();
  return query_result<std::vector<record_ref>>{std::move(*rows), *admitted};
}

result<query_result<std::vector<record_ref>>> rocksdb_index_backend::lookup(std::string_view key, std::size_t limit,
                                                                            const coverage_mode& mode) {
  return query_entries(*impl_, mode, lookup_scan(key), limit);
}

result<query_result<std::vector<record_ref>>> rocksdb_index_backend::range(std::string_view begin, std::string_view end,
                                                                           std::size_t limit, const coverage_mode& mode) {
  auto scan = range_scan(begin, end);
  if (!scan) return scan.error();
  return query_entries(*impl_, mode, *scan, limit);
}

namespace {

// The expected `entries` keys of one `reverse` entry (formats.md §6.2): one per distinct key of
// its projection, sorted; none when the projection does not decode (no such entry is written).
void expected_entries(std::string_view ref, std::string_view reverse_value, std::vector<std::string>& out) {
  out.clear();
  if (reverse_value.size() < 8) return;
  auto keys = decode_keys(reverse_value.substr(8));
  if (!keys) return;
  for (const auto& k : *keys) out.push_back(entry_key(k, ref));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

// A digest_view over a snapshot: the cursor, the digest and the reverse entries of one write.
//
// `reverse` holds what the digest counts, but queries read `entries`: an entry lost from
// `entries` alone hides a record from every lookup while `reverse` (and the digest) still count
// it. So prepare() first checks that the two families agree — each `entries` key is one of its
// record's `reverse` keys and each of those is in `entries` — without holding either in memory:
// per bucket of record refs it sums a hash of every `entries` key and subtracts one of every key
// `reverse` expects. Only when a bucket does not come to zero are the keys of that bucket's
// records collected, and the records whose families disagree named: next() then hands out each
// with its hash altered (the merge calls it wrong-projection, or stale at version 0 for a record
// `entries` names but `reverse` lacks) and a ref only `entries` holds as an entry of its own.
class rocksdb_digest_view final : public digest_view {
 public:
  rocksdb_digest_view(std::shared_lock<std::shared_mutex> lock, rocksdb::DB* db, rocksdb::ColumnFamilyHandle* entries,
                      rocksdb::ColumnFamilyHandle* reverse, std::string id)
      : lock_(std::move(lock)),
        db_(db),
        entries_(entries),
        reverse_(reverse),
        snapshot_(db->GetSnapshot()),
        id_(std::move(id)),
        next_extra_(only_entries_.begin()) {}
  ~rocksdb_digest_view() override {
    it_.reset();
    check_it_.reset();
    db_->ReleaseSnapshot(snapshot_);
  }
  rocksdb_digest_view(const rocksdb_digest_view&) = delete;
  rocksdb_digest_view& operator=(const rocksdb_digest_view&) = delete;

  const std::optional<cursor>& through() const noexcept override { return through_; }
  const index_digest& digest() const noexcept override { return digest_; }

  // Each family once (more only when they disagree): `reverse` has a row per record, `entries`
  // about one per record.
  std::uint64_t preparation_rows() const noexcept override { return 2 * digest_.records; }

  result<std::uint64_t> prepare(std::uint64_t units) override {
    std::uint64_t did = 0;
    units = std::max<std::uint64_t>(units, 1);
    while (phase_ != check_phase::ready && did < units) {
      auto step = check(units - did);
      if (!step) return step.error();
      did += *step;
    }
    return did;
  }

  // Reverse keys are record refs (u8 log length, log, u32 big-endian table, id): each log's
  // entries together, its tables ascending, each table's ids ascending.
  result<const digest_entry*> next() override {
    if (phase_ != check_phase::ready) {
      if (auto ok = prepare(~std::uint64_t{0}); !ok) return ok.error();
    }
    if (!it_) {
      it_ = iterator(reverse_);
      it_->SeekToFirst();
    } else if (it_->Valid() && !emitted_extra_) {
      it_->Next();
    }
    emitted_extra_ = false;
    if (!it_->Valid() && !it_->status().ok()) {
      return error{errc::io_error, "index " + id_ + ": reading its entries: " + it_->status().ToString()};
    }
    // A ref only `entries` holds, before the next `reverse` entry in ref order.
    if (next_extra_ != only_entries_.end() && (!it_->Valid() || *next_extra_ < it_->key().ToStringView())) {
      record_ref ref;
      if (!decode_ref(*next_extra_, ref)) return error{errc::io_error, "index " + id_ + ": a malformed entries key"};
      e_.log = std::move(ref.log);
      e_.table = ref.table;
      e_.record_id = std::move(ref.record_id);
      e_.version = 0;
      e_.hash = altered(entry_hash(e_.log, e_.table, e_.record_id, 0, {}));
      ++next_extra_;
      emitted_extra_ = true;
      return &e_;
    }
    if (!it_->Valid()) {
      if (approximate_ && altered_ == 0) {
        // Every disagreement is of refs `reverse` lacks, too many to name: never "equal".
        return error{errc::io_error, "index " + id_ + ": its entries family names more records its reverse family lacks "
                                     "than a verify names (over " + std::to_string(max_named) + "): rebuild it"};
      }
      return static_cast<const digest_entry*>(nullptr);
    }
    const auto key = it_->key().ToStringView();
    if (!reverse_entry(key, it_->value().ToStringView(), e_)) {
      return error{errc::io_error, "index " + id_ + ": a malformed reverse entry"};
    }
    const bool differs = approximate_ ? buckets_[bucket_of(key)] != 0
                                      : !disagree_.empty() && disagree_.count(std::string(key)) != 0;
    if (differs) {
      e_.hash = altered(e_.hash);
      ++altered_;
    }
    return &e_;
  }

  // The entries keys and refs the check keeps to name disagreeing records, at most (2^18 unless a
  // test lowers it): beyond it the view names every record of a bucket that disagrees (its
  // innocent neighbours too, about four a bucket), so memory stays bounded when the two families
  // differ everywhere.
  std::size_t max_named = std::size_t{1} << 18;

  const rocksdb::Snapshot* snapshot() const noexcept { return snapshot_; }
  std::optional<cursor> through_;
  index_digest digest_;

 private:
  enum class check_phase : std::uint8_t { sum_entries, sum_reverse, collect_entries, compare_reverse, ready };

  static hash128 altered(hash128 h) noexcept {
    h.lo ^= 0x9e3779b97f4a7c15ULL;  // never the hash the primary's side computes for the record
    return h;
  }
  // The check's hashes need a good spread, not a key: they find keys the two families disagree
  // on (a fault, a stray tool), which nobody chooses to collide. A multiply-rotate pass over
  // 8-byte words with a final avalanche (MurmurHash3's fmix64) costs a fraction of SipHash, which
  // was a fifth of a verify's time (decision 0059).
  static std::uint64_t mix_hash(std::string_view bytes, std::uint64_t seed) noexcept {
    constexpr std::uint64_t k = 0x9e3779b97f4a7c15ULL;
    std::uint64_t h = seed ^ (bytes.size() * k);
    const char* p = bytes.data();
    std::size_t n = bytes.size();
    for (; n >= 8; p += 8, n -= 8) {
      std::uint64_t w;
      std::memcpy(&w, p, 8);
      h = (h ^ w) * k;
      h = (h << 29) | (h >> 35);
    }
    std::uint64_t tail = 0;
    if (n != 0) std::memcpy(&tail, p, n);
    h = (h ^ tail) * k;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
  }
  static std::uint64_t key_hash(std::string_view bytes) noexcept { return mix_hash(bytes, 0x646978656e747269ULL); }
  std::size_t bucket_of(std::string_view ref) const noexcept {
    return static_cast<std::size_t>(mix_hash(ref, 0x6469787265667331ULL) & (buckets_.size() - 1));
  }
  std::unique_ptr<rocksdb::Iterator> iterator(rocksdb::ColumnFamilyHandle* family) const {
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot_;
    ro.fill_cache = false;
    return std::unique_ptr<rocksdb::Iterator>(db_->NewIterator(ro, family));
  }
  result<void> check_status(const char* what) const {
    if (check_it_->status().ok()) return {};
    return error{errc::io_error, "index " + id_ + ": " + what + ": " + check_it_->status().ToString()};
  }

  // Too many records disagree to name each: the stream alters every record of a bucket off zero.
  result<std::uint64_t> give_up_naming(std::uint64_t did) {
    approximate_ = true;
    found_.clear();
    disagree_.clear();
    only_entries_.clear();
    check_it_.reset();
    phase_ = check_phase::ready;
    next_extra_ = only_entries_.begin();
    return did + 1;
  }

  // One slice of the check, up to `units` rows: the rows read.
  result<std::uint64_t> check(std::uint64_t units) {
    std::uint64_t did = 0;
    if (!check_it_) {
      if (buckets_.empty()) {
        // About four records a bucket: a drifted record shares its bucket with few others.
        std::size_t n = 256;
        while (n < (std::size_t{1} << 20) && n * 4 < digest_.records) n *= 2;
        buckets_.assign(n, 0);
      }
      const bool of_entries = phase_ == check_phase::sum_entries || phase_ == check_phase::collect_entries;
      check_it_ = iterator(of_entries ? entries_ : reverse_);
      check_it_->SeekToFirst();
    }
    for (; check_it_->Valid() && did < units; check_it_->Next(), ++did) {
      const auto key = check_it_->key().ToStringView();
      switch (phase_) {
        case check_phase::sum_entries:
          buckets_[bucket_of(ref_of_entry(key))] += key_hash(key);
          break;
        case check_phase::sum_reverse: {
          auto& b = buckets_[bucket_of(key)];
          expected_entries(key, check_it_->value().ToStringView(), keys_);
          for (const auto& k : keys_) b -= key_hash(k);
          break;
        }
        case check_phase::collect_entries: {
          const auto ref = ref_of_entry(key);
          if (ref.empty()) return error{errc::io_error, "index " + id_ + ": its entries family holds a malformed key"};
          if (buckets_[bucket_of(ref)] != 0) {
            found_[std::string(ref)].emplace_back(key);
            if (++named_ > max_named) return give_up_naming(did);
          }
          break;
        }
        case check_phase::compare_reverse: {
          if (buckets_[bucket_of(key)] == 0) break;
          expected_entries(key, check_it_->value().ToStringView(), keys_);
          auto at = found_.find(std::string(key));
          if (at == found_.end()) {
            if (!keys_.empty()) {
              disagree_.emplace(key);  // none of its entries is there
              if (++named_ > max_named) return give_up_naming(did);
            }
            break;
          }
          std::sort(at->second.begin(), at->second.end());
          if (at->second != keys_) {
            disagree_.emplace(key);
            ++named_;
          }
          found_.erase(at);
          break;
        }
        case check_phase::ready:
          break;
      }
    }
    if (check_it_->Valid()) return did;
    if (auto ok = check_status("checking its entries against its records"); !ok) return ok.error();
    check_it_.reset();
    switch (phase_) {
      case check_phase::sum_entries:
        phase_ = check_phase::sum_reverse;
        break;
      case check_phase::sum_reverse:
        phase_ = std::all_of(buckets_.begin(), buckets_.end(), [](std::uint64_t b) { return b == 0; })
                     ? check_phase::ready
                     : check_phase::collect_entries;
        break;
      case check_phase::collect_entries:
        phase_ = check_phase::compare_reverse;
        break;
      case check_phase::compare_reverse:
        // What is left was found in `entries` under refs `reverse` does not hold.
        for (auto& [ref, keys] : found_) only_entries_.insert(ref);
        found_.clear();
        if (disagree_.empty() && only_entries_.empty()) {
          // A bucket off zero, yet every record agrees: only a hash collision (about 2^-64).
          return error{errc::io_error, "index " + id_ + ": its entries and records disagree, and no record could be named"};
        }
        phase_ = check_phase::ready;
        break;
      case check_phase::ready:
        break;
    }
    next_extra_ = only_entries_.begin();
    return did;
  }

  std::shared_lock<std::shared_mutex> lock_;
  rocksdb::DB* db_;
  rocksdb::ColumnFamilyHandle* entries_;
  rocksdb::ColumnFamilyHandle* reverse_;
  const rocksdb::Snapshot* snapshot_;
  std::string id_;
  // The check (prepare): per bucket of refs, Σ hash(entries key) − Σ hash(expected key), mod 2^64.
  check_phase phase_ = check_phase::sum_entries;
  std::vector<std::uint64_t> buckets_;
  std::vector<std::string> keys_;
  std::map<std::string, std::vector<std::string>> found_;  // ref → its `entries` keys, off-zero buckets only
  std::set<std::string> disagree_;                         // refs `reverse` holds whose entries differ
  std::set<std::string> only_entries_;                     // refs only `entries` names
  std::set<std::string>::const_iterator next_extra_;
  bool emitted_extra_ = false;  // the last entry handed out came from only_entries_, not it_
  std::size_t named_ = 0;       // keys and refs kept to name disagreeing records
  bool approximate_ = false;    // over max_named: every record of a bucket off zero is named
  std::uint64_t altered_ = 0;   // records handed out with their hash altered
  // Destroyed before the snapshot is released.
  std::unique_ptr<rocksdb::Iterator> check_it_;
  std::unique_ptr<rocksdb::Iterator> it_;
  digest_entry e_;
};

}  // namespace

// As apply() decides: a projection that does not decode as keys is skipped.
std::optional<std::string> rocksdb_index_backend::skips(const record_entry& r) const {
  if (r.state.kind != state_kind::record) return std::nullopt;
  auto decoded = decode_keys(r.state.projection);
  if (decoded) return std::nullopt;
  return decoded.error().message();
}

result<std::unique_ptr<digest_view>> rocksdb_index_backend::open_digest() {
  auto& p = *impl_;
  if (auto ok = p.ensure_open(); !ok) return ok.error();
  std::shared_lock lock(p.db_mutex);
  if (!p.db) return error{errc::io_error, "index " + p.id + " closed while its digest was opened"};
  auto* db = p.db.get();
  auto view = std::make_unique<rocksdb_digest_view>(std::move(lock), db, p.entries, p.reverse, p.id);
  view->max_named = p.max_named.load();
  rocksdb::ReadOptions ro;
  ro.snapshot = view->snapshot();
  std::string bytes;
  auto s = db->Get(ro, p.meta, slice(cursor_key), &bytes);
  if (s.ok()) {
    auto c = cursor::decode(bytes);
    if (!c) return c.error();
    view->through_ = std::move(*c);
  } else if (!s.IsNotFound()) {
    return error{errc::io_error, "index " + p.id + ": reading the cursor: " + s.ToString()};
  }
  auto d = p.read_digest(view->snapshot());
  if (!d) return d.error();
  view->digest_ = *d;
  return std::unique_ptr<digest_view>(std::move(view));
}

result<query_rows> rocksdb_index_backend::query(const index_query& q) {
  result<query_result<std::vector<record_ref>>> r = error{errc::not_supported, "a RocksDB index answers lookup and range only"};
  if (q.kind == query_kind::lookup) r = lookup(q.text, q.limit, q.mode);
  else if (q.kind == query_kind::range) r = range(q.text, q.end, q.limit, q.mode);
  if (!r) return r.error();
  query_rows out;
  out.coverage = r->coverage;
  out.rows.reserve(r->rows.size());
  for (auto& ref : r->rows) out.rows.push_back(scored_ref{std::move(ref), 0});
  return out;
}

// ---------------------------------------------------------------------------------------------
// The query-only handle (decision 0028).

struct rocksdb_index_reader::impl {
  std::string id;
  rocksdb_index_options options;
  std::shared_ptr<backend_host> host;
  std::filesystem::path secondary_dir;  // the secondary instance's own files (its info log)

  // One query's refresh and read at a time: a reopen replaces the handles under it.
  std::mutex mutex;
  std::unique_ptr<rocksdb::DB> db;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;  // default, entries, reverse, meta
  std::uint64_t resets_at_open = 0;
  // Opened while the cursor was absent (a new index, or inside a reset whose families may not all
  // be dropped yet): opened again at the next query, until a view opens with a cursor present.
  bool provisional = false;
  // What the owner's files looked like when the view was last brought up to date: the live WALs
  // and, apart, the MANIFEST and CURRENT (names and sizes). Every write appends to a WAL
  // (manual_wal_flush is off); every flush, compaction and family drop or creation changes the
  // MANIFEST. Equal listings: nothing new, and the query skips the catch-up. A changed MANIFEST:
  // the instance is opened again instead of caught up, because RocksDB 7.8's
  // TryCatchUpWithPrimary can crash applying a family drop (a reset; decision 0028).
  using file_listing = std::vector<std::pair<std::string, std::uintmax_t>>;
  struct owner_listing {
    file_listing wals, manifest;
    friend bool operator==(const owner_listing& a, const owner_listing& b) {
      return a.wals == b.wals && a.manifest == b.manifest;
    }
  };
  std::optional<owner_listing> caught_up_with;

  ~impl() {
    close();
    std::error_code ec;
    std::filesystem::remove_all(secondary_dir, ec);
  }

  std::optional<owner_listing> owner_files() const {
    owner_listing out;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(options.path, ec), end; !ec && it != end; it.increment(ec)) {
      const auto name = it->path().filename().string();
      const bool wal = name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0;
      if (!wal && name.rfind("MANIFEST-", 0) != 0 && name != "CURRENT") continue;
      std::error_code size_ec;
      const auto size = it->file_size(size_ec);
      if (size_ec) return std::nullopt;  // gone meanwhile: open afresh
      (wal ? out.wals : out.manifest).emplace_back(name, size);
    }
    if (ec) return std::nullopt;
    std::sort(out.wals.begin(), out.wals.end());
    std::sort(out.manifest.begin(), out.manifest.end());
    return out;
  }

  void close() {
    caught_up_with.reset();
    if (!db) return;
    for (auto* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    handles.clear();
    db->Close().PermitUncheckedError();
    db.reset();
  }

  rocksdb::ColumnFamilyHandle* entries() const { return handles[1]; }
  rocksdb::ColumnFamilyHandle* reverse() const { return handles[2]; }
  rocksdb::ColumnFamilyHandle* meta() const { return handles[3]; }

  // The meta record `key`: absent, its bytes, or the error.
  result<std::optional<std::string>> read_meta(std::string_view key) {
    std::string value;
    auto s = db->Get(rocksdb::ReadOptions{}, meta(), slice(key), &value);
    if (s.IsNotFound()) return std::optional<std::string>{};
    if (!s.ok()) return error{errc::io_error, "index " + id + ": reading " + std::string(key) + ": " + s.ToString()};
    return std::optional<std::string>{std::move(value)};
  }
  result<std::uint64_t> read_resets() {
    auto v = read_meta(resets_key);
    if (!v) return v.error();
    return *v && (*v)->size() == 8 ? get_le<std::uint64_t>(**v, 0) : 0;
  }

  // Opens the secondary instance (caught up as of now). false: no database there yet.
  result<bool> open_db() {
    close();
    std::error_code ec;
    if (!std::filesystem::exists(options.path / "CURRENT", ec)) return false;
    rocksdb::DBOptions o;
    std::vector<rocksdb::ColumnFamilyDescriptor> families;
    rocksdb_index_open_options(o, families);
    o.create_if_missing = false;
    o.create_missing_column_families = false;
    o.max_open_files = -1;  // a secondary keeps every table file open: the owner may delete them
    rocksdb::DB* raw = nullptr;
    std::vector<rocksdb::ColumnFamilyHandle*> opened;
    auto s = rocksdb::DB::OpenAsSecondary(o, options.path.string(), secondary_dir.string(), families, &opened, &raw);
    if (!s.ok()) {
      // A reset between dropping a family and creating it again, or a crash there before the
      // owner's next open: the families are back once the rebuild has begun.
      if (s.IsInvalidArgument()) {
        return error{errc::unavailable, "index " + id + ": " + options.path.string() +
                                            " lacks a family (a reset in progress?): " + s.ToString()};
      }
      return error{errc::io_error, "index " + id + ": cannot open " + options.path.string() +
                                       " as a secondary instance: " + s.ToString()};
    }
    db.reset(raw);
    handles = opened;
    auto resets = read_resets();
    if (!resets) return resets.error();
    auto cursor_bytes = read_meta(cursor_key);
    if (!cursor_bytes) return cursor_bytes.error();
    resets_at_open = *resets;
    provisional = !cursor_bytes->has_value();
    return true;
  }

  // RocksDB 7.8's TryCatchUpWithPrimary crashes now and then (in MemTableList::RemoveOldMemTables)
  // on a database whose families were ever dropped and created again — an index reset at least
  // once — even in an instance opened afterwards. The backend creates its four families in order
  // with ids 0…3 and a reset gives the new ones higher ids: only a database with ids 0…3 is
  // caught up; any other is opened again (decision 0028).
  bool catch_up_safe() const {
    return std::all_of(handles.begin(), handles.end(), [](rocksdb::ColumnFamilyHandle* h) { return h->GetID() <= 3; });
  }

  // Brings the view up to the latest durable state of the index: caught up with the owner's
  // MANIFEST and WAL, or opened again when a reset happened since it was opened. false: no
  // database there yet. Caller holds `mutex`.
  result<bool> refresh() {
    auto files = owner_files();  // before the catch-up: what it sees at least
    auto reopen = [&]() -> result<bool> {
      auto opened = open_db();
      if (opened && *opened) caught_up_with = std::move(files);
      return opened;
    };
    if (!db || provisional || !files || !caught_up_with || files->manifest != caught_up_with->manifest) return reopen();
    if (files->wals == caught_up_with->wals) return true;  // nothing written since
    if (!catch_up_safe()) return reopen();
    if (!db->TryCatchUpWithPrimary().ok()) return reopen();  // a file gone under it: start afresh
    auto resets = read_resets();
    if (!resets) return resets.error();
    if (*resets != resets_at_open) return reopen();
    caught_up_with = std::move(files);
    return true;
  }

  rows_result query(const coverage_mode& mode, const entry_scan& scan, std::size_t limit) {
    auto admitted = host->admit_query(mode);  // first: the refresh then holds what it certified
    if (!admitted) return admitted.error();
    std::lock_guard lock(mutex);
    auto present = refresh();
    if (!present) {
      close();
      return present.error();
    }
    query_result<std::vector<record_ref>> out;
    out.coverage = *admitted;
    if (!*present) return out;  // no durable state yet: no rows
    auto rows = read_entries(*db, entries(), reverse(), id, scan, limit);
    if (!rows) return rows.error();
    out.rows = std::move(*rows);
    return out;
  }
};

rocksdb_index_reader::rocksdb_index_reader(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
rocksdb_index_reader::~rocksdb_index_reader() = default;

result<std::shared_ptr<rocksdb_index_reader>> rocksdb_index_reader::open(std::string id, rocksdb_index_options options,
                                                                         std::shared_ptr<backend_host> host) {
  if (auto ok = check_backend_id(id); !ok) return ok.error();
  if (auto ok = validate(options); !ok) return ok.error();
  if (!host) return error{errc::invalid_argument, "rocksdb_index_reader " + id + ": no host"};
  auto p = std::make_unique<impl>();
  p->id = std::move(id);
  p->options = std::move(options);
  p->host = std::move(host);
  std::error_code ec;
  auto pattern = (std::filesystem::temp_directory_path(ec) / ("dix-reader-" + p->id + "-XXXXXX")).string();
  if (ec || ::mkdtemp(pattern.data()) == nullptr) {
    return error{errc::io_error, "rocksdb_index_reader " + p->id + ": cannot make a private directory " + pattern +
                                     ": " + (ec ? ec.message() : std::string(std::strerror(errno)))};
  }
  p->secondary_dir = pattern;  // 0700 (mkdtemp); removed by the destructor
  {
    std::lock_guard lock(p->mutex);
    if (auto opened = p->open_db(); !opened) return opened.error();
  }
  return std::shared_ptr<rocksdb_index_reader>(new rocksdb_index_reader(std::move(p)));
}

const std::string& rocksdb_index_reader::id() const noexcept { return impl_->id; }

result<query_result<std::vector<record_ref>>> rocksdb_index_reader::lookup(std::string_view key, std::size_t limit,
                                                                           const coverage_mode& mode) {
  return impl_->query(mode, lookup_scan(key), limit);
}

result<query_result<std::vector<record_ref>>> rocksdb_index_reader::range(std::string_view begin, std::string_view end,
                                                                          std::size_t limit, const coverage_mode& mode) {
  auto scan = range_scan(begin, end);
  if (!scan) return scan.error();
  return impl_->query(mode, *scan, limit);
}

std::uint64_t rocksdb_index_probe::queued_bytes(const rocksdb_index_backend& b) { return b.impl_->skeleton->queued_bytes(); }
std::uint64_t rocksdb_index_probe::applied_batches(const rocksdb_index_backend& b) { return b.impl_->skeleton->applied_batches(); }
std::uint64_t rocksdb_index_probe::dropped_batches(const rocksdb_index_backend& b) { return b.impl_->skeleton->dropped_batches(); }
void rocksdb_index_probe::on_reset_step(rocksdb_index_backend& b, std::function<bool(reset_step)> hook) {
  std::lock_guard lock(b.impl_->hook_mutex);
  b.impl_->reset_hook = std::move(hook);
}

std::string_view to_string(reset_step step) noexcept {
  switch (step) {
    case reset_step::delete_cursor: return "delete_cursor";
    case reset_step::drop_entries: return "drop_entries";
    case reset_step::create_entries: return "create_entries";
    case reset_step::drop_reverse: return "drop_reverse";
    case reset_step::create_reverse: return "create_reverse";
    case reset_step::finished: return "finished";
  }
  return "unknown";
}

void rocksdb_index_probe::set_verify_name_cap(rocksdb_index_backend& b, std::size_t cap) { b.impl_->max_named = cap; }

void rocksdb_index_probe::set_space_probe(rocksdb_index_backend& b, space_probe probe, std::chrono::milliseconds max_age) {
  b.impl_->space->set_probe(std::move(probe), max_age);
}

}  // namespace dix
