// An actor_system_config for the tests that run CAF's real scheduler (not the test coordinator):
// dix configured, `threads` scheduler threads, CAF's logger quiet.
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>

#include <dix/caf.hpp>

namespace dix::test {

struct quiet_config : caf::actor_system_config {
  explicit quiet_config(int threads = 2) {
    dix::configure(*this);
    set("scheduler.max-threads", threads);
    set("logger.console-verbosity", caf::atom("quiet"));
    set("logger.file-verbosity", caf::atom("quiet"));
  }
};

}  // namespace dix::test
