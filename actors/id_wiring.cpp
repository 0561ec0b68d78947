#include "actors/id_wiring.hpp"

#include <atomic>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "actors/backend_proxy_actor.hpp"
#include "actors/log_tailer_actor.hpp"
#include "core/tailer_core.hpp"

namespace dix {

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
