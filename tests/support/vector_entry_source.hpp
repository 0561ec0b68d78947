// An entry_source (core/drift.hpp) over a vector of entries, for the drift merge's and the verify
// scan's tests: it hands them out in the order given, then nullptr, after an optional preparation.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
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
  result<std::uint64_t> prepare(std::uint64_t units) override {
    const auto did = std::min(std::max<std::uint64_t>(units, 1), preparation_);
    preparation_ -= did;
    return did;
  }

 private:
  std::vector<digest_entry> entries_;
  std::uint64_t preparation_;
  std::size_t at_ = 0;
};

}  // namespace dix::test
