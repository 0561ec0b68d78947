// Whole files as bytes for tests of byte-exact formats (the readiness and metrics segments): read
// one, overwrite bytes at an offset in place (what another writer, an older or newer dix, or a
// crash could leave), replace one whole, little-endian words to write, and an older runtime's
// metrics segment.
#pragma once

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/bytes.hpp"

namespace dix::test {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Overwrites bytes.size() bytes at `offset`; the file keeps its size unless they reach past it.
inline void patch_file(const std::filesystem::path& path, std::size_t offset, const std::string& bytes) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}

template <class T>
std::string le(T v) {
  std::string s;
  put_le(s, v);
  return s;
}

// `bytes` written beside `path` (mode 0600), then renamed over it: a mapping of the old file
// stays as it was.
inline void replace_file(const std::filesystem::path& path, const std::string& bytes) {
  auto aside = path;
  aside += ".test";
  {
    std::ofstream out(aside, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
  }
  std::filesystem::permissions(aside, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::filesystem::rename(aside, path);
}

// A metrics segment of layout 1 (docs/formats-metrics.md before decision 0030: 256-byte blocks,
// no log names) as an older runtime leaves it, with lag figures of one log in block `lag_block`:
// taken under `epoch` at `taken_wall_ns`, runner running, sequence lag 42.
inline std::string layout_1_metrics_file(std::uint32_t blocks, std::uint32_t lag_block, std::uint64_t epoch,
                                         std::uint64_t taken_wall_ns = 1) {
  std::string bytes(128 + std::size_t{blocks} * 256, '\0');
  auto put = [&](std::size_t at, const std::string& b) { bytes.replace(at, b.size(), b); };
  put(0, "DIXMETRC");
  put(8, le<std::uint32_t>(1));
  put(12, le<std::uint32_t>(128));
  put(16, le<std::uint32_t>(256));
  put(20, le<std::uint32_t>(blocks));
  const std::size_t at = 128 + std::size_t{lag_block} * 256;
  put(at, le<std::uint64_t>(2));                   // sequence: whole
  put(at + 8, le<std::uint64_t>(taken_wall_ns));   // written_wall_ns
  put(at + 64, le<std::uint64_t>(epoch));          // lag_epoch
  put(at + 72, le<std::uint64_t>(taken_wall_ns));  // lag_taken_wall_ns
  put(at + 124, le<std::uint32_t>(64));            // max_accepted_batches_ahead
  put(at + 136, std::string(1, '\x02'));           // runner_state running
  put(at + 137, std::string(1, '\x01'));           // lag_flags: present
  put(at + 139, std::string(1, '\x01'));           // log_count
  put(at + 144, le<std::uint64_t>(42));            // log 0 sequence_lag
  put(at + 160, le<std::uint64_t>(~std::uint64_t{0}));  // log 0 retention_headroom_ms −1
  return bytes;
}

}  // namespace dix::test
