#include "adapters/mapped_file.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>

#include <boost/interprocess/exceptions.hpp>
#include <boost/interprocess/file_mapping.hpp>
#include <boost/interprocess/mapped_region.hpp>

#include "adapters/posix_files.hpp"
#include "core/names.hpp"

namespace dix {

// The mapped files are defined for 64-bit little-endian Linux; other hosts refuse to build rather
// than attach (formats.md §4.1).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the mapped segments are little-endian only");
static_assert(sizeof(void*) == 8, "the mapped segments are 64-bit only");
static_assert(__atomic_always_lock_free(8, 0), "8-byte atomics must be lock-free on a mapping");
static_assert(__atomic_always_lock_free(4, 0), "4-byte atomics must be lock-free on a mapping");

namespace {

namespace fs = std::filesystem;

std::atomic<segment_map_hook> map_hook{nullptr};

long futex(void* word, int op, std::uint32_t value, const timespec* timeout) noexcept {
  return ::syscall(SYS_futex, word, op, value, timeout, nullptr, 0);
}

}  // namespace

struct mapped_file::region {
  boost::interprocess::mapped_region mapping;
};

mapped_file::mapped_file(std::unique_ptr<region> r)
    : region_(std::move(r)),
      base_(static_cast<unsigned char*>(region_->mapping.get_address())),
      bytes_(region_->mapping.get_size()) {}

mapped_file::~mapped_file() = default;

// Boost's file_mapping can only open by path, and it opens without O_NOFOLLOW: a file renamed or
// symlinked over `path` since `fd` was opened would be mapped instead of the one validated
// through `fd`. So nothing is mapped until the descriptor Boost opened names the same file
// (st_dev, st_ino) as `fd`; `fd` stays open meanwhile, so its inode number cannot have been
// reused by another file. Boost's descriptor (no O_CLOEXEC) is closed when this returns; the
// mapping outlives it.
result<std::unique_ptr<mapped_file>> mapped_file::map(int fd, std::size_t bytes, bool writable, const fs::path& path,
                                                      std::string_view subject) {
  namespace bip = boost::interprocess;
  struct stat validated {};
  if (::fstat(fd, &validated) != 0) return posix_error(subject, "fstat", path, errno);
  if (auto hook = map_hook.load(std::memory_order_acquire)) hook(path);
  const auto mode = writable ? bip::read_write : bip::read_only;
  try {
    bip::file_mapping file(path.c_str(), mode);
    struct stat opened {};
    if (::fstat(file.get_mapping_handle().handle, &opened) != 0) return posix_error(subject, "fstat", path, errno);
    if (opened.st_dev != validated.st_dev || opened.st_ino != validated.st_ino) {
      return error{errc::io_error, std::string(subject) + " " + path.string() +
                                       ": the file opened to map it is not the file opened and validated "
                                       "(replaced or made a symlink meanwhile); not mapped"};
    }
    auto r = std::make_unique<region>(region{bip::mapped_region(file, mode, 0, bytes)});
    return std::unique_ptr<mapped_file>(new mapped_file(std::move(r)));
  } catch (const bip::interprocess_exception& e) {
    if (auto code = e.get_native_error(); code != 0) return posix_error(subject, "map", path, code);
    return error{errc::io_error, std::string(subject) + ": map " + path.string() + ": " + e.what()};
  }
}

result<std::size_t> file_size(int fd, const fs::path& path, std::string_view subject) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return posix_error(subject, "fstat", path, errno);
  return static_cast<std::size_t>(st.st_size);
}

error layout_mismatch(std::string_view subject, const fs::path& path, const std::string& found,
                      const std::string& expected) {
  return error{errc::segment_layout_mismatch,
               std::string(subject) + " " + path.string() + ": found " + found + ", expected " + expected +
                   "; stop every process using this database, then delete " + path.string()};
}

// Header offsets shared by every layout (formats.md §4.2).
namespace {
constexpr std::size_t h_magic = 0;
constexpr std::size_t h_layout_version = 8;
constexpr std::size_t h_header_bytes = 12;
constexpr std::size_t h_unit_bytes = 16;
constexpr std::size_t h_unit_count = 20;
}  // namespace

result<std::uint32_t> check_layout(unsigned char* base, std::size_t size, const fs::path& path, const file_layout& l) {
  using mapped::load;
  const std::string expected_version = "layout version " + std::to_string(l.version);
  auto mismatch = [&](const std::string& found, const std::string& expected) {
    return layout_mismatch(l.subject, path, found, expected);
  };
  if (size < 8) return mismatch("a file of " + std::to_string(size) + " bytes", expected_version);
  auto magic = load<std::uint64_t>(base, h_magic);
  if (magic != l.magic_word()) {
    char text[8];
    std::memcpy(text, &magic, sizeof text);
    return mismatch("magic \"" + escape_bytes(std::string_view(text, sizeof text)) + "\" (not a dix " +
                        std::string(l.subject) + ")",
                    expected_version + " (magic \"" + std::string(l.magic) + "\")");
  }
  if (size < l.header_bytes) {
    std::string found = "a file of " + std::to_string(size) + " bytes";
    const auto header = " (at least " + std::to_string(l.header_bytes) + " bytes)";
    if (size >= h_layout_version + 4) {
      const auto version = load<std::uint32_t>(base, h_layout_version);
      // Of the expected layout but shorter than its header: the file was cut short, and
      // "found version 1, expected version 1" would say nothing.
      if (version == l.version) return mismatch(found + " that is truncated, shorter than its own header", expected_version + header);
      found = "layout version " + std::to_string(version) + " in " + found;
    }
    return mismatch(found, expected_version + header);
  }
  auto version = load<std::uint32_t>(base, h_layout_version);
  if (version != l.version) return mismatch("layout version " + std::to_string(version), expected_version);
  const std::string unit(l.unit);
  auto header = load<std::uint32_t>(base, h_header_bytes);
  auto unit_bytes = load<std::uint32_t>(base, h_unit_bytes);
  if (header != l.header_bytes || unit_bytes != l.unit_bytes) {
    return mismatch(expected_version + " with header_bytes " + std::to_string(header) + ", " + unit + "_bytes " +
                        std::to_string(unit_bytes),
                    expected_version + " with header_bytes " + std::to_string(l.header_bytes) + ", " + unit +
                        "_bytes " + std::to_string(l.unit_bytes));
  }
  auto count = load<std::uint32_t>(base, h_unit_count);
  const bool count_ok = count > 0 && count <= l.max_units;
  if (!count_ok || size != l.bytes(count)) {
    return mismatch(expected_version + " with " + unit + "_count " + std::to_string(count) + " in " +
                        std::to_string(size) + " bytes",
                    expected_version + " with 1…" + std::to_string(l.max_units) + " " + unit + "s in " +
                        std::to_string(l.header_bytes) + " + " + unit + "_count × " + std::to_string(l.unit_bytes) +
                        " bytes" + (count_ok ? " (" + std::to_string(l.bytes(count)) + ")" : ""));
  }
  return count;
}

// A directory, a FIFO or a device opens like a file, and mapping it fails with the system's
// "No such device" (or ftruncate's "Invalid argument"): name what is there instead.
result<void> regular_file(int fd, const fs::path& path, std::string_view subject) {
  struct stat kind {};
  if (::fstat(fd, &kind) != 0) return posix_error(subject, "fstat", path, errno);
  if (S_ISREG(kind.st_mode)) return {};
  return error{errc::io_error, std::string(subject) + " " + path.string() + ": not a regular file (" +
                                   (S_ISDIR(kind.st_mode) ? "a directory" : S_ISFIFO(kind.st_mode) ? "a FIFO" : "a special file") +
                                   "); stop every process using this database, then remove it"};
}

result<mapped_layout> create_or_validate(const fs::path& path, const file_layout& l, std::uint32_t count) {
  using mapped::load;
  using mapped::store;
  // O_NONBLOCK: a FIFO at the path must not block the open (issue 34: dix status hung on one);
  // it changes nothing for a regular file, and anything else is refused below.
  unique_fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (fd.get() < 0) {
    if (errno != ENOENT) return posix_error(l.subject, "open", path, errno);
    fd = unique_fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (fd.get() < 0) return posix_error(l.subject, "create", path, errno);
  } else {
    if (auto ok = regular_file(fd.get(), path, l.subject); !ok) return ok.error();
    if (auto ok = check_private(fd.get(), path, l.subject); !ok) return ok.error();
  }
  auto size = file_size(fd.get(), path, l.subject);
  if (!size) return size.error();
  if (*size > 0) {
    auto file = mapped_file::map(fd.get(), *size, true, path, l.subject);
    if (!file) return file.error();
    bool zero_magic = *size >= 8 && load<std::uint64_t>((*file)->base(), h_magic) == 0;
    if (!zero_magic) {
      auto found = check_layout((*file)->base(), *size, path, l);
      if (!found) return found.error();
      return mapped_layout{std::move(*file), *found, false};
    }
  }
  // Missing, empty or zero magic (an interrupted creation): (re)create, magic last.
  if (::fchmod(fd.get(), 0600) != 0) return posix_error(l.subject, "fchmod", path, errno);
  const auto bytes = l.bytes(count);
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return posix_error(l.subject, "ftruncate", path, errno);
  auto file = mapped_file::map(fd.get(), bytes, true, path, l.subject);
  if (!file) return file.error();
  auto* base = (*file)->base();
  // An interrupted creation may have left anything behind the zero magic: clear every word.
  for (std::size_t offset = 8; offset < bytes; offset += 8) store<std::uint64_t>(base, offset, 0, __ATOMIC_RELAXED);
  store<std::uint32_t>(base, h_layout_version, l.version, __ATOMIC_RELAXED);
  store<std::uint32_t>(base, h_header_bytes, l.header_bytes, __ATOMIC_RELAXED);
  store<std::uint32_t>(base, h_unit_bytes, l.unit_bytes, __ATOMIC_RELAXED);
  store<std::uint32_t>(base, h_unit_count, count, __ATOMIC_RELAXED);
  store<std::uint64_t>(base, h_magic, l.magic_word());  // release: the header is complete before it
  return mapped_layout{std::move(*file), count, true};
}

result<std::optional<mapped_layout>> open_existing(const fs::path& path, const file_layout& l, bool writable) {
  using mapped::load;
  // O_NONBLOCK: opening a FIFO read-only would wait for a writer for ever (issue 34).
  unique_fd fd(::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (fd.get() < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<mapped_layout>();
    return posix_error(l.subject, "open", path, errno);
  }
  if (auto ok = regular_file(fd.get(), path, l.subject); !ok) return ok.error();
  // Who writes to the file (a rebuild request, coverage demand) trusts it as a runtime does.
  if (writable) {
    if (auto ok = check_private(fd.get(), path, l.subject); !ok) return ok.error();
  }
  // A creator holds readiness.lock, which readers never take: it ftruncates before it writes the
  // magic, so a size that changed under a non-zero magic means the file was re-created; map again.
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto size = file_size(fd.get(), path, l.subject);
    if (!size) return size.error();
    if (*size == 0) return std::optional<mapped_layout>();
    auto file = mapped_file::map(fd.get(), *size, writable, path, l.subject);
    if (!file) return file.error();
    if (*size >= 8 && load<std::uint64_t>((*file)->base(), h_magic) == 0) return std::optional<mapped_layout>();
    auto again = file_size(fd.get(), path, l.subject);
    if (!again) return again.error();
    if (*again != *size) continue;
    auto count = check_layout((*file)->base(), *size, path, l);
    if (!count) return count.error();
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return posix_error(l.subject, "fstat", path, errno);
    return std::optional<mapped_layout>(mapped_layout{std::move(*file), *count, false, static_cast<std::uint64_t>(st.st_dev),
                                                      static_cast<std::uint64_t>(st.st_ino)});
  }
  return error{errc::io_error, std::string(l.subject) + " " + path.string() + ": its size kept changing while mapping it"};
}

namespace mapped {

void wake_all(unsigned char* base, std::size_t offset) noexcept {
  futex(base + offset, FUTEX_WAKE, static_cast<std::uint32_t>(INT_MAX), nullptr);
}

// The address of the 64-bit counter is that of its low 32 bits: little-endian.
std::uint64_t wait_counter(unsigned char* base, std::size_t offset, std::uint64_t seen,
                           std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto now_value = load<std::uint64_t>(base, offset);
    if (now_value != seen) return now_value;
    auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return now_value;
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    // EAGAIN (already changed), ETIMEDOUT, EINTR and spurious wakes all re-check above.
    futex(base + offset, FUTEX_WAIT, static_cast<std::uint32_t>(seen), &ts);
  }
}

}  // namespace mapped

void test_set_segment_map_hook(segment_map_hook hook) noexcept { map_hook.store(hook, std::memory_order_release); }

}  // namespace dix
