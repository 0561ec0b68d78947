// Every file under a directory as (relative path → size, mtime, contents), to prove that an
// operation left the directory byte for byte as it was. Standard library only.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <tuple>

namespace dix::test {

struct file_state {
  std::uintmax_t bytes = 0;
  long long mtime_ns = 0;
  std::string contents;
  friend bool operator==(const file_state& a, const file_state& b) {
    return std::tie(a.bytes, a.mtime_ns, a.contents) == std::tie(b.bytes, b.mtime_ns, b.contents);
  }
  friend bool operator!=(const file_state& a, const file_state& b) { return !(a == b); }
};

using dir_snapshot = std::map<std::string, file_state>;

// Directories appear with empty contents, so an added empty directory shows too.
inline dir_snapshot snapshot_dir(const std::filesystem::path& root) {
  dir_snapshot out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    struct stat st {};
    if (::lstat(entry.path().c_str(), &st) != 0) continue;
    file_state f;
    f.mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1'000'000'000LL + st.st_mtim.tv_nsec;
    if (entry.is_regular_file()) {
      f.bytes = static_cast<std::uintmax_t>(st.st_size);
      std::ifstream in(entry.path(), std::ios::binary);
      f.contents.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    out[std::filesystem::relative(entry.path(), root).string()] = std::move(f);
  }
  return out;
}

// The names that differ between two snapshots (added, removed or changed), for a readable failure.
inline std::string changed_files(const dir_snapshot& before, const dir_snapshot& after) {
  std::string out;
  for (const auto& [name, state] : after) {
    auto it = before.find(name);
    if (it == before.end()) out += "+" + name + " ";
    else if (it->second != state) out += "~" + name + " ";
  }
  for (const auto& [name, state] : before) {
    if (after.count(name) == 0) out += "-" + name + " ";
  }
  return out;
}

}  // namespace dix::test
