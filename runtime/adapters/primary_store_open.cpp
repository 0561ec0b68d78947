// Opening a primary store read-write (primary_store::open) and closing it: the store directory
// (decision 0035), the free space to open (decision 0013), the look before the open and the open
// past a torn WAL tail (primary_store_recovery.cpp), dix.meta made for a new store, then the
// identity, `format`, the time floor and `clock` (finish_open, shared with the read-only open).
#include "adapters/primary_store_detail.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <rocksdb/transaction_log.h>

#include "adapters/write_batch_reader.hpp"
#include "core/bytes.hpp"
#include "core/clock.hpp"
#include "core/index_time.hpp"
#include "core/names.hpp"
#include "core/txn_header.hpp"

namespace dix {
namespace store_detail {
namespace {

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

}  // namespace

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

}  // namespace store_detail

using namespace store_detail;

primary_store::primary_store(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

primary_store::~primary_store() {
  if (impl_) ignore_result(impl_->close(), "a destructor cannot report; close() explicitly to see errors");
}

result<std::shared_ptr<primary_store>> primary_store::open(const std::filesystem::path& path,
                                                           const store_options& options) {
  return open_store(path, options, true);
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
  // Its shared reads go with it (they take no store lock, so this cannot wait on a reader).
  reads->forget();
  tail->reset();  // and the commits its tailers took from memory
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

}  // namespace dix
