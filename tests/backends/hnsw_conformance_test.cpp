// The backend conformance kit (<dix/testing/backend_conformance.hpp>) run against the shipped
// hnsw_backend: its listing is stored_records(), and the steps of its barrier (an index saved
// before the cursor's rename) are the kit's barrier kill points.
#include <catch2/catch.hpp>

#include <vector>

#include <dix/backends/hnsw_backend.hpp>
#include <dix/testing/backend_conformance.hpp>

#include "backends/hnsw_probe.hpp"

namespace {

using dix::testing::backend_subject;

constexpr std::size_t dimension = 4;

// Record number n's vector: no two alike.
std::vector<float> vector_of(std::uint64_t n) {
  const auto x = static_cast<float>(n);
  return {x, 1.0f / x, x * 0.5f, 1.0f};
}

backend_subject hnsw_subject() {
  backend_subject s;
  s.name = "hnsw";
  s.make = [](const std::filesystem::path& dir) -> std::shared_ptr<dix::backend> {
    dix::hnsw_options o;
    o.state_dir = dir / "index";
    o.dimension = dimension;
    o.space = dix::hnsw_space::l2;
    o.initial_capacity = 4;  // grown while the kit writes
    o.max_queued_bytes = 4096;
    // The kit's records are few and it removes most of them: the compaction's rebuild request
    // (above half the labels deleted, decision 0023) would be right, but the unindexable check
    // asserts that removals request no rebuild. hnsw_backend_test covers the compaction.
    o.max_deleted_ratio = 1.0;
    return dix::hnsw_backend::create("conformance", o).value();
  };
  s.projection = [](std::uint64_t n) {
    const auto v = vector_of(n);
    return dix::encode_vector(v.data(), v.size());
  };
  s.unindexable = [] { return std::string("abc"); };  // not 4 × dimension bytes: `dimension`
  s.stored = [](dix::backend& b) {
    auto rows = dynamic_cast<dix::hnsw_backend&>(b).stored_records();
    REQUIRE(rows);
    dix::testing::stored_records out;
    for (const auto& row : *rows) out[{row.log, row.table, row.record_id}] = row.version;
    return out;
  };
  // The records at distance 0 from projection(n)'s vector, out of every stored one.
  s.finds = [](dix::backend& b, std::uint64_t n) {
    const auto v = vector_of(n);
    auto rows = dynamic_cast<dix::hnsw_backend&>(b).knn(v.data(), v.size(), 1000);
    REQUIRE(rows);
    std::vector<dix::testing::stored_key> out;
    for (const auto& row : rows->rows) {
      if (row.score == 0) out.push_back({row.ref.log, row.ref.table, row.ref.record_id});
    }
    return out;
  };
  s.defer_batch_bytes = 4096;
  s.barrier_kill_points = dix::hnsw_barrier_steps.size();
  s.arm_barrier_kill = [](dix::backend& b, std::size_t point, std::function<void()> kill) {
    dix::hnsw_probe::on_step(dynamic_cast<dix::hnsw_backend&>(b), [point, kill](dix::hnsw_step at) {
      if (at == dix::hnsw_barrier_steps[point]) kill();
    });
  };
  return s;
}

}  // namespace

DIX_BACKEND_CONFORMANCE("hnsw conformance", hnsw_subject)
