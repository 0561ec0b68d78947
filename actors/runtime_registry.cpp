#include "actors/runtime_registry.hpp"

#include "actors/coverage_waiters.hpp"

#include <caf/send.hpp>

#include "adapters/wal_sample.hpp"

namespace dix {

runner_metrics metrics_of(const registration_record& e, steady_time now, std::uint64_t wall_now_ns) {
  const auto& slot = *e.slot();
  auto m = e.snapshot()->load().metrics(now);
  m.readiness = slot.read();
  m.rebuild_attempts = m.readiness.rebuild_attempts;
  m.lag_gate = slot.lag_gate();
  m.coverage_time = slot.coverage_time();
  // A wall clock stepped back would give a negative age: it reads 0 (protocol.md §14.2).
  if (m.coverage_time != 0 && wall_now_ns > m.coverage_time) m.coverage_age_ms = (wall_now_ns - m.coverage_time) / 1'000'000;
  m.unindexable_records += e.host->unindexable();
  // protocol.md §13.2: the WAL figures per log, from each store's shared sample, aged by the
  // caller's wall clock like the coverage age above (one reading for both).
  for (auto& l : m.logs) {
    for (const auto& store : e.settings().log_stores) {
      if (store->log_name() != l.log) continue;
      auto r = sampled_retention(*store, l.durable_sequence, wall_now_ns, now, e.settings().wal_sample_interval());
      if (!r) break;  // a closed store: the figures stay unknown
      l.wal_retained_bytes = r->wal_retained_bytes;
      l.wal_oldest_sequence = r->wal_oldest_sequence;
      l.retention_headroom_ms = r->retention_headroom_ms;
      l.retention_headroom_bytes = r->retention_headroom_bytes;
      break;
    }
  }
  return m;
}

std::shared_ptr<registration_record> runtime_registry::find(std::string_view id) const {
  std::lock_guard g(mutex_);
  auto it = current_.find(id);
  return it == current_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<registration_record>> runtime_registry::all() const {
  std::lock_guard g(mutex_);
  std::vector<std::shared_ptr<registration_record>> out;
  out.reserve(current_.size());
  for (const auto& [id, e] : current_) out.push_back(e);
  return out;
}

void runtime_registry::publish_list() {
  auto list = std::make_shared<entry_list>();
  for (const auto& [id, e] : current_) list->push_back(e);
  std::atomic_store(&list_, std::shared_ptr<const entry_list>(std::move(list)));
}

void runtime_registry::put(std::shared_ptr<registration_record> e) {
  publish_proof_box(e->token(), e->settings().proof);
  std::lock_guard g(mutex_);
  auto id = e->id();
  current_[std::move(id)] = std::move(e);
  publish_list();
}

bool runtime_registry::detach(std::string_view id, std::uint64_t token) {
  std::function<void(std::uint64_t)> listener;
  {
    std::lock_guard g(mutex_);
    auto it = current_.find(id);
    if (it == current_.end() || it->second->token() != token) return false;
    detached_[token] = std::move(it->second);
    current_.erase(it);
    publish_list();
    listener = on_detach_;
  }
  if (listener) listener(token);
  return true;
}

void runtime_registry::set_detach_listener(std::function<void(std::uint64_t token)> listener) {
  std::lock_guard g(mutex_);
  on_detach_ = std::move(listener);
}

std::shared_ptr<registration_record> runtime_registry::take_detached(std::uint64_t token) {
  std::lock_guard g(mutex_);
  auto it = detached_.find(token);
  if (it == detached_.end()) return nullptr;
  auto e = std::move(it->second);
  detached_.erase(it);
  return e;
}

std::vector<std::shared_ptr<registration_record>> runtime_registry::take_all_detached() {
  std::lock_guard g(mutex_);
  std::vector<std::shared_ptr<registration_record>> out;
  for (auto& [token, e] : detached_) out.push_back(std::move(e));
  detached_.clear();
  return out;
}

void runtime_registry::wake_all(std::uint8_t flags) const {
  auto list = std::atomic_load(&list_);
  const bool system = (flags & wake_flag::system) != 0;
  for (const auto& e : *list) e->commit_wake(system);
}

void runtime_registry::wake(std::string_view id, std::uint8_t flags) const {
  if (auto e = find(id)) {
    if (auto r = e->runner()) caf::anon_send(r, dix::wake{flags});
  }
}

}  // namespace dix
