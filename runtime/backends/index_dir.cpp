#include "backends/index_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <vector>

#include <dix/names.hpp>

namespace dix::index_dir {
namespace {

namespace fs = std::filesystem;

constexpr const char* marker_tmp_name = "dix-index.tmp";
constexpr const char* marker_magic = "dix-index 1";

std::string shown(const fs::path& p) { return escape_bytes(p.string()); }

error os_error(const std::string& what, int err) { return error{errc::io_error, what + ": " + std::strerror(err)}; }

std::string marker_text(std::string_view kind, std::string_view id) {
  return std::string(marker_magic) + "\nkind " + std::string(kind) + "\nid " + std::string(id) + "\n";
}

// The marker's kind and id, or nullopt when the file is not a marker of ours.
struct marker {
  std::string kind, id;
};
std::optional<marker> read_marker(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > 4096) return std::nullopt;
  std::istringstream lines(text);
  std::string magic, kind_line, id_line, rest;
  if (!std::getline(lines, magic) || magic != marker_magic) return std::nullopt;
  if (!std::getline(lines, kind_line) || kind_line.rfind("kind ", 0) != 0) return std::nullopt;
  if (!std::getline(lines, id_line) || id_line.rfind("id ", 0) != 0) return std::nullopt;
  if (std::getline(lines, rest)) return std::nullopt;
  return marker{kind_line.substr(5), id_line.substr(3)};
}

result<void> fsync_fd_of(const fs::path& p, int flags) {
  const int fd = ::open(p.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return os_error("opening " + shown(p), errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return os_error("syncing " + shown(p), err);
  return {};
}

// The marker, durably: a temporary file synced, renamed into place, the directory synced.
result<void> write_marker(const fs::path& dir, std::string_view kind, std::string_view id) {
  const auto tmp = dir / marker_tmp_name;
  const auto text = marker_text(kind, id);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return os_error("creating " + shown(tmp), errno);
  std::size_t done = 0;
  while (done < text.size()) {
    const auto n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(tmp.c_str());
      return os_error("writing " + shown(tmp), err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return os_error("syncing " + shown(tmp), err);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), (dir / marker_name).c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return os_error("renaming " + shown(tmp), err);
  }
  return fsync_fd_of(dir, O_RDONLY | O_DIRECTORY);
}

// Whether `file` is a marker's temporary an interrupted claim left: empty (created, nothing written
// yet) or the start of a marker. Anything else by that name is someone's file, and claim would
// truncate it: not ours to overwrite.
bool our_marker_tmp(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(file, ec))) return false;
  std::ifstream in(file, std::ios::binary);
  std::string head(64, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  const std::string magic = std::string(marker_magic) + "\n";
  return head.empty() || head.rfind(magic, 0) == 0 || magic.rfind(head, 0) == 0;
}

// Entries that do not make a directory anyone's: a file system's own, and our marker's temporary.
bool ignorable(const fs::path& dir, const std::string& name) {
  return name == "lost+found" || (name == marker_tmp_name && our_marker_tmp(dir / name));
}

// What `dir` is for kind/id, writing nothing: ours, absent (missing or holding nothing), or the
// refusal.
result<state> judge(const fs::path& dir, std::string_view kind, std::string_view id) {
  const std::string who = "index " + std::string(id) + ": ";
  // stat, not lstat: an index directory may be a symlink to a directory on another disk.
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT && !fs::is_symlink(dir)) return state::absent;
    if (errno == ENOENT) return error{errc::io_error, who + shown(dir) + " is a symlink to nothing"};
    return os_error(who + "cannot look at " + shown(dir), errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return error{errc::store_format_mismatch,
                 who + shown(dir) + " is not a directory; dix keeps an index only in a directory it made or found empty"};
  }
  std::error_code ec;
  const auto marker_path = dir / marker_name;
  if (fs::is_regular_file(fs::symlink_status(marker_path, ec))) {
    auto m = read_marker(marker_path);
    if (!m) {
      return error{errc::store_format_mismatch, who + shown(marker_path) + " is not a dix index marker; " + shown(dir) +
                                                    " is left as it is (move it away, or give the index another path)"};
    }
    if (m->kind != kind || m->id != id) {
      return error{errc::store_format_mismatch, who + shown(dir) + " holds the " + escape_bytes(m->kind) + " index " +
                                                    escape_bytes(m->id) + ", not this " + std::string(kind) + " index " +
                                                    std::string(id) + "; each index needs a directory of its own"};
    }
    return state::ours;
  }
  std::vector<std::string> found;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    auto name = it->path().filename().string();
    if (!ignorable(dir, name)) found.push_back(std::move(name));
  }
  if (ec) return os_error(who + "cannot list " + shown(dir), ec.value());
  if (found.empty()) return state::absent;
  std::sort(found.begin(), found.end());
  std::string what = "'" + escape_bytes(found.front()) + "'";
  if (found.size() > 1) what += " and " + std::to_string(found.size() - 1) + " more";
  return error{errc::store_format_mismatch,
               who + shown(dir) + " holds " + what + ", which dix did not create (no " + marker_name +
                   " marker); dix never adopts or removes what it did not make: move it away, or give the index another path"};
}

}  // namespace

result<state> look(const fs::path& dir, std::string_view kind, std::string_view id) { return judge(dir, kind, id); }

result<void> claim(const fs::path& dir, std::string_view kind, std::string_view id) {
  auto found = judge(dir, kind, id);
  if (!found) return found.error();
  if (*found == state::ours) return {};
  const std::string who = "index " + std::string(id) + ": ";
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir, ec))) {
    const auto parent = dir.parent_path().empty() ? fs::path(".") : dir.parent_path();
    if (!fs::is_directory(parent, ec)) {
      return error{errc::io_error, who + "cannot create " + shown(dir) + ": " + shown(parent) +
                                       " does not exist (only the index's own directory is created)"};
    }
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return os_error(who + "creating " + shown(dir), errno);
    // mkdir honours the umask; chmod makes it 0700 whatever it is (decision 0040).
    if (::chmod(dir.c_str(), 0700) != 0) return os_error(who + "making " + shown(dir) + " private", errno);
    if (auto ok = fsync_fd_of(parent, O_RDONLY | O_DIRECTORY); !ok) return ok;
  }
  if (auto ok = write_marker(dir, kind, id); !ok) return error{ok.error().value(), who + ok.error().message()};
  return {};
}

result<void> remove_own(const fs::path& dir, const std::function<bool(std::string_view)>& own, const std::string& who) {
  std::error_code ec;
  std::vector<fs::path> doomed;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name == marker_name || name == marker_tmp_name || !own(name)) continue;
    doomed.push_back(it->path());
  }
  if (ec) return os_error(who + ": listing " + shown(dir), ec.value());
  for (const auto& p : doomed) {
    const auto kind = fs::symlink_status(p, ec).type();
    if (kind == fs::file_type::directory) {
      // A directory the backend writes (RocksDB's WAL archive): the entries inside that `own`
      // names too, then the directory if nothing else is left in it; a file someone put there
      // stays, and so does the directory holding it.
      if (auto ok = remove_own(p, own, who); !ok) return ok;
      if (::rmdir(p.c_str()) != 0 && errno != ENOENT && errno != ENOTEMPTY && errno != EEXIST) {
        return os_error(who + ": removing " + shown(p), errno);
      }
    } else if (::unlink(p.c_str()) != 0 && errno != ENOENT) {
      return os_error(who + ": removing " + shown(p), errno);
    }
  }
  return fsync_fd_of(dir, O_RDONLY | O_DIRECTORY);
}

}  // namespace dix::index_dir
