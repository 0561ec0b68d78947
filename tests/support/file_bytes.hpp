// Whole files as bytes for tests of byte-exact formats (the readiness and metrics segments): read
// one, overwrite bytes at an offset in place (what another writer, an older or newer dix, or a
// crash could leave), and little-endian words to write.
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

}  // namespace dix::test
