// What the Xapian backend's and reader's tests share: documents in the backend's projection
// encoding, the options both open (fields title → S weight 5, body → XB), the backend's
// asynchronous calls made synchronous, the committed documents by id, and the
// DatabaseModifiedError checks of both searches (a rewrite of many documents that recycles the
// blocks an older revision still needs, between a search's refresh and its read).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include <algorithm>

#include <dix/backends/xapian_backend.hpp>

#include "backends/xapian_probe.hpp"

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

// `handle` (the backend itself or a reader of its directory) searches while `owner` holds
// rewrite_documents(owner, 1); `owner` commits twice between the refresh and the read of the
// first attempt (`every_attempt`: of both). Once, the retry answers from the latest commit;
// at every attempt, the one retry ends in a retryable io_error and the handle still serves.
template <class Handle>
void check_modified_retry(Handle& handle, xapian_backend& owner, bool every_attempt) {
  std::vector<int> attempts;
  std::uint64_t through = 1;
  xapian_probe::on_query_refreshed(handle, [&](int attempt) {
    attempts.push_back(attempt);
    if (attempt != 0 && !every_attempt) return;
    rewrite_documents(owner, ++through);  // glass keeps one older revision: the read's is gone
    rewrite_documents(owner, ++through);
  });
  auto found = handle.search("round 3", 0, 2000);  // every document once the retry reads
  CHECK(attempts == std::vector<int>{0, 1});  // the first read met the overwritten blocks
  xapian_probe::on_query_refreshed(handle, {});
  if (every_attempt) {
    REQUIRE_FALSE(found);
    CHECK(found.error().value() == errc::io_error);
    CHECK_THAT(found.error().message(), Catch::Contains("index products") && Catch::Contains("DatabaseModifiedError"));
    CHECK(handle.search("k", 0, 2000).value().rows.size() == 1000);
    return;
  }
  REQUIRE(found);
  CHECK(found->rows.size() == 1000);
  CHECK(std::all_of(found->rows.begin(), found->rows.end(), [](const scored_ref& row) { return row.ref.version == 3; }));
}

}  // namespace dix::test
