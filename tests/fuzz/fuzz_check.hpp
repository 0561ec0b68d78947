// What every fuzz target shares: the libFuzzer entry point's signature, the bytes as a string
// view, and FUZZ_CHECK, an invariant that aborts in every build (not DIX_ASSERT, which a Release
// build may compile out), so a violated property is a crash the fuzzer and the regression
// runner both report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

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
