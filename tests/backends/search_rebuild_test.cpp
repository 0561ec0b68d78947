// A rebuild of each shipped backend ends `ready` with the same query answers as before it (issue
// 13): one real runtime over a real store, the RocksDB, Xapian and hnsw backends registered over
// one table, records inserted, updated and deleted; each index is asked for a rebuild in turn
// (reset, scan, boundary, drain) and answers its queries again under its new epoch.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <dix/backends/hnsw_backend.hpp>
#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/backends/xapian_backend.hpp>
#include <dix/runtime.hpp>

#include "adapters/rocksdb_store_reader.hpp"
#include "adapters/test_support.hpp"
#include "core/projection_digest.hpp"
#include "support/temp_dir.hpp"

using namespace dix;
using dix::test::temp_dir;

namespace {

constexpr std::size_t dimension = 4;
const char* const words[] = {"alpha", "bravo", "charlie", "delta", "echo"};

// Record i's payload is its number; each projection derives its own value from it.
int number_of(std::string_view payload) { return std::stoi(std::string(payload)); }
std::vector<float> vector_of(int i) { return {static_cast<float>(i), 0.5f, 0.25f * static_cast<float>(i % 7), 1.0f}; }

registration with(std::shared_ptr<backend> b, projection p) {
  registration r;
  r.backend = std::move(b);
  r.projections[table_ref{"main", 1}] = std::move(p);
  return r;
}

using scored = std::map<std::string, std::pair<std::uint64_t, double>>;  // record id → (version, score)

struct answers {
  std::vector<std::pair<std::string, std::uint64_t>> lookup;  // rocksdb: key "even"
  scored search;                                              // xapian: "bravo OR delta"
  scored knn;                                                 // hnsw: 10 nearest to the origin
};

template <class Rows>
scored scores(const Rows& rows) {
  scored out;
  for (const auto& r : rows) out[r.ref.record_id] = {r.ref.version, r.score};
  return out;
}

answers ask(rocksdb_index_backend& keys, xapian_backend& text, hnsw_backend& vectors) {
  answers a;
  auto l = keys.lookup("even", 1000, test::covering_now());
  INFO((l ? std::string() : l.error().to_string()));
  REQUIRE(l);
  for (const auto& r : l->rows) a.lookup.emplace_back(r.record_id, r.version);
  auto s = text.search("bravo OR delta", 0, 1000, test::covering_now());
  INFO((s ? std::string() : s.error().to_string()));
  REQUIRE(s);
  a.search = scores(s->rows);
  const std::vector<float> origin(dimension, 0.0f);
  // ef above the record count: the search is exhaustive, so the answer does not depend on the
  // graph's shape (a rebuild inserts in scan order, the log in commit order).
  auto k = vectors.knn(origin.data(), origin.size(), 10, test::covering_now(), 400);
  INFO((k ? std::string() : k.error().to_string()));
  REQUIRE(k);
  a.knn = scores(k->rows);
  return a;
}

// The digest each backend stores (formats.md §7) is the digest of the primary store's projection:
// computed from a snapshot of the store with the index's own projection, entry by entry.
void check_digest(const std::shared_ptr<primary_store>& store, backend& b, const projection& fn) {
  INFO("index " << b.id());
  auto view = b.open_digest();
  INFO((view ? std::string() : view.error().to_string()));
  REQUIRE(view);
  rocksdb_store_reader reader(store);
  auto snapshot = reader.snapshot().value();
  index_digest want;
  std::map<std::string, std::pair<std::uint64_t, hash128>> primary, index;
  REQUIRE(add_projection_digest(*snapshot, "main", 1, fn, want, [&](const digest_entry& e) {
    primary[e.record_id] = {e.version, e.hash};
    return true;
  }));
  REQUIRE((*view)->for_each_entry([&](const digest_entry& e) {
    index[e.record_id] = {e.version, e.hash};
    return true;
  }));
  CHECK(index == primary);
  INFO("index digest " << to_hex((*view)->digest().sum) << ", the projection's " << to_hex(want.sum));
  CHECK((*view)->digest() == want);
  CHECK(want.records > 50);
}

void check_same(const scored& before, const scored& after) {
  REQUIRE(before.size() == after.size());
  for (const auto& [id, vs] : before) {
    auto it = after.find(id);
    REQUIRE(it != after.end());
    CHECK(it->second.first == vs.first);
    CHECK(it->second.second == Approx(vs.second).epsilon(1e-6));
  }
}

}  // namespace

TEST_CASE("rebuild: each shipped backend (RocksDB, Xapian, hnsw) ends ready with the same query answers as before its rebuild",
          "[adapter][rebuild][search]") {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  auto rt = runtime::create({store}).value();

  rocksdb_index_options ro;
  ro.path = dir / "keys";
  auto keys = rocksdb_index_backend::create("keys", ro).value();
  xapian_options xo;
  xo.path = dir / "text";
  xo.fields = {{"body", {"", 1}}};
  auto text = xapian_backend::create("text", xo).value();
  hnsw_options ho;
  ho.state_dir = dir / "vectors";
  ho.dimension = dimension;
  auto vectors = hnsw_backend::create("vectors", ho).value();

  const projection key_of = [](std::string_view p, const record_info&) -> projection_result {
    return encode_keys({number_of(p) % 2 == 0 ? "even" : "odd"});
  };
  const projection text_of = [](std::string_view p, const record_info&) -> projection_result {
    const int i = number_of(p);
    return encode_fields({{"body", std::string(words[i % 5]) + " " + words[(i / 5) % 5] + " item"}});
  };
  const projection vector_of_record = [](std::string_view p, const record_info&) -> projection_result {
    const auto v = vector_of(number_of(p));
    return encode_vector(v.data(), v.size());
  };
  REQUIRE(rt->register_index(with(keys, key_of)));
  REQUIRE(rt->register_index(with(text, text_of)));
  REQUIRE(rt->register_index(with(vectors, vector_of_record)));

  // 150 records, a third of them updated to another number, every seventh deleted.
  for (int batch = 0; batch < 3; ++batch) {
    auto txn = store->begin();
    for (int i = batch * 50; i < (batch + 1) * 50; ++i) txn.put(1, "r" + std::to_string(i), std::to_string(i));
    REQUIRE(txn.commit());
  }
  {
    auto txn = store->begin();
    for (int i = 0; i < 150; i += 3) txn.put(1, "r" + std::to_string(i), std::to_string(i + 1000));
    for (int i = 0; i < 150; i += 7) txn.del(1, "r" + std::to_string(i));
    REQUIRE(txn.commit());
  }
  for (const char* id : {"keys", "text", "vectors"}) REQUIRE(test::wait_readiness(home, id, test::is_ready));

  const auto before = ask(*keys, *text, *vectors);
  REQUIRE(!before.lookup.empty());
  REQUIRE(!before.search.empty());
  REQUIRE(before.knn.size() == 10);
  // Each query waited for coverage of its start, so every index is durable through the last write.
  check_digest(store, *keys, key_of);
  check_digest(store, *text, text_of);
  check_digest(store, *vectors, vector_of_record);

  std::string history;  // the states each rebuild's wait saw, for a failure below
  for (const char* id : {"keys", "text", "vectors"}) {
    INFO(id);
    const auto epoch = rt->readiness(id).value().owner_epoch;
    REQUIRE(rt->request_rebuild(id));
    // A rebuild mints a new epoch (reset under it, then the scan): ready again under a newer one
    // is the rebuild's end. (The scan's figures are paced and may not be published yet.)
    std::string seen;
    REQUIRE(test::wait_readiness(home, id, [&](const readiness& r) {
      seen += std::string(to_string(r.state)) + "/" + std::string(to_string(r.reason)) + "@" + std::to_string(r.owner_epoch) + " ";
      return r.state == readiness_state::ready && r.owner_epoch > epoch;
    }));
    history += std::string(id) + " from epoch " + std::to_string(epoch) + ": " + seen + "\n";
  }
  INFO(history);

  // Each index stays ready after its rebuild's end: a rebuild that showed `ready` under its new
  // epoch before publishing `rebuilding` ended this wait early (decision 0032).
  for (const char* id : {"keys", "text", "vectors"}) {
    auto r = rt->readiness(id).value();
    INFO(id << ": " << to_string(r.state) << " (" << to_string(r.reason) << "), epoch " << r.owner_epoch);
    auto st = rt->status(id);
    INFO((st ? st->message : std::string()));
    CHECK(r.state == readiness_state::ready);
  }
  const auto after = ask(*keys, *text, *vectors);
  CHECK(after.lookup == before.lookup);
  check_same(before.search, after.search);
  check_same(before.knn, after.knn);
  // A rebuild recomputes each digest: the same as the projection's again.
  check_digest(store, *keys, key_of);
  check_digest(store, *text, text_of);
  check_digest(store, *vectors, vector_of_record);
  REQUIRE(rt->stop().get());
  // And after the owner let go (a shutdown, its release's flush), as any later owner finds them.
  check_digest(store, *keys, key_of);
  check_digest(store, *text, text_of);
  check_digest(store, *vectors, vector_of_record);
}

TEST_CASE("verify: each shipped backend (RocksDB, Xapian, hnsw) is proven equal to its projection while a writer commits all along (issue 31)",
          "[adapter][verify][search]") {
  temp_dir dir;
  const auto home = dir / "db";
  auto store = test::open_store(home);
  auto rt = runtime::create({store}).value();
  rocksdb_index_options ro;
  ro.path = dir / "keys";
  xapian_options xo;
  xo.path = dir / "text";
  xo.fields = {{"body", {"", 1}}};
  hnsw_options ho;
  ho.state_dir = dir / "vectors";
  ho.dimension = dimension;
  const projection key_of = [](std::string_view p, const record_info&) -> projection_result {
    return encode_keys({number_of(p) % 2 == 0 ? "even" : "odd"});
  };
  const projection text_of = [](std::string_view p, const record_info&) -> projection_result {
    return encode_fields({{"body", std::string(words[number_of(p) % 5]) + " item"}});
  };
  const projection vector_of_record = [](std::string_view p, const record_info&) -> projection_result {
    const auto v = vector_of(number_of(p));
    return encode_vector(v.data(), v.size());
  };
  REQUIRE(rt->register_index(with(rocksdb_index_backend::create("keys", ro).value(), key_of)));
  REQUIRE(rt->register_index(with(xapian_backend::create("text", xo).value(), text_of)));
  REQUIRE(rt->register_index(with(hnsw_backend::create("vectors", ho).value(), vector_of_record)));
  {
    auto txn = store->begin();
    for (int i = 0; i < 200; ++i) txn.put(1, "r" + std::to_string(i), std::to_string(i));
    REQUIRE(txn.commit());
  }
  for (const char* id : {"keys", "text", "vectors"}) REQUIRE(test::wait_readiness(home, id, test::is_ready));

  // The writer: puts and deletes over 300 ids, one per commit, until told to stop or 5 000 commits
  // are in (bounded, so the run's length and the index's lag do not depend on the machine's speed).
  std::atomic<bool> done{false};
  std::atomic<int> commits{0};
  std::thread writer([&] {
    for (int n = 0; n < 5000 && !done.load(); ++n) {
      auto txn = store->begin();
      const auto id = "r" + std::to_string((n * 7919) % 300);
      if (n % 5 == 4) txn.del(1, id);
      else txn.put(1, id, std::to_string(n));
      if (!txn.commit()) break;
      commits.fetch_add(1);
    }
  });
  std::vector<std::string> outcomes;
  for (int round = 0; round < 3; ++round) {
    for (const char* id : {"keys", "text", "vectors"}) {
      verify_options options;
      options.deadline = std::chrono::minutes(4);  // a loaded sanitizer run's index may lag the writer
      auto proof = rt->verify(id, options);
      outcomes.push_back(std::string(id) + ": " +
                         (proof ? (proof->equal ? "equal" : std::to_string(proof->differences) + " differ") : proof.error().to_string()));
    }
  }
  done.store(true);
  writer.join();
  INFO("commits during the verifies: " << commits.load());
  for (const auto& o : outcomes) {
    INFO(o);
    CHECK(o.find(": equal") != std::string::npos);
  }
  CHECK(commits.load() > 0);
  REQUIRE(rt->stop().get());
}
