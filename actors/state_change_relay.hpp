// state_change_relay: a backend's state changes, from whatever thread the backend calls, to the
// mailbox of the proxy that serves the registration now (protocol.md §5.1).
#pragma once

#include <memory>
#include <mutex>

#include <caf/actor_control_block.hpp>

#include <dix/backend.hpp>

#include "messages/interfaces.hpp"

namespace dix {

// Routes a backend's state changes, which may come from any thread at any time, to the proxy that
// serves the registration now; the proxy forwards them in its mailbox order. Changes while no
// proxy is up (between a crash and the respawn) are dropped: the dead proxy already condemned,
// and a deferred runner retries on its timer.
class state_change_relay {
 public:
  void attach(const backend_proxy_actor& proxy);
  void post(state_change change) const;

 private:
  mutable std::mutex mutex_;
  caf::weak_actor_ptr proxy_;
};

// The registration's subscription to `b`'s state changes, through `relay` (protocol.md §2.2:
// part of the registration; it throws or fails as on_state_change does).
subscription subscribe_state_changes(backend& b, const std::shared_ptr<state_change_relay>& relay);

}  // namespace dix
