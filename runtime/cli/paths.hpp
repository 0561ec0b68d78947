// The path checks the commands share, so that one mistake reads the same in every command: a
// --db that names nothing is a bad argument (exit 2) for status, wal and rebuild alike, and a
// store or a demo layout is made only where its parent exists (decision 0035).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <dix/result.hpp>

namespace dix::cli {

// For a path that must name an existing directory (dix status, wal, rebuild): "no such
// directory" or "not a directory"; nullopt when it is one, and when the system refuses to look
// (a loop, a name too long, no search permission): the command's open then names that reason.
std::optional<std::string> existing_directory_problem(const std::filesystem::path& path);

// For a path where a store or a demo layout may be made (dix write --db, demo and serve --dir):
// an existing directory, or a new path whose parent is a directory, since only the last
// component is created. Otherwise "not a directory" or "PARENT does not exist (only the last
// component is created)"; nullopt as above when the system refuses to look.
std::optional<std::string> new_directory_problem(const std::filesystem::path& path);

// For a demo or serve --dir: nullopt when it may hold the layout (a store in DIR/primary, the
// indexes beside it); else what it is ("is an index's directory (it holds dix-index)", "is
// itself a primary store" for a CURRENT or `dix/`) and what --dir names instead (issue 34: the
// layout was made inside a store).
std::optional<std::string> layout_directory_problem(const std::filesystem::path& dir);

// Creates `path` when it is missing, one component, mode 0700 whatever the umask (decision 0040:
// a store and its indexes are private to their user). io_error naming the path.
result<void> make_directory(const std::filesystem::path& path);

// The store a --db names (dix wal, write, status, rebuild, verify): the directory itself, or —
// when it holds neither a store nor a runtime's `dix/` but its `primary` does — that: the
// directory `dix demo` and `dix serve` were given as --dir (issue 34: the first thing a new user
// tries). `resolved` says which.
struct store_path {
  std::filesystem::path path;
  bool resolved = false;  // DIR/primary of a demo or serve directory
};
store_path store_dir(const std::filesystem::path& db);

// "PATH is held by another process" when `e` is the open failing on another process's LOCK.
bool held_by_another_process(const error& e);

}  // namespace dix::cli
