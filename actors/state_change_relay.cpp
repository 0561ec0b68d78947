#include "actors/state_change_relay.hpp"

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

namespace dix {

void state_change_relay::attach(const backend_proxy_actor& proxy) {
  std::lock_guard g(mutex_);
  proxy_ = caf::actor_cast<caf::weak_actor_ptr>(proxy);
}

void state_change_relay::post(state_change change) const {
  caf::strong_actor_ptr target;
  {
    std::lock_guard g(mutex_);
    target = proxy_.lock();
  }
  if (target) caf::anon_send(caf::actor_cast<backend_proxy_actor>(target), state_change_msg{change.kind, change.epoch});
}

subscription subscribe_state_changes(backend& b, const std::shared_ptr<state_change_relay>& relay) {
  return b.on_state_change([relay](state_change c) { relay->post(c); });
}

}  // namespace dix
