// What every file of `<home>/dix/` that processes share by mapping it needs (the readiness
// segment, formats.md §4; the metrics segment, docs/formats-metrics.md): a MAP_SHARED mapping of
// exactly the file a descriptor opened O_NOFOLLOW and validated (decision 0007: Boost.Interprocess
// maps by path, so the file Boost opened is shown to be the validated one first), field access
// through `__atomic_*` builtins of the field's width (formats.md §4.4: no std::atomic on a
// mapping), and futex waits and wakes on a 64-bit counter's low 32 bits.
//
// Linux, 64-bit little-endian only. Thread safety: a mapped_file is immutable after map(); the
// helpers are as safe as the atomics they wrap.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <dix/result.hpp>

namespace dix {

// A MAP_SHARED mapping of a whole file, page-aligned at offset 0; unmapped on destruction.
class mapped_file {
 public:
  // Maps the first `bytes` of the file `fd` is open on, read-write or read-only (FUTEX_WAIT works
  // on either). Fails io_error naming `subject` and `path`, also when the file Boost opened by
  // path is not the one `fd` names (replaced or made a symlink since `fd` was opened): then
  // nothing is mapped.
  static result<std::unique_ptr<mapped_file>> map(int fd, std::size_t bytes, bool writable,
                                                  const std::filesystem::path& path, std::string_view subject);
  ~mapped_file();
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;

  unsigned char* base() const noexcept { return base_; }
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  struct region;  // Boost's mapped_region, kept out of this header
  explicit mapped_file(std::unique_ptr<region> r);
  std::unique_ptr<region> region_;
  unsigned char* base_;
  std::size_t bytes_;
};

// The size of the file `fd` is open on. Fails io_error naming `subject` and `path`.
result<std::size_t> file_size(int fd, const std::filesystem::path& path, std::string_view subject);

// segment_layout_mismatch "<subject> <path>: found <found>, expected <expected>; stop every
// process using this database, then delete <path>" (formats.md §4.6 step 2).
error layout_mismatch(std::string_view subject, const std::filesystem::path& path, const std::string& found,
                      const std::string& expected);

// The header every mapped file of dix/ starts with (formats.md §4.2, formats-metrics.md §1): the
// magic (8 bytes), then layout_version, header_bytes, the bytes of one unit (a slot, a block)
// and the number of units (4 bytes each); the units follow the header. The file is exactly
// header_bytes + count × unit_bytes long.
struct file_layout {
  std::string_view subject;  // "readiness segment": how every message names the file
  std::string_view magic;    // 8 characters, "DIXREADY"
  std::uint32_t version = 1;
  std::uint32_t header_bytes = 128;
  std::uint32_t unit_bytes = 128;
  std::string_view unit;     // "slot": the fields read slot_bytes, slot_count
  std::uint32_t max_units = 65536;

  std::size_t bytes(std::uint32_t count) const noexcept { return header_bytes + std::size_t{count} * unit_bytes; }
  // The magic as the little-endian word at offset 0.
  constexpr std::uint64_t magic_word() const noexcept {
    std::uint64_t w = 0;
    for (std::size_t i = 8; i-- > 0;) w = (w << 8) | (i < magic.size() ? static_cast<unsigned char>(magic[i]) : 0u);
    return w;
  }
};

// A mapped file of a checked layout and its unit count.
struct mapped_layout {
  std::unique_ptr<mapped_file> file;
  std::uint32_t count = 0;
  bool created = false;  // create_or_validate made it (anew): nothing of an earlier file is in it
  // The mapped file's st_dev and st_ino (open_existing only; 0 from create_or_validate). The
  // mapping holds the inode, so while it lives no other file can have the same pair.
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
};

// Validates a mapped file of `size` bytes whose magic is not zero: magic, layout_version,
// header_bytes, unit_bytes, a count in 1…max_units and the size; returns the count. Fails
// segment_layout_mismatch naming what was found and what was expected.
result<std::uint32_t> check_layout(unsigned char* base, std::size_t size, const std::filesystem::path& path,
                                   const file_layout& layout);

// For an attaching owner, holding readiness.lock (formats.md §4.6 step 2): opens `path`
// O_NOFOLLOW (an existing file must be private: check_private) and validates it; a missing or
// empty file, or one whose magic is zero (an interrupted creation), is (re)created 0600 with
// `count` units: every word zeroed, the header written, the magic last (release). An existing
// file keeps its own count. Fails segment_layout_mismatch, io_error.
result<mapped_layout> create_or_validate(const std::filesystem::path& path, const file_layout& layout,
                                         std::uint32_t count);

// For a process that does not attach: maps an existing file (read-write ones must be private).
// nullopt when the file or its directory is missing, the file is empty or its magic zero. A
// size that changed while mapping (a creator ftruncates before it writes the magic) maps again.
// Fails segment_layout_mismatch, io_error.
result<std::optional<mapped_layout>> open_existing(const std::filesystem::path& path, const file_layout& layout,
                                                   bool writable);

// Field access on a mapping: the builtins of the field's width, nothing else (formats.md §4.4).
// Every offset is a multiple of its field's width and the mapping is page-aligned.
namespace mapped {
template <class T>
T* field(unsigned char* base, std::size_t offset) noexcept {
  return reinterpret_cast<T*>(base + offset);
}
template <class T>
T load(unsigned char* base, std::size_t offset, int order = __ATOMIC_ACQUIRE) noexcept {
  return __atomic_load_n(field<T>(base, offset), order);
}
template <class T>
void store(unsigned char* base, std::size_t offset, T value, int order = __ATOMIC_RELEASE) noexcept {
  __atomic_store_n(field<T>(base, offset), value, order);
}

// Shared (not FUTEX_PRIVATE_FLAG) FUTEX_WAKE of every waiter on the counter at base+offset.
void wake_all(unsigned char* base, std::size_t offset) noexcept;
// Blocks until the 64-bit counter at base+offset differs from `seen` or `timeout` passed; returns
// it (equal to `seen` on timeout). FUTEX_WAIT on its low 32 bits; spurious wakes and EINTR re-check.
std::uint64_t wait_counter(unsigned char* base, std::size_t offset, std::uint64_t seen,
                           std::chrono::milliseconds timeout);
}  // namespace mapped

// Test-only: called with the file's path after it was opened (O_NOFOLLOW) and validated, just
// before Boost.Interprocess opens the path again to map it — the window in which a file renamed
// or symlinked over the path would be mapped instead. nullptr, the default, in production.
using segment_map_hook = void (*)(const std::filesystem::path& segment);
void test_set_segment_map_hook(segment_map_hook hook) noexcept;

}  // namespace dix
