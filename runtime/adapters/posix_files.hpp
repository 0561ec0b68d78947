// POSIX file helpers shared by the readiness segment and the process lock table (formats.md
// §4.1: directories 0700, files 0600, whatever the umask): an owning descriptor, a private
// directory, a private file opened read-write, and io_error messages that name the path.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <string_view>

#include <dix/result.hpp>

namespace dix {

// Owns a descriptor (-1 = none); closes it on destruction.
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) noexcept : fd_(fd) {}
  ~unique_fd();
  unique_fd(unique_fd&& other) noexcept : fd_(other.release()) {}
  unique_fd& operator=(unique_fd&& other) noexcept;
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  int get() const noexcept { return fd_; }
  int release() noexcept;

 private:
  int fd_ = -1;
};

// io_error "<subject>: <what> <path>: <strerror(code)>".
error posix_error(std::string_view subject, std::string_view what, const std::filesystem::path& path, int code);

// mkdir 0700 with the mode set explicitly (chmod), so the umask cannot widen or narrow it. An
// existing directory must be one (a symlink is refused) and private (check_private).
result<void> make_private_directory(const std::filesystem::path& path, std::string_view subject);

// Opens `path` read-write (O_CLOEXEC, O_NOFOLLOW), creating it 0600 (fchmod: umask-independent)
// when missing; an existing one must be a regular file and private (check_private).
result<unique_fd> open_private_file(const std::filesystem::path& path, std::string_view subject);

// What another local user could change is not trusted (formats.md §4.1, decision 0011): the
// file `st` describes must be owned by the effective user, and no group or other permission bit
// may be set. The error (io_error) names the path, the owner or mode found and the remedy.
result<void> check_private(const struct ::stat& st, const std::filesystem::path& path, std::string_view subject);
result<void> check_private(int fd, const std::filesystem::path& path, std::string_view subject);

}  // namespace dix
