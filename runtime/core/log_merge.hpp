// Reads several logs as one stream, smallest next header time first, ties by attach order
// (protocol.md §3.7). Only per-log order is meaningful; the merge just keeps a fair, stable
// interleaving. Each source must already be open.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include <dix/result.hpp>

#include "ports/log_source.hpp"

namespace dix {

struct merged_transaction {
  std::size_t source = 0;  // index into the sources given at construction (attach order)
  wal_transaction txn;
};

class log_merge {
 public:
  explicit log_merge(std::vector<log_source*> sources);

  // The next transaction over all logs, or nullopt when every log is caught up. An error names
  // the log it came from; the merge must then be rebuilt from freshly opened sources.
  result<std::optional<merged_transaction>> next();

  // Holds back, per source, every transaction that ends beyond `last[i]`: such a source counts as
  // caught up until hold() is lifted (an empty vector). What was read ahead stays pending, so
  // nothing is lost or read twice. tailer_core's verify fence (issue 31).
  void hold(std::vector<std::uint64_t> last) { hold_ = std::move(last); }
  // Whether the last next() left a transaction pending because it is held back.
  bool holding() const noexcept { return holding_; }

 private:
  std::vector<log_source*> sources_;
  std::vector<std::optional<wal_transaction>> pending_;  // one look-ahead per source
  std::vector<std::uint64_t> hold_;                      // empty: nothing held back
  bool holding_ = false;
};

}  // namespace dix
