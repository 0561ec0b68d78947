// The backend conformance kit (<dix/testing/backend_conformance.hpp>) run against the shipped
// rocksdb_index_backend: the subject an outside author would write, plus the reset kill points
// of the backend's own test probe.
#include <catch2/catch.hpp>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/testing/backend_conformance.hpp>

#include "backends/rocksdb_index_probe.hpp"

namespace {

using dix::testing::backend_subject;

// Every key the backend can hold sorts before this one (keys are 1…1024 bytes).
const std::string past_every_key(1025, '\xff');

backend_subject rocksdb_subject() {
  backend_subject s;
  s.name = "rocksdb_index";
  s.make = [](const std::filesystem::path& dir) -> std::shared_ptr<dix::backend> {
    dix::rocksdb_index_options o;
    o.path = dir / "index";
    o.max_queued_bytes = 4096;
    return dix::rocksdb_index_backend::create("conformance", o).value();
  };
  // Two keys per record, one shared: a listing must count each record once.
  s.projection = [](std::uint64_t n) { return dix::encode_keys({"all", "n" + std::to_string(n)}); };
  s.unindexable = [] { return std::string("ab"); };  // shorter than the key count: bad_encoding
  // Every record with a key, through the public range query (each projection has keys).
  s.stored = [](dix::backend& b) {
    auto& index = dynamic_cast<dix::rocksdb_index_backend&>(b);
    auto rows = index.range("", past_every_key, std::size_t{1} << 20);
    REQUIRE(rows);
    dix::testing::stored_records out;
    for (const auto& row : rows->rows) out[{row.log, row.table, row.record_id}] = row.version;
    return out;
  };
  // The key only projection(n) has: a lookup finds an entry an update or delete left behind.
  s.finds = [](dix::backend& b, std::uint64_t n) {
    auto rows = dynamic_cast<dix::rocksdb_index_backend&>(b).lookup("n" + std::to_string(n), std::size_t{1} << 20);
    REQUIRE(rows);
    std::vector<dix::testing::stored_key> out;
    for (const auto& row : rows->rows) out.push_back({row.log, row.table, row.record_id});
    return out;
  };
  s.defer_batch_bytes = 4096;  // the cap: an in-flight one and a queued one, then deferred
  s.reset_kill_points = dix::reset_steps.size();
  s.arm_reset_kill = [](dix::backend& b, std::size_t point, std::function<void()> kill) {
    dix::rocksdb_index_probe::on_reset_step(dynamic_cast<dix::rocksdb_index_backend&>(b),
                                            [point, kill](dix::reset_step at) {
                                              if (at == dix::reset_steps[point]) kill();
                                              return false;
                                            });
  };
  return s;
}

}  // namespace

DIX_BACKEND_CONFORMANCE("rocksdb_index conformance", rocksdb_subject)
