// What an index should hold (issue 31, formats.md §7), computed from the primary store: a
// snapshot's records of a log's projected tables, each table in id order, each record projected
// exactly as the tailer projects it for a batch (tailer_core::project). A record whose stored value
// is corrupt, or whose projection is unindexable, is not an entry — as it is not in the index.
// What `dix verify` merges with a backend's digest_view at the same cursor (core/drift.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <dix/backend.hpp>  // digest_entry
#include <dix/digest.hpp>
#include <dix/projection.hpp>
#include <dix/result.hpp>

#include "core/drift.hpp"
#include "ports/store_reader.hpp"

namespace dix {

// The entries of log `log`'s projected `tables` at `snapshot`, in merge order: the tables
// ascending, each read in id order. A backend's skips (unindexable records, backend::skips) are
// left out in one of two ways, asked of the record the tailer would deliver:
//   * `skipped` (the backend in this process): asked of every projected record, which is left out
//     when it answers true, as apply() leaves it out;
//   * `questions` (a backend that answers elsewhere, a remote node's: decision 0059): every
//     projected record is an entry, and the merge asks, in batches, only about the records the
//     index lacks (hold, left_out).
// Errors: the snapshot's read errors, and invalid_argument naming the table when a projection
// throws (the runtime treats that as runner-failed).
class projection_entries final : public entry_source {
 public:
  using skip_filter = std::function<bool(const record_entry&)>;
  using skip_questions = std::function<result<std::vector<bool>>(const std::vector<record_entry>&)>;
  projection_entries(store_snapshot& snapshot, std::string log, std::map<std::uint32_t, projection> tables,
                     skip_filter skipped = {}, skip_questions questions = {});
  result<const digest_entry*> next() override;
  std::optional<std::uint64_t> hold() override;
  result<std::vector<bool>> left_out(const std::vector<std::uint64_t>& tickets) override;
  // Records left out so far (by `skipped`, or answered true by `questions`).
  std::uint64_t skipped() const noexcept { return skipped_count_; }

 private:
  store_snapshot& snapshot_;
  std::map<std::uint32_t, projection> tables_;
  std::map<std::uint32_t, projection>::const_iterator table_;
  skip_filter skipped_;
  skip_questions questions_;
  std::vector<record_entry> held_;  // the records hold() kept, by ticket
  bool sought_ = false;
  std::uint64_t skipped_count_ = 0;
  digest_entry e_;
  record_entry record_;  // what the tailer would deliver (core/record_projection.hpp; its buffers reused)
};

// Adds the entries of `table` of log `log` at `snapshot`, projected with `fn`, to `into`, and
// hands each to `each` (if set) in ascending id order; `each` answering false stops the scan
// (`into` then holds a part). Errors as projection_entries'.
result<void> add_projection_digest(store_snapshot& snapshot, const std::string& log, std::uint32_t table,
                                   const projection& fn, index_digest& into,
                                   const std::function<bool(const digest_entry&)>& each = {});

}  // namespace dix
