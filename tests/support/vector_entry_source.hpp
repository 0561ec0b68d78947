// An entry_source (core/drift.hpp) over a vector of entries, for the drift merge's and the verify
// scan's tests: it hands them out in the order given, then nullptr.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "core/drift.hpp"

namespace dix::test {

class vector_entry_source final : public entry_source {
 public:
  explicit vector_entry_source(std::vector<digest_entry> entries) : entries_(std::move(entries)) {}
  result<const digest_entry*> next() override {
    if (at_ == entries_.size()) return static_cast<const digest_entry*>(nullptr);
    return &entries_[at_++];
  }

 private:
  std::vector<digest_entry> entries_;
  std::size_t at_ = 0;
};

}  // namespace dix::test
