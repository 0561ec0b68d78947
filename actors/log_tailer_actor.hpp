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

#include "messages/interfaces.hpp"

namespace dix {

struct registration_settings;  // actors/registration_record.hpp
class tailer_core;

struct tailer_deps {
  // The registration's settings (shared, never copied): the backend id (names epoch/<id>), the
  // logs' ports (kept alive for the core), the id's records in the home store (formats.md §5;
  // production binds the RocksDB adapter, actor tests a recorder; null: every metadata command
  // answers not_supported) and the clock of the turn budgets.
  std::shared_ptr<const registration_settings> settings;
  std::unique_ptr<tailer_core> core;  // over the settings' logs
};

log_tailer_actor spawn_log_tailer(caf::actor_system& sys, std::shared_ptr<tailer_deps> deps, bool detached);

}  // namespace dix
