// The CLI tests' way to run the `dix` binary under test (DIX_BINARY, dix_system_tests only): argv
// after the program name, the scratch directory for its output files.
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
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

// Paths the system refuses, made under `dir`: a component longer than NAME_MAX (255 bytes), and
// one through a symlink that points at itself (ELOOP).
struct hostile_paths {
  std::filesystem::path too_long;
  std::filesystem::path loop;
};

inline hostile_paths make_hostile_paths(const temp_dir& dir) {
  hostile_paths p;
  p.too_long = dir / std::string(300, 'a');
  std::filesystem::create_symlink("loop", dir / "loop");
  p.loop = dir / "loop" / "db";
  return p;
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

// `dix <command>` with each path of make_hostile_paths (args_for builds the arguments): exit 1
// and one line of stderr, `dix <command>: io_error: …` with the system's reason.
inline void check_refuses_hostile_paths(const temp_dir& dir, const std::string& command,
                                        const std::function<std::vector<std::string>(const std::string&)>& args_for) {
  const auto paths = make_hostile_paths(dir);
  const std::pair<std::filesystem::path, const char*> cases[] = {{paths.too_long, "File name too long"},
                                                                 {paths.loop, "Too many levels of symbolic links"}};
  for (const auto& [path, reason] : cases) {
    auto args = args_for(path.string());
    args.insert(args.begin(), command);
    auto r = dix_cli(dir, args);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::StartsWith("dix " + command + ": io_error: ") && Catch::Contains(reason));
    CHECK(line_count(r.err) == 1);
  }
}

}  // namespace dix::test
