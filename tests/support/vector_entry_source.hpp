// An entry_source (core/drift.hpp) over a vector of entries, for the drift merge's and the verify
// scan's tests: it hands them out in the order given, then nullptr, after an optional preparation.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/drift.hpp"

namespace dix::test {

class vector_entry_source final : public entry_source {
 public:
  // `preparation`: rows prepare() reads before the first entry, as a digest_view that checks
  // its index first (the RocksDB index's); next() before they are read is a caller's error.
  explicit vector_entry_source(std::vector<digest_entry> entries, std::uint64_t preparation = 0)
      : entries_(std::move(entries)), preparation_(preparation) {}
  result<const digest_entry*> next() override {
    if (preparation_ != 0) return error{errc::io_error, "next() before the preparation was done"};
    if (at_ == entries_.size()) return static_cast<const digest_entry*>(nullptr);
    return &entries_[at_++];
  }
  // From here on the source asks questions (entry_source::hold): left_out answers true for the
  // record ids in `ids`, as a backend's skips() would. How many it was asked, and in how many
  // batches.
  void leave_out(std::set<std::string> ids) {
    left_out_ = std::move(ids);
    asks_ = true;
  }
  std::size_t left_out_asked() const noexcept { return asked_; }
  std::size_t left_out_batches() const noexcept { return batches_; }
  std::size_t left_out_largest_batch() const noexcept { return largest_; }
  std::optional<std::uint64_t> hold() override {
    if (!asks_ || at_ == 0) return std::nullopt;
    return at_ - 1;
  }
  result<std::vector<bool>> left_out(const std::vector<std::uint64_t>& tickets) override {
    ++batches_;
    largest_ = std::max(largest_, tickets.size());
    std::vector<bool> out;
    for (auto t : tickets) {
      if (t >= entries_.size()) return error{errc::io_error, "a ticket no entry has"};
      ++asked_;
      out.push_back(left_out_.count(entries_[t].record_id) != 0);
    }
    return out;
  }
  result<std::uint64_t> prepare(std::uint64_t units) override {
    const auto did = std::min(std::max<std::uint64_t>(units, 1), preparation_);
    preparation_ -= did;
    return did;
  }

 private:
  std::vector<digest_entry> entries_;
  std::uint64_t preparation_;
  std::size_t at_ = 0;
  std::set<std::string> left_out_;
  bool asks_ = false;
  std::size_t asked_ = 0;
  std::size_t batches_ = 0;
  std::size_t largest_ = 0;
};

}  // namespace dix::test
