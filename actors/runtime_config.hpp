// The runtime's options in the application's actor_system_config (actors/runtime_config.cpp): the
// `dix` option group dix::configure declares, and runtime_options_from (<dix/caf.hpp>), which
// reads it back.
#pragma once

#include <caf/fwd.hpp>

namespace dix {

// Declares the options of the groups `dix` and `dix.runner` in cfg's option set and puts their
// defaults into cfg's content where it holds no value yet (so --dump-config lists them). A second
// call changes nothing.
void add_dix_options(caf::actor_system_config& cfg);

}  // namespace dix
