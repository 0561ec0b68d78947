#include "actors/id_wiring.hpp"

#include <atomic>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "actors/backend_proxy_actor.hpp"
#include "actors/log_tailer_actor.hpp"
#include "actors/ownership.hpp"
#include "actors/state_change_relay.hpp"
#include "core/tailer_core.hpp"

namespace dix {

namespace {

// Each runner incarnation gets generations of its own (runner_core::config::generation_base):
// late replies addressed to a dead runner's generations never match a successor's.
std::atomic<std::uint64_t> next_incarnation{1};

}  // namespace

std::shared_ptr<supervised_spec> wire_registration(caf::actor_system& sys,
                                                   std::shared_ptr<const registration_settings> settings) {
  const auto& s = *settings;
  auto deps = std::make_shared<tailer_deps>();
  deps->settings = settings;
  std::vector<tailer_log> ports;
  for (const auto& l : s.logs) ports.push_back(tailer_log{l.source.get(), l.reader.get(), l.wal_ttl_s});
  deps->core = std::make_unique<tailer_core>(std::move(ports), s.projections, s.attached);

  auto spec = std::make_shared<supervised_spec>();
  spec->settings = settings;
  spec->record = std::make_shared<ownership>(s.id, s.token, s.lock);
  caf::actor_system* system = &sys;
  spec->spawn_tailer = [system, deps] { return spawn_log_tailer(*system, deps, deps->settings->detached); };
  spec->spawn_proxy = [system, settings] {
    auto proxy = spawn_backend_proxy(*system, settings->backend, settings->detached);
    if (settings->relay) settings->relay->attach(proxy);
    return proxy;
  };
  spec->spawn_runner = [system, settings, record = spec->record](log_tailer_actor t, backend_proxy_actor x,
                                                                 std::optional<readiness_reason> condemned) {
    runner_deps d;
    d.settings = settings;
    d.record = record;
    d.tailer = std::move(t);
    d.proxy = std::move(x);
    d.start_condemned = condemned;
    d.generation_base = next_incarnation.fetch_add(1) << 32;
    d.bell = std::make_shared<commit_bell>();  // one per incarnation (core/commit_bell.hpp)
    auto bell = d.bell;
    auto runner = spawn_runner(*system, std::move(d));
    settings->runner_now->set(runner, std::move(bell));
    return runner;
  };
  return spec;
}

}  // namespace dix
