#include "live_index.hpp"

#include <stdexcept>
#include <thread>

#include <dix/backends/rocksdb_index_backend.hpp>

namespace dix::bench {

store_options bench_store_options() {
  store_options so;
  so.log_name = "main";
  return so;
}

projection_result project_key(std::string_view payload, const record_info&) {
  return encode_keys({std::string(payload.substr(0, 8))});
}

registration_handle register_ready(runtime& rt, const std::string& log, std::uint32_t table, const std::string& id,
                    const std::filesystem::path& dir, std::shared_ptr<backend> backend,
                    std::optional<runner_options> options, std::chrono::seconds timeout) {
  registration r;
  if (!backend) {
    rocksdb_index_options io;
    io.path = dir;
    backend = rocksdb_index_backend::create(id, io).value();
  }
  r.backend = std::move(backend);
  r.projections[table_ref{log, table}] = project_key;
  r.options = options;
  auto handle = rt.register_index(std::move(r)).value();
  // A fresh index is built before it serves: the benchmarks measure the steady state after.
  for (auto deadline = std::chrono::steady_clock::now() + timeout;;) {
    auto m = rt.metrics(id);
    if (m && m->readiness.state == readiness_state::ready) return handle;
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("index " + id + " was not ready within " + std::to_string(timeout.count()) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace dix::bench
