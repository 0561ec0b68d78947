// The read-only open (open_read_only, for `dix wal`): an existing dix store opened with RocksDB's
// OpenForReadOnly, past a torn WAL tail as the read-write open is; nothing is written, not even
// `clock`, and commits fail.
#include "adapters/primary_store_detail.hpp"

#include <sys/stat.h>

#include <cerrno>

namespace dix {

using namespace store_detail;

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

}  // namespace dix
