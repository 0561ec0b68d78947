// The verdicts on an existing database before and at its open (decisions 0010, 0034): a RocksDB
// database with data but no dix.meta, a `format` record that is absent or not 1, and what a
// Corruption says about the WAL (log_corrupt, or a torn tail to replay up to), each judged from
// read-only opens so that a database dix refuses is left as it was.
#include "adapters/primary_store_detail.hpp"

#include <cstdarg>

#include <rocksdb/env.h>

#include "core/bytes.hpp"

namespace dix {
namespace store_detail {

error foreign_with_data(const std::filesystem::path& path) {
  return error{errc::store_format_mismatch, path.string() + " is a RocksDB database with data but no dix.meta column "
                                                            "family: not a dix primary store"};
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

namespace {

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

}  // namespace

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

}  // namespace store_detail
}  // namespace dix
