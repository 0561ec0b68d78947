// dix::runtime, the blocking facade (api.md §6): an actor system of its own (scheduler and threads
// from system_options) running one runtime actor (runtime_actor.cpp), the same one a CAF
// application spawns with dix::spawn_runtime. Requests that change something go to the actor;
// status, metrics and readiness read what the runners and the segment publish (the runtime's
// registry), so they never wait for an actor. Futures are fulfilled by a small actor that sends
// the request and waits for its answer, so no thread blocks for them.
#include <dix/runtime.hpp>

#include <future>
#include <map>
#include <mutex>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/coverage_waiters.hpp"
#include "actors/runtime_root.hpp"
#include "core/clock.hpp"
#include "core/names.hpp"
#include "messages/errors.hpp"
#include "messages/type_ids.hpp"
#include "messages/verify.hpp"

namespace dix {

namespace {

class facade_config final : public caf::actor_system_config {
 public:
  explicit facade_config(const system_options& o) {
    configure_dix(*this);
    set("logger.file-verbosity", caf::atom("quiet"));
    set("logger.console-verbosity", caf::atom("quiet"));
    if (o.actor_threads > 0) set("scheduler.max-threads", static_cast<std::size_t>(o.actor_threads));
    if (o.scheduler == actor_scheduler::sharing) set("scheduler.policy", caf::atom("sharing"));
    else set("scheduler.policy", caf::atom("stealing"));
  }
};

shared_future<void> ready_future(result<void> value) {
  std::promise<result<void>> p;
  p.set_value(std::move(value));
  return p.get_future().share();
}

}  // namespace

struct registration_handle::facade {
  std::unique_ptr<facade_config> cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::shared_ptr<runtime_context> ctx;
  runtime_actor_impl actor;
  std::mutex mutex;
  std::map<std::uint64_t, shared_future<void>> unregisters;  // by registration token
  std::optional<shared_future<void>> stopped;

  // Sends `request` from a short-lived actor; the future holds the answer.
  template <class Request, class Reply>
  shared_future<void> ask(Request request) {
    auto promise = std::make_shared<std::promise<result<void>>>();
    auto future = promise->get_future().share();
    runtime_actor_impl rt = actor;
    sys->spawn([rt, request, promise](caf::event_based_actor* self) {
      self->request(rt, caf::infinite, request)
        .then([promise](const Reply&) { promise->set_value(result<void>{}); },
              [promise](caf::error& err) { promise->set_value(result<void>{to_dix_error(err)}); });
    });
    return future;
  }
};

runtime::runtime(std::shared_ptr<registration_handle::facade> f) : facade_(std::move(f)) {}

result<std::unique_ptr<runtime>> runtime::create(std::vector<std::shared_ptr<primary_store>> stores,
                                                 runtime_options options, system_options system) {
  if (auto ok = validate(system); !ok) return ok.error();
  auto ctx = prepare_runtime(std::move(stores), options);
  if (!ctx) return ctx.error();
  auto f = std::make_shared<registration_handle::facade>();
  f->cfg = std::make_unique<facade_config>(system);
  f->sys = std::make_unique<caf::actor_system>(*f->cfg);
  f->ctx = *ctx;
  prepare_coverage(*f->ctx);  // before the actor starts: wait_for_coverage may come at once
  f->actor = spawn_runtime_actor(*f->sys, f->ctx);
  return std::unique_ptr<runtime>(new runtime(std::move(f)));
}

runtime::~runtime() {
  stop().wait();
  caf::anon_send_exit(facade_->actor, caf::exit_reason::user_shutdown);
  facade_->actor = nullptr;
  facade_->sys.reset();  // waits for every actor, the runtime actor's clean-up included
}

result<registration_handle> runtime::register_index(registration r) {
  auto& f = *facade_;
  std::optional<result<registration_handle>> out;
  caf::scoped_actor self{*f.sys};
  self->request(f.actor, caf::infinite, dix::register_index{std::move(r)})
    .receive(
      [&](index_registered& ok) {
        auto e = f.ctx->registry->find(ok.id);
        out = registration_handle(facade_, ok.id, e ? e->token() : 0);
      },
      [&](caf::error& err) { out = result<registration_handle>(to_dix_error(err)); });
  return std::move(*out);
}

shared_future<void> registration_handle::unregister() {
  auto f = owner_.lock();
  if (!f) return ready_future(error{errc::stopped, "the runtime is gone"});
  std::lock_guard g(f->mutex);
  if (auto it = f->unregisters.find(token_); it != f->unregisters.end()) return it->second;
  // The id leaves at once (protocol.md §2.4); the runtime actor releases it behind.
  if (!f->ctx->registry->detach(id_, token_)) {
    // After stop() every registration is gone and the call fails stopped (protocol.md §15).
    if (f->stopped) return ready_future(error{errc::stopped, "the runtime is stopped"});
    return ready_future(error{errc::not_registered, "backend id " + id_ + " is no longer registered by this handle"});
  }
  auto future = f->ask<unregister_registration, index_unregistered>(unregister_registration{id_, token_});
  f->unregisters.emplace(token_, future);
  return future;
}

void runtime::wake() { facade_->ctx->registry->wake_all(wake_flag::commit); }

std::optional<runner_status> runtime::status(std::string_view id) const {
  auto e = facade_->ctx->registry->find(id);
  if (!e) return std::nullopt;
  return e->snapshot()->load().status();
}

result<dix::readiness> runtime::readiness(std::string_view id) const {
  if (auto ok = check_backend_id(id); !ok) return ok.error();
  auto slot = facade_->ctx->segment->find(id);
  if (!slot) return error{errc::not_registered, "backend id " + std::string(id) + " has no slot in this database"};
  return slot->read();
}

std::optional<runner_metrics> runtime::metrics(std::string_view id) const {
  auto e = facade_->ctx->registry->find(id);
  if (!e) return std::nullopt;
  return metrics_of(*e, facade_->sys->clock().now(), facade_->ctx->time->wall_now_ns());
}

bool runtime::request_rebuild(std::string_view id) {
  auto& f = *facade_;
  bool accepted = false;
  caf::scoped_actor self{*f.sys};
  self->request(f.actor, caf::infinite, rebuild_index{std::string(id)})
    .receive([&](rebuild_requested& r) { accepted = r.accepted; }, [](caf::error&) {});
  return accepted;
}

result<verify_result> runtime::verify(std::string_view id, const verify_options& options) {
  if (auto ok = check_backend_id(id); !ok) return ok.error();
  auto& f = *facade_;
  auto e = f.ctx->registry->find(id);
  if (!e) return error{errc::not_registered, "backend id " + std::string(id) + " is not registered in this runtime"};
  auto runner = e->runner();
  if (!runner) return error{errc::unavailable, "backend id " + std::string(id) + " has no runner now"};
  const auto request = request_of(options);
  result<verify_result> out = error{errc::stopped, "the runner of " + std::string(id) + " stopped before it answered"};
  caf::scoped_actor self{*f.sys};
  self->request(runner, caf::infinite, runner_verify{request})
    .receive(
      [&](verify_answer& a) { out = result_of(a); },
      [&](caf::error& err) {
        if (err == caf::sec::request_receiver_down) return;  // stopped before it answered
        out = to_dix_error(err);
      });
  return out;
}

future<void> runtime::wait_for_coverage(std::string_view id, index_time_t since, milliseconds timeout,
                                        cancel_token cancel) {
  return wait_for_coverage_here(*facade_->ctx->waiters, std::string(id), since, timeout, std::move(cancel));
}

coverage runtime::read_coverage(std::string_view id, milliseconds tolerance) const {
  {
    // After stop() the runtime speaks for none of its indexes any more (protocol.md §15): its
    // owners have released them, and a slot another owner publishes is that owner's to answer
    // (the free read_coverage reads it).
    std::lock_guard g(facade_->mutex);
    if (facade_->stopped) return coverage{coverage_state::unknown, tolerance, std::nullopt};
  }
  auto& ctx = *facade_->ctx;
  return read_coverage_here(*ctx.segment, *ctx.locks, ctx.stores, id, tolerance, *ctx.time);
}

shared_future<void> runtime::stop() {
  auto& f = *facade_;
  std::lock_guard g(f.mutex);
  if (!f.stopped) f.stopped = f.ask<stop_runtime, runtime_stopped>(stop_runtime{});
  return *f.stopped;
}

}  // namespace dix
