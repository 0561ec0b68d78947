#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <dix/backends/hnsw_backend.hpp>

#include "backends/hnsw_probe.hpp"
#include "core/crc32.hpp"
#include "support/vector_entry_source.hpp"
#include "core/bytes.hpp"
#include "core/drift.hpp"

#include "support/backend_batches.hpp"
#include "support/child.hpp"
#include "support/dir_snapshot.hpp"
#include "support/fake_host.hpp"
#include "support/fake_space.hpp"
#include "support/file_bytes.hpp"
#include "support/temp_dir.hpp"

using namespace dix;
using dix::test::temp_dir;

namespace {

using vec = std::vector<float>;

using test::absent;
using test::make_batch;
using test::make_cursor;

record_entry raw_entry(const std::string& id, std::string projection, std::uint64_t version) {
  return test::present(id, std::move(projection), version);
}

record_entry entry(const std::string& id, const vec& v, std::uint64_t version) {
  return raw_entry(id, encode_vector(v.data(), v.size()), version);
}

// A clock the test moves by hand (barrier spacing).
struct manual_clock {
  std::shared_ptr<std::atomic<std::int64_t>> ms = std::make_shared<std::atomic<std::int64_t>>(0);
  std::function<std::chrono::steady_clock::time_point()> function() const {
    auto p = ms;
    return [p] { return std::chrono::steady_clock::time_point(std::chrono::milliseconds(p->load())); };
  }
  void advance(std::int64_t by) const { ms->fetch_add(by); }
};

hnsw_options base_options(const std::filesystem::path& dir, std::size_t dimension = 2, hnsw_space space = hnsw_space::l2) {
  hnsw_options o;
  o.state_dir = dir;
  o.dimension = dimension;
  o.space = space;
  return o;
}

// A completion whose call the test can look at without waiting.
struct flag_completion {
  std::shared_ptr<std::atomic<int>> state = std::make_shared<std::atomic<int>>(0);  // 0 pending, 1 ok, 2 error
  completion make() const {
    auto s = state;
    return completion([s](result<void> r) { s->store(r ? 1 : 2); });
  }
};

// Records the steps of barriers; counts `held` and lets a test wait for a count.
struct step_recorder {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<hnsw_step> steps;
  std::size_t held = 0;
  std::function<void(hnsw_step)> hook_before;  // runs first (e.g. moves the clock)
  std::function<void(hnsw_step)> hook() {
    return [this](hnsw_step s) {
      if (hook_before) hook_before(s);
      std::lock_guard lock(mutex);
      if (s == hnsw_step::held) ++held;
      else if (s != hnsw_step::apply) steps.push_back(s);
      cv.notify_all();
    };
  }
  std::size_t held_count() {
    std::lock_guard lock(mutex);
    return held;
  }
  bool wait_held_above(std::size_t n) {
    std::unique_lock lock(mutex);
    return cv.wait_for(lock, std::chrono::seconds(30), [&] { return held > n; });
  }
  std::vector<hnsw_step> take() {
    std::lock_guard lock(mutex);
    return std::exchange(steps, {});
  }
};

using stored_map = std::map<std::string, std::uint64_t>;  // record id → version (log main, table 1)

stored_map stored_of(hnsw_backend& index) {
  stored_map out;
  const auto records = index.stored_records().value();
  for (const auto& r : records) {
    REQUIRE(r.log == "main");
    REQUIRE(r.table == 1);
    out[r.record_id] = r.version;
  }
  return out;
}

struct fixture {
  temp_dir dir;
  test::fake_host host;
  test::change_log changes;
  manual_clock clock;
  std::shared_ptr<hnsw_backend> index;
  subscription sub;

  explicit fixture(std::function<void(hnsw_options&)> tweak = {}) {
    index = open(tweak);
    sub = index->on_state_change(changes.callback());
  }

  std::filesystem::path state() const { return dir / "vectors"; }

  std::shared_ptr<hnsw_backend> open(const std::function<void(hnsw_options&)>& tweak = {}) {
    auto o = base_options(state());
    o.clock = clock.function();
    if (tweak) tweak(o);
    auto made = hnsw_backend::create("by-vector", o).value();
    made->attach(host);
    return made;
  }

  result<void> barrier(flush_reason reason = flush_reason::age) {
    test::waiter w;
    index->flush(reason, w.make());
    return w.wait();
  }

  std::vector<std::string> nearest(const vec& q, std::size_t k) {
    std::vector<std::string> ids;
    const auto found = index->knn(q.data(), q.size(), k).value();
    for (const auto& row : found.rows) ids.push_back(row.ref.record_id);
    return ids;
  }
};

std::set<std::string> file_names(const std::filesystem::path& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.insert(e.path().filename().string());
  names.erase("dix-index");  // the directory's marker (decision 0038), always there
  return names;
}

}  // namespace

TEST_CASE("hnsw index: encode_vector round-trips float32 little-endian and a ragged length is `dimension`",
          "[adapter][backend][hnsw]") {
  const vec v{1.5f, -0.0f, 3.25e-7f, std::numeric_limits<float>::max()};
  const auto bytes = encode_vector(v.data(), v.size());
  REQUIRE(bytes.size() == 16);
  CHECK(bytes.substr(0, 4) == std::string("\x00\x00\xc0\x3f", 4));  // 1.5f
  CHECK(decode_vector(bytes).value() == v);
  CHECK(decode_vector("").value().empty());
  CHECK(decode_vector("abc").error().message() == "dimension");
  // crc32_ieee continues a checksum, which lets a barrier check a file in pieces.
  CHECK(crc32_ieee("world", crc32_ieee("hello ")) == crc32_ieee("hello world"));
  CHECK(crc32_ieee("123456789") == 0xCBF43926u);
}

TEST_CASE("hnsw index: bad options and ids are invalid_argument naming the field", "[adapter][backend][hnsw]") {
  temp_dir dir;
  auto refused = [&](const std::function<void(hnsw_options&)>& change, const std::string& field) {
    auto o = base_options(dir / "v");
    change(o);
    auto made = hnsw_backend::create("by-vector", o);
    REQUIRE_FALSE(made);
    CHECK(made.error().value() == errc::invalid_argument);
    CHECK_THAT(made.error().message(), Catch::StartsWith("hnsw_options." + field + " = "));
  };
  refused([](hnsw_options& o) { o.state_dir.clear(); }, "state_dir");
  refused([](hnsw_options& o) { o.dimension = 0; }, "dimension");
  refused([](hnsw_options& o) { o.dimension = 4097; }, "dimension");
  refused([](hnsw_options& o) { o.space = static_cast<hnsw_space>(9); }, "space");
  refused([](hnsw_options& o) { o.m = 1; }, "m");
  refused([](hnsw_options& o) { o.ef_construction = 0; }, "ef_construction");
  refused([](hnsw_options& o) { o.initial_capacity = 0; }, "initial_capacity");
  refused([](hnsw_options& o) { o.max_queued_bytes = 10; }, "max_queued_bytes");
  refused([](hnsw_options& o) { o.max_deleted_ratio = 0; }, "max_deleted_ratio");
  refused([](hnsw_options& o) { o.max_deleted_ratio = 1.5; }, "max_deleted_ratio");
  auto o = base_options(dir / "v", 4096);
  CHECK(hnsw_backend::create("by-vector", o));
  auto bad_id = hnsw_backend::create("bad id", o);
  REQUIRE_FALSE(bad_id);
  CHECK(bad_id.error().value() == errc::invalid_argument);
}

TEST_CASE("hnsw index: l2 nearest neighbours come in ascending distance, replace moves a record and delete removes it",
          "[adapter][backend][hnsw]") {
  fixture f;
  REQUIRE(f.index->deliver(make_batch(1, {entry("a", {0, 0}, 1), entry("b", {1, 0}, 2), entry("c", {3, 0}, 3),
                                          entry("d", {0, 10}, 4)},
                                      1)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  auto found = f.index->knn(vec{0.9f, 0}.data(), 2, 3).value();
  REQUIRE(found.rows.size() == 3);
  CHECK(found.rows[0].ref == record_ref{"main", 1, "b", 2});
  CHECK(found.rows[0].score == Approx(0.01));  // squared distance
  CHECK(found.rows[1].ref.record_id == "a");
  CHECK(found.rows[1].score == Approx(0.81));
  CHECK(found.rows[2].ref.record_id == "c");
  CHECK(found.coverage.state == coverage_state::current);
  CHECK(f.nearest({0, 0}, 10) == std::vector<std::string>{"a", "b", "c", "d"});
  CHECK(f.nearest({0, 0}, 0).empty());

  // "d" moves next to the origin (same label: nothing deleted), "b" goes.
  REQUIRE(f.index->deliver(make_batch(1, {entry("d", {0.5f, 0}, 5), absent("b")}, 2)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(f.nearest({0.6f, 0}, 10) == std::vector<std::string>{"d", "a", "c"});
  CHECK(stored_of(*f.index) == stored_map{{"a", 1}, {"c", 3}, {"d", 5}});
  CHECK(f.index->deleted_ratio() == Approx(0.25));  // 1 of 4 labels
  // Removing a record the index does not hold changes nothing.
  REQUIRE(f.index->deliver(make_batch(1, {absent("zzz")}, 3)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(f.index->deleted_ratio() == Approx(0.25));
}

TEST_CASE("hnsw index: ip ranks by inner product, cosine by angle whatever the length", "[adapter][backend][hnsw]") {
  const std::vector<record_entry> records{entry("long", {10, 1}, 1), entry("unit", {1, 0}, 2), entry("diagonal", {0.5f, 1}, 3),
                                          entry("up", {0, 5}, 4)};
  SECTION("ip: 1 - dot") {
    fixture f([](hnsw_options& o) { o.space = hnsw_space::ip; });
    REQUIRE(f.index->deliver(make_batch(1, records, 1)) == delivery_result::accepted);
    REQUIRE(f.barrier());
    auto rows = f.index->knn(vec{1, 0}.data(), 2, 4).value().rows;
    REQUIRE(rows.size() == 4);
    CHECK(rows[0].ref.record_id == "long");
    CHECK(rows[0].score == Approx(1 - 10));
    CHECK(rows[1].ref.record_id == "unit");
    CHECK(rows[2].ref.record_id == "diagonal");
    CHECK(rows[3].ref.record_id == "up");
    CHECK(rows[3].score == Approx(1));
  }
  SECTION("cosine: normalised on insert and query, then ip") {
    fixture f([](hnsw_options& o) { o.space = hnsw_space::cosine; });
    REQUIRE(f.index->deliver(make_batch(1, records, 1)) == delivery_result::accepted);
    REQUIRE(f.barrier());
    auto rows = f.index->knn(vec{3, 0}.data(), 2, 4).value().rows;
    REQUIRE(rows.size() == 4);
    CHECK(rows[0].ref.record_id == "unit");
    CHECK(rows[0].score == Approx(0).margin(1e-6));
    CHECK(rows[1].ref.record_id == "long");
    CHECK(rows[1].score == Approx(1 - 10 / std::sqrt(101.0)).margin(1e-6));
    CHECK(rows[2].ref.record_id == "diagonal");
    CHECK(rows[2].score == Approx(1 - 0.5 / std::sqrt(1.25)).margin(1e-6));
    CHECK(rows[3].ref.record_id == "up");
    CHECK(rows[3].score == Approx(1).margin(1e-6));
    auto zero = f.index->knn(vec{0, 0}.data(), 2, 1);
    REQUIRE_FALSE(zero);
    CHECK(zero.error().value() == errc::invalid_argument);
  }
}

TEST_CASE("hnsw index: a wrong length is unindexable `dimension`, a non-finite value `non_finite`, and either removes the record",
          "[adapter][backend][hnsw]") {
  SECTION("l2") {
    fixture f;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    REQUIRE(f.index->deliver(make_batch(1, {entry("a", {1, 1}, 1), entry("b", {2, 2}, 1), entry("zero", {0, 0}, 1)}, 1)) ==
            delivery_result::accepted);
    REQUIRE(f.index->deliver(make_batch(1, {entry("a", {1, 1, 1}, 2), entry("b", {nan, 0}, 2), entry("c", {inf, 0}, 2),
                                            raw_entry("d", "abcde", 2)},
                                        2)) == delivery_result::accepted);
    REQUIRE(f.barrier());
    CHECK(f.host.unindexable() == std::vector<std::string>{"dimension", "non_finite", "non_finite", "dimension"});
    CHECK(stored_of(*f.index) == stored_map{{"zero", 1}});  // a zero vector is fine under l2
    // skips() says the same of the same records (issue 31).
    std::vector<std::string> skipped;
    for (const auto& r : {entry("a", {1, 1, 1}, 2), entry("b", {nan, 0}, 2), entry("c", {inf, 0}, 2), raw_entry("d", "abcde", 2)}) {
      skipped.push_back(f.index->skips(r).value_or("kept"));
    }
    CHECK(skipped == f.host.unindexable());
    CHECK_FALSE(f.index->skips(entry("zero", {0, 0}, 1)));
  }
  SECTION("cosine: a zero vector has no direction") {
    fixture f([](hnsw_options& o) { o.space = hnsw_space::cosine; });
    REQUIRE(f.index->deliver(make_batch(1, {entry("zero", {0, 0}, 1), entry("tiny", {1e-30f, 0}, 1)}, 1)) ==
            delivery_result::accepted);
    REQUIRE(f.barrier());
    CHECK(f.host.unindexable() == std::vector<std::string>{"non_finite"});
    CHECK(stored_of(*f.index) == stored_map{{"tiny", 1}});
    CHECK(f.index->skips(entry("zero", {0, 0}, 1)) == std::optional<std::string>("non_finite"));
    CHECK_FALSE(f.index->skips(entry("tiny", {1e-30f, 0}, 1)));
  }
}

TEST_CASE("hnsw index: queries of the wrong dimension are invalid_argument, and queries pass the host's admission first",
          "[adapter][backend][hnsw]") {
  fixture f;
  REQUIRE(f.index->deliver(make_batch(1, {entry("a", {1, 1}, 1)}, 1)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  auto wrong = f.index->knn(vec{1, 1, 1}.data(), 3, 1);
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().value() == errc::invalid_argument);
  CHECK_THAT(wrong.error().message(), Catch::Contains("3 components") && Catch::Contains("vectors of 2"));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(f.index->knn(vec{nan, 1}.data(), 2, 1).error().value() == errc::invalid_argument);
  f.host.refuse = true;
  auto refused = f.index->knn(vec{1, 1}.data(), 2, 1);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::unavailable);
  f.host.refuse = false;
  // Several ef values in turn (hnswlib keeps one; a query changes it only between searches).
  for (std::size_t ef : {1u, 64u, 10u, 200u}) {
    CHECK(f.index->knn(vec{1, 1}.data(), 2, 1, {}, ef).value().rows.size() == 1);
  }
}

namespace {

// Generation g's labels file replaced by `labels`, and the cursor file's labels length and CRC-32
// (and its own CRC-32) made to match, so only the labels' content can refuse it.
void replace_labels(const std::filesystem::path& dir, std::uint64_t g, const std::string& labels) {
  test::replace_file(dir / ("labels." + std::to_string(g)), labels);
  auto c = test::read_file(dir / "cursor");
  std::string fixed = c.substr(0, 32);
  put_le<std::uint64_t>(fixed, labels.size());
  put_le<std::uint32_t>(fixed, crc32_ieee(labels));
  fixed += c.substr(44, c.size() - 44 - 4);
  put_le<std::uint32_t>(fixed, crc32_ieee(fixed));
  test::replace_file(dir / "cursor", fixed);
}

// Generation g's labels file rewritten as format 1 (formats.md 6.4: no digest, no entry hashes),
// and the cursor file's labels length and CRC-32 (and its own CRC-32) made to match: what a
// dix from before digests left.
void downgrade_labels(const std::filesystem::path& dir, std::uint64_t g) {
  const auto lp = dir / ("labels." + std::to_string(g));
  const auto v2 = test::read_file(lp);
  REQUIRE(get_le<std::uint32_t>(v2, 8) == 2);
  std::string v1 = v2.substr(0, 33);
  v1[8] = 1;
  const auto count = get_le<std::uint64_t>(v2, 25);
  std::size_t at = 33 + 24;
  for (std::uint64_t i = 0; i < count; ++i) {
    v1 += v2.substr(at, 16);  // label, version
    at += 32;                 // and the hash, left out
    const auto log_length = static_cast<std::uint8_t>(v2[at]);
    const auto id_length = get_le<std::uint32_t>(v2, at + 1 + log_length + 4);
    const auto rest = 1 + log_length + 4 + 4 + id_length;
    v1 += v2.substr(at, rest);
    at += rest;
  }
  REQUIRE(at == v2.size());
  replace_labels(dir, g, v1);
}

// Generation g's labels (format 2) with the first record's entry hash changed and everything else
// kept, CRC-32s made to match: the stored digest is no longer the sum of the stored hashes.
void break_labels_digest(const std::filesystem::path& dir, std::uint64_t g) {
  auto labels = test::read_file(dir / ("labels." + std::to_string(g)));
  REQUIRE(get_le<std::uint32_t>(labels, 8) == 2);
  REQUIRE(get_le<std::uint64_t>(labels, 25) >= 1);
  labels[33 + 24 + 16] = static_cast<char>(labels[33 + 24 + 16] ^ 0x01);  // header, digest, label and version
  replace_labels(dir, g, labels);
}

}  // namespace

TEST_CASE("hnsw index: a generation written before digests (labels format 1) still loads, keeps format 1 and reports no digest until a reset (formats.md 6.4)",
          "[adapter][backend][hnsw][digest]") {
  fixture f;
  REQUIRE(f.index->deliver(make_batch(1, {entry("a", {1, 2}, 7), entry("b", {3, 4}, 7)}, 5)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  const auto current = f.index->open_digest().value();
  CHECK(current->digest().records == 2);
  f.sub.reset();
  f.index.reset();
  downgrade_labels(f.state(), 1);
  f.index = f.open();
  CHECK(*f.index->durable_cursor().value() == make_cursor(5));  // loads: not cursorless
  CHECK(f.nearest({1, 2}, 1) == std::vector<std::string>{"a"});
  auto old = f.index->open_digest();
  REQUIRE_FALSE(old);
  CHECK(old.error().value() == errc::not_supported);
  // Work goes on over it, in format 1.
  REQUIRE(f.index->deliver(make_batch(1, {entry("c", {5, 6}, 8), absent("a")}, 6)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(get_le<std::uint32_t>(test::read_file(f.state() / "labels.2"), 8) == 1);
  CHECK_FALSE(f.index->open_digest());
  // A reset empties it: digests from then on.
  test::waiter done;
  f.index->reset(1, done.make());
  REQUIRE(done.wait());
  REQUIRE(f.index->deliver(make_batch(1, {entry("d", {7, 8}, 9)}, 7)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  const auto fresh = f.index->open_digest().value();
  CHECK(fresh->digest().records == 1);
  index_digest want;
  want.add(entry_hash("main", 1, "d", 9, encode_vector(vec{7, 8}.data(), 2)));
  CHECK(fresh->digest() == want);
  REQUIRE(fresh->through());
  CHECK(*fresh->through() == make_cursor(7));
}

TEST_CASE("hnsw index: a generation whose labels' digest is not the sum of their entry hashes does not load: the index is cursorless, never trusted with a wrong digest",
          "[adapter][backend][hnsw][digest]") {
  fixture f;
  REQUIRE(f.index->deliver(make_batch(1, {entry("a", {1, 2}, 7), entry("b", {3, 4}, 7)}, 5)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  f.sub.reset();
  f.index.reset();
  // Control: rewriting the same bytes through the helper keeps the generation loadable.
  replace_labels(f.state(), 1, test::read_file(f.state() / "labels.1"));
  f.index = f.open();
  REQUIRE(f.index->durable_cursor().value());
  f.sub.reset();
  f.index.reset();
  break_labels_digest(f.state(), 1);
  f.index = f.open();
  CHECK_FALSE(f.index->durable_cursor().value());  // cursorless: the runtime condemns and rebuilds
  // The digest view reads the same committed files, and refuses them.
  auto view = f.index->open_digest();
  REQUIRE_FALSE(view);
  CHECK(view.error().value() == errc::io_error);
  CHECK_THAT(view.error().message(), Catch::Contains("labels file does not decode"));
}

TEST_CASE("hnsw index: a barrier writes generation files and a cursor file naming them with their lengths and CRC-32s",
          "[adapter][backend][hnsw][barrier]") {
  fixture f;
  CHECK_FALSE(f.index->durable_cursor().value());
  REQUIRE(f.index->deliver(make_batch(1, {entry("a", {1, 2}, 7)}, 5)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(*f.index->durable_cursor().value() == make_cursor(5));
  CHECK(f.changes.wait_for(state_change_kind::changed));
  CHECK(file_names(f.state()) == std::set<std::string>{"cursor", "index.1", "labels.1"});
  CHECK(hnsw_probe::saved_generation(*f.index) == 1);

  // The cursor file (docs/formats.md): magic, format 1, generation, index and labels length and
  // CRC-32, the cursor blob, the CRC-32 of everything before.
  auto check_cursor_file = [&](std::uint64_t g, std::uint64_t sequence) {
    const auto bytes = test::read_file(f.state() / "cursor");
    const auto index = test::read_file(f.state() / ("index." + std::to_string(g)));
    const auto labels = test::read_file(f.state() / ("labels." + std::to_string(g)));
    const auto blob = make_cursor(sequence).bytes();
    REQUIRE(bytes.size() == 48 + blob.size() + 4);
    CHECK(bytes.substr(0, 8) == "DIXHNSWC");
    CHECK(get_le<std::uint32_t>(bytes, 8) == 1);
    CHECK(get_le<std::uint64_t>(bytes, 12) == g);
    CHECK(get_le<std::uint64_t>(bytes, 20) == index.size());
    CHECK(get_le<std::uint32_t>(bytes, 28) == crc32_ieee(index));
    CHECK(get_le<std::uint64_t>(bytes, 32) == labels.size());
    CHECK(get_le<std::uint32_t>(bytes, 40) == crc32_ieee(labels));
    CHECK(get_le<std::uint32_t>(bytes, 44) == blob.size());
    CHECK(bytes.substr(48, blob.size()) == blob);
    CHECK(get_le<std::uint32_t>(bytes, bytes.size() - 4) == crc32_ieee(std::string_view(bytes).substr(0, bytes.size() - 4)));
    return labels;
  };
  const auto labels = check_cursor_file(1, 5);
  // The labels file: magic, format 2, dimension, space, next label, count, the digest, then the
  // entries (formats.md 6.4).
  CHECK(labels.substr(0, 8) == "DIXHNSWL");
  CHECK(get_le<std::uint32_t>(labels, 8) == 2);
  CHECK(get_le<std::uint32_t>(labels, 12) == 2);
  CHECK(labels[16] == static_cast<char>(hnsw_space::l2));
  CHECK(get_le<std::uint64_t>(labels, 17) == 1);
  CHECK(get_le<std::uint64_t>(labels, 25) == 1);
  // label, version, entry hash, "main", table, "a"
  CHECK(labels.size() == 33 + 24 + 8 + 8 + 16 + 1 + 4 + 4 + 4 + 1);
  // One entry: the digest is its hash, counted once.
  CHECK(labels.substr(33, 16) == labels.substr(33 + 24 + 16, 16));
  CHECK(get_le<std::uint64_t>(labels, 49) == 1);

  // A change makes the next generation; the older one goes.
  REQUIRE(f.index->deliver(make_batch(1, {entry("b", {3, 4}, 8)}, 6)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(file_names(f.state()) == std::set<std::string>{"cursor", "index.2", "labels.2"});
  check_cursor_file(2, 6);

  // A second instance on the same directory, after the first shut down, reads the same state.
  test::waiter shut;
  f.index->shutdown(1, shut.make());
  REQUIRE(shut.wait());
  auto again = f.open();
  CHECK(*again->durable_cursor().value() == make_cursor(6));
  CHECK(stored_of(*again) == stored_map{{"a", 7}, {"b", 8}});
  CHECK(again->knn(vec{3, 3}.data(), 2, 1).value().rows[0].ref.record_id == "b");
}

TEST_CASE("hnsw index: a cursor whose file, index or labels do not verify counts as absent", "[adapter][backend][hnsw][barrier]") {
  for (const std::string name : {"cursor", "index.1", "labels.1"}) {
    for (const bool truncate : {false, true}) {
      DYNAMIC_SECTION(name << (truncate ? " truncated" : " with a flipped byte")) {
        fixture f;
        REQUIRE(f.index->deliver(make_batch(1, {entry("a", {1, 2}, 7), entry("b", {2, 2}, 8)}, 5)) ==
                delivery_result::accepted);
        REQUIRE(f.barrier());
        test::waiter shut;
        f.index->shutdown(1, shut.make());
        REQUIRE(shut.wait());
        const auto path = f.state() / name;
        auto bytes = test::read_file(path);
        REQUIRE(bytes.size() > 20);
        if (truncate) {
          std::filesystem::resize_file(path, bytes.size() - 1);
        } else {
          test::patch_file(path, bytes.size() / 2, std::string(1, static_cast<char>(bytes[bytes.size() / 2] ^ 0x10)));
        }
        auto again = f.open();
        CHECK_FALSE(again->durable_cursor().value());
        CHECK(stored_of(*again).empty());
        // It starts empty and commits a generation past the files it found.
        REQUIRE(again->deliver(make_batch(1, {entry("c", {0, 1}, 9)}, 6)) == delivery_result::accepted);
        test::waiter w;
        again->flush(flush_reason::age, w.make());
        REQUIRE(w.wait());
        CHECK(file_names(f.state()) == std::set<std::string>{"cursor", "index.2", "labels.2"});
        auto third = f.open();
        CHECK(*third->durable_cursor().value() == make_cursor(6));
        CHECK(stored_of(*third) == stored_map{{"c", 9}});
      }
    }
  }
}

TEST_CASE("hnsw index: a barrier without index change writes only a new cursor naming the same generation",
          "[adapter][backend][hnsw][barrier]") {
  fixture f;
  step_recorder steps;
  hnsw_probe::on_step(*f.index, steps.hook());
  REQUIRE(f.index->deliver(make_batch(1, {entry("a", {1, 2}, 7)}, 5)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(steps.take() == std::vector<hnsw_step>(hnsw_barrier_steps.begin(), hnsw_barrier_steps.end()));
  const auto before = test::snapshot_dir(f.state());
  // A cursor-only batch: the cursor moves, the graph does not.
  REQUIRE(f.index->deliver(make_batch(1, {}, 6)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(steps.take() == std::vector<hnsw_step>{hnsw_step::write_cursor, hnsw_step::rename_cursor, hnsw_step::delete_old,
                                               hnsw_step::finished});
  const auto after = test::snapshot_dir(f.state());
  CHECK(test::changed_files(before, after) == "~cursor ");
  CHECK(*f.index->durable_cursor().value() == make_cursor(6));
  CHECK(hnsw_probe::saved_generation(*f.index) == 1);
  // Nothing new at all: nothing written.
  REQUIRE(f.barrier());
  CHECK(steps.take().empty());
  CHECK(test::snapshot_dir(f.state()) == after);
}

TEST_CASE("hnsw index: a barrier over an index with no generation yet (fresh, or reset and rebuilt over an empty table) saves the empty graph with its cursor, which a reopen finds",
          "[adapter][backend][hnsw][barrier]") {
  // A cursor file names a generation, and generation 0 reads back as no cursor: a barrier that
  // wrote one for batches that changed nothing reported a cursor durable that a restart lost.
  SECTION("a fresh index, a delete of a record never indexed") {
    fixture f;
    REQUIRE(f.index->deliver(make_batch(1, {absent("never-indexed")}, 5)) == delivery_result::accepted);
    REQUIRE(f.barrier());
    CHECK(*f.index->durable_cursor().value() == make_cursor(5));
    CHECK(hnsw_probe::saved_generation(*f.index) == 1);
    CHECK(f.open()->durable_cursor().value() == std::optional<cursor>(make_cursor(5)));
  }
  SECTION("reset, an empty scan chunk, the cursor-only boundary") {
    fixture f;
    REQUIRE(f.index->deliver(make_batch(1, {entry("a", {1, 2}, 1)}, 1)) == delivery_result::accepted);
    REQUIRE(f.barrier());
    f.host.epoch = 2;
    test::waiter reset;
    f.index->reset(2, reset.make());
    REQUIRE(reset.wait());
    REQUIRE(f.index->deliver(make_batch(2, {}, std::nullopt)) == delivery_result::accepted);
    REQUIRE(f.index->deliver(make_batch(2, {}, 7)) == delivery_result::accepted);
    REQUIRE(f.barrier());
    CHECK(*f.index->durable_cursor().value() == make_cursor(7));
    auto again = f.open();
    CHECK(again->durable_cursor().value() == std::optional<cursor>(make_cursor(7)));
    CHECK(stored_of(*again).empty());
  }
}

TEST_CASE("hnsw index: barriers are spaced by three times the last save, requests meanwhile join, a shutdown flush is not spaced",
          "[adapter][backend][hnsw][barrier]") {
  fixture f;
  step_recorder steps;
  // Every save takes 10 s on the test's clock.
  steps.hook_before = [&](hnsw_step s) {
    if (s == hnsw_step::save_index) f.clock.advance(10000);
  };
  hnsw_probe::on_step(*f.index, steps.hook());
  CHECK(f.index->min_barrier_interval() == std::chrono::milliseconds(0));
  REQUIRE(f.index->deliver(make_batch(1, {entry("a", {1, 2}, 1)}, 1)) == delivery_result::accepted);
  REQUIRE(f.barrier());  // the first is never held
  CHECK(f.index->min_barrier_interval() == std::chrono::milliseconds(30000));
  CHECK(steps.held_count() == 0);

  // The clock reads 10 s (the save's end): the next barrier may start at 40 s.
  REQUIRE(f.index->deliver(make_batch(1, {entry("b", {2, 2}, 2)}, 2)) == delivery_result::accepted);
  flag_completion first, second;
  f.index->flush(flush_reason::age, first.make());
  REQUIRE(steps.wait_held_above(0));
  REQUIRE(f.index->deliver(make_batch(1, {entry("c", {3, 2}, 3)}, 3)) == delivery_result::accepted);
  f.index->flush(flush_reason::threshold, second.make());  // joins the held one
  f.clock.advance(29000);
  const auto seen = steps.held_count();
  hnsw_probe::wake(*f.index);
  REQUIRE(steps.wait_held_above(seen));  // looked at the clock at 39 s: still held
  CHECK(first.state->load() == 0);
  CHECK(second.state->load() == 0);
  CHECK(hnsw_probe::saved_generation(*f.index) == 1);
  // The batches behind the held barrier were applied meanwhile.
  CHECK(stored_of(*f.index).size() == 3);

  f.clock.advance(1000);  // 40 s
  test::waiter third;  // a waiter joining now shares the same barrier
  f.index->flush(flush_reason::age, third.make());
  REQUIRE(third.wait());
  CHECK(first.state->load() == 1);
  CHECK(second.state->load() == 1);
  CHECK(hnsw_probe::saved_generation(*f.index) == 2);  // one save for all three requests
  CHECK(*f.index->durable_cursor().value() == make_cursor(3));

  // A shutdown flush runs at once although the spacing has not passed.
  REQUIRE(f.index->deliver(make_batch(1, {entry("d", {4, 2}, 4)}, 4)) == delivery_result::accepted);
  REQUIRE(f.barrier(flush_reason::shutdown));
  CHECK(hnsw_probe::saved_generation(*f.index) == 3);
  CHECK(*f.index->durable_cursor().value() == make_cursor(4));
}

TEST_CASE("hnsw index: work of another epoch is dropped, and a barrier of a superseded epoch writes no cursor",
          "[adapter][backend][hnsw][epoch]") {
  fixture f;
  f.host.epoch = 2;
  REQUIRE(f.index->deliver(make_batch(1, {entry("old", {1, 1}, 1)}, 9)) == delivery_result::accepted);
  REQUIRE(f.index->deliver(make_batch(2, {entry("new", {2, 2}, 2)}, 3)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(stored_of(*f.index) == stored_map{{"new", 2}});
  CHECK(*f.index->durable_cursor().value() == make_cursor(3));
  CHECK(hnsw_probe::dropped_batches(*f.index) == 1);
  const auto cursor_before = test::read_file(f.state() / "cursor");

  // Another owner takes over while a barrier saves: the check before publishing the cursor
  // leaves the committed one in place.
  hnsw_probe::on_step(*f.index, [&](hnsw_step s) {
    if (s == hnsw_step::write_cursor) f.host.epoch = 3;
  });
  REQUIRE(f.index->deliver(make_batch(2, {entry("late", {3, 3}, 3)}, 4)) == delivery_result::accepted);
  REQUIRE(f.barrier(flush_reason::shutdown));
  CHECK(test::read_file(f.state() / "cursor") == cursor_before);
  CHECK(file_names(f.state()).count("cursor.tmp") == 0);
  CHECK(*f.index->durable_cursor().value() == make_cursor(3));
  // And the check before a save: the next barrier of the old epoch writes nothing at all.
  const auto before = test::snapshot_dir(f.state());
  REQUIRE(f.barrier(flush_reason::shutdown));
  CHECK(test::snapshot_dir(f.state()) == before);
  // A batch of the superseded epoch is not applied.
  REQUIRE(f.index->deliver(make_batch(2, {entry("later", {4, 4}, 4)}, 5)) == delivery_result::accepted);
  REQUIRE(f.barrier(flush_reason::shutdown));
  CHECK(stored_of(*f.index) == stored_map{{"late", 3}, {"new", 2}});
  CHECK(hnsw_probe::dropped_batches(*f.index) == 2);
}

TEST_CASE("hnsw index: a full queue defers, and `changed` follows once it drains to half", "[adapter][backend][hnsw][deferred]") {
  fixture f([](hnsw_options& o) { o.max_queued_bytes = 4096; });
  f.host.close_gate();  // the applier stops inside its first epoch check
  REQUIRE(f.index->deliver(make_batch(1, {entry("a", {1, 1}, 1)}, 1, 3000)) == delivery_result::accepted);
  REQUIRE(f.host.wait_calls(1));
  // The first batch is in flight (still counted); the queue itself is empty: soft cap accepts.
  REQUIRE(f.index->deliver(make_batch(1, {entry("b", {2, 2}, 2)}, 2, 3000)) == delivery_result::accepted);
  CHECK(f.index->deliver(make_batch(1, {entry("c", {3, 3}, 3)}, 3, 10)) == delivery_result::deferred);
  CHECK(f.changes.count_locked(state_change_kind::changed) == 0);
  f.host.open_gate();
  REQUIRE(f.changes.wait_for(state_change_kind::changed));
  CHECK(f.index->deliver(make_batch(1, {entry("c", {3, 3}, 3)}, 3, 10)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(stored_of(*f.index) == stored_map{{"a", 1}, {"b", 2}, {"c", 3}});
}

TEST_CASE("hnsw index: shutdown drops queued work of its epoch, releases the graph, and a later epoch reopens it lazily",
          "[adapter][backend][hnsw][shutdown]") {
  fixture f;
  REQUIRE(f.index->deliver(make_batch(1, {entry("a", {1, 1}, 1)}, 1)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  f.host.close_gate();
  REQUIRE(f.index->deliver(make_batch(1, {entry("b", {2, 2}, 2)}, 2)) == delivery_result::accepted);
  REQUIRE(f.index->deliver(make_batch(1, {entry("c", {3, 3}, 3)}, 3)) == delivery_result::accepted);
  test::waiter shut;
  f.index->shutdown(1, shut.make());
  f.host.open_gate();
  REQUIRE(shut.wait());
  CHECK(hnsw_probe::capacity(*f.index) == 0);  // released
  CHECK(hnsw_probe::applied_batches(*f.index) + hnsw_probe::dropped_batches(*f.index) == 3);  // "c" dropped by the shutdown
  {
    // A second instance reads what the first made durable.
    auto other = f.open();
    CHECK(*other->durable_cursor().value() == make_cursor(1));
    CHECK(stored_of(*other) == stored_map{{"a", 1}});
  }
  // The same object takes work of a later epoch; "b" and "c" were never durable.
  f.host.epoch = 2;
  CHECK(*f.index->durable_cursor().value() == make_cursor(1));
  REQUIRE(f.index->deliver(make_batch(2, {entry("d", {4, 4}, 4)}, 4)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(*f.index->durable_cursor().value() == make_cursor(4));
  CHECK(stored_of(*f.index) == stored_map{{"a", 1}, {"d", 4}});
}

TEST_CASE("hnsw index: open() loads the committed generation before any call needs it (a standby's early open), "
          "from several threads at once, and the owner's first durable_cursor answers from what it loaded",
          "[adapter][backend][hnsw][shutdown]") {
  fixture f;
  REQUIRE(f.index->deliver(make_batch(1, {entry("a", {1, 1}, 1), entry("b", {2, 2}, 2)}, 2)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  const auto generation = hnsw_probe::saved_generation(*f.index);
  REQUIRE(generation > 0);
  test::waiter shut;
  f.index->shutdown(1, shut.make());
  REQUIRE(shut.wait());

  // The next owner's object, made before it is registered: nothing is read at create.
  auto next = hnsw_backend::create("by-vector", base_options(f.state())).value();
  CHECK(hnsw_probe::capacity(*next) == 0);
  std::array<bool, 3> opened{};
  std::vector<std::thread> openers;
  for (auto& ok : opened) openers.emplace_back([&next, &ok] { ok = next->open().has_value(); });
  for (auto& t : openers) t.join();
  CHECK(opened == std::array<bool, 3>{true, true, true});
  CHECK(hnsw_probe::capacity(*next) > 0);  // the graph is loaded
  CHECK(hnsw_probe::saved_generation(*next) == generation);
  REQUIRE(next->open());  // idempotent

  // Registered and acquired: the cursor of the generation it loaded, not the directory read
  // again (its `cursor` file is gone: a second load would find the index cursorless), and it goes
  // on from there.
  std::filesystem::remove(f.state() / "cursor");
  test::fake_host host;
  host.epoch = 2;
  next->attach(host);
  CHECK(next->durable_cursor().value() == std::optional<cursor>{make_cursor(2)});
  CHECK(stored_of(*next) == stored_map{{"a", 1}, {"b", 2}});
  REQUIRE(next->deliver(make_batch(2, {entry("c", {3, 3}, 3)}, 3)) == delivery_result::accepted);
  test::waiter w;
  next->flush(flush_reason::age, w.make());
  REQUIRE(w.wait());
  CHECK(*next->durable_cursor().value() == make_cursor(3));
  CHECK(stored_of(*next) == stored_map{{"a", 1}, {"b", 2}, {"c", 3}});
}

TEST_CASE("hnsw index: a graph a query loaded after shutdown is loaded again by the next owner's first call",
          "[adapter][backend][hnsw][shutdown]") {
  fixture f;
  REQUIRE(f.index->deliver(make_batch(1, {entry("a", {1, 1}, 1)}, 1)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  test::waiter shut;
  f.index->shutdown(1, shut.make());
  REQUIRE(shut.wait());
  CHECK(stored_of(*f.index) == stored_map{{"a", 1}});  // a query opens the directory as it is now
  {
    // Another owner (another object, as in another process) moves the directory on.
    test::fake_host other_host;
    other_host.epoch = 2;
    auto other = hnsw_backend::create("by-vector", base_options(f.state())).value();
    other->attach(other_host);
    REQUIRE(other->deliver(make_batch(2, {entry("b", {2, 2}, 2)}, 2)) == delivery_result::accepted);
    test::waiter w;
    other->flush(flush_reason::age, w.make());
    REQUIRE(w.wait());
    test::waiter done;
    other->shutdown(2, done.make());
    REQUIRE(done.wait());
  }
  // This object is acquired again under a later epoch: it reads the directory, not its snapshot.
  f.host.epoch = 3;
  CHECK(*f.index->durable_cursor().value() == make_cursor(2));
  CHECK(stored_of(*f.index) == stored_map{{"a", 1}, {"b", 2}});
  REQUIRE(f.index->deliver(make_batch(3, {entry("c", {3, 3}, 3)}, 3)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(file_names(f.state()) == std::set<std::string>{"cursor", "index.3", "labels.3"});
  CHECK(stored_of(*f.index) == stored_map{{"a", 1}, {"b", 2}, {"c", 3}});
}

TEST_CASE("hnsw index: an apply error drops the queue and reports failed until a shutdown, and a later epoch works again",
          "[adapter][backend][hnsw]") {
  fixture f;
  REQUIRE(f.index->deliver(make_batch(1, {entry("a", {1, 1}, 1)}, 1)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  hnsw_probe::on_step(*f.index, [](hnsw_step s) {
    if (s == hnsw_step::apply) throw std::runtime_error("injected");
  });
  // "b" fails; "c" goes with the queue or, arriving later, with everything after the failure.
  REQUIRE(f.index->deliver(make_batch(1, {entry("b", {2, 2}, 2)}, 2)) == delivery_result::accepted);
  REQUIRE(f.index->deliver(make_batch(1, {entry("c", {3, 3}, 3)}, 3)) == delivery_result::accepted);
  REQUIRE(f.changes.wait_for(state_change_kind::failed));
  auto barrier = f.barrier();
  REQUIRE_FALSE(barrier);
  CHECK(barrier.error().value() == errc::backend_failed);
  CHECK(hnsw_probe::applied_batches(*f.index) == 1);
  CHECK(hnsw_probe::dropped_batches(*f.index) == 2);
  CHECK(*f.index->durable_cursor().value() == make_cursor(1));
  hnsw_probe::on_step(*f.index, {});
  test::waiter shut;
  f.index->shutdown(1, shut.make());
  REQUIRE(shut.wait());
  f.host.epoch = 2;
  REQUIRE(f.index->deliver(make_batch(2, {entry("b", {2, 2}, 2), entry("c", {3, 3}, 3)}, 3)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(stored_of(*f.index) == stored_map{{"a", 1}, {"b", 2}, {"c", 3}});
}

TEST_CASE("hnsw index: reset removes the cursor and the index files and starts empty", "[adapter][backend][hnsw][reset]") {
  fixture f;
  REQUIRE(f.index->deliver(make_batch(1, {entry("a", {1, 1}, 1)}, 1)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  std::ofstream(f.state() / "notes.txt") << "a user's file, put there after dix made the index\n";
  test::waiter done;
  f.index->reset(1, done.make());
  REQUIRE(done.wait());
  CHECK(file_names(f.state()) == std::set<std::string>{"notes.txt"});  // decision 0038: only its own files go
  CHECK_FALSE(f.index->durable_cursor().value());
  CHECK(stored_of(*f.index).empty());
  CHECK(f.nearest({1, 1}, 5).empty());
  REQUIRE(f.index->deliver(make_batch(1, {entry("b", {2, 2}, 2)}, 2)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(stored_of(*f.index) == stored_map{{"b", 2}});
  CHECK(*f.index->durable_cursor().value() == make_cursor(2));
}

TEST_CASE("hnsw index: capacity doubles from one past the initial size, and a reopened index keeps every record",
          "[adapter][backend][hnsw]") {
  fixture f([](hnsw_options& o) { o.initial_capacity = 1; });
  std::vector<record_entry> records;
  stored_map expected;
  for (int i = 0; i < 40; ++i) {
    records.push_back(entry("r" + std::to_string(i), {static_cast<float>(i), 0}, static_cast<std::uint64_t>(i + 1)));
    expected["r" + std::to_string(i)] = static_cast<std::uint64_t>(i + 1);
  }
  REQUIRE(f.index->deliver(make_batch(1, records, 1)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(hnsw_probe::capacity(*f.index) == 64);
  CHECK(stored_of(*f.index) == expected);
  CHECK(f.nearest({20.2f, 0}, 3) == std::vector<std::string>{"r20", "r21", "r19"});
  test::waiter shut;
  f.index->shutdown(1, shut.make());
  REQUIRE(shut.wait());
  auto again = f.open([](hnsw_options& o) { o.initial_capacity = 1; });
  CHECK(stored_of(*again) == expected);
  CHECK(hnsw_probe::capacity(*again) == 64);
  REQUIRE(again->deliver(make_batch(1, {entry("more", {100, 0}, 50)}, 2)) == delivery_result::accepted);
  test::waiter w;
  again->flush(flush_reason::age, w.make());
  REQUIRE(w.wait());
  CHECK(again->knn(vec{99, 0}.data(), 2, 1).value().rows[0].ref.record_id == "more");
}

TEST_CASE("hnsw index: above the deleted ratio it asks for a rebuild, again only after a later save (an absorbed request is not lost), and the rebuild compacts",
          "[adapter][backend][hnsw][compaction]") {
  fixture f;
  std::vector<record_entry> four;
  for (int i = 0; i < 4; ++i) four.push_back(entry("r" + std::to_string(i), {static_cast<float>(i), 1}, 1));
  REQUIRE(f.index->deliver(make_batch(1, four, 1)) == delivery_result::accepted);
  REQUIRE(f.index->deliver(make_batch(1, {absent("r0"), absent("r1")}, 2)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(f.index->deleted_ratio() == Approx(0.5));
  CHECK(f.host.rebuild_requests == 0);  // not above
  const auto before = test::read_file(f.state() / "index.1").size();
  REQUIRE(f.index->deliver(make_batch(1, {absent("r2")}, 3)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(f.index->deleted_ratio() == Approx(0.75));
  CHECK(f.host.rebuild_requests == 1);
  // Still above after that save (the runtime absorbed the request, say: a rebuild was running):
  // asked again, once until the next save however many batches apply.
  REQUIRE(f.index->deliver(make_batch(1, {entry("x", {9, 9}, 4)}, 4)) == delivery_result::accepted);
  REQUIRE(f.index->deliver(make_batch(1, {absent("x"), entry("r3", {5, 5}, 5)}, 5)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(f.host.rebuild_requests == 2);
  CHECK(test::read_file(f.state() / "index.3").size() > before);  // deleted slots still take room

  // The rebuild: a reset, then the live records again. The graph holds no deleted slot.
  f.host.epoch = 2;
  test::waiter reset;
  f.index->reset(2, reset.make());
  REQUIRE(reset.wait());
  REQUIRE(f.index->deliver(make_batch(2, {entry("r3", {5, 5}, 5)}, 5)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(f.index->deleted_ratio() == 0);
  CHECK(test::read_file(f.state() / "index.4").size() < before);
  CHECK(stored_of(*f.index) == stored_map{{"r3", 5}});
  // A new generation of the index asks again when it passes the ratio.
  REQUIRE(f.index->deliver(make_batch(2, {entry("y", {1, 1}, 6), absent("r3")}, 6)) == delivery_result::accepted);
  REQUIRE(f.index->deliver(make_batch(2, {absent("y")}, 7)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(f.host.rebuild_requests == 3);
}

namespace {

// The crash tests' workload: batch i (cursor i) adds r<i>, replaces r<i-1> every third batch and
// removes r<i-2> every fourth.
constexpr std::uint64_t crash_batches = 24;
constexpr std::uint64_t crash_first_barrier = 12;

vec crash_vector(std::uint64_t i, std::uint64_t version) {
  return {static_cast<float>(i), static_cast<float>(version % 7), static_cast<float>((i * version) % 5)};
}

std::shared_ptr<const batch> crash_batch(std::uint64_t i, epoch_t epoch = 1) {
  std::vector<record_entry> records{entry("r" + std::to_string(i), crash_vector(i, i), i)};
  if (i % 3 == 0 && i > 1) records.push_back(entry("r" + std::to_string(i - 1), crash_vector(i - 1, i), i));
  if (i % 4 == 0 && i > 2) records.push_back(absent("r" + std::to_string(i - 2)));
  return make_batch(epoch, std::move(records), i);
}

stored_map crash_expected(std::uint64_t through) {
  stored_map m;
  for (std::uint64_t i = 1; i <= through; ++i) {
    m["r" + std::to_string(i)] = i;
    if (i % 3 == 0 && i > 1) m["r" + std::to_string(i - 1)] = i;
    if (i % 4 == 0 && i > 2) m.erase("r" + std::to_string(i - 2));
  }
  return m;
}

hnsw_options crash_options(const std::filesystem::path& dir) {
  auto o = base_options(dir, 3);
  o.initial_capacity = 4;
  return o;
}

}  // namespace

TEST_CASE("hnsw index: a process killed between apply and barrier or at any step of a barrier leaves a cursor describing exactly what is stored",
          "[adapter][backend][hnsw][crash]") {
  for (auto step : hnsw_barrier_steps) {
    DYNAMIC_SECTION("killed before " << to_string(step)) {
      temp_dir dir;
      const auto path = dir / "vectors";
      test::pipe_pair reached, never;
      // The child applies and commits the first batches, applies the rest, then stops at `step`
      // of the next barrier until it is killed. save_index is "between apply and barrier": every
      // batch applied, nothing of it saved.
      pid_t child = test::fork_child([&] {
        test::fake_host host;
        auto index = hnsw_backend::create("by-vector", crash_options(path)).value();
        index->attach(host);
        for (std::uint64_t i = 1; i <= crash_first_barrier; ++i) {
          if (index->deliver(crash_batch(i)) != delivery_result::accepted) return 4;
        }
        test::waiter first;
        index->flush(flush_reason::age, first.make());
        if (!first.wait()) return 5;
        for (std::uint64_t i = crash_first_barrier + 1; i <= crash_batches; ++i) {
          if (index->deliver(crash_batch(i)) != delivery_result::accepted) return 4;
        }
        hnsw_probe::on_step(*index, [&](hnsw_step at) {
          if (at != step) return;
          char c = 'k';
          if (::write(reached.write_end, &c, 1) != 1) ::_exit(6);
          test::read_byte(never.read_end);  // blocks: nothing is ever written
          ::_exit(7);
        });
        test::waiter second;
        index->flush(flush_reason::shutdown, second.make());
        (void)second.wait();
        return 8;  // the step was never reached
      });
      REQUIRE(reached.receive() == 'k');
      REQUIRE(::kill(child, SIGKILL) == 0);
      REQUIRE(test::wait_exit(child) == 128 + SIGKILL);

      test::fake_host host;
      auto index = hnsw_backend::create("by-vector", crash_options(path)).value();
      index->attach(host);
      auto durable = index->durable_cursor().value();
      REQUIRE(durable);
      const bool committed = step > hnsw_step::rename_cursor;
      const auto through = committed ? crash_batches : crash_first_barrier;
      CHECK(*durable == make_cursor(through));
      // The crash contract: the cursor describes exactly what is stored.
      CHECK(stored_of(*index) == crash_expected(through));
      // Replay from the cursor brings the index to the expected contents.
      for (std::uint64_t i = through + 1; i <= crash_batches; ++i) REQUIRE(index->deliver(crash_batch(i)) == delivery_result::accepted);
      test::waiter replayed;
      index->flush(flush_reason::age, replayed.make());
      REQUIRE(replayed.wait());
      CHECK(*index->durable_cursor().value() == make_cursor(crash_batches));
      const auto expected = crash_expected(crash_batches);
      CHECK(stored_of(*index) == expected);
      for (const auto& [id, version] : expected) {
        const auto i = std::stoull(id.substr(1));
        const auto q = crash_vector(i, version);
        auto rows = index->knn(q.data(), q.size(), 1, {}, 200).value().rows;
        REQUIRE(rows.size() == 1);
        CHECK(rows[0].ref == record_ref{"main", 1, id, version});
        CHECK(rows[0].score == Approx(0).margin(1e-6));
      }
      // Only the committed generation's files are left once a barrier finished (killed before
      // delete_old, with nothing to replay, the older generation stays until the next save).
      auto names = file_names(path);
      CHECK(names.count("cursor") == 1);
      if (step != hnsw_step::delete_old) CHECK(names.size() == 3);
    }
  }
}

TEST_CASE("hnsw index: a delivery is deferred while a new generation of the saved one's size would take the filesystem below the reserve, and the host hears low-disk-space (issue 34 item 3)", "[adapter][backend][hnsw][space]") {
  fixture f;
  test::fake_space space(1u << 30);  // automatic reserve: half of 128 MiB
  hnsw_probe::set_space_probe(*f.index, space.probe(), std::chrono::milliseconds(0));
  std::vector<record_entry> many;
  for (int i = 0; i < 8000; ++i) many.push_back(entry("r" + std::to_string(i), {static_cast<float>(i), 1}, 1));
  REQUIRE(f.index->deliver(make_batch(1, many, 1)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  CHECK(f.host.holds() == std::vector<std::pair<epoch_t, backend_hold>>{{1, backend_hold::none}});
  const auto generation = std::filesystem::file_size(f.state() / "index.1") + std::filesystem::file_size(f.state() / "labels.1");
  INFO("saved generation: " << generation << " bytes");
  // Room above the reserve for the batch's own share (64 KiB and twice its bytes) many times
  // over, not for a generation of the saved one's size beside it.
  REQUIRE(generation > (512u << 10));
  space.set_available((64u << 20) + generation / 2);
  CHECK(f.index->deliver(make_batch(1, {entry("b", {2, 2}, 2)}, 2)) == delivery_result::deferred);
  CHECK(f.host.holds().back() == std::pair<epoch_t, backend_hold>{1, backend_hold::low_disk_space});
  space.set_available(1u << 30);
  REQUIRE(f.index->deliver(make_batch(1, {entry("b", {2, 2}, 2)}, 2)) == delivery_result::accepted);
  CHECK(f.host.holds().back() == std::pair<epoch_t, backend_hold>{1, backend_hold::none});
  REQUIRE(f.barrier());
  CHECK(stored_of(*f.index).size() == 8001);
}

TEST_CASE("hnsw index: drift planted in its labels file by a tool that rewrites it whole (checksums and digest made consistent: a label removed, one added, one at an older version, one with another vector's hash) is found, each record by its kind and no other (issue 31)", "[adapter][backend][hnsw][digest][verify]") {
  fixture f;
  std::map<std::string, std::uint64_t> versions;
  std::vector<record_entry> records;
  for (int i = 1; i <= 6; ++i) {
    const auto id = "p" + std::to_string(i);
    versions[id] = 10 + static_cast<std::uint64_t>(i);
    records.push_back(entry(id, vec{static_cast<float>(i), 1.0f}, versions[id]));
  }
  REQUIRE(f.index->deliver(make_batch(1, records, 6)) == delivery_result::accepted);
  REQUIRE(f.barrier());
  // The primary's side: the same six records as a digest counts them, in merge order.
  auto primary = [&] {
    std::vector<digest_entry> out;
    for (const auto& r : records) {
      digest_entry e;
      e.log = r.log;
      e.table = r.table;
      e.record_id = r.record_id;
      e.version = r.state.version;
      e.hash = entry_hash(r.log, r.table, r.record_id, r.state.version, r.state.projection);
      out.push_back(e);
    }
    return out;
  }();
  auto verify = [&] {
    auto view = f.index->open_digest().value();
    view_entries source(*view);
    auto report = find_drift(source, {"main"}, [&](const std::string&) -> result<std::unique_ptr<entry_source>> {
                    return std::unique_ptr<entry_source>(std::make_unique<test::vector_entry_source>(primary));
                  }, 100).value();
    std::vector<std::string> found;
    for (const auto& d : report.drifts) found.push_back(std::string(to_string(d.kind)) + " " + d.record_id);
    return std::make_pair(found, report.differences);
  };
  CHECK(verify().second == 0);

  // The tool: the labels file of the committed generation (formats.md §6.4) read, changed and
  // written whole with its count and digest made consistent, and the cursor file's length and
  // CRC-32 of it and its own CRC-32 fixed, so every check the backend makes still passes.
  const auto dir = f.state();
  const auto cursor_bytes = test::read_file(dir / "cursor");
  const auto generation = get_le<std::uint64_t>(cursor_bytes, 12);
  const auto labels_file = dir / ("labels." + std::to_string(generation));
  const auto labels = test::read_file(labels_file);
  struct row {
    std::uint64_t label, version;
    hash128 hash;
    std::string id;
  };
  std::map<std::string, row> rows;
  std::size_t at = 8 + 4 + 4 + 1 + 8 + 8 + 24;
  const std::string header = labels.substr(0, 8 + 4 + 4 + 1 + 8);
  while (at < labels.size()) {
    row r;
    r.label = get_le<std::uint64_t>(labels, at);
    r.version = get_le<std::uint64_t>(labels, at + 8);
    r.hash.lo = get_le<std::uint64_t>(labels, at + 16);
    r.hash.hi = get_le<std::uint64_t>(labels, at + 24);
    at += 32;
    const auto log_len = static_cast<std::uint8_t>(labels[at]);
    REQUIRE(labels.substr(at + 1, log_len) == "main");
    at += 1 + log_len + 4;
    const auto id_len = get_le<std::uint32_t>(labels, at);
    r.id = labels.substr(at + 4, id_len);
    at += 4 + id_len;
    rows[r.id] = r;
  }
  REQUIRE(rows.size() == 6);
  const auto freed = rows.at("p2").label;  // labels stay below next_label: p9 takes p2's
  rows.erase("p2");                                                                                   // removed
  rows["p9"] = row{freed, 3, entry_hash("main", 1, "p9", 3, encode_vector(vec{9, 1}.data(), 2)), "p9"};  // added
  rows["p3"].version = 1;                                                                          // older
  rows["p4"].hash = entry_hash("main", 1, "p4", versions["p4"], encode_vector(vec{0, 0.5f}.data(), 2));  // another vector
  std::string rewritten = header;
  put_le<std::uint64_t>(rewritten, rows.size());
  index_digest digest;
  for (const auto& [id, r] : rows) digest.add(r.hash);
  rewritten += digest.encode();
  for (const auto& [id, r] : rows) {
    put_le<std::uint64_t>(rewritten, r.label);
    put_le<std::uint64_t>(rewritten, r.version);
    put_le<std::uint64_t>(rewritten, r.hash.lo);
    put_le<std::uint64_t>(rewritten, r.hash.hi);
    rewritten.push_back('\x04');
    rewritten += "main";
    put_le<std::uint32_t>(rewritten, 1);
    put_le<std::uint32_t>(rewritten, static_cast<std::uint32_t>(id.size()));
    rewritten += id;
  }
  test::replace_file(labels_file, rewritten);
  std::string cursor_file = cursor_bytes.substr(0, cursor_bytes.size() - 4);
  std::string length;
  put_le<std::uint64_t>(length, rewritten.size());
  cursor_file.replace(32, 8, length);
  std::string crc;
  put_le<std::uint32_t>(crc, crc32_ieee(rewritten));
  cursor_file.replace(40, 4, crc);
  put_le<std::uint32_t>(cursor_file, crc32_ieee(cursor_file));
  test::replace_file(dir / "cursor", cursor_file);

  const auto [found, differences] = verify();
  CHECK(found == std::vector<std::string>{"missing p2", "stale p3", "wrong-projection p4", "extra p9"});
  CHECK(differences == 4);
}
