// The composition root (actors.md §1): dix::configure, and spawn_runtime, which checks the store
// list and the options, refuses a home on NFS, attaches the home store's readiness segment and
// takes the process's lock table, then spawns the runtime actor over them. Everything after that
// is the runtime actor's (runtime_actor.cpp); each registration's actors are wired by
// id_wiring.cpp and supervised by supervisor_actor.cpp.
#include <dix/caf.hpp>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include <sys/vfs.h>

#include <caf/actor_system_config.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/scheduled_actor.hpp>

#include "actors/runtime_actor.hpp"
#include "actors/runtime_config.hpp"
#include "actors/runtime_root.hpp"
#include "adapters/primary_store_hooks.hpp"
#include "core/clock.hpp"
#include "messages/type_ids.hpp"
#include "messages/values.hpp"

namespace dix {
namespace {

constexpr long nfs_super_magic = 0x6969;  // <linux/magic.h> NFS_SUPER_MAGIC

}  // namespace

void configure(caf::actor_system_config& cfg) {
  // A second call changes nothing: add_message_types keeps the types it already has (emplace),
  // add_error_category replaces the renderer with the same one, add_dix_options declares what it
  // has not declared yet and leaves values already there.
  configure_dix(cfg);
  add_dix_options(cfg);
}

result<std::shared_ptr<runtime_context>> prepare_runtime(std::vector<std::shared_ptr<primary_store>> stores,
                                                         runtime_options options) {
  if (stores.empty() || stores.size() > 32) {
    return error{errc::invalid_argument, "runtime needs 1…32 stores, got " + std::to_string(stores.size())};
  }
  std::set<std::string> names;
  for (const auto& s : stores) {
    if (!s) return error{errc::invalid_argument, "runtime: a store is null"};
    if (!names.insert(s->log_name()).second) {
      return error{errc::invalid_argument, "runtime: two stores share the log name " + s->log_name()};
    }
  }
  if (auto ok = validate(options); !ok) return ok.error();
  const auto home = stores.front()->path();
  struct statfs fs {};
  if (::statfs(home.c_str(), &fs) == 0 && static_cast<long>(fs.f_type) == nfs_super_magic) {
    return error{errc::invalid_argument, "runtime: " + home.string() +
                                             " is on NFS; dix needs a local filesystem for its locks and readiness segment"};
  }
  auto segment = readiness_segment::attach(home, options.slot_count);
  if (!segment) return segment.error();
  // For `dix status`, which sees the store's filesystem but not its options (decision 0013).
  (*segment)->set_store_reserve(free_space_reserve(*stores.front()));
  auto ctx = std::make_shared<runtime_context>();
  ctx->segment = std::move(*segment);
  ctx->locks = process_lock_table::for_home(ctx->segment->directory());
  for (const auto& s : stores) {
    attached_store l;
    l.name = s->log_name();
    l.identity = s->identity();
    l.wal_ttl_s = store_wal_ttl_s(*s);
    l.has_table = [weak = std::weak_ptr<primary_store>(s)](std::uint32_t table) {
      auto store = weak.lock();
      return store && store->has_table(table);
    };
    ctx->attached.push_back(std::move(l));
  }
  ctx->stores = std::move(stores);
  ctx->options = options;
  ctx->time = &system_clock();
  return ctx;
}

caf::expected<runtime_actor> spawn_runtime(caf::actor_system& sys, std::vector<std::shared_ptr<primary_store>> stores,
                                           runtime_options options) {
  auto ctx = prepare_runtime(std::move(stores), options);
  if (!ctx) return make_error(ctx.error());
  prepare_coverage(**ctx);
  return runtime_actor{spawn_runtime_actor(sys, std::move(*ctx))};
}

namespace {

// The gate's requests the runtime has not answered yet: each one's way to fail. A gate that ends
// (a peer's kill) answers them `stopped`, as the runtime would have had it held them itself.
struct gate_pending {
  std::uint64_t next = 0;
  std::map<std::uint64_t, std::function<void(caf::error)>> fail;

  template <class Promise>
  std::uint64_t hold(Promise promise) {
    const auto key = next++;
    fail.emplace(key, [promise](caf::error e) mutable { promise.deliver(std::move(e)); });
    return key;
  }
};
using pending_ptr = std::shared_ptr<gate_pending>;

// Asks `to` as the gate, holding the gate's own promise until the answer: a Value goes to
// `on_value`, an error to the requester.
template <class Reply, class Value, class Handle, class Request, class OnValue>
caf::result<Reply> ask_as_gate(runtime_actor::pointer self, const Handle& to, const pending_ptr& pending, Request m,
                               OnValue on_value) {
  auto promise = self->make_response_promise<Reply>();
  const auto key = pending->hold(promise);
  self->request(to, caf::infinite, std::move(m))
    .then(
      [promise, pending, key, on_value](Value& v) mutable {
        pending->fail.erase(key);
        on_value(promise, v);
      },
      [promise, pending, key](caf::error& e) mutable {
        pending->fail.erase(key);
        promise.deliver(std::move(e));
      });
  return promise;
}

// Asks the runtime as the gate and answers the requester through the gate's own promise: a peer
// only ever sees the gate as the sender of an answer, never the runtime actor (decision 0066).
template <class Reply, class Request>
caf::result<Reply> relay(runtime_actor::pointer self, const runtime_actor& rt, const pending_ptr& pending, Request m) {
  return ask_as_gate<Reply, Reply>(self, rt, pending, std::move(m),
                                   [](auto& promise, Reply& r) { promise.deliver(std::move(r)); });
}

// A subscription request, on behalf of its sender, whom the runtime notifies (events travel
// anonymously) and monitors. The runtime answers the requester itself, as the gate (gated_request),
// so that the answer comes before the events that follow it; an error comes back here.
template <class Reply, class Request>
caf::result<Reply> relay_subscription(runtime_actor::pointer self, const runtime_actor& rt, const pending_ptr& pending,
                                      Request m) {
  // Before the promise, which takes the sender out of the request (CAF 0.17).
  gated_request g{caf::actor_cast<caf::actor>(self->current_sender()), caf::make_message(std::move(m)),
                  self->current_message_id(), caf::actor_cast<caf::strong_actor_ptr>(self)};
  return ask_as_gate<Reply, bool>(self, caf::actor_cast<caf::actor>(rt), pending, std::move(g),
                                  [](auto&, bool) {});  // answered by the runtime
}

// The gate: each request asked of the runtime and answered as the gate; exit messages but kill,
// errors and down messages ignored (but the runtime's own down message: the gate ends with it), so
// a peer of the middleman cannot stop the runtime with one. The runtime's handle never leaves the
// process: no answer carries it, events are sent anonymously.
runtime_actor::behavior_type gate_fn(runtime_actor::pointer self, runtime_actor rt) {
  self->set_exit_handler([](caf::scheduled_actor*, caf::exit_msg&) {});
  self->set_error_handler([](caf::scheduled_actor*, caf::error&) {});
  // Ends with the runtime (an actor system waits for every actor it has before it ends).
  self->monitor(rt);
  self->set_down_handler([self, watched = rt.address()](caf::scheduled_actor*, caf::down_msg& m) {
    if (m.source == watched) self->quit(wire::sendable_reason(std::move(m.reason), self->context()));
  });
  self->set_default_handler(caf::drop);
  auto pending = std::make_shared<gate_pending>();
  self->attach_functor([pending] {
    auto fail = std::exchange(pending->fail, {});
    for (auto& [key, f] : fail) f(make_error(errc::stopped, "the runtime's gate ended before the runtime answered"));
  });
  return {
      [=](register_index& m) { return relay<index_registered>(self, rt, pending, std::move(m)); },
      [=](unregister_index& m) { return relay<index_unregistered>(self, rt, pending, std::move(m)); },
      [=](query_status& m) { return relay<status_report>(self, rt, pending, std::move(m)); },
      [=](query_metrics& m) { return relay<metrics_report>(self, rt, pending, std::move(m)); },
      [=](query_readiness& m) { return relay<readiness_report>(self, rt, pending, std::move(m)); },
      [=](rebuild_index& m) { return relay<rebuild_requested>(self, rt, pending, std::move(m)); },
      [=](verify_index& m) { return relay<index_verified>(self, rt, pending, std::move(m)); },
      [=](subscribe& m) { return relay_subscription<subscribed>(self, rt, pending, std::move(m)); },
      [=](unsubscribe& m) { return relay_subscription<unsubscribed>(self, rt, pending, std::move(m)); },
      [=](subscribe_all& m) { return relay_subscription<subscribed_all>(self, rt, pending, std::move(m)); },
      [=](unsubscribe_all& m) { return relay_subscription<unsubscribed_all>(self, rt, pending, std::move(m)); },
      [=](stop_runtime& m) { return relay<runtime_stopped>(self, rt, pending, std::move(m)); },
      [=](wait_coverage& m) { return relay<coverage_reached>(self, rt, pending, std::move(m)); },
      // Data never passes the gate (<dix/caf.hpp>): its peers are tools.
      [=](commit_transaction&) -> caf::result<transaction_committed> {
        return make_error(errc::not_supported, "commits are not taken through the runtime's published gate");
      },
      [=](query_index&) -> caf::result<index_rows> {
        return make_error(errc::not_supported, "queries are not answered through the runtime's published gate");
      },
  };
}

}  // namespace

runtime_actor spawn_runtime_gate(caf::actor_system& sys, runtime_actor runtime) {
  return sys.spawn(gate_fn, std::move(runtime));
}

}  // namespace dix
