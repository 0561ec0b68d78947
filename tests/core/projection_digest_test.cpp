// Tests of the projection digest (core/projection_digest.*): what an index should hold at a
// snapshot, computed as the tailer projects — unindexable and corrupt records are not entries,
// entries come in id order, a throwing projection and a failing read are errors.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "core/projection_digest.hpp"
#include "core/txn_header.hpp"
#include "support/fake_store.hpp"

using namespace dix;
using dix::test::fake_store;

namespace {

// Payloads starting with '!' are unindexable; the rest project to "p:" + payload.
const projection upper = [](std::string_view payload, const record_info&) -> projection_result {
  if (!payload.empty() && payload[0] == '!') return unindexable{"bang"};
  return "p:" + std::string(payload);
};

}  // namespace

TEST_CASE("projection digest: the entries are the projected records in id order, with their versions, and unindexable and corrupt records are not entries", "[core][digest]") {
  fake_store store("main", "identity-1");
  const auto [s1, t1] = store.commit({test::put(1, "b", "two"), test::put(1, "a", "one"), test::put(2, "z", "other table")});
  const auto [s2, t2] = store.commit({test::put(1, "c", "!skip"), test::put(1, "a", "one again"), test::del(1, "b")});
  store.poke(1, "d", std::string("bad"));  // shorter than a version: record-corrupt
  store.commit({test::put(1, "e", "five")});
  fake_store::reader reader{store};
  auto snapshot = reader.snapshot().value();
  index_digest digest;
  std::vector<digest_entry> seen;
  REQUIRE(add_projection_digest(*snapshot, "main", 1, upper, digest, [&](const digest_entry& e) {
    seen.push_back(e);
    return true;
  }));
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].record_id == "a");
  CHECK(seen[0].version == t2);
  CHECK(seen[0].hash == entry_hash("main", 1, "a", t2, "p:one again"));
  CHECK(seen[1].record_id == "e");
  CHECK(seen[1].log == "main");
  CHECK(seen[1].table == 1);
  index_digest want;
  want.add(entry_hash("main", 1, "a", t2, "p:one again"));
  want.add(seen[1].hash);
  CHECK(digest == want);
  // Another table adds to the same digest.
  REQUIRE(add_projection_digest(*snapshot, "main", 2, upper, digest));
  CHECK(digest.records == 3);
  (void)s1;
  (void)t1;
  (void)s2;
}

TEST_CASE("projection digest: a stop after the first entry leaves a partial digest, a throwing projection and a failing read are errors", "[core][digest]") {
  fake_store store("main", "identity-1");
  store.commit({test::put(1, "a", "x"), test::put(1, "b", "y")});
  fake_store::reader reader{store};
  auto snapshot = reader.snapshot().value();
  index_digest partial;
  int calls = 0;
  REQUIRE(add_projection_digest(*snapshot, "main", 1, upper, partial, [&](const digest_entry&) { return ++calls < 1; }));
  CHECK(calls == 1);
  CHECK(partial.records == 1);
  const projection throws = [](std::string_view, const record_info&) -> projection_result { throw std::runtime_error("no"); };
  index_digest d;
  auto failed = add_projection_digest(*snapshot, "main", 1, throws, d);
  REQUIRE_FALSE(failed);
  CHECK(failed.error().message().find("table 1 threw") != std::string::npos);
  store.fail_reads = true;
  CHECK(add_projection_digest(*snapshot, "main", 1, upper, d).error().value() == errc::io_error);
}
