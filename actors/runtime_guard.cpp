// dix::runtime_guard (<dix/caf.hpp>): stop_runtime, then the exit message, then the wait for the
// runtime actor's end, from a scoped actor of the runtime's own system.
#include <dix/caf.hpp>

#include <utility>

#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>
#include <caf/system_messages.hpp>

namespace dix {

runtime_guard::runtime_guard(runtime_actor runtime) noexcept : runtime_(std::move(runtime)) {}

runtime_guard::runtime_guard(runtime_guard&& other) noexcept : runtime_(other.release()) {}

runtime_guard& runtime_guard::operator=(runtime_guard&& other) noexcept {
  if (this != &other) {
    [[maybe_unused]] auto ignored = stop();  // the runtime held is replaced: stopped as at scope end
    runtime_ = other.release();
  }
  return *this;
}

runtime_guard::~runtime_guard() {
  // A destructor cannot report the stop's error; stop_runtime's failure (a rejected shutdown) is
  // in the runtime's status and readiness, and the runtime ends all the same.
  [[maybe_unused]] auto ignored = stop();
}

runtime_actor runtime_guard::release() noexcept {
  return std::exchange(runtime_, runtime_actor{});
}

caf::error runtime_guard::stop() {
  auto rt = release();
  if (!rt) return {};
  caf::scoped_actor self{rt.home_system()};
  // Monitored first: the down message then comes whenever the runtime ends, even if it had ended
  // already (CAF answers a monitor of a dead actor with one at once).
  self->monitor(rt);
  caf::error outcome;
  self->request(rt, caf::infinite, stop_runtime{})
      .receive([](runtime_stopped&) {},
               [&](caf::error& err) {
                 // An actor that ended already answers nothing: it was stopped.
                 if (err != caf::sec::request_receiver_down) outcome = std::move(err);
               });
  self->send_exit(rt, caf::exit_reason::user_shutdown);
  self->receive([](caf::down_msg&) {});
  return outcome;
}

}  // namespace dix
