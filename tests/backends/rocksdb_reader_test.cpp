// rocksdb_index_reader (decision 0028): the query-only handle over a real index database that a
// real rocksdb_index_backend of this process writes, as an owner in another process would (a
// secondary instance needs no lock the writer holds). The readers' hosts are small backend_hosts
// of this file; make_query_host itself is tested in tests/adapters/query_host_test.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <dix/backends/rocksdb_index_backend.hpp>

#include "backends/rocksdb_index_probe.hpp"
#include "support/backend_batches.hpp"
#include "support/dir_snapshot.hpp"
#include "support/fake_host.hpp"
#include "support/temp_dir.hpp"

using namespace dix;
using dix::test::temp_dir;
using namespace std::chrono_literals;

namespace {

record_entry entry(const std::string& id, std::vector<std::string> keys, std::uint64_t version) {
  return test::present(id, encode_keys(keys), version);
}

// A reader's host: admits with a coverage of its own, or refuses; `before_answer` runs inside
// admit_query before it returns (a barrier the owner makes durable meanwhile).
class reader_host final : public backend_host {
 public:
  bool is_owner_epoch(epoch_t) const noexcept override { return false; }
  dix::readiness readiness() const noexcept override { return {}; }
  void note_unindexable(std::string_view) noexcept override {}
  void request_rebuild() noexcept override {}
  result<coverage> admit_query(const coverage_mode& mode, cancel_token) override {
    admissions.fetch_add(1);
    if (refusal) return *refusal;
    if (before_answer) before_answer();
    return coverage{coverage_state::bounded, mode.tolerance, 7ms};
  }
  std::optional<error> refusal;
  std::function<void()> before_answer;
  std::atomic<int> admissions{0};
};

// The owner: a real backend writing `path`, attached to a fake host of epoch 1.
struct owner {
  test::fake_host host;
  std::shared_ptr<rocksdb_index_backend> index;
  explicit owner(const std::filesystem::path& path) {
    rocksdb_index_options o;
    o.path = path;
    index = rocksdb_index_backend::create("by-category", o).value();
    index->attach(host);
  }
  void write(std::vector<record_entry> records, std::uint64_t through) {
    REQUIRE(index->deliver(test::make_batch(host.epoch.load(), std::move(records), through)) == delivery_result::accepted);
    test::waiter w;
    index->flush(flush_reason::age, w.make());
    REQUIRE(w.wait());
  }
  result<void> reset() {
    test::waiter w;
    index->reset(host.epoch.load(), w.make());
    return w.wait();
  }
};

rocksdb_index_options at(const std::filesystem::path& path) {
  rocksdb_index_options o;
  o.path = path;
  return o;
}

std::vector<std::string> ids_of(const std::vector<record_ref>& rows) {
  std::vector<std::string> ids;
  for (const auto& r : rows) ids.push_back(r.record_id);
  return ids;
}

std::vector<std::string> lookup_ids(rocksdb_index_reader& reader, const std::string& key) {
  return ids_of(reader.lookup(key, 100).value().rows);
}

std::size_t private_dirs(const std::string& id) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path())) {
    if (e.path().filename().string().rfind("dix-reader-" + id + "-", 0) == 0) ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("rocksdb reader: answers as the backend does, with the admission's coverage, while the owner writes", "[adapter][backend][reader]") {
  temp_dir dir;
  owner w(dir / "index");
  w.write({entry("p1", {"books"}, 11), entry("p2", {"books", "toys"}, 12), entry("p3", {"garden"}, 13)}, 5);
  auto host = std::make_shared<reader_host>();
  auto reader = rocksdb_index_reader::open("by-category", at(dir / "index"), host).value();
  auto mine = reader->lookup("books", 100).value();
  auto theirs = w.index->lookup("books", 100).value();
  CHECK(mine.rows == theirs.rows);
  CHECK(ids_of(mine.rows) == std::vector<std::string>{"p1", "p2"});
  CHECK(mine.rows[1].version == 12);
  CHECK(mine.coverage.state == coverage_state::bounded);  // the admission's, not the owner host's
  CHECK(mine.coverage.lag_upper_bound == 7ms);
  CHECK(reader->range("b", "h", 100).value().rows == w.index->range("b", "h", 100).value().rows);
  CHECK(ids_of(reader->range("b", "h", 2).value().rows).size() == 2);
  CHECK(reader->range("h", "b", 10).error().value() == errc::invalid_argument);

  // Later barriers: replace, remove, add — the reader's next query sees each (the live WAL).
  w.write({entry("p1", {"toys"}, 21), test::absent("p2"), entry("p4", {"books"}, 22)}, 6);
  CHECK(lookup_ids(*reader, "books") == std::vector<std::string>{"p4"});
  CHECK(lookup_ids(*reader, "toys") == std::vector<std::string>{"p1"});
  CHECK(reader->lookup("toys", 100).value().rows == w.index->lookup("toys", 100).value().rows);
  CHECK(host->admissions.load() >= 6);
}

TEST_CASE("rocksdb reader: the view is refreshed after admission, so a barrier made durable inside admit_query is in the answer", "[adapter][backend][reader]") {
  temp_dir dir;
  owner w(dir / "index");
  w.write({entry("p1", {"books"}, 11)}, 5);
  auto host = std::make_shared<reader_host>();
  auto reader = rocksdb_index_reader::open("by-category", at(dir / "index"), host).value();
  CHECK(lookup_ids(*reader, "books") == std::vector<std::string>{"p1"});  // the view is open and caught up
  // The owner certifies coverage only after the barrier that made it durable: an admission that
  // returns after a barrier must be answered from a view at least that new.
  int barriers = 0;
  host->before_answer = [&] {
    ++barriers;
    w.write({entry("p" + std::to_string(barriers + 1), {"books"}, 20u + static_cast<unsigned>(barriers))},
            5u + static_cast<unsigned>(barriers));
  };
  CHECK(lookup_ids(*reader, "books") == std::vector<std::string>{"p1", "p2"});
  CHECK(ids_of(reader->range("books", "booksz", 10).value().rows) == std::vector<std::string>{"p1", "p2", "p3"});
  CHECK(barriers == 2);
}

TEST_CASE("rocksdb reader: a refused admission is the answer, before the database is touched", "[adapter][backend][reader]") {
  temp_dir dir;
  auto host = std::make_shared<reader_host>();
  host->refusal = error{errc::rebuilding, "the index is rebuilding"};
  auto reader = rocksdb_index_reader::open("by-category", at(dir / "index"), host).value();
  auto r = reader->lookup("books", 10);
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::rebuilding);
  CHECK_FALSE(std::filesystem::exists(dir / "index"));
}

TEST_CASE("rocksdb reader: an index with no database yet answers no rows, and its rows once the owner made one", "[adapter][backend][reader]") {
  temp_dir dir;
  auto host = std::make_shared<reader_host>();
  auto reader = rocksdb_index_reader::open("by-category", at(dir / "index"), host).value();
  auto none = reader->lookup("books", 10).value();
  CHECK(none.rows.empty());
  CHECK(none.coverage.state == coverage_state::bounded);
  CHECK_FALSE(std::filesystem::exists(dir / "index"));  // the reader created nothing there
  owner w(dir / "index");
  w.write({entry("p1", {"books"}, 11)}, 5);
  CHECK(lookup_ids(*reader, "books") == std::vector<std::string>{"p1"});
}

TEST_CASE("rocksdb reader: invalid options, id or host are refused, and the private directory goes with the reader", "[adapter][backend][reader]") {
  temp_dir dir;
  auto host = std::make_shared<reader_host>();
  CHECK(rocksdb_index_reader::open("../bad", at(dir / "index"), host).error().value() == errc::invalid_argument);
  CHECK(rocksdb_index_reader::open("by-category", rocksdb_index_options{}, host).error().value() == errc::invalid_argument);
  CHECK(rocksdb_index_reader::open("by-category", at(dir / "index"), nullptr).error().value() == errc::invalid_argument);
  const std::string id = "reader-dir-" + std::to_string(::getpid());
  CHECK(private_dirs(id) == 0);
  {
    owner w(dir / "index");
    w.write({entry("p1", {"books"}, 11)}, 5);
    auto reader = rocksdb_index_reader::open(id, at(dir / "index"), host).value();
    CHECK(lookup_ids(*reader, "books") == std::vector<std::string>{"p1"});
    CHECK(private_dirs(id) == 1);
  }
  CHECK(private_dirs(id) == 0);
}

TEST_CASE("rocksdb reader: opening and querying writes not a byte under the index directory", "[adapter][backend][reader]") {
  temp_dir dir;
  {
    owner w(dir / "index");
    w.write({entry("p1", {"books"}, 11), entry("p2", {"toys"}, 12)}, 5);
    test::waiter done;
    w.index->shutdown(1, done.make());
    REQUIRE(done.wait());
  }
  const auto before = test::snapshot_dir(dir / "index");
  {
    auto reader = rocksdb_index_reader::open("by-category", at(dir / "index"), std::make_shared<reader_host>()).value();
    CHECK(lookup_ids(*reader, "books") == std::vector<std::string>{"p1"});
    CHECK(ids_of(reader->range("a", "z", 10).value().rows) == std::vector<std::string>{"p1", "p2"});
  }
  CHECK(test::snapshot_dir(dir / "index") == before);
}

TEST_CASE("rocksdb reader: an index reset and rebuilt under it is read afresh, and a query at every step of the reset is a true answer or a retryable error", "[adapter][backend][reader]") {
  temp_dir dir;
  owner w(dir / "index");
  w.write({entry("old1", {"books"}, 11), entry("old2", {"books"}, 12)}, 5);
  auto reader = rocksdb_index_reader::open("by-category", at(dir / "index"), std::make_shared<reader_host>()).value();
  const std::vector<std::string> before{"old1", "old2"};
  REQUIRE(lookup_ids(*reader, "books") == before);

  SECTION("reset and rebuild between two queries") {
    REQUIRE(w.reset());
    w.write({entry("new1", {"books"}, 21)}, 9);
    CHECK(lookup_ids(*reader, "books") == std::vector<std::string>{"new1"});  // not the dropped families' rows
    w.write({entry("new2", {"books"}, 22)}, 10);
    CHECK(lookup_ids(*reader, "books") == std::vector<std::string>{"new1", "new2"});
  }
  SECTION("a query inside each step of the reset") {
    std::mutex m;
    std::vector<std::string> outcomes;
    rocksdb_index_probe::on_reset_step(*w.index, [&](reset_step step) {
      auto r = reader->lookup("books", 100);
      std::lock_guard g(m);
      if (!r) {
        // A family missing between drop and create: retryable, with a message.
        CHECK((r.error().value() == errc::unavailable || r.error().value() == errc::io_error));
        CHECK_FALSE(r.error().message().empty());
        outcomes.push_back(std::string(to_string(step)) + ": refused");
      } else {
        auto ids = ids_of(r->rows);
        CHECK((ids == before || ids.empty()));  // a durable state: before the reset, or emptied
        outcomes.push_back(std::string(to_string(step)) + ": " + std::to_string(ids.size()));
      }
      return false;
    });
    REQUIRE(w.reset());
    CHECK(outcomes.size() == reset_steps.size());
    rocksdb_index_probe::on_reset_step(*w.index, {});
    CHECK(lookup_ids(*reader, "books").empty());
    w.write({entry("new1", {"books"}, 21)}, 9);
    CHECK(lookup_ids(*reader, "books") == std::vector<std::string>{"new1"});
    INFO("outcomes: " << outcomes.size());
  }
  SECTION("a reset that fails after dropping a family, then the owner's next open creates it again") {
    rocksdb_index_probe::on_reset_step(*w.index, [](reset_step step) { return step == reset_step::create_entries; });
    REQUIRE_FALSE(w.reset());
    rocksdb_index_probe::on_reset_step(*w.index, {});
    auto during = reader->lookup("books", 100);
    if (during) CHECK((ids_of(during->rows) == before || during->rows.empty()));
    else CHECK(during.error().value() == errc::unavailable);
    REQUIRE(w.reset());  // reopens (the family created again) and resets
    w.write({entry("new1", {"books"}, 21)}, 9);
    CHECK(lookup_ids(*reader, "books") == std::vector<std::string>{"new1"});
  }
}
