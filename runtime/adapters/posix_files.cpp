#include "adapters/posix_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <system_error>

namespace dix {

unique_fd::~unique_fd() {
  if (fd_ >= 0) ::close(fd_);
}

unique_fd& unique_fd::operator=(unique_fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

int unique_fd::release() noexcept {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

error posix_error(std::string_view subject, std::string_view what, const std::filesystem::path& path, int code) {
  return error{errc::io_error, std::string(subject) + ": " + std::string(what) + " " + path.string() + ": " +
                                   std::generic_category().message(code)};
}

result<void> make_private_directory(const std::filesystem::path& path, std::string_view subject) {
  if (::mkdir(path.c_str(), 0700) == 0) {
    if (::chmod(path.c_str(), 0700) != 0) return posix_error(subject, "chmod", path, errno);
    return {};
  }
  if (errno != EEXIST) return posix_error(subject, "mkdir", path, errno);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return posix_error(subject, "stat", path, errno);
  if (!S_ISDIR(st.st_mode)) return posix_error(subject, "expected a directory (not a symlink) at", path, ENOTDIR);
  return check_private(st, path, subject);
}

result<void> check_private(const struct ::stat& st, const std::filesystem::path& path, std::string_view subject) {
  const auto me = ::geteuid();
  if (st.st_uid != me) {
    return error{errc::io_error, std::string(subject) + ": " + path.string() + " is owned by uid " + std::to_string(st.st_uid) +
                                     ", not by this process's user (uid " + std::to_string(me) +
                                     "); dix trusts no file another user can change: remove it, or chown it to uid " +
                                     std::to_string(me) + " if it is yours"};
  }
  if ((st.st_mode & 077) != 0) {
    char found[8];
    std::snprintf(found, sizeof found, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    const char* wanted = S_ISDIR(st.st_mode) ? "0700" : "0600";
    // Read access is refused too: a lock file another user can open can be flocked by them, and
    // dix keeps the whole directory private (decision 0011).
    const char* risk = (st.st_mode & 022) != 0 ? "other users could change it" : "other users could open it";
    return error{errc::io_error, std::string(subject) + ": " + path.string() + " has mode " + found + ": " + risk +
                                     "; dix keeps its files private, " + wanted + " (chmod " + wanted + " " +
                                     path.string() + ")"};
  }
  return {};
}

result<void> check_private(int fd, const std::filesystem::path& path, std::string_view subject) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return posix_error(subject, "stat", path, errno);
  return check_private(st, path, subject);
}

result<unique_fd> open_private_file(const std::filesystem::path& path, std::string_view subject) {
  unique_fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() >= 0) {
    if (::fchmod(fd.get(), 0600) != 0) return posix_error(subject, "fchmod", path, errno);
    return fd;
  }
  if (errno != EEXIST) return posix_error(subject, "create", path, errno);
  fd = unique_fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0) return posix_error(subject, "open", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return posix_error(subject, "stat", path, errno);
  if (!S_ISREG(st.st_mode)) return posix_error(subject, "expected a regular file at", path, EINVAL);
  if (auto ok = check_private(st, path, subject); !ok) return ok.error();
  return fd;
}

}  // namespace dix
