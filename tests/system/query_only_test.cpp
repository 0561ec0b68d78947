// Query-only handles end to end (backends.md §0, decision 0028): an owner runtime in another
// process (dix_owner_process, tests/support/owner_process.hpp) commits writes and keeps its
// indexes; this process has no runtime: a reader opened with make_query_host(home, id) admits
// through the shared segment and reads the index database the owner is writing. Real processes,
// real RocksDB; the waits are the wait admissions, the segment futex (harness wait_ready) and
// the owner's answers, their timeouts failure guards only.
//
// The owner registers `fulltext` (Xapian) and `similar` (hnsw) beside `by-value`
// (owner_process(dir, true)): the case below reads all three through their readers (`similar`
// projects test::vector_of(payload), l2, dimension 4).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>

#include <dix/backends/hnsw_backend.hpp>
#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/backends/xapian_backend.hpp>
#include <dix/free_functions.hpp>
#include <dix/query_host.hpp>

#include "adapters/test_support.hpp"
#include "harness/child_process.hpp"
#include "support/owner_process.hpp"

using namespace dix;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> ids_of(const std::vector<record_ref>& rows) {
  std::vector<std::string> ids;
  for (const auto& r : rows) ids.push_back(r.record_id);
  return ids;
}

coverage_mode wait_for(index_time_t since) { return coverage_mode{coverage_kind::wait, 3000ms, since, 120000ms}; }

errc code_of(const result<query_result<std::vector<record_ref>>>& r) { return r ? errc::none : r.error().value(); }

// Until every id reads ready with an epoch above `above` (the segment futex); the lowest epoch.
epoch_t ready_above(const std::filesystem::path& home, const std::vector<std::string>& ids, epoch_t above) {
  auto epoch = cli::wait_ready(home, ids, above, std::chrono::steady_clock::now() + 120s);
  REQUIRE(epoch);
  return *epoch;
}

}  // namespace

TEST_CASE("query-only: with the owner in another process a reader without a runtime answers a wait query with the write just committed, admits bounded, refuses strict, and refuses while the owner rebuilds",
          "[system][query-only]") {
  test::temp_dir dir;
  test::owner_process owner(dir.path(), true);
  const auto epoch = ready_above(owner.home(), {"by-value", "fulltext", "similar"}, 0);

  rocksdb_index_options o;
  o.path = owner.index_path("by-value");
  auto by_value = rocksdb_index_reader::open("by-value", o, make_query_host(owner.home(), "by-value")).value();

  // A write the owner just committed: a wait query since its time includes it.
  const auto first = owner.put("q1", "alpha");
  auto waited = by_value->lookup("alpha", 10, wait_for(first.time));
  REQUIRE(waited);
  CHECK(ids_of(waited->rows) == std::vector<std::string>{"q1"});
  CHECK(waited->rows[0].version == first.time);
  CHECK(waited->rows[0].log == "main");
  const auto second = owner.put("q2", "alpha");
  CHECK(ids_of(by_value->lookup("alpha", 10, wait_for(second.time)).value().rows) == std::vector<std::string>{"q1", "q2"});
  CHECK(ids_of(by_value->range("alpha", "alphb", 10, wait_for(second.time)).value().rows).size() == 2);

  // The owner's Xapian index, through its reader (the same fields as the owner's).
  xapian_options xo;
  xo.path = owner.index_path("fulltext");
  xo.fields["text"] = xapian_field{"T", 1};
  auto fulltext = xapian_reader::open("fulltext", xo, make_query_host(owner.home(), "fulltext")).value();
  auto searched = fulltext->search("alpha", 0, 10, wait_for(second.time));
  REQUIRE(searched);
  std::vector<std::string> found;
  for (const auto& r : searched->rows) found.push_back(r.ref.record_id);
  std::sort(found.begin(), found.end());
  CHECK(found == std::vector<std::string>{"q1", "q2"});
  CHECK(fulltext->search("alpha", 0, 10, coverage_mode{coverage_kind::strict, 3000ms, 0, 0ms}).error().value() ==
        errc::index_lagging);

  // The owner's hnsw index, through its reader (the owner's dimension and space): both records
  // hold the payload "alpha", so both lie at distance 0 from its vector.
  hnsw_options ho;
  ho.state_dir = owner.index_path("similar");
  ho.dimension = test::owner_vector_dimension;
  auto similar = hnsw_reader::open("similar", ho, make_query_host(owner.home(), "similar")).value();
  const auto alpha = test::vector_of("alpha");
  auto near = similar->knn(alpha.data(), alpha.size(), 10, wait_for(second.time));
  REQUIRE(near);
  std::vector<std::string> nearest;
  for (const auto& r : near->rows) {
    nearest.push_back(r.ref.record_id);
    CHECK(r.score == 0.0);
  }
  std::sort(nearest.begin(), nearest.end());
  CHECK(nearest == std::vector<std::string>{"q1", "q2"});
  CHECK(similar->knn(alpha.data(), alpha.size(), 10, coverage_mode{coverage_kind::strict, 3000ms, 0, 0ms}).error().value() ==
        errc::index_lagging);

  // The owner's coverage is fresh (its last barrier covered `second`): bounded is admitted with
  // the age as the lag bound; strict never is from another process.
  auto within = by_value->lookup("alpha", 10, coverage_mode{coverage_kind::bounded, 60000ms, 0, 0ms});
  REQUIRE(within);
  CHECK(within->coverage.state == coverage_state::bounded);
  CHECK(within->coverage.lag_upper_bound.has_value());
  CHECK(ids_of(within->rows) == std::vector<std::string>{"q1", "q2"});
  auto strict = by_value->lookup("alpha", 10, coverage_mode{coverage_kind::strict, 3000ms, 0, 0ms});
  CHECK(code_of(strict) == errc::index_lagging);

  // A rebuild the owner cannot finish (its barriers held): queries are refused with rebuilding.
  owner.hold();
  REQUIRE(request_rebuild(owner.home(), "by-value").value());
  REQUIRE(test::wait_readiness(owner.home(), "by-value",
                               [](const dix::readiness& r) { return r.state == readiness_state::rebuilding; }));
  CHECK(code_of(by_value->lookup("alpha", 10)) == errc::rebuilding);
  // A wait query waits through a rebuild (§12.6) and answers `rebuilding` at its deadline: a
  // short one here (the rebuild is held, so the outcome is the same at any deadline).
  CHECK(code_of(by_value->lookup("alpha", 10, coverage_mode{coverage_kind::wait, 3000ms, second.time, 300ms})) ==
        errc::rebuilding);
  // Once it finishes, the reader reads the rebuilt index (its families recreated under it).
  owner.release();
  const auto rebuilt = ready_above(owner.home(), {"by-value"}, epoch);
  CHECK(rebuilt > epoch);
  owner.del("q1");
  const auto third = owner.put("q3", "alpha");
  CHECK(ids_of(by_value->lookup("alpha", 10, wait_for(third.time)).value().rows) == std::vector<std::string>{"q2", "q3"});

  by_value.reset();
  CHECK(owner.stop() == 0);
}
