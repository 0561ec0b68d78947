// What the Xapian backend's and reader's tests share: documents in the backend's projection
// encoding, the options both open (fields title → S weight 5, body → XB), the backend's
// asynchronous calls made synchronous, the committed documents by id, and a rewrite of many
// documents that recycles the blocks an older revision still needs (DatabaseModifiedError).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include <dix/backends/xapian_backend.hpp>

#include "support/backend_batches.hpp"
#include "support/fake_host.hpp"

namespace dix::test {

using xapian_fields = std::vector<std::pair<std::string, std::string>>;

inline record_entry xapian_entry(const std::string& id, xapian_fields fields, std::uint64_t version) {
  return present(id, encode_fields(fields), version);
}

inline xapian_options xapian_options_at(const std::filesystem::path& path) {
  xapian_options o;
  o.path = path;
  o.fields = {{"title", {"S", 5}}, {"body", {"XB", 1}}};
  return o;
}

inline result<void> barrier(xapian_backend& index) {
  waiter w;
  index.flush(flush_reason::age, w.make());
  return w.wait();
}

inline result<void> shut(xapian_backend& index, epoch_t epoch) {
  waiter w;
  index.shutdown(epoch, w.make());
  return w.wait();
}

inline result<void> reset(xapian_backend& index, epoch_t epoch) {
  waiter w;
  index.reset(epoch, w.make());
  return w.wait();
}

// id → version of every committed document.
template <class Handle>
std::map<std::string, std::uint64_t> stored(const Handle& index) {
  std::map<std::string, std::uint64_t> out;
  auto listed = index.stored_records();
  REQUIRE(listed);
  for (const auto& row : *listed) out[row.record_id] = row.version;
  return out;
}

// Commits `documents` records d0… (title "k", a body naming `round`) at version = through =
// `through`, in one batch of epoch 1. Two such commits after a reader's refresh overwrite the
// blocks its revision needs (glass keeps one older revision), so its next read of them throws
// DatabaseModifiedError; 1000 documents make the posting list span blocks the open did not read.
inline void rewrite_documents(xapian_backend& index, std::uint64_t through, std::size_t documents = 1000) {
  std::vector<record_entry> records;
  for (std::size_t i = 0; i < documents; ++i) {
    records.push_back(xapian_entry("d" + std::to_string(i),
                                   {{"title", "k"}, {"body", "round " + std::to_string(through) + " of " + std::to_string(i)}},
                                   through));
  }
  REQUIRE(index.deliver(make_batch(1, std::move(records), through)) == delivery_result::accepted);
  REQUIRE(barrier(index));
}

}  // namespace dix::test
