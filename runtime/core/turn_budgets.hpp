// turn_budgets: the turn budgets and chunk bounds of one drain turn (protocol.md §4.1), named as
// in runner_options (units last). Made once per registration from its options, carried as is in
// log_pull and taken by tailer_core::pull. Standard library only.
#pragma once

#include <chrono>
#include <cstdint>

#include <dix/options.hpp>

namespace dix {

struct turn_budgets {
  std::uint32_t max_transactions_per_turn = 256;           // between transactions. Default: 256
  std::uint64_t max_bytes_per_turn = 4u << 20;             // WriteBatch data size. Default: 4 MiB
  std::chrono::milliseconds max_milliseconds_per_turn{5};  // Default: 5 ms
  std::uint32_t max_chunk_records = 4096;                  // distinct keys. Default: 4096
  std::uint64_t max_chunk_bytes = 4u << 20;                // the estimate of §4.3. Default: 4 MiB
};

inline bool operator==(const turn_budgets& a, const turn_budgets& b) {
  return a.max_transactions_per_turn == b.max_transactions_per_turn
         && a.max_bytes_per_turn == b.max_bytes_per_turn
         && a.max_milliseconds_per_turn == b.max_milliseconds_per_turn
         && a.max_chunk_records == b.max_chunk_records && a.max_chunk_bytes == b.max_chunk_bytes;
}
inline bool operator!=(const turn_budgets& a, const turn_budgets& b) { return !(a == b); }

// The budgets of `options` (validated; the defaults of both agree).
inline turn_budgets make_turn_budgets(const runner_options& options) noexcept {
  return turn_budgets{options.max_transactions_per_turn, options.max_bytes_per_turn, options.max_milliseconds_per_turn,
                      options.max_chunk_records, options.max_chunk_bytes};
}

}  // namespace dix
