#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include <dix/backends/xapian_backend.hpp>

#include "backends/xapian_probe.hpp"

#include "support/backend_batches.hpp"
#include "support/child.hpp"
#include "support/dir_snapshot.hpp"
#include "support/fake_host.hpp"
#include "support/temp_dir.hpp"
#include "support/xapian_support.hpp"

using namespace dix;
using dix::test::temp_dir;

namespace {

using test::barrier;
using test::make_batch;
using test::stored;

record_entry entry(const std::string& id, test::xapian_fields fields, std::uint64_t version) {
  return test::xapian_entry(id, std::move(fields), version);
}

// The host of a query-only handle in these tests (make_query_host's stand-in): it owns no epoch,
// admits by answering `answer` (after running `on_admit`, which may write through an owner) or
// refuses with `refusal`, and records the modes it was asked.
class reader_host final : public backend_host {
 public:
  std::function<void()> on_admit;
  std::optional<error> refusal;
  coverage answer{coverage_state::bounded, milliseconds{3000}, milliseconds{40}};

  bool is_owner_epoch(epoch_t) const noexcept override { return false; }
  dix::readiness readiness() const noexcept override { return {readiness_state::ready, readiness_reason::none, 0, 1}; }
  void note_unindexable(std::string_view) noexcept override {}
  void request_rebuild() noexcept override {}
  result<coverage> admit_query(const coverage_mode& mode, cancel_token) override {
    {
      std::lock_guard lock(mutex_);
      modes_.push_back(mode);
    }
    if (on_admit) on_admit();
    if (refusal) return *refusal;
    return answer;
  }
  std::vector<coverage_mode> modes() const {
    std::lock_guard lock(mutex_);
    return modes_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<coverage_mode> modes_;
};

// An owner (a real backend object, as an owner in another process would be) and a reader of the
// same directory.
struct fixture {
  temp_dir dir;
  std::filesystem::path path = dir / "index";
  test::fake_host owner_host;
  std::shared_ptr<xapian_backend> owner = xapian_backend::create("products", test::xapian_options_at(path)).value();
  std::shared_ptr<reader_host> host = std::make_shared<reader_host>();
  std::shared_ptr<xapian_reader> reader;

  fixture() { owner->attach(owner_host); }

  void commit(std::uint64_t through, std::vector<record_entry> records) {
    REQUIRE(owner->deliver(make_batch(owner_host.epoch.load(), std::move(records), through)) == delivery_result::accepted);
    REQUIRE(barrier(*owner));
  }
  void open_reader() { reader = xapian_reader::open("products", test::xapian_options_at(path), host).value(); }
  std::vector<std::string> search(const std::string& query) {
    std::vector<std::string> ids;
    auto found = reader->search(query, 0, 1000).value();
    for (auto& row : found.rows) ids.push_back(row.ref.record_id);
    return ids;
  }
};

std::vector<std::string> sorted(std::vector<std::string> ids) {
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace

TEST_CASE("xapian_reader: bad options, ids and a null host are invalid_argument, and a database there but unreadable is io_error", "[adapter][backend][xapian][reader]") {
  temp_dir dir;
  auto host = std::make_shared<reader_host>();
  auto refused = [&](std::string id, xapian_options o, std::shared_ptr<backend_host> h) {
    auto opened = xapian_reader::open(std::move(id), std::move(o), std::move(h));
    REQUIRE_FALSE(opened);
    CHECK(opened.error().value() == errc::invalid_argument);
    return opened.error().message();
  };
  auto o = test::xapian_options_at(dir / "index");
  CHECK_THAT(refused("bad id!", o, host), Catch::Contains("backend id"));
  auto no_path = o;
  no_path.path.clear();
  CHECK_THAT(refused("products", no_path, host), Catch::Contains("path"));
  auto bad_stemmer = o;
  bad_stemmer.stemmer = "klingon";
  CHECK_THAT(refused("products", bad_stemmer, host), Catch::Contains("stemmer = \"klingon\""));
  CHECK_THAT(refused("products", o, nullptr), Catch::Contains("host"));

  std::filesystem::create_directories(dir / "index");
  std::ofstream(dir / "index" / "iamglass") << "garbage";
  auto unreadable = xapian_reader::open("products", o, host);
  REQUIRE_FALSE(unreadable);
  CHECK(unreadable.error().value() == errc::io_error);
  CHECK_THAT(unreadable.error().message(), Catch::Contains((dir / "index").string()));
}

TEST_CASE("xapian_reader: a missing database answers no rows and creates nothing, until an owner commits one", "[adapter][backend][xapian][reader]") {
  temp_dir dir;
  const auto path = dir / "index";
  auto host = std::make_shared<reader_host>();
  auto reader = xapian_reader::open("products", test::xapian_options_at(path), host).value();
  CHECK(reader->id() == "products");
  auto empty = reader->search("shoes", 0, 10);
  REQUIRE(empty);
  CHECK(empty->rows.empty());
  CHECK(empty->coverage.state == coverage_state::bounded);  // the admission's answer
  CHECK(empty->coverage.lag_upper_bound == milliseconds{40});
  CHECK(reader->stored_records().value().empty());
  CHECK_FALSE(std::filesystem::exists(path));  // read-only: not even the directory

  test::fake_host owner_host;
  auto owner = xapian_backend::create("products", test::xapian_options_at(path)).value();
  owner->attach(owner_host);
  REQUIRE(owner->deliver(make_batch(1, {entry("p1", {{"title", "red shoes"}}, 7)}, 1)) == delivery_result::accepted);
  REQUIRE(barrier(*owner));
  auto found = reader->search("shoes", 0, 10).value();
  REQUIRE(found.rows.size() == 1);
  CHECK(found.rows[0].ref == record_ref{"main", 1, "p1", 7});
  CHECK(stored(*reader) == std::map<std::string, std::uint64_t>{{"p1", 7}});
}

TEST_CASE("xapian_reader: beside an owner in another process holding the writer lock it answers, writes no byte, and never takes the lock", "[adapter][backend][xapian][reader]") {
  temp_dir dir;
  const auto path = dir / "index";
  test::pipe_pair to_child, to_parent;
  // The owner: commits, and on request commits again, or closes its writer and opens it again
  // under a new epoch (which a lock held by the reader would defer: nothing would commit).
  pid_t child = test::fork_child([&] {
    test::fake_host host;
    auto owner = xapian_backend::create("products", test::xapian_options_at(path)).value();
    owner->attach(host);
    auto commit = [&](std::uint64_t n) {
      return owner->deliver(make_batch(host.epoch.load(), {entry("p" + std::to_string(n), {{"title", "shoes"}}, n)}, n)) ==
                 delivery_result::accepted &&
             test::barrier(*owner);
    };
    if (!commit(1)) return 4;
    for (;;) {
      char c = 'a';
      if (::write(to_parent.write_end, &c, 1) != 1) return 5;
      const char step = test::read_byte(to_child.read_end);
      if (step == 'c') {
        if (!commit(2)) return 6;
      } else if (step == 'r') {
        if (!test::shut(*owner, 1)) return 7;
        host.epoch = 2;
        if (!commit(3)) return 8;
        auto cursor = owner->durable_cursor();
        if (!cursor || !*cursor || (*cursor)->logs().front().sequence != 3) return 9;
      } else {
        return 0;
      }
    }
  });
  REQUIRE(to_parent.receive() == 'a');

  const auto before = test::snapshot_dir(path);
  auto host = std::make_shared<reader_host>();
  auto reader = xapian_reader::open("products", test::xapian_options_at(path), host).value();
  auto ids = [&] {
    std::vector<std::string> out;
    auto found = reader->search("shoes", 0, 10).value();
    for (auto& row : found.rows) out.push_back(row.ref.record_id);
    return sorted(out);
  };
  CHECK(ids() == std::vector<std::string>{"p1"});
  CHECK(stored(*reader) == std::map<std::string, std::uint64_t>{{"p1", 1}});
  CHECK(test::snapshot_dir(path) == before);  // not a byte written, not a file added

  to_child.send('c');  // the owner commits while the reader holds its handle
  REQUIRE(to_parent.receive() == 'a');
  CHECK(ids() == std::vector<std::string>{"p1", "p2"});

  to_child.send('r');  // the owner gives the lock up and takes it again
  REQUIRE(to_parent.receive() == 'a');
  CHECK(ids() == std::vector<std::string>{"p1", "p2", "p3"});

  to_child.send('q');
  CHECK(test::wait_exit(child) == 0);
}

TEST_CASE("xapian_reader: a query sees the barrier its admission certified, since the reopen follows the admission", "[adapter][backend][xapian][reader]") {
  fixture f;
  f.commit(1, {entry("p1", {{"title", "shoes"}}, 1)});
  f.open_reader();
  REQUIRE(f.search("shoes") == std::vector<std::string>{"p1"});  // the handle is at the first commit
  // The owner makes a barrier durable, then publishes coverage that the admission reads: the
  // host commits inside admit_query. A refresh before the admission would miss "p2".
  f.host->on_admit = [&] { f.commit(2, {entry("p2", {{"title", "shoes"}}, 2)}); };
  f.host->answer = coverage{coverage_state::bounded, milliseconds{500}, milliseconds{12}};
  auto found = f.reader->search("shoes", 0, 10);
  REQUIRE(found);
  std::vector<std::string> ids;
  for (auto& row : found->rows) ids.push_back(row.ref.record_id);
  CHECK(sorted(ids) == std::vector<std::string>{"p1", "p2"});
  CHECK(found->coverage.state == coverage_state::bounded);
  CHECK(found->coverage.tolerance == milliseconds{500});
  CHECK(found->coverage.lag_upper_bound == milliseconds{12});
}

TEST_CASE("xapian_reader: a refusal of the host is returned unchanged, with the mode passed unchanged, and nothing is read", "[adapter][backend][xapian][reader]") {
  fixture f;
  f.commit(1, {entry("p1", {{"title", "shoes"}}, 1)});
  f.open_reader();
  int refreshed = 0;
  xapian_probe::on_query_refreshed(*f.reader, [&](int) { ++refreshed; });
  f.host->refusal = error{errc::index_lagging, "index products: lag 4000 ms exceeds 3000 ms"};
  coverage_mode mode;
  mode.kind = coverage_kind::wait;
  mode.since = 1234;
  mode.timeout = milliseconds{250};
  // The query the parser rejects would be invalid_argument, had it been parsed.
  auto refused = f.reader->search("shoes AND", 0, 10, mode);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::index_lagging);
  CHECK(refused.error().message() == "index products: lag 4000 ms exceeds 3000 ms");
  CHECK(refreshed == 0);
  f.host->refusal = error{errc::unavailable, "index products is rebuilding"};
  CHECK(f.reader->search("shoes", 0, 10).error().message() == "index products is rebuilding");
  CHECK(refreshed == 0);
  REQUIRE(f.host->modes().size() == 2);
  const auto asked = f.host->modes().front();
  CHECK(asked.kind == coverage_kind::wait);
  CHECK(asked.since == 1234);
  CHECK(asked.timeout == milliseconds{250});
  f.host->refusal.reset();
  CHECK(f.search("shoes") == std::vector<std::string>{"p1"});
  CHECK(refreshed == 1);
}

TEST_CASE("xapian_reader: a query the parser rejects is invalid_argument naming the index and the query", "[adapter][backend][xapian][reader]") {
  fixture f;
  f.commit(1, {entry("p1", {{"title", "shoes"}}, 1)});
  f.open_reader();
  for (const std::string query : {"shoes AND", "NOT shoes", "OR OR"}) {
    auto rejected = f.reader->search(query, 0, 10);
    REQUIRE_FALSE(rejected);
    CHECK(rejected.error().value() == errc::invalid_argument);
    CHECK_THAT(rejected.error().message(), Catch::Contains("index products") && Catch::Contains("\"" + query + "\""));
  }
  CHECK(f.search("shoes") == std::vector<std::string>{"p1"});
}

TEST_CASE("xapian_reader: ranked rows and weights equal the backend's own search over the same database", "[adapter][backend][xapian][reader]") {
  fixture f;
  f.commit(1, {entry("a", {{"title", "Running shoes"}, {"body", "light and fast for runs"}}, 1),
               entry("b", {{"title", "Leather boots"}, {"body", "good for runs in the rain"}}, 2),
               entry("c", {{"title", "Rain hat"}, {"body", "keeps you dry in the rain and the wind"}}, 3),
               entry("d", {{"title", "Rain coat"}, {"body", "light, dry, for running in rain"}}, 4),
               entry("e", {{"title", "Wool hat"}, {"body", "warm"}}, 5)});
  f.commit(2, {entry("f", {{"title", "Trail running shoes"}, {"body", "for rain and mud"}}, 6)});
  f.open_reader();
  for (const std::string query : {"run", "rain", "title:rain", "body:rain", "rain NOT hat", "\"running shoes\"", "hat OR boots",
                                  "dry light", "nothing"}) {
    for (auto [offset, limit] : {std::pair<std::size_t, std::size_t>{0, 100}, {1, 2}, {3, 10}}) {
      auto own = f.owner->search(query, offset, limit).value().rows;
      auto read = f.reader->search(query, offset, limit).value().rows;
      INFO(query << " [" << offset << ", +" << limit << ")");
      REQUIRE(read.size() == own.size());
      for (std::size_t i = 0; i < own.size(); ++i) {
        CHECK(read[i].ref == own[i].ref);
        CHECK(read[i].score == own[i].score);  // the same code over the same commit: equal bits
      }
    }
  }
  CHECK(f.owner->search("rain", 0, 100).value().rows.size() == 4);  // the comparison saw rows
  CHECK(f.reader->stored_records().value() == f.owner->stored_records().value());
}

TEST_CASE("xapian_reader: after the owner resets under it, the reader answers from the new database, empty or refilled, also at its old revision", "[adapter][backend][xapian][reader][reset]") {
  constexpr std::uint64_t old_commits = 4;
  // Refilled by n commits before the next query: at n = old_commits the new database has the
  // revision the reader's handle had, where Xapian's reopen() alone would keep the old tables.
  for (std::uint64_t refill = 0; refill <= old_commits + 1; ++refill) {
    DYNAMIC_SECTION("refilled by " << refill << " commits before the next query") {
      fixture f;
      std::vector<std::string> old_ids;
      for (std::uint64_t n = 1; n <= old_commits; ++n) {
        f.commit(n, {entry("old" + std::to_string(n), {{"title", "k"}}, n)});
        old_ids.push_back("old" + std::to_string(n));
      }
      f.open_reader();
      REQUIRE(sorted(f.search("k")) == old_ids);
      REQUIRE(test::reset(*f.owner, 1));
      std::vector<std::string> new_ids;
      for (std::uint64_t n = 1; n <= refill; ++n) {
        f.commit(n, {entry("new" + std::to_string(n), {{"title", "k"}}, n)});
        new_ids.push_back("new" + std::to_string(n));
      }
      CHECK(sorted(f.search("k")) == new_ids);
      CHECK(sorted(f.search("k")) == new_ids);
      f.commit(refill + 1, {entry("next", {{"title", "k"}}, refill + 1)});
      new_ids.push_back("next");
      CHECK(sorted(f.search("k")) == sorted(new_ids));
      CHECK(stored(*f.reader).size() == new_ids.size());
    }
  }
}

TEST_CASE("xapian_reader: two commits between its reopen and its read throw DatabaseModifiedError, and the query reopens and answers once more", "[adapter][backend][xapian][reader][modified]") {
  fixture f;
  test::rewrite_documents(*f.owner, 1);
  f.open_reader();
  SECTION("once: the retry answers from the latest commit") { test::check_modified_retry(*f.reader, *f.owner, false); }
  SECTION("at every attempt: a retryable io_error after the one retry") { test::check_modified_retry(*f.reader, *f.owner, true); }
}

TEST_CASE("xapian_reader: queries on another thread while the owner commits and resets see whole commits or a retryable io_error", "[adapter][backend][xapian][reader][reset]") {
  fixture f;
  f.open_reader();
  constexpr std::uint64_t rounds = 30;
  std::atomic<bool> done{false};
  std::vector<std::size_t> counts;
  std::vector<std::string> wrong;
  std::thread querying([&] {
    while (!done.load()) {
      auto found = f.reader->search("k", 0, 1000);
      if (!found) {
        if (found.error().value() != errc::io_error) wrong.push_back(found.error().message());
        continue;
      }
      counts.push_back(found->rows.size());
      for (auto& row : found->rows) {
        // Two documents per commit, each named after its commit: a row of another shape, or
        // half a commit, would be a wrong answer.
        if (row.ref.record_id.size() < 2 || (row.ref.record_id[0] != 'a' && row.ref.record_id[0] != 'b') ||
            std::to_string(row.ref.version) != row.ref.record_id.substr(1)) {
          wrong.push_back(row.ref.record_id);
        }
      }
    }
  });
  for (std::uint64_t n = 1; n <= rounds; ++n) {
    if (n % 10 == 0) REQUIRE(test::reset(*f.owner, 1));
    const auto id = std::to_string(n);
    REQUIRE(f.owner->deliver(make_batch(1, {entry("a" + id, {{"title", "k"}}, n)}, 2 * n - 1)) == delivery_result::accepted);
    REQUIRE(f.owner->deliver(make_batch(1, {entry("b" + id, {{"title", "k"}}, n)}, 2 * n)) == delivery_result::accepted);
    REQUIRE(barrier(*f.owner));
  }
  done = true;
  querying.join();
  CHECK(wrong.empty());
  CHECK(std::all_of(counts.begin(), counts.end(), [](std::size_t count) { return count % 2 == 0 && count <= 2 * 10; }));
  CHECK(f.search("k").size() == 2 * (rounds % 10 + 1));  // since the reset at round 30: a30, b30
}
