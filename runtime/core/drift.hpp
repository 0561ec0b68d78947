// Where an index and its primary's projection differ (issue 31, `dix verify`'s localisation): a
// merge of the index's entries (a digest_view) with the projection's (projection_entries), read
// once each, in digest_view::next()'s order — each log's entries together, its tables ascending,
// each table's record ids ascending bytewise. The merge also sums both sides' entry hashes, so one
// pass proves equality (the two digests agree, no difference) or names the differing records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dix/backend.hpp>  // digest_entry
#include <dix/digest.hpp>
#include <dix/result.hpp>
#include <dix/verify.hpp>  // drift, drift_kind

namespace dix {

// Entries in merge order, one at a time (nullptr after the last); each valid until the next call.
class entry_source {
 public:
  virtual ~entry_source() = default;
  virtual result<const digest_entry*> next() = 0;
  // As digest_view::prepare: rows read before the first entry, a slice at a time; 0 once ready.
  virtual result<std::uint64_t> prepare(std::uint64_t units) {
    (void)units;
    return std::uint64_t{0};
  }
  // For a source whose entries the backend may leave out, asked only of the entries the other
  // side lacks (a remote backend's node answers: decision 0059). hold() keeps the question about
  // the entry the last next() answered and returns its ticket, or nullopt when this source asks
  // none (its entries are all kept, or it filtered them already); left_out(tickets) answers the
  // held questions at once, in order (true: the backend leaves the entry out), and forgets them.
  // The merge holds at most held_questions_max before it asks, and asks before it leaves a log.
  // Errors are the question's. Default: no questions.
  virtual std::optional<std::uint64_t> hold() { return std::nullopt; }
  virtual result<std::vector<bool>> left_out(const std::vector<std::uint64_t>& tickets) {
    return std::vector<bool>(tickets.size(), false);
  }
};

// Questions the merge holds before it asks them (entry_source::hold).
inline constexpr std::size_t held_questions_max = 256;

// A backend's digest view (backend::open_digest) read as the merge's index side.
class view_entries final : public entry_source {
 public:
  explicit view_entries(digest_view& view) : view_(view) {}
  result<const digest_entry*> next() override { return view_.next(); }
  result<std::uint64_t> prepare(std::uint64_t units) override { return view_.prepare(units); }

 private:
  digest_view& view_;
};

struct drift_report {
  index_digest index;         // the sum of the index entries read (not the digest it stores)
  index_digest primary;       // the projection's
  std::uint64_t differences = 0;
  std::vector<drift> drifts;  // the first `limit` differences, in merge order
  // The digest the index stores (digest_view::digest), which the verify's caller sets: it must be
  // `index`, the sum of the entries read, or the backend's digest is out of contract.
  std::optional<index_digest> stored;
};

// The primary side of one log: its entries in merge order (the log's projected tables ascending).
using primary_source_of = std::function<result<std::unique_ptr<entry_source>>(const std::string& log)>;

// The merge of find_drift, a bounded step at a time, for a verify that reads at a given rate and
// reports its progress. Each step reads up to `entries` more entries (both sides together; a step
// may read one more; the index side's preparation, entry_source::prepare, counts its rows alike); step() answers true once the merge is complete, and report() then holds the
// whole outcome (before, what was found so far). An error ends it: later steps fail too.
class drift_merge {
 public:
  drift_merge(entry_source& index, std::vector<std::string> logs, primary_source_of primary_of, std::size_t limit);
  ~drift_merge();
  drift_merge(const drift_merge&) = delete;
  drift_merge& operator=(const drift_merge&) = delete;

  result<bool> step(std::uint64_t entries);
  bool done() const noexcept;
  std::uint64_t read() const noexcept;  // entries read so far, both sides
  const drift_report& report() const noexcept;

 private:
  struct state;
  std::unique_ptr<state> state_;
  bool failed_ = false;
};

// Merges `index` (every log, each together) with the projection of each log in `logs` (the logs
// the registration projects), keeping the first `limit` differences. A log of the index's that is
// not projected is all extra; a projected log the index lacks is all missing. io_error when either
// side breaks the order (a backend or a store out of contract), or their read errors.
result<drift_report> find_drift(entry_source& index, const std::vector<std::string>& logs,
                                const primary_source_of& primary_of, std::size_t limit);

}  // namespace dix
