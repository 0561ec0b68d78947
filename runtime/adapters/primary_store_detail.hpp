// Internal to the files of the primary store (primary_store_*.cpp): what they share of one
// another, in namespace store_detail. Each declaration names the file that defines it; the
// comments are at the definitions. Nothing else includes this header; the runtime's hooks are
// declared in primary_store_impl.hpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>

#include "adapters/primary_store_impl.hpp"

namespace dix::store_detail {

inline rocksdb::Slice slice(std::string_view s) { return {s.data(), s.size()}; }

// -- primary_store_options.cpp ------------------------------------------------------------------

std::string table_family_name(std::uint32_t table);
std::optional<std::uint32_t> parse_table_family(std::string_view name);
rocksdb::DBOptions db_options(const store_options& o);
rocksdb::ColumnFamilyOptions family_options(const store_options& o);

struct open_families {
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  bool has_meta = false;
  bool existing = false;  // a database was found (its MANIFEST listed the families)
};

result<bool> has_current(const std::filesystem::path& path);
result<open_families> list_families(const std::filesystem::path& path, bool may_be_new);
void install_handles(primary_store::impl& p, std::vector<rocksdb::ColumnFamilyHandle*> handles);

// -- primary_store_recovery.cpp -----------------------------------------------------------------

error foreign_with_data(const std::filesystem::path& path);
result<void> check_format(primary_store::impl& p);

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
                      const rocksdb::Status& s);

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

result<void> look_before_open(const std::filesystem::path& path, const open_families& families,
                              const store_options& options);

// -- primary_store_commit.cpp -------------------------------------------------------------------

result<commit_info> write_meta(primary_store::impl& p, const std::vector<meta_op>& ops);  // caller holds lifecycle
result<void> write_clock(primary_store::impl& p);

// -- primary_store_open.cpp ---------------------------------------------------------------------

result<std::shared_ptr<primary_store>> finish_open(std::unique_ptr<primary_store::impl> p, bool created);
std::string open_failure(const std::filesystem::path& path, const rocksdb::Status& s);
result<void> make_store_directory(const std::filesystem::path& path);
result<std::shared_ptr<primary_store>> open_store(const std::filesystem::path& path, const store_options& options,
                                                  bool look);

}  // namespace dix::store_detail
