#include "messages/type_ids.hpp"

#include <caf/actor_system_config.hpp>

#include "messages/errors.hpp"

namespace dix {

void add_dix_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::dix>();
}

void configure_dix(caf::actor_system_config& cfg) {
  add_dix_message_types(cfg);
  add_dix_error_category(cfg);
}

}  // namespace dix
