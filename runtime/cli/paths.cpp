#include "paths.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace dix::cli {
namespace {

// The path as its last component names it: "a/db/" names "a/db".
std::filesystem::path named(const std::filesystem::path& path) { return path.has_filename() ? path : path.parent_path(); }

}  // namespace

std::optional<std::string> existing_directory_problem(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return S_ISDIR(st.st_mode) ? std::nullopt : std::optional<std::string>("not a directory");
  if (errno == ENOENT) return "no such directory";
  if (errno == ENOTDIR) return "not a directory";
  return std::nullopt;
}

std::optional<std::string> new_directory_problem(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return S_ISDIR(st.st_mode) ? std::nullopt : std::optional<std::string>("not a directory");
  if (errno == ENOTDIR) return "not a directory";
  if (errno != ENOENT) return std::nullopt;
  const auto last = named(path);
  const auto parent = last.has_parent_path() ? last.parent_path() : std::filesystem::path(".");
  if (::stat(parent.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return std::nullopt;
    return parent.string() + " is not a directory (only the last component is created)";
  }
  if (errno == ENOENT || errno == ENOTDIR) return parent.string() + " does not exist (only the last component is created)";
  return std::nullopt;
}

result<void> make_directory(const std::filesystem::path& path) {
  // Private to its user, whatever the umask (decision 0040): it holds a store and its indexes.
  if (::mkdir(path.c_str(), 0700) != 0) {
    if (errno == EEXIST) return {};
    return error{errc::io_error, "cannot create " + path.string() + ": " + std::strerror(errno)};
  }
  if (::chmod(path.c_str(), 0700) != 0) return error{errc::io_error, "cannot make " + path.string() + " private: " + std::strerror(errno)};
  return {};
}

std::optional<std::string> layout_directory_problem(const std::filesystem::path& dir) {
  std::error_code ec;
  const char* what = nullptr;
  if (std::filesystem::exists(dir / "dix-index", ec)) what = "is an index's directory (it holds dix-index)";
  else if (std::filesystem::exists(dir / "CURRENT", ec) || std::filesystem::is_directory(dir / "dix", ec)) what = "is itself a primary store";
  if (!what) return std::nullopt;
  return std::string(what) + ": --dir names the directory that holds a store in its primary/ and the indexes beside it "
                             "(give its parent, or a new directory)";
}

store_path store_dir(const std::filesystem::path& db) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto holds_store = [&](const fs::path& p) { return fs::exists(p / "CURRENT", ec) || fs::is_directory(p / "dix", ec); };
  if (holds_store(db) || !holds_store(db / "primary")) return {db, false};
  return {db / "primary", true};
}

bool held_by_another_process(const error& e) {
  return e.message().find("is held by another process") != std::string::npos;
}

}  // namespace dix::cli
