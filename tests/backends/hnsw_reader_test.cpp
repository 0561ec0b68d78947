#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <dix/backends/hnsw_backend.hpp>

#include "backends/hnsw_probe.hpp"

#include "support/backend_batches.hpp"
#include "support/dir_snapshot.hpp"
#include "support/fake_host.hpp"
#include "support/temp_dir.hpp"

using namespace dix;
using dix::test::temp_dir;

namespace {

using vec = std::vector<float>;

record_entry entry(const std::string& id, const vec& v, std::uint64_t version) {
  return test::present(id, encode_vector(v.data(), v.size()), version);
}

// The host of the reader, as make_query_host would be in a process with no runtime: it answers
// `bounded` with a lag bound the test can recognise, or the refusal the test set, and runs the
// test's hook inside admit_query before it answers. Thread-safe.
class reader_host final : public backend_host {
 public:
  bool is_owner_epoch(epoch_t) const noexcept override { return false; }
  dix::readiness readiness() const noexcept override { return {readiness_state::ready, readiness_reason::none, 0, 1}; }
  void note_unindexable(std::string_view) noexcept override {}
  void request_rebuild() noexcept override {}
  result<coverage> admit_query(const coverage_mode& mode, cancel_token) override {
    std::function<void()> hook;
    std::optional<error> refuse;
    {
      std::lock_guard lock(mutex_);
      ++admits_;
      hook = on_admit;
      refuse = refusal;
    }
    if (hook) hook();
    if (refuse) return *refuse;
    return coverage{coverage_state::bounded, mode.tolerance, milliseconds{7}};
  }

  void set_hook(std::function<void()> hook) {
    std::lock_guard lock(mutex_);
    on_admit = std::move(hook);
  }
  void set_refusal(std::optional<error> e) {
    std::lock_guard lock(mutex_);
    refusal = std::move(e);
  }
  std::size_t admits() const {
    std::lock_guard lock(mutex_);
    return admits_;
  }

 private:
  mutable std::mutex mutex_;
  std::function<void()> on_admit;
  std::optional<error> refusal;
  std::size_t admits_ = 0;
};

// A clock that stands still: every save takes 0 ms, so barriers are spaced by 0 (decision 0023)
// and a test's barrier runs as soon as it is asked for.
std::function<std::chrono::steady_clock::time_point()> still_clock() {
  return [] { return std::chrono::steady_clock::time_point(std::chrono::milliseconds(5000)); };
}

hnsw_options options_for(const std::filesystem::path& dir, std::size_t dimension, hnsw_space space) {
  hnsw_options o;
  o.state_dir = dir;
  o.dimension = dimension;
  o.space = space;
  o.clock = still_clock();
  return o;
}

// The owner: a real hnsw_backend writing the directory, as `dix serve` in another process would.
struct owner {
  temp_dir dir;
  test::fake_host host;
  hnsw_options options;
  std::shared_ptr<hnsw_backend> index;
  std::uint64_t sequence = 0;

  explicit owner(std::size_t dimension = 2, hnsw_space space = hnsw_space::l2)
      : options(options_for(dir / "vectors", dimension, space)) {
    index = hnsw_backend::create("by-vector", options).value();
    index->attach(host);
  }

  // Delivers `records` through the next sequence and commits them with a barrier.
  void commit(std::vector<record_entry> records) {
    REQUIRE(index->deliver(test::make_batch(1, std::move(records), ++sequence)) == delivery_result::accepted);
    test::waiter w;
    index->flush(flush_reason::age, w.make());
    REQUIRE(w.wait());
  }

  void reset() {
    test::waiter w;
    index->reset(1, w.make());
    REQUIRE(w.wait());
  }

  std::shared_ptr<hnsw_reader> reader(std::shared_ptr<backend_host> h) const {
    return hnsw_reader::open("by-vector", options, std::move(h)).value();
  }
};

// An owner that committed "a" at (1, 1), and a reader over its directory.
struct reader_fixture {
  owner o;
  std::shared_ptr<reader_host> host = std::make_shared<reader_host>();
  std::shared_ptr<hnsw_reader> reader;

  explicit reader_fixture(hnsw_space space = hnsw_space::l2) : o(2, space) {
    o.commit({entry("a", {1, 1}, 1)});
    reader = o.reader(host);
  }
};

std::vector<std::string> ids_of(const std::vector<scored_ref>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.ref.record_id);
  return out;
}

std::vector<std::string> nearest(hnsw_reader& r, const vec& q, std::size_t k) {
  return ids_of(r.knn(q.data(), q.size(), k).value().rows);
}

}  // namespace

TEST_CASE("hnsw reader: answers equal the owner's own knn and stored records over the same data, in every space",
          "[adapter][backend][hnsw][reader]") {
  for (auto space : {hnsw_space::l2, hnsw_space::ip, hnsw_space::cosine}) {
    CAPTURE(static_cast<int>(space));
    constexpr std::size_t dimension = 8;
    owner o(dimension, space);
    std::mt19937 random(42);
    std::uniform_real_distribution<float> component(-1.0f, 1.0f);
    auto random_vector = [&] {
      vec v(dimension);
      for (auto& x : v) x = component(random);
      return v;
    };
    std::vector<record_entry> records;
    for (int i = 0; i < 300; ++i) records.push_back(entry("r" + std::to_string(i), random_vector(), 10 + i));
    o.commit(records);
    auto host = std::make_shared<reader_host>();
    auto reader = o.reader(host);
    auto compare = [&] {
      REQUIRE(reader->stored_records().value() == o.index->stored_records().value());
      for (int q = 0; q < 20; ++q) {
        const auto query = random_vector();
        for (std::size_t ef : {10, 64}) {
          const auto mine = o.index->knn(query.data(), dimension, 10, {}, ef).value();
          const auto theirs = reader->knn(query.data(), dimension, 10, {}, ef).value();
          REQUIRE(theirs.rows.size() == mine.rows.size());
          for (std::size_t i = 0; i < mine.rows.size(); ++i) {
            CHECK(theirs.rows[i].ref == mine.rows[i].ref);
            CHECK(theirs.rows[i].score == mine.rows[i].score);
          }
          CHECK(theirs.coverage.lag_upper_bound == milliseconds{7});  // the reader's host answered
        }
      }
    };
    compare();
    // Replaced and removed records: the reader loads the generation that commits them.
    const auto first = hnsw_probe::loaded_generation(*reader);
    o.commit({entry("r1", random_vector(), 500), test::absent("r2"), entry("new", random_vector(), 501)});
    compare();
    CHECK(hnsw_probe::loaded_generation(*reader) == hnsw_probe::saved_generation(*o.index));
    CHECK(hnsw_probe::loaded_generation(*reader) > first);
  }
}

TEST_CASE("hnsw reader: a query admits first and reads the cursor after, so a barrier made durable inside the admission is seen",
          "[adapter][backend][hnsw][reader]") {
  reader_fixture f;
  REQUIRE(nearest(*f.reader, {0, 0}, 5) == std::vector<std::string>{"a"});
  // The owner's barrier completes while the admission runs (the owner publishes coverage only
  // after such a barrier): a reader that read the cursor before admitting would miss "b".
  bool committed = false;
  f.host->set_hook([&] {
    if (std::exchange(committed, true)) return;
    f.o.commit({entry("b", {0, 0}, 2)});
  });
  const vec q{0, 0};
  const auto found = f.reader->knn(q.data(), 2, 5).value();
  CHECK(committed);
  CHECK(ids_of(found.rows) == std::vector<std::string>{"b", "a"});
  CHECK(found.rows[0].ref.version == 2);
  CHECK(found.coverage.state == coverage_state::bounded);
  CHECK(found.coverage.lag_upper_bound == milliseconds{7});
  CHECK(hnsw_probe::loaded_generation(*f.reader) == hnsw_probe::saved_generation(*f.o.index));
}

TEST_CASE("hnsw reader: a host refusal comes back unchanged and nothing is read for it",
          "[adapter][backend][hnsw][reader]") {
  reader_fixture f;
  const auto loaded = hnsw_probe::loaded_generation(*f.reader);
  f.o.commit({entry("b", {2, 2}, 2)});  // a newer generation the refused queries do not load
  const vec q{1, 1};
  for (const auto& refusal : {error{errc::index_lagging, "coverage unknown for by-vector from another process"},
                              error{errc::rebuilding, "by-vector is rebuilding"},
                              error{errc::unavailable, "by-vector is not ready"}, error{errc::timeout, "waited 10 ms"}}) {
    f.host->set_refusal(refusal);
    auto refused = f.reader->knn(q.data(), 2, 5);
    REQUIRE_FALSE(refused);
    CHECK(refused.error() == refusal);
    CHECK(hnsw_probe::loaded_generation(*f.reader) == loaded);
  }
  f.host->set_refusal(std::nullopt);
  CHECK(nearest(*f.reader, {1, 1}, 5) == std::vector<std::string>{"a", "b"});
}

TEST_CASE("hnsw reader: a reset by the owner under the reader answers no rows, then only what the owner commits after it",
          "[adapter][backend][hnsw][reader][reset]") {
  owner o;
  o.commit({entry("a", {1, 1}, 1), entry("b", {2, 2}, 2)});
  auto host = std::make_shared<reader_host>();
  auto reader = o.reader(host);
  REQUIRE(nearest(*reader, {0, 0}, 5) == std::vector<std::string>{"a", "b"});

  SECTION("between queries") {
    o.reset();
    const vec q{0, 0};
    const auto found = reader->knn(q.data(), 2, 5).value();
    CHECK(found.rows.empty());
    CHECK(found.coverage.lag_upper_bound == milliseconds{7});
    CHECK(reader->stored_records().value().empty());
    CHECK(hnsw_probe::loaded_generation(*reader) == 0);  // the old graph is released
  }
  SECTION("between the cursor read and the load") {
    o.commit({entry("c", {3, 3}, 3)});  // the reader still holds the previous generation
    const auto second = hnsw_probe::saved_generation(*o.index);
    std::vector<std::uint64_t> seen;
    hnsw_probe::on_reader_load(*reader, [&](std::uint64_t g) {
      seen.push_back(g);
      if (seen.size() == 1) o.reset();  // the cursor it read and the files it names are gone
    });
    CHECK(nearest(*reader, {0, 0}, 5).empty());
    CHECK(seen == std::vector<std::uint64_t>{second});  // then the cursor was gone: no second load
    CHECK(hnsw_probe::loaded_generation(*reader) == 0);
    hnsw_probe::on_reader_load(*reader, {});
  }
  SECTION("while the reset is half done: the cursor gone, the files still there") {
    // run_reset removes the cursor first (the commit point), then the files: in between the
    // directory has a generation's files and no cursor. The reader answers no rows.
    std::filesystem::remove(o.options.state_dir / "cursor");
    CHECK(nearest(*reader, {0, 0}, 5).empty());
    CHECK(hnsw_probe::loaded_generation(*reader) == 0);
    o.reset();
  }
  o.commit({entry("d", {4, 4}, 4)});
  CHECK(nearest(*reader, {0, 0}, 5) == std::vector<std::string>{"d"});
  CHECK(reader->stored_records().value() == std::vector<record_ref>{record_ref{"main", 1, "d", 4}});
}

TEST_CASE("hnsw reader: a generation the owner removed between the cursor read and the load is answered from the one that replaced it",
          "[adapter][backend][hnsw][reader]") {
  reader_fixture f;
  const auto first = hnsw_probe::loaded_generation(*f.reader);
  REQUIRE(first == hnsw_probe::saved_generation(*f.o.index));
  f.o.commit({entry("b", {2, 2}, 2)});
  const auto second = hnsw_probe::saved_generation(*f.o.index);
  std::vector<std::uint64_t> seen;
  hnsw_probe::on_reader_load(*f.reader, [&](std::uint64_t g) {
    seen.push_back(g);
    if (seen.size() == 1) {
      // The owner's next barrier commits a third generation and deletes the second's files.
      f.o.commit({entry("c", {3, 3}, 3)});
      CHECK_FALSE(std::filesystem::exists(f.o.options.state_dir / ("index." + std::to_string(g))));
    }
  });
  const vec q{0, 0};
  const auto found = f.reader->knn(q.data(), 2, 5).value();
  CHECK(ids_of(found.rows) == std::vector<std::string>{"a", "b", "c"});
  const auto third = hnsw_probe::saved_generation(*f.o.index);
  CHECK(seen == std::vector<std::uint64_t>{second, third});
  CHECK(hnsw_probe::loaded_generation(*f.reader) == third);
  // The cursor still names the loaded generation: the next query loads nothing.
  CHECK(nearest(*f.reader, {0, 0}, 1) == std::vector<std::string>{"a"});
  CHECK(seen.size() == 2);
}

TEST_CASE("hnsw reader: an owner that commits again at every cursor read makes the query a retryable io_error, and the next query answers",
          "[adapter][backend][hnsw][reader]") {
  reader_fixture f;
  const auto held = hnsw_probe::loaded_generation(*f.reader);
  f.o.commit({entry("b", {2, 2}, 2)});
  std::size_t loads = 0;
  hnsw_probe::on_reader_load(*f.reader, [&](std::uint64_t) {
    ++loads;
    f.o.commit({entry("n" + std::to_string(loads), {9, 9}, 10 + loads)});
  });
  const vec q{0, 0};
  auto failed = f.reader->knn(q.data(), 2, 5);
  REQUIRE_FALSE(failed);
  CHECK(failed.error().value() == errc::io_error);
  CHECK(is_retryable(failed.error().value()));
  CHECK_THAT(failed.error().message(), Catch::Contains("was removed before it was read"));
  CHECK(loads == hnsw_reader::max_load_attempts);
  CHECK(hnsw_probe::loaded_generation(*f.reader) == held);  // the old one stays loaded
  hnsw_probe::on_reader_load(*f.reader, {});
  const auto found = f.reader->knn(q.data(), 2, 20).value();
  CHECK(found.rows.size() == 2 + hnsw_reader::max_load_attempts);
  CHECK(hnsw_probe::loaded_generation(*f.reader) == hnsw_probe::saved_generation(*f.o.index));
}

TEST_CASE("hnsw reader: a cursor naming files that do not verify is a retryable io_error, never rows of another state",
          "[adapter][backend][hnsw][reader]") {
  reader_fixture f;
  f.o.commit({entry("b", {2, 2}, 2)});
  const auto g = hnsw_probe::saved_generation(*f.o.index);
  {
    const auto labels = f.o.options.state_dir / ("labels." + std::to_string(g));
    std::fstream file(labels, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-1, std::ios::end);
    file.put('\x7f');
  }
  const vec q{0, 0};
  auto failed = f.reader->knn(q.data(), 2, 5);
  REQUIRE_FALSE(failed);
  CHECK(failed.error().value() == errc::io_error);
  CHECK_THAT(failed.error().message(), Catch::Contains("generation " + std::to_string(g)) && Catch::Contains("does not verify"));
  // The owner's next barrier writes a new generation: the reader follows.
  f.o.commit({entry("c", {3, 3}, 3)});
  CHECK(nearest(*f.reader, {0, 0}, 5) == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("hnsw reader: invalid queries are invalid_argument before admission", "[adapter][backend][hnsw][reader]") {
  reader_fixture f(hnsw_space::cosine);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (const auto& q : {vec{1}, vec{1, 1, 1}, vec{nan, 1}, vec{1, inf}, vec{0, 0}}) {
    CAPTURE(q.size());
    auto refused = f.reader->knn(q.data(), q.size(), 3);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().value() == errc::invalid_argument);
  }
  CHECK(f.host->admits() == 0);
  CHECK(nearest(*f.reader, {2, 2}, 3) == std::vector<std::string>{"a"});
  CHECK(f.host->admits() == 1);
}

TEST_CASE("hnsw reader: no files answers no rows, the reader writes nothing, and bad options are refused at open",
          "[adapter][backend][hnsw][reader]") {
  temp_dir dir;
  auto host = std::make_shared<reader_host>();
  auto o = options_for(dir / "vectors", 2, hnsw_space::l2);
  const vec q{1, 1};
  {
    auto reader = hnsw_reader::open("by-vector", o, host).value();  // the directory does not exist
    const auto found = reader->knn(q.data(), 2, 5).value();
    CHECK(found.rows.empty());
    CHECK(found.coverage.lag_upper_bound == milliseconds{7});
    CHECK(reader->stored_records().value().empty());
    CHECK_FALSE(std::filesystem::exists(dir / "vectors"));
  }
  {
    std::filesystem::create_directories(dir / "vectors");
    auto reader = hnsw_reader::open("by-vector", o, host).value();  // an empty directory
    CHECK(reader->knn(q.data(), 2, 5).value().rows.empty());
  }
  {
    // A committed directory is left byte for byte as it was by everything the reader does.
    auto owned = hnsw_backend::create("by-vector", o).value();
    test::fake_host owner_host;
    owned->attach(owner_host);
    REQUIRE(owned->deliver(test::make_batch(1, {entry("a", {1, 1}, 1)}, 1)) == delivery_result::accepted);
    test::waiter w;
    owned->flush(flush_reason::age, w.make());
    REQUIRE(w.wait());
    const auto before = test::snapshot_dir(dir / "vectors");
    auto reader = hnsw_reader::open("by-vector", o, host).value();
    CHECK(nearest(*reader, q, 5) == std::vector<std::string>{"a"});
    CHECK(reader->stored_records().value().size() == 1);
    CHECK(test::snapshot_dir(dir / "vectors") == before);
    // A cursor whose own CRC fails counts as absent, as at the backend's open.
    {
      std::fstream f(dir / "vectors" / "cursor", std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(0);
      f.put('X');
    }
    CHECK(reader->knn(q.data(), 2, 5).value().rows.empty());
  }
  auto refused = [&](std::string id, hnsw_options options, std::shared_ptr<backend_host> h) {
    auto made = hnsw_reader::open(std::move(id), std::move(options), std::move(h));
    REQUIRE_FALSE(made);
    return made.error().value();
  };
  CHECK(refused("bad id", o, host) == errc::invalid_argument);
  CHECK(refused("by-vector", o, nullptr) == errc::invalid_argument);
  auto bad = o;
  bad.dimension = 0;
  CHECK(refused("by-vector", bad, host) == errc::invalid_argument);
  bad = o;
  bad.state_dir = dir / "a-file";
  { std::ofstream(bad.state_dir) << "not a directory"; }
  CHECK(refused("by-vector", bad, host) == errc::io_error);
}

TEST_CASE("hnsw reader: queries from several threads while the owner commits answer from committed generations, never older than the last",
          "[adapter][backend][hnsw][reader][threads]") {
  owner o;
  o.commit({entry("r0", {0, 0}, 1)});
  auto host = std::make_shared<reader_host>();
  auto reader = o.reader(host);
  constexpr int commits = 20;
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::atomic<int> retryable{0};  // the owner removed a generation before it was read, 8 times running
  std::atomic<int> queries{0};
  auto query_loop = [&](std::size_t ef) {
    std::size_t seen = 1;
    // Every record r0..r<m> has a distinct distance from the origin: an answer is right when it
    // is a prefix r0..r<m-1> of them, with m never falling (each query reads the cursor after the
    // previous answer) and never above what the owner committed.
    for (int round = 0; !done.load() || round < 3; ++round) {
      const vec q{0, 0};
      auto found = reader->knn(q.data(), 2, commits + 5, {}, ef);
      ++queries;
      if (!found) {
        ++(found.error().value() == errc::io_error ? retryable : failures);
        continue;
      }
      const auto& rows = found->rows;
      bool prefix = rows.size() >= seen;
      for (std::size_t i = 0; prefix && i < rows.size(); ++i) {
        prefix = rows[i].ref.record_id == "r" + std::to_string(i) && rows[i].ref.version == i + 1;
      }
      if (!prefix) ++failures;
      seen = rows.size();
    }
  };
  std::thread a(query_loop, 16), b(query_loop, 64);
  for (int i = 1; i <= commits; ++i) {
    const auto x = static_cast<float>(i);
    o.commit({entry("r" + std::to_string(i), {x, x}, static_cast<std::uint64_t>(i) + 1)});
  }
  done = true;
  a.join();
  b.join();
  CHECK(failures.load() == 0);
  CHECK(retryable.load() < queries.load());
  CHECK(queries.load() >= 6);
  CHECK(nearest(*reader, {0, 0}, commits + 5).size() == commits + 1);
}
