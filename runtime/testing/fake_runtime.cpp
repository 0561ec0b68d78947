// The fake runtime actor (<dix/testing/fake_runtime.hpp>): the model and the scripts live in one
// state shared by the object and the actor, under a mutex, so the test may look at it from its own
// thread while a real scheduler runs the actor.
#include <dix/testing/fake_runtime.hpp>

#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/system_messages.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <dix/caf/error.hpp>

namespace dix::testing {

struct fake_runtime::state {
  struct scripted {
    caf::message reply;  // empty: `failure` is the answer
    error failure{errc::none};
  };
  struct slot {
    std::optional<readiness> value;  // absent: no slot (yet)
    bool registered = false;
    runner_status status;
    std::map<caf::strong_actor_ptr, std::uint8_t> subscribers;  // → the events asked for
  };

  mutable std::mutex mutex;  // guards what follows
  std::map<std::type_index, std::deque<scripted>> scripts;
  std::map<std::string, slot> ids;
  std::vector<caf::message> requests;
  std::map<caf::strong_actor_ptr, std::uint8_t> all_subscribers;  // subscribe_all → events
  std::uint64_t next_sequence = 1;
  index_time_t next_time = 1;
  bool stopped = false;

  // The scripted answer of the next request of type Request, if one is queued.
  std::optional<scripted> next_script(std::type_index request) {
    auto it = scripts.find(request);
    if (it == scripts.end() || it->second.empty()) return std::nullopt;
    auto s = std::move(it->second.front());
    it->second.pop_front();
    return s;
  }

  // The subscribers of `id` that asked for `event` (subscribe_readiness, subscribe_runner_state):
  // its own, and subscribe_all's when the id is registered.
  std::vector<caf::strong_actor_ptr> subscribers_of(const std::string& id, std::uint8_t event) const {
    std::set<caf::strong_actor_ptr> out;
    auto it = ids.find(id);
    if (it != ids.end()) {
      for (const auto& [who, events] : it->second.subscribers) {
        if ((events & event) != 0) out.insert(who);
      }
      if (it->second.registered) {
        for (const auto& [who, events] : all_subscribers) {
          if ((events & event) != 0) out.insert(who);
        }
      }
    }
    return {out.begin(), out.end()};
  }
};

namespace {

using state_ptr = std::shared_ptr<fake_runtime::state>;

error not_registered_error(const std::string& id) {
  return error{errc::not_registered, "backend id " + id + " is not registered in this runtime"};
}

error stopped_error() { return error{errc::stopped, "the runtime is stopped"}; }

// As the real runtime actor (decision 0066): data only to an actor of its own node that can hear
// the answer.
std::optional<error> refused_sender(const caf::strong_actor_ptr& sender, const caf::node_id& here, const char* what) {
  if (sender != nullptr && sender->node() == here) return std::nullopt;
  return error{errc::not_supported,
               std::string(what) + " is taken only from an actor of the runtime's own node that can hear the answer "
                                   "(not anonymously)"};
}

// Records the request, then answers with its script or, without one, with `model` (run under the
// state's mutex).
template <class Request, class Model>
caf::result<reply_of_t<Request>> answer(const state_ptr& st, const Request& m, Model&& model) {
  std::lock_guard<std::mutex> lock(st->mutex);
  st->requests.push_back(caf::make_message(m));
  if (auto s = st->next_script(typeid(Request))) {
    if (s->reply.empty()) return make_error(s->failure);
    return s->reply.get_as<reply_of_t<Request>>(0);
  }
  result<reply_of_t<Request>> r = model(*st);
  if (!r) return make_error(r.error());
  return std::move(*r);
}

runtime_actor::behavior_type fake_fn(runtime_actor::pointer self, state_ptr st) {
  // A subscriber that ends is dropped, as the real runtime drops it.
  self->set_down_handler([st](caf::scheduled_actor*, caf::down_msg& m) {
    std::lock_guard<std::mutex> lock(st->mutex);
    for (auto& [id, s] : st->ids) {
      for (auto it = s.subscribers.begin(); it != s.subscribers.end();) {
        if (it->first == m.source) {
          it = s.subscribers.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto it = st->all_subscribers.begin(); it != st->all_subscribers.end();) {
      it = it->first == m.source ? st->all_subscribers.erase(it) : std::next(it);
    }
  });
  return {
      [st](register_index& m) {
        return answer(st, m, [&](fake_runtime::state& s) -> result<index_registered> {
          if (s.stopped) return stopped_error();
          if (!m.value.backend) return error{errc::invalid_argument, "registration: backend is null"};
          if (m.value.projections.empty()) {
            return error{errc::invalid_argument, "registration: projections must name at least one table"};
          }
          const auto id = m.value.backend->id();
          auto& slot = s.ids[id];
          if (slot.registered) return error{errc::already_registered, "backend id " + id + " is already registered"};
          slot.registered = true;
          if (!slot.value) slot.value = readiness{readiness_state::ready, readiness_reason::none, 0, 1};
          slot.status = runner_status{runner_state::idle, readiness_reason::none, 1, {}};
          return index_registered{id};
        });
      },
      [st](unregister_index& m) {
        return answer(st, m, [&](fake_runtime::state& s) -> result<index_unregistered> {
          auto it = s.ids.find(m.id);
          if (it == s.ids.end() || !it->second.registered) {
            if (s.stopped) return stopped_error();
            return not_registered_error(m.id);
          }
          it->second.registered = false;
          return index_unregistered{m.id};
        });
      },
      [st](query_status& m) {
        return answer(st, m, [&](fake_runtime::state& s) -> result<status_report> {
          auto it = s.ids.find(m.id);
          if (it == s.ids.end() || !it->second.registered) return status_report{m.id, std::nullopt};
          return status_report{m.id, it->second.status};
        });
      },
      [st](query_metrics& m) {
        return answer(st, m, [&](fake_runtime::state& s) -> result<metrics_report> {
          auto it = s.ids.find(m.id);
          if (it == s.ids.end() || !it->second.registered) return metrics_report{m.id, std::nullopt};
          runner_metrics metrics;
          metrics.readiness = it->second.value.value_or(readiness{});
          metrics.owner = true;
          metrics.epoch = it->second.status.epoch;
          return metrics_report{m.id, metrics};
        });
      },
      [st](query_readiness& m) {
        return answer(st, m, [&](fake_runtime::state& s) -> result<readiness_report> {
          auto it = s.ids.find(m.id);
          if (it == s.ids.end() || !it->second.value) {
            return error{errc::not_registered, "backend id " + m.id + " has no slot in this database"};
          }
          return readiness_report{m.id, *it->second.value};
        });
      },
      [st](rebuild_index& m) {
        return answer(st, m, [&](fake_runtime::state& s) -> result<rebuild_requested> {
          auto it = s.ids.find(m.id);
          return rebuild_requested{m.id, !s.stopped && it != s.ids.end() && it->second.registered};
        });
      },
      [st](verify_index& m) {
        return answer(st, m, [&](fake_runtime::state& s) -> result<index_verified> {
          if (s.stopped) return error{errc::stopped, "the runtime stopped"};
          auto it = s.ids.find(m.id);
          if (it == s.ids.end() || !it->second.registered) {
            return error{errc::not_registered, "backend id " + m.id + " is not registered in this runtime"};
          }
          verify_result r;
          r.equal = true;
          return index_verified{m.id, r};
        });
      },
      [self, st](subscribe& m) {
        auto sender = self->current_sender();
        bool added = false;
        auto reply = answer(st, m, [&](fake_runtime::state& s) -> result<subscribed> {
          auto it = s.ids.find(m.id);
          if (it == s.ids.end() || !it->second.value) {
            return error{errc::not_registered, "backend id " + m.id + " has no slot in this database"};
          }
          if (m.events == 0 || (m.events & ~subscribe_events_all) != 0) {
            return error{errc::invalid_argument, "subscribe: events must name readiness (1), runner state (2) or both (3)"};
          }
          if (sender) {
            added = it->second.subscribers.count(sender) == 0;
            it->second.subscribers[sender] = m.events;
          }
          std::optional<runner_status> status;
          if (it->second.registered) status = it->second.status;
          return subscribed{m.id, *it->second.value, status};
        });
        if (added) self->monitor(sender);
        return reply;
      },
      [self, st](unsubscribe& m) {
        auto sender = self->current_sender();
        return answer(st, m, [&](fake_runtime::state& s) -> result<unsubscribed> {
          auto it = s.ids.find(m.id);
          if (it != s.ids.end() && sender) it->second.subscribers.erase(sender);
          return unsubscribed{m.id};
        });
      },
      [self, st](subscribe_all& m) {
        auto sender = self->current_sender();
        bool added = false;
        std::vector<std::pair<std::string, fake_runtime::state::slot>> now;
        auto reply = answer(st, m, [&](fake_runtime::state& s) -> result<subscribed_all> {
          if (m.events == 0 || (m.events & ~subscribe_events_all) != 0) {
            return error{errc::invalid_argument, "subscribe_all: events must name readiness (1), runner state (2) or both (3)"};
          }
          if (s.stopped) return stopped_error();
          subscribed_all out;
          if (sender) {
            added = s.all_subscribers.count(sender) == 0;
            s.all_subscribers[sender] = m.events;
          }
          for (const auto& [id, slot] : s.ids) {
            if (!slot.registered) continue;
            out.ids.push_back(id);
            now.emplace_back(id, slot);
          }
          return out;
        });
        if (sender) {
          if (added) self->monitor(sender);
          // The values now, as events, as the real runtime sends them.
          auto to = caf::actor_cast<caf::actor>(sender);
          for (const auto& [id, slot] : now) {
            if ((m.events & subscribe_readiness) != 0 && slot.value) caf::anon_send(to, readiness_changed{id, *slot.value});
            if ((m.events & subscribe_runner_state) != 0) caf::anon_send(to, runner_state_changed{id, slot.status});
          }
        }
        return reply;
      },
      [self, st](unsubscribe_all& m) {
        auto sender = self->current_sender();
        return answer(st, m, [&](fake_runtime::state& s) -> result<unsubscribed_all> {
          if (sender) s.all_subscribers.erase(sender);
          return unsubscribed_all{};
        });
      },
      [self, st](commit_transaction& m) -> caf::result<transaction_committed> {
        // Before any script, as the real runtime refuses before it looks at anything.
        if (auto refused = refused_sender(self->current_sender(), self->node(), "commit_transaction")) {
          return make_error(*refused);
        }
        return answer(st, m, [&](fake_runtime::state& s) -> result<transaction_committed> {
          if (s.stopped) return stopped_error();
          transaction_committed out{m.log.empty() ? "main" : m.log, 0, 0};
          if (m.empty()) return out;
          out.sequence = s.next_sequence;
          s.next_sequence += m.size();
          out.time = s.next_time++;
          return out;
        });
      },
      [self, st](query_index& m) -> caf::result<index_rows> {
        if (auto refused = refused_sender(self->current_sender(), self->node(), "query_index")) {
          return make_error(*refused);
        }
        return answer(st, m, [&](fake_runtime::state& s) -> result<index_rows> {
          if (s.stopped) return stopped_error();
          auto it = s.ids.find(m.id);
          if (it == s.ids.end() || !it->second.registered) return not_registered_error(m.id);
          return index_rows{m.id, {}, coverage_state::unknown, m.tolerance_ms, -1};
        });
      },
      [st](stop_runtime& m) {
        return answer(st, m, [&](fake_runtime::state& s) -> result<runtime_stopped> {
          s.stopped = true;
          for (auto& [id, slot] : s.ids) slot.registered = false;
          return runtime_stopped{};
        });
      },
      [st](wait_coverage& m) {
        return answer(st, m, [&](fake_runtime::state& s) -> result<coverage_reached> {
          if (s.stopped) return stopped_error();
          if (m.since == 0) return error{errc::invalid_argument, "wait_coverage: since must be an index time above 0"};
          auto it = s.ids.find(m.id);
          if (it == s.ids.end() || !it->second.registered) return not_registered_error(m.id);
          return coverage_reached{m.id, m.since};
        });
      },
  };
}

}  // namespace

fake_runtime::fake_runtime(caf::actor_system& sys)
    : state_(std::make_shared<state>()), actor_(sys.spawn(fake_fn, state_)) {}

fake_runtime::~fake_runtime() { caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown); }

void fake_runtime::push_script(std::type_index request, caf::message reply, error failure) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->scripts[request].push_back(state::scripted{std::move(reply), std::move(failure)});
}

void fake_runtime::set_readiness(const std::string& id, readiness value) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->ids[id].value = value;
}

void fake_runtime::set_status(const std::string& id, runner_status value) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->ids[id].status = std::move(value);
}

std::size_t fake_runtime::emit_readiness(const std::string& id, readiness value) {
  std::vector<caf::strong_actor_ptr> to;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->ids[id].value = value;
    to = state_->subscribers_of(id, subscribe_readiness);
  }
  // Anonymous, as the real runtime sends its events.
  for (const auto& subscriber : to) caf::anon_send(caf::actor_cast<caf::actor>(subscriber), readiness_changed{id, value});
  return to.size();
}

std::size_t fake_runtime::emit_runner_state(const std::string& id, runner_status value) {
  std::vector<caf::strong_actor_ptr> to;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->ids[id].status = value;
    to = state_->subscribers_of(id, subscribe_runner_state);
  }
  for (const auto& subscriber : to) {
    caf::anon_send(caf::actor_cast<caf::actor>(subscriber), runner_state_changed{id, value});
  }
  return to.size();
}

std::vector<caf::message> fake_runtime::requests() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->requests;
}

std::vector<std::string> fake_runtime::registered() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  std::vector<std::string> out;
  for (const auto& [id, slot] : state_->ids) {
    if (slot.registered) out.push_back(id);
  }
  return out;
}

bool fake_runtime::stopped() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->stopped;
}

std::size_t fake_runtime::subscriber_count(const std::string& id) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  auto it = state_->ids.find(id);
  return it == state_->ids.end() ? 0 : it->second.subscribers.size();
}

}  // namespace dix::testing
