#include "actors/id_wiring.hpp"

#include <atomic>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "actors/backend_proxy_actor.hpp"
#include "actors/log_tailer_actor.hpp"
#include "core/tailer_core.hpp"

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

ownership::ownership(std::string id, std::uint64_t token, runner_lock* lock) : id_(std::move(id)), lock_(lock) {
  record_.token = token;
}

void ownership::request(runner_lock::grant granted) { lock_->acquire(id_, record_.token, std::move(granted)); }

void ownership::acquired() {
  std::lock_guard g(mutex_);
  record_.owner = true;
  record_.epoch = 0;
}

void ownership::minted(epoch_t epoch) {
  std::lock_guard g(mutex_);
  record_.epoch = epoch;
}

void ownership::quiesced(epoch_t epoch) {
  std::lock_guard g(mutex_);
  record_.quiesced = epoch;
}

void ownership::release() {
  std::lock_guard g(mutex_);
  // Under the record's mutex, so no reader sees the entry free while the record says owned.
  lock_->release(id_, record_.token);
  record_.owner = false;
}

ownership_record ownership::read() const {
  std::lock_guard g(mutex_);
  return record_;
}

void publication_fence::then(step f) {
  if (waiting_.empty()) {
    f();
    return;
  }
  waiting_.push_back(waiting{false, std::move(f)});
}

void publication_fence::after_landed(step f) {
  if (waiting_.empty() && in_flight_ == 0) {
    f();
    return;
  }
  waiting_.push_back(waiting{true, std::move(f)});
}

void publication_fence::landed() {
  if (in_flight_ > 0) --in_flight_;
  drain();
}

void publication_fence::drain() {
  if (draining_) return;  // a step run below that lands or sends comes back here
  draining_ = true;
  while (!waiting_.empty() && !(waiting_.front().needs_landed && in_flight_ > 0)) {
    auto next = std::move(waiting_.front());
    waiting_.pop_front();
    next.f();
  }
  draining_ = false;
}

namespace {

// Each runner incarnation gets generations of its own (runner_core::config::generation_base):
// late replies addressed to a dead runner's generations never match a successor's.
std::atomic<std::uint64_t> next_incarnation{1};

}  // namespace

std::shared_ptr<supervised_spec> wire_registration(caf::actor_system& sys, id_wiring w) {
  auto deps = std::make_shared<tailer_deps>();
  deps->id = w.id;
  std::vector<tailer_log> ports;
  for (const auto& l : w.logs) {
    ports.push_back(tailer_log{l.source.get(), l.reader.get(), l.wal_ttl_s});
    deps->sources.push_back(l.source);
    deps->readers.push_back(l.reader);
  }
  deps->core = std::make_unique<tailer_core>(std::move(ports), w.projections, w.attached);
  deps->meta = w.meta;
  deps->time = w.time;

  auto record = std::make_shared<ownership>(w.id, w.token, w.lock);

  runner_deps rd;
  rd.id = w.id;
  rd.config = w.runner;
  rd.slot = w.slot;
  rd.publisher = w.publisher;
  rd.lock = w.lock;
  rd.record = record;
  rd.snapshot = w.snapshot;
  rd.proof = w.proof;
  rd.on_status = w.on_status;
  rd.link = w.link;
  rd.time = w.time;

  auto spec = std::make_shared<supervised_spec>();
  spec->id = w.id;
  spec->token = w.token;
  spec->options = w.runner.options;
  caf::actor_system* system = &sys;
  const bool detached = w.detached;
  spec->spawn_tailer = [system, deps, detached] { return spawn_log_tailer(*system, deps, detached); };
  spec->spawn_proxy = [system, b = w.backend, relay = w.relay, detached] {
    auto proxy = spawn_backend_proxy(*system, b, detached);
    if (relay) relay->attach(proxy);
    return proxy;
  };
  spec->spawn_runner = [system, rd, changed = w.runner_changed](log_tailer_actor t, backend_proxy_actor x,
                                                                 std::optional<readiness_reason> condemned) {
    auto d = rd;
    d.tailer = std::move(t);
    d.proxy = std::move(x);
    d.config.start_condemned = condemned;
    d.config.generation_base = next_incarnation.fetch_add(1) << 32;
    d.bell = std::make_shared<commit_bell>();  // one per incarnation (core/commit_bell.hpp)
    auto bell = d.bell;
    auto runner = spawn_runner(*system, std::move(d));
    if (changed) changed(runner, std::move(bell));
    return runner;
  };
  spec->record = record;
  spec->publisher = w.publisher;
  spec->slot = w.slot;
  spec->snapshot = w.snapshot;
  spec->on_status = w.on_status;
  return spec;
}

}  // namespace dix
