// A small real filesystem for the free-space tests (decision 0013): a tmpfs of a given size that
// the test mounts itself and that is unmounted when the object goes out of scope, on every path
// out of the test (MNT_DETACH: a file still open cannot keep it mounted). A test whose only users
// of the filesystem are exec'd children first calls private_namespace(), so the mount also goes
// with the test process when it is killed (a ctest timeout). Root only; without root, or where
// mount(2) or unshare(2) is refused (a container without CAP_SYS_ADMIN), they say why and the
// test skips with a WARN. Standard library and POSIX (Linux) only.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace dix::test {

class tmpfs_mount {
 public:
  static std::unique_ptr<tmpfs_mount> make(const std::filesystem::path& at, std::uint64_t bytes, std::string& why) {
    if (::geteuid() != 0) {
      why = "not running as root: no tmpfs can be mounted";
      return nullptr;
    }
    std::error_code ec;
    std::filesystem::create_directories(at, ec);
    const auto options = "size=" + std::to_string(bytes) + ",mode=0700";
    if (ec || ::mount("tmpfs", at.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
      why = "cannot mount a tmpfs at " + at.string() + ": " + (ec ? ec.message() : std::strerror(errno));
      return nullptr;
    }
    return std::unique_ptr<tmpfs_mount>(new tmpfs_mount(at));
  }
  ~tmpfs_mount() { ::umount2(path_.c_str(), MNT_DETACH); }

  // For a test whose only users of the filesystem are exec'd `dix` children: root, a private
  // mount namespace (so a killed test leaves no mount), then make(). nullptr with `why` set when
  // any of it is refused: the test skips with a WARN.
  static std::unique_ptr<tmpfs_mount> for_children(const std::filesystem::path& at, std::uint64_t bytes, std::string& why) {
    if (::geteuid() != 0) {
      why = "not running as root: no tmpfs can be mounted";
      return nullptr;
    }
    if (!private_namespace(why)) return nullptr;
    return make(at, bytes, why);
  }

  // Grows (or shrinks) the filesystem to `bytes`, its files kept (a remount): space freed by
  // growing, for a store that filled what it had itself. false when the system refuses.
  bool resize(std::uint64_t bytes) const {
    const auto options = "size=" + std::to_string(bytes) + ",mode=0700";
    return ::mount("tmpfs", path_.c_str(), "tmpfs", MS_REMOUNT | MS_NOSUID | MS_NODEV, options.c_str()) == 0;
  }

  // Moves the calling thread (and the children it starts from now on) into a mount namespace of
  // its own, with private propagation: what it mounts is seen by no other process and disappears
  // when the last process in it ends. Not for tests that run RocksDB in this process: its
  // background threads may predate the call and stay in the old namespace, without the mount.
  static bool private_namespace(std::string& why) {
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      why = std::string("cannot enter a private mount namespace: ") + std::strerror(errno);
      return false;
    }
    return true;
  }
  tmpfs_mount(const tmpfs_mount&) = delete;
  tmpfs_mount& operator=(const tmpfs_mount&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  std::uint64_t available_bytes() const {
    struct statvfs st {};
    return ::statvfs(path_.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize : 0;
  }

  // Writes `file` (zeros) until the filesystem has at most `leave` bytes available or is full.
  void fill(const std::filesystem::path& file, std::uint64_t leave) const {
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) return;
    const std::vector<char> chunk(1 << 20, '\0');
    for (auto left = available_bytes(); left > leave; left = available_bytes()) {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), left - leave));
      if (::write(fd, chunk.data(), n) <= 0) break;  // ENOSPC: full
    }
    ::close(fd);
  }

 private:
  explicit tmpfs_mount(std::filesystem::path at) : path_(std::move(at)) {}
  std::filesystem::path path_;
};

}  // namespace dix::test
