#include "actors/backend_proxy_actor.hpp"

#include <functional>
#include <map>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace dix {
namespace {

struct proxy_state {
  std::shared_ptr<backend> b;
  runner_actor runner;  // the sender of the last command: where state changes go
  std::uint64_t next_token = 1;
  std::map<std::uint64_t, std::pair<std::uint64_t, caf::typed_response_promise<flush_done>>> flushes;
  std::map<epoch_t, caf::typed_response_promise<quiescence>> shutdowns;
  std::map<std::uint64_t, std::pair<std::uint64_t, caf::typed_response_promise<reset_done>>> resets;  // token → gen, promise
  // flush and shutdown calls that came while a reset ran, in arrival order: started once no reset
  // is outstanding (a backend is never told to flush or shut down while it destroys its index).
  // The runner's core waits for its reset itself; this keeps a supervisor releasing for a dead
  // runner, whose reset is still running, from doing otherwise (protocol.md §9.6, §11.4).
  std::vector<std::function<void()>> after_reset;
  static inline const char* name = "dix.backend_proxy";
};

using proxy_pointer = backend_proxy_actor::stateful_pointer<proxy_state>;

caf::error to_caf(const result<void>& r) {
  return r ? caf::error{} : make_error(r.error().value(), r.error().message());
}

// Posts `msg` to the proxy if it still exists. Backends keep callbacks and completions for as
// long as they like; a weak reference keeps them from keeping the proxy alive.
template <class Message>
void post_to(const caf::weak_actor_ptr& weak, Message msg) {
  if (auto strong = weak.lock()) caf::anon_send(caf::actor_cast<backend_proxy_actor>(strong), std::move(msg));
}

// Runs `call` (a flush or a shutdown of the backend) now, or — a reset outstanding — once none
// is, in arrival order.
void after_any_reset(proxy_pointer self, std::function<void()> call) {
  if (self->state.resets.empty()) call();
  else self->state.after_reset.push_back(std::move(call));
}

template <class Done>
void deliver_pending(std::map<epoch_t, caf::typed_response_promise<Done>>& pending, epoch_t epoch, Done& m) {
  auto it = pending.find(epoch);
  if (it == pending.end()) return;
  auto promise = it->second;
  pending.erase(it);
  promise.deliver(m);
}

// Only the runner delivers and asks for the durable cursor; flush and shutdown also come
// from the supervisor standing in for a dead runner, whose address must not receive state changes.
void remember_runner(proxy_pointer self) {
  if (auto r = caf::actor_cast<runner_actor>(self->current_sender())) self->state.runner = r;
}

backend_proxy_actor::behavior_type proxy(proxy_pointer self, std::shared_ptr<backend> b) {
  self->state.b = std::move(b);
  caf::weak_actor_ptr me = self->ctrl();
  // A one-way message the receiver could not handle comes back as an error: drop it rather than
  // let the default handler end the proxy (and with it the backend's calls).
  self->set_error_handler([](caf::error&) {});
  return {
    [self](deliver& m) -> delivery_result_msg {
      remember_runner(self);
      try {
        return {m.gen, self->state.b->deliver(m.batch.value), {}};
      } catch (const std::exception& e) {
        return {m.gen, delivery_result::failed, std::string("deliver threw: ") + e.what()};
      } catch (...) {
        return {m.gen, delivery_result::failed, "deliver threw"};
      }
    },
    [self](durable_query& m) -> durable {
      remember_runner(self);
      try {
        auto d = self->state.b->durable_cursor();
        if (!d) return {m.gen, std::nullopt, make_error(d.error().value(), d.error().message())};
        return {m.gen, *d, caf::error{}};
      } catch (const std::exception& e) {
        return {m.gen, std::nullopt, make_error(errc::backend_failed, std::string("durable_cursor threw: ") + e.what())};
      } catch (...) {
        return {m.gen, std::nullopt, make_error(errc::backend_failed, "durable_cursor threw")};
      }
    },
    [self, me](flush_request& m) -> caf::result<flush_done> {
      auto promise = self->make_response_promise<flush_done>();
      auto token = self->state.next_token++;
      self->state.flushes.emplace(token, std::make_pair(m.gen, promise));
      after_any_reset(self, [self, me, token, reason = m.reason] {
        try {
          self->state.b->flush(reason, completion([me, token](result<void> r) {
            post_to(me, flush_done{token, to_caf(r)});
          }));
        } catch (...) {
          post_to(me, flush_done{token, make_error(errc::backend_failed, "flush threw")});
        }
      });
      return promise;
    },
    [self, me](shutdown_request& m) -> caf::result<quiescence> {
      auto promise = self->make_response_promise<quiescence>();
      self->state.shutdowns[m.epoch] = promise;
      after_any_reset(self, [self, me, epoch = m.epoch] {
        try {
          self->state.b->shutdown(epoch, completion([me, epoch](result<void> r) { post_to(me, quiescence{epoch, to_caf(r)}); }));
        } catch (...) {
          post_to(me, quiescence{epoch, make_error(errc::backend_failed, "shutdown threw")});
        }
      });
      return promise;
    },
    [self](coverage_publish& m) {
      // Informational (api.md §5): noexcept by contract, its outcome never read.
      self->state.b->publish_coverage(m.positions, m.coverage_time, m.epoch);
    },
    [self, me](reset_request& m) -> caf::result<reset_done> {
      remember_runner(self);
      auto promise = self->make_response_promise<reset_done>();
      auto token = self->state.next_token++;
      self->state.resets.emplace(token, std::make_pair(m.gen, promise));
      try {
        self->state.b->reset(m.epoch, completion([me, token, epoch = m.epoch](result<void> r) {
          post_to(me, reset_done{token, epoch, to_caf(r)});
        }));
      } catch (...) {
        post_to(me, reset_done{token, m.epoch, make_error(errc::backend_failed, "reset threw")});
      }
      return promise;
    },
    // -- the proxy's own mailbox: completions and state changes, forwarded in order --
    [self](state_change_msg& m) {
      if (self->state.runner) self->send(self->state.runner, m);
    },
    [self](flush_done& m) {
      auto it = self->state.flushes.find(m.gen);  // internally gen is the completion's token
      if (it == self->state.flushes.end()) return;
      auto [gen, promise] = it->second;
      self->state.flushes.erase(it);
      promise.deliver(flush_done{gen, m.error});
    },
    [self](quiescence& m) { deliver_pending(self->state.shutdowns, m.epoch, m); },
    [self](reset_done& m) {
      auto it = self->state.resets.find(m.gen);  // internally gen is the completion's token
      if (it == self->state.resets.end()) return;
      auto [gen, promise] = it->second;
      self->state.resets.erase(it);
      promise.deliver(reset_done{gen, m.epoch, m.error});
      if (!self->state.resets.empty()) return;
      auto waiting = std::move(self->state.after_reset);
      self->state.after_reset.clear();
      for (auto& call : waiting) call();
    },
  };
}

}  // namespace

backend_proxy_actor spawn_backend_proxy(caf::actor_system& sys, std::shared_ptr<backend> b, bool detached) {
  if (detached) return sys.spawn<caf::detached>(proxy, std::move(b));
  return sys.spawn(proxy, std::move(b));
}

}  // namespace dix
