// The CLI tests' way to run the `dix` binary under test (DIX_BINARY, dix_system_tests only): argv
// after the program name, the scratch directory for its output files.
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "adapters/test_support.hpp"
#include "support/dir_snapshot.hpp"

namespace dix::test {

inline command_result dix_cli(const temp_dir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), DIX_BINARY);
  return run(args, dir.path());
}

// Paths the system refuses, made under `dir`: a component longer than NAME_MAX (255 bytes), one
// through a symlink that points at itself (ELOOP), and one inside a directory of mode 0700 owned
// by root, which only an unprivileged user is refused (EACCES).
struct hostile_paths {
  std::filesystem::path too_long;
  std::filesystem::path loop;
  std::filesystem::path unsearchable;
};

inline hostile_paths make_hostile_paths(const temp_dir& dir) {
  hostile_paths p;
  p.too_long = dir / std::string(300, 'a');
  std::filesystem::create_symlink("loop", dir / "loop");
  p.loop = dir / "loop" / "db";
  std::filesystem::create_directories(dir / "locked");
  std::filesystem::permissions(dir / "locked", std::filesystem::perms::owner_all);
  p.unsearchable = dir / "locked" / "db";
  return p;
}

// What runs `dix` as a user that may not search a root-owned 0700 directory: nothing when the
// tests do not run as root, setpriv to `nobody` (uid and gid 65534) when they do; nullopt when
// there is no setpriv to drop root with.
inline std::optional<std::vector<std::string>> unprivileged_prefix() {
  if (::geteuid() != 0) return std::vector<std::string>{};
  if (::access("/usr/bin/setpriv", X_OK) != 0) return std::nullopt;
  return std::vector<std::string>{"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
}

// The `dix` binary as the user of `unprivileged` can run it: DIX_BINARY when that user may
// execute it there; else a copy in `dir` (searchable by everyone), for a build directory that
// user may not search (a build under root's home, mode 0700; issue 29 item 8). The binary links
// only system libraries, so the copy runs as the original does.
inline std::string binary_for(const temp_dir& dir, const std::vector<std::string>& unprivileged) {
  if (unprivileged.empty()) return DIX_BINARY;
  auto probe = unprivileged;
  probe.push_back(DIX_BINARY);
  probe.push_back("help");
  if (run(probe, dir.path()).exit_code == 0) return DIX_BINARY;
  const auto copy = dir / "unprivileged-bin" / "dix";
  std::filesystem::create_directories(copy.parent_path());
  std::filesystem::copy_file(DIX_BINARY, copy, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::permissions(copy.parent_path(), std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                                       std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                                                       std::filesystem::perms::others_exec);
  std::filesystem::permissions(copy, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                         std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                                         std::filesystem::perms::others_exec);
  return copy.string();
}

// The number of lines of `text` (a last line without a newline counts).
inline std::size_t line_count(const std::string& text) {
  std::size_t lines = 0;
  for (char c : text) lines += c == '\n' ? 1 : 0;
  return lines + (!text.empty() && text.back() != '\n' ? 1 : 0);
}

// `dix <args>` on a plain RocksDB database made at `db`: refused with store_format_mismatch and
// exit 1, the database directory byte for byte as it was.
inline void check_refuses_foreign_store(const temp_dir& dir, const std::filesystem::path& db, std::vector<std::string> args) {
  REQUIRE(make_plain_rocksdb(db));
  const auto before = snapshot_dir(db);
  auto r = dix_cli(dir, std::move(args));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("store_format_mismatch"));
  const auto after = snapshot_dir(db);
  INFO("changed: " << changed_files(before, after));
  CHECK(after == before);
}

// What issue 34 found dix destroying at an index's path: a user's files (a document and a
// subdirectory), or another program's RocksDB database with 100 keys in a column family named
// `entries`, as dix's RocksDB index names its own.
enum class foreign_kind { files, rocksdb };
inline void plant_foreign(const std::filesystem::path& path, foreign_kind kind) {
  if (kind == foreign_kind::files) {
    std::filesystem::create_directories(path / "sub");
    std::ofstream(path / "thesis.docx") << "a\n";
    return;
  }
  make_foreign_rocksdb(path);
}

// `dix <args>` where the index at `index` holds what dix did not make: refused with
// store_format_mismatch naming the path, exit 1, the index directory byte for byte as it was.
inline void check_refuses_foreign_index(const temp_dir& dir, const std::filesystem::path& index, std::vector<std::string> args,
                                        foreign_kind kind) {
  plant_foreign(index, kind);
  const auto before = snapshot_dir(index);
  auto r = dix_cli(dir, std::move(args));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("store_format_mismatch") && Catch::Contains(index.string()) &&
                        Catch::Contains("dix did not create"));
  const auto after = snapshot_dir(index);
  INFO("changed: " << changed_files(before, after));
  CHECK(after == before);
}

// Decision 0034, as the user trial found it: a store made by `dix write` at `db` whose newest
// WAL file has 4000 bytes flipped in its middle, valid records after them. `dix <args>` must
// exit `exit_code` with one line on stderr starting with `prefix` that says the WAL is corrupt
// and nothing was dropped, print nothing on stdout, and leave the store byte for byte as it was.
inline void check_refuses_corrupt_wal(const temp_dir& dir, const std::filesystem::path& db, std::vector<std::string> args,
                                      int exit_code, const std::string& prefix) {
  std::filesystem::create_directories(db.parent_path());  // dix write makes the last component only
  REQUIRE(dix_cli(dir, {"write", "--db", db.string(), "--records", "3000", "--per-txn", "10"}).exit_code == 0);
  const auto wal = newest_wal(db);
  const auto size = std::filesystem::file_size(wal);
  REQUIRE(size > 4 * 32768);  // RocksDB finds records again only from the next 32 KiB block
  flip_bytes(wal, size / 2 - 2000, 4000);
  const auto before = snapshot_dir(db);
  auto r = dix_cli(dir, std::move(args));
  INFO(r.out << r.err);
  CHECK(r.exit_code == exit_code);
  CHECK_THAT(r.err, Catch::StartsWith(prefix + "primary store " + db.string() + ": its write-ahead log is corrupt"));
  CHECK_THAT(r.err, Catch::Contains(" follow the damage; the store was not opened and nothing was dropped"));
  CHECK(line_count(r.err) == 1);
  CHECK(r.out.empty());
  const auto after = snapshot_dir(db);
  INFO("changed: " << changed_files(before, after));
  CHECK(after == before);
}

// `dix <command>` with each path of make_hostile_paths (args_for builds the arguments): exit 1
// and one line of stderr, `dix <command>: io_error: …` with the system's reason.
// `prefix`: how the one line starts (default "dix <command>: io_error: ").
inline void check_refuses_hostile_paths(const temp_dir& dir, const std::string& command,
                                        const std::function<std::vector<std::string>(const std::string&)>& args_for,
                                        const std::string& prefix = "") {
  const auto paths = make_hostile_paths(dir);
  const auto unprivileged = unprivileged_prefix();
  if (!unprivileged) WARN("the unsearchable directory is skipped: running as root without /usr/bin/setpriv");
  struct hostile_case {
    std::filesystem::path path;
    const char* reason;
    std::vector<std::string> prefix;
    std::string binary = DIX_BINARY;
  };
  std::vector<hostile_case> cases{{paths.too_long, "File name too long", {}},
                                  {paths.loop, "Too many levels of symbolic links", {}}};
  if (unprivileged) cases.push_back({paths.unsearchable, "Permission denied", *unprivileged, binary_for(dir, *unprivileged)});
  for (const auto& c : cases) {
    auto args = c.prefix;
    args.push_back(c.binary);
    args.push_back(command);
    for (auto& a : args_for(c.path.string())) args.push_back(std::move(a));
    auto r = run(args, dir.path());
    INFO(c.path.string() << "\n" << r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::StartsWith(prefix.empty() ? "dix " + command + ": io_error: " : prefix) && Catch::Contains(c.reason));
    CHECK(line_count(r.err) == 1);
  }
}

}  // namespace dix::test
