// Shared helpers for the adapter and system tests: temp directories, stores, WAL file surgery,
// child processes (`run`).
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <rocksdb/db.h>

#include <dix/free_functions.hpp>

#include "adapters/primary_store_impl.hpp"
#include "adapters/readiness_segment.hpp"
#include "support/temp_dir.hpp"

namespace dix::test {

inline store_options options(const std::string& log = "main") {
  store_options o;
  o.log_name = log;
  return o;
}

inline std::shared_ptr<primary_store> open_store(const std::filesystem::path& path,
                                                 const store_options& o = options()) {
  auto s = primary_store::open(path, o);
  if (!s) throw std::runtime_error(s.error().to_string());
  if (!(*s)->create_table(1)) throw std::runtime_error("create_table failed");
  return *s;
}

// Commits one transaction putting `n` records "<prefix>i" = "value-i".
inline commit_info put_records(primary_store& s, const std::string& prefix, int n, std::uint32_t table = 1) {
  auto txn = s.begin();
  for (int i = 0; i < n; ++i) txn.put(table, prefix + std::to_string(i), "value-" + std::to_string(i));
  return txn.commit().value();
}

// Waits until the id's readiness as any process reads it satisfies `pred`: futex waits on the
// segment's change counter (every publication bumps it), 30 s failure bound. false: no segment,
// or the bound passed.
inline bool wait_readiness(const std::filesystem::path& home, const std::string& id,
                           const std::function<bool(const dix::readiness&)>& pred) {
  using namespace std::chrono_literals;
  auto deadline = std::chrono::steady_clock::now() + 30s;
  auto view = segment_view::open(home);
  if (!view || !*view) return false;
  while (std::chrono::steady_clock::now() < deadline) {
    auto seen = (*view)->segment_change_counter();
    auto r = read_readiness(home, id);
    if (r && pred(*r)) return true;
    (*view)->wait_change(seen, 1s);
  }
  return false;
}

inline bool is_ready(const dix::readiness& r) { return r.state == readiness_state::ready; }

// Waits, on the segment's change-counter futex (no polling), until `pred` holds; false after 30 s.
template <class Pred>
bool wait_segment(const std::filesystem::path& home, Pred pred) {
  using namespace std::chrono_literals;
  auto view = segment_view::open(home).value();
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto seen = view->segment_change_counter();
    if (pred()) return true;
    view->wait_change(seen, 1s);
  }
  return pred();
}

// A query mode that reads everything committed before the call (read-your-writes, protocol.md
// §12.6): `wait` for coverage of the wall time now, 30 s failure bound. A bounded query right
// after `ready` may be refused (coverage still unknown); tests that read an index use this.
inline coverage_mode covering_now() {
  coverage_mode m;
  m.kind = coverage_kind::wait;
  m.since = static_cast<index_time_t>(
    std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  m.timeout = std::chrono::seconds(30);
  return m;
}

// A plain RocksDB database (not a dix store) at `path` (parents created) with one key in
// `default`, left in its WAL. False when RocksDB refused.
inline bool make_plain_rocksdb(const std::filesystem::path& path) {
  std::filesystem::create_directories(path.parent_path());
  rocksdb::Options o;
  o.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  if (!rocksdb::DB::Open(o, path.string(), &raw).ok()) return false;
  const bool put = raw->Put(rocksdb::WriteOptions{}, "k", "v").ok();
  delete raw;
  return put;
}

// A RocksDB database another program made at `path` (parents created): 100 keys in a column
// family `entries` (what the RocksDB index calls its own family), one in `default` (issue 34).
inline void make_foreign_rocksdb(const std::filesystem::path& path) {
  std::filesystem::create_directories(path.parent_path());
  rocksdb::Options o;
  o.create_if_missing = true;
  o.create_missing_column_families = true;
  std::vector<rocksdb::ColumnFamilyDescriptor> families{{rocksdb::kDefaultColumnFamilyName, {}}, {"entries", {}}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  if (!rocksdb::DB::Open(o, path.string(), families, &handles, &raw).ok()) throw std::runtime_error("cannot make " + path.string());
  bool ok = true;
  for (int i = 0; i < 100; ++i) ok = ok && raw->Put({}, handles[1], "key" + std::to_string(i), "theirs").ok();
  ok = ok && raw->Put({}, handles[0], "k", "v").ok();
  for (auto* h : handles) ok = raw->DestroyColumnFamilyHandle(h).ok() && ok;
  ok = raw->Close().ok() && ok;
  delete raw;
  if (!ok) throw std::runtime_error("cannot fill " + path.string());
}

inline rocksdb::DB& raw_db(primary_store& s) { return *primary_store_access::get(s).db; }

// Opens the database at `path` once read-write with every column family and RocksDB's default
// kPointInTimeRecovery, as dix did before decision 0034, keeping the WAL files it replaced in
// the archive as a store does; then closes it. False when RocksDB refused.
inline bool open_point_in_time(const std::filesystem::path& path) {
  std::vector<std::string> names;
  if (!rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions{}, path.string(), &names).ok()) return false;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const auto& name : names) families.emplace_back(name, rocksdb::ColumnFamilyOptions{});
  rocksdb::DBOptions o;
  o.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  o.WAL_ttl_seconds = 3 * 24 * 3600;
  o.WAL_size_limit_MB = 16 * 1024;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  if (!rocksdb::DB::Open(o, path.string(), families, &handles, &raw).ok()) return false;
  std::unique_ptr<rocksdb::DB> db(raw);
  for (auto* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  return db->Close().ok();
}

// XORs `length` bytes of `file` from `offset` with 0xFF (throws if the file is shorter).
inline void flip_bytes(const std::filesystem::path& file, std::uint64_t offset, std::size_t length) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  std::string bytes(length, '\0');
  f.seekg(static_cast<std::streamoff>(offset));
  f.read(bytes.data(), static_cast<std::streamsize>(length));
  if (f.gcount() != static_cast<std::streamsize>(length)) throw std::runtime_error("short read of " + file.string());
  for (auto& c : bytes) c = static_cast<char>(c ^ 0xFF);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(length));
  if (!f.flush()) throw std::runtime_error("cannot write " + file.string());
}

// The newest live WAL file of the store at `db` (the one recovery replays last).
inline std::filesystem::path newest_wal(const std::filesystem::path& db) {
  std::vector<std::filesystem::path> live;
  for (const auto& e : std::filesystem::directory_iterator(db)) {
    if (e.path().extension() == ".log") live.push_back(e.path());
  }
  if (live.empty()) throw std::runtime_error("no live WAL file in " + db.string());
  return *std::max_element(live.begin(), live.end());
}

// Flushes every memtable: RocksDB switches to a new WAL file and archives the old one.
inline void switch_wal(primary_store& s) {
  auto& p = primary_store_access::get(s);
  rocksdb::FlushOptions fo;
  fo.wait = true;
  for (auto* h : p.handles) {
    auto st = p.db->Flush(fo, h);
    if (!st.ok()) throw std::runtime_error(st.ToString());
  }
}

inline std::vector<std::filesystem::path> wal_files(const std::filesystem::path& db, bool archived) {
  std::vector<std::filesystem::path> out;
  auto dir = archived ? db / "archive" : db;
  if (!std::filesystem::exists(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".log") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A store at `db` whose anchor transaction (3 records "flip0".."flip2") lies in an archived WAL
// file with one byte of its record flipped, and 3 more records in the live file after it: damage
// inside the retained WAL, which RocksDB silently skips. Returns the anchor.
inline commit_info make_damaged_anchor(const std::filesystem::path& db) {
  commit_info anchor;
  {
    auto s = open_store(db);
    anchor = put_records(*s, "flip", 3);
    switch_wal(*s);  // the anchor's file is archived, so recovery never reads it
    put_records(*s, "later", 3);
    if (!s->close()) throw std::runtime_error("closing " + db.string());
  }
  auto archived = wal_files(db, true);
  if (archived.size() != 1) throw std::runtime_error("expected one archived WAL file in " + db.string());
  std::fstream f(archived[0], std::ios::in | std::ios::out | std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto at = bytes.find("flip1");
  if (at == std::string::npos) throw std::runtime_error("no record \"flip1\" in " + archived[0].string());
  f.seekp(static_cast<std::streamoff>(at));
  f.put(static_cast<char>(bytes[at] ^ 0x01));
  return anchor;
}

struct command_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs argv (argv[0] a path) with stdout and stderr captured; no shell involved. Everything the
// child needs is made before the fork: between fork and exec the child of a threaded process may
// only make async-signal-safe calls (an allocation there can wait for ever on a lock another
// thread held at the fork — seen under ASan, whose allocator spins on it).
inline command_result run(const std::vector<std::string>& argv, const std::filesystem::path& scratch) {
  auto out_path = scratch / "stdout.txt";
  auto err_path = scratch / "stderr.txt";
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out_fd < 0 || err_fd < 0) throw std::runtime_error("run: cannot create the output files in " + scratch.string());
  std::fflush(nullptr);  // nothing buffered may be written twice by the child
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_fd, STDOUT_FILENO);  // dup2 clears FD_CLOEXEC on the copy
    ::dup2(err_fd, STDERR_FILENO);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(err_fd);
  int status = 0;
  ::waitpid(pid, &status, 0);
  auto slurp = [](const std::filesystem::path& p) {
    std::string text;
    if (FILE* f = std::fopen(p.c_str(), "r")) {
      std::array<char, 4096> buf{};
      std::size_t n;
      while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) text.append(buf.data(), n);
      std::fclose(f);
    }
    return text;
  };
  command_result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

}  // namespace dix::test
