// What every fuzz target shares: the libFuzzer entry point's signature, the bytes as a string
// view, and FUZZ_CHECK, an invariant that aborts in every build (not DIX_ASSERT, which a Release
// build may compile out), so a violated property is a crash the fuzzer and the regression
// runner both report.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace dix::fuzz {

inline std::string_view as_view(const std::uint8_t* data, std::size_t size) noexcept {
  return {reinterpret_cast<const char*>(data), size};
}

[[noreturn]] inline void check_failed(const char* what, const char* file, int line) noexcept {
  std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", file, line, what);
  std::abort();
}

}  // namespace dix::fuzz

#define FUZZ_CHECK(condition) \
  ((condition) ? (void)0 : ::dix::fuzz::check_failed(#condition, __FILE__, __LINE__))

namespace dix::fuzz {

// A private temporary directory (mkdtemp: 0700) named after `prefix`, removed at destruction.
class temp_home {
 public:
  explicit temp_home(const char* prefix) {
    std::string pattern = (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
    FUZZ_CHECK(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~temp_home() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_home(const temp_home&) = delete;
  temp_home& operator=(const temp_home&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

// Makes `file` (0600, created or truncated, never through a symlink) hold exactly the input.
inline void write_file(const std::filesystem::path& file, const std::uint8_t* data, std::size_t size) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  FUZZ_CHECK(fd >= 0);
  std::size_t done = 0;
  while (done < size) {
    auto n = ::write(fd, data + done, size - done);
    FUZZ_CHECK(n > 0);
    done += static_cast<std::size_t>(n);
  }
  FUZZ_CHECK(::close(fd) == 0);
}

}  // namespace dix::fuzz
