// What the live-writer benchmarks (ryw, sustained) share: the projection of paced_writer's
// payloads, registering a RocksDB index on a runtime, waiting until an index is ready.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <dix/backend.hpp>
#include <dix/options.hpp>
#include <dix/projection.hpp>
#include <dix/runtime.hpp>

namespace dix::bench {

// The store options of the live-writer benchmarks: the defaults, log "main".
store_options bench_store_options();

// One key per record: the payload's first 8 bytes (paced_writer::payload_of).
projection_result project_key(std::string_view payload, const record_info& info);

// Registers `backend` (or, when null, a RocksDB index `id` with its defaults at `dir`) over
// `table` of the runtime's store `log`, with `options` (the runtime's when absent), and waits
// until it is ready; throws on a failure or after `timeout`. Its handle (to unregister it).
registration_handle register_ready(runtime& rt, const std::string& log, std::uint32_t table, const std::string& id,
                    const std::filesystem::path& dir, std::shared_ptr<backend> backend,
                    std::optional<runner_options> options, std::chrono::seconds timeout);

}  // namespace dix::bench
