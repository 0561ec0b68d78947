// DIX_ASSERT: an invariant of the code, checked in every build — Release included (the README's
// build) — and fatal when it does not hold: the process prints the condition and where it failed,
// and aborts. For what only a bug of ours can break (a core's bound, an epoch that must rise, a
// caller's precondition inside the runtime), never for bad input, a backend's answer or an I/O
// failure: those are errors with a defined outcome (protocol.md §10). An invariant that stays
// checked documents the code as it runs (TigerBeetle's practice, style.md): keep each one cheap
// on the hot path. Standard library only.
#pragma once

#include <cstdio>
#include <cstdlib>

#define DIX_ASSERT(condition) \
  (static_cast<bool>(condition) ? static_cast<void>(0) : ::dix::assertion_failed(#condition, __FILE__, __LINE__))

namespace dix {

[[noreturn]] inline void assertion_failed(const char* condition, const char* file, int line) noexcept {
  std::fprintf(stderr, "dix: assertion failed: %s (%s:%d)\n", condition, file, line);
  std::fflush(stderr);
  std::abort();
}

}  // namespace dix
