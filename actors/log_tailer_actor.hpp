// log_tailer_actor: all primary-store I/O of one backend id (actors.md §1): WAL reads through
// tailer_core, primary reads for resolution, the WAL sync before delivery, and the system commits
// the runner asks for (epoch records). Spawned detached in production (it blocks on RocksDB),
// on the test scheduler in actor tests. It answers the sender of each command.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include <dix/options.hpp>
#include <dix/result.hpp>

#include "core/clock.hpp"
#include "messages/interfaces.hpp"
#include "ports/meta_store.hpp"

namespace dix {

class log_source;
class primary_store;
class store_reader;
class tailer_core;

struct tailer_deps {
  std::string id;                          // the backend id (names epoch/<id>)
  std::unique_ptr<tailer_core> core;       // over the ports below
  std::vector<std::shared_ptr<log_source>> sources;   // kept alive for the core
  std::vector<std::shared_ptr<store_reader>> readers; // kept alive for the core
  // The id's records in the home store (formats.md §5): production binds the RocksDB adapter
  // (adapters/meta_records), actor tests a recorder. Null: every metadata command answers
  // not_supported.
  std::shared_ptr<meta_store> meta;
  const clock* time = &system_clock();      // turn budgets (never null)
};

log_tailer_actor spawn_log_tailer(caf::actor_system& sys, std::shared_ptr<tailer_deps> deps, bool detached);

}  // namespace dix
