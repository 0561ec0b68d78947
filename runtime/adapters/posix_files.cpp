#include "adapters/posix_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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
  return {};
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
  return fd;
}

}  // namespace dix
