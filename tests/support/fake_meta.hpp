// A meta_store (runtime/ports/meta_store.hpp) in memory, as the home store holds the records of
// one id: every write lands at once and is durable (a synced system transaction), reads see the
// writes, and a test can make the next writes fail.
#pragma once

#include <cstdint>
#include <vector>

#include "ports/meta_store.hpp"

namespace dix::test {

class fake_meta final : public meta_store {
 public:
  result<void> persist_epoch(epoch_t epoch) override {
    if (fail_writes) return error{errc::io_error, "metadata write failed (test)"};
    epochs.push_back(epoch);
    return {};
  }
  result<void> write_marker() override {
    if (fail_writes) return error{errc::io_error, "metadata write failed (test)"};
    ++markers;
    records.condemned = true;
    return {};
  }
  result<void> settle(std::uint64_t fingerprint) override {
    if (fail_writes) return error{errc::io_error, "metadata write failed (test)"};
    records.fingerprint = fingerprint;
    records.condemned = false;
    return {};
  }
  result<meta_records> read_records() override { return records; }

  std::vector<epoch_t> epochs;  // epoch/<id> writes, in order
  int markers = 0;              // condemned/<id> writes
  meta_records records;
  bool fail_writes = false;
};

}  // namespace dix::test
