// log_tailer_actor: all primary-store I/O of one backend id (actors.md §1): WAL reads through
// tailer_core, primary reads for resolution, the WAL sync before delivery, and the system commits
// the runner asks for (epoch records). Spawned detached in production (it blocks on RocksDB),
// on the test scheduler in actor tests. It answers the sender of each command.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include <dix/options.hpp>
#include <dix/result.hpp>

#include "core/runner_core.hpp"  // meta_records
#include "messages/interfaces.hpp"

namespace dix {

class log_source;
class primary_store;
class store_reader;
class tailer_core;
class clock;

struct tailer_deps {
  std::string id;                          // the backend id (names epoch/<id>)
  std::unique_ptr<tailer_core> core;       // over the ports below
  std::vector<std::shared_ptr<log_source>> sources;   // kept alive for the core
  std::vector<std::shared_ptr<store_reader>> readers; // kept alive for the core
  // Writes epoch/<id> (system transaction, sync) in the home store (formats.md §5). Production
  // binds it to commit_system on the home store; actor tests to a recorder.
  std::function<result<void>(std::uint64_t epoch)> persist_epoch;
  // condemned/<id> = 01 (sync); registration/<id> = fingerprint with condemned/<id> deleted, one
  // commit (sync); the two records as read now (formats.md §5). Unset: not_supported.
  std::function<result<void>()> write_marker;
  std::function<result<void>(std::uint64_t fingerprint)> settle;
  std::function<result<meta_records>()> read_records;
  const clock* time = nullptr;             // turn budgets
};

log_tailer_actor spawn_log_tailer(caf::actor_system& sys, std::shared_ptr<tailer_deps> deps, bool detached);

}  // namespace dix
