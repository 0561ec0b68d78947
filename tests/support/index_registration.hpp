// The registration most runtime tests make: a backend projecting table 1 of log "main", each
// record's payload its one key (so a put of "k1" indexes key "k1"), and a real RocksDB index at
// a path. Shared by the tests of the runtime over real stores (runtime facade, ownership, stall
// attribution).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/runtime.hpp>

namespace dix::test {

inline registration index_registration(std::shared_ptr<backend> b, std::string version = "") {
  registration r;
  r.backend = std::move(b);
  r.projections[table_ref{"main", 1}] = [](std::string_view payload, const record_info&) -> projection_result {
    return encode_keys({std::string(payload)});
  };
  r.projection_version = std::move(version);
  return r;
}

// A RocksDB index backend `id` at `path`; fails the test (value() throws) when it cannot open.
inline std::shared_ptr<rocksdb_index_backend> make_index_at(const std::filesystem::path& path,
                                                            const std::string& id = "by-value") {
  rocksdb_index_options o;
  o.path = path;
  return rocksdb_index_backend::create(id, o).value();
}

}  // namespace dix::test
