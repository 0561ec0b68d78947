// The runtime's hooks into a primary store (primary_store_impl.hpp, primary_store_hooks.hpp): the
// commit and close listeners, the writer gate and the admission hook that overrides it in tests,
// the free-space probe and reserve, and the sequences: latest, synced (SyncWAL, protocol.md §4.8)
// and the reads under the commit mutex (the coverage capture of §12.1).
#include "adapters/primary_store_impl.hpp"

#include <algorithm>

#include "core/clock.hpp"
#include "core/index_time.hpp"

namespace dix {

void primary_store::impl::notify(const commit_event& e) {
  const auto copy = std::atomic_load(&listener_copy);
  for (const auto& fn : *copy) fn(e);
}

void primary_store::impl::publish_listeners() {
  auto copy = std::make_shared<listener_list>();
  for (const auto& [id, fn] : listeners) copy->push_back(fn);
  std::atomic_store(&listener_copy, std::shared_ptr<const listener_list>(std::move(copy)));
}

admission primary_store::admit(std::uint32_t table) const {
  if (impl_->has_admission_hook.load(std::memory_order_acquire)) {
    std::function<admission(std::uint32_t)> hook;
    {
      std::lock_guard g(impl_->hooks_mutex);
      hook = impl_->admission_hook;
    }
    if (hook) return hook(table);
  }
  if (impl_->gate.empty()) return admission{};
  return impl_->gate.admit({table}, false);
}

std::uint64_t add_commit_listener(primary_store& s, std::function<void(const commit_event&)> fn) {
  auto& p = primary_store_access::get(s);
  std::lock_guard g(p.hooks_mutex);
  auto id = p.next_hook_id++;
  p.listeners.emplace(id, std::move(fn));
  p.publish_listeners();
  return id;
}

void remove_commit_listener(primary_store& s, std::uint64_t id) {
  auto& p = primary_store_access::get(s);
  std::lock_guard g(p.hooks_mutex);
  p.listeners.erase(id);
  p.publish_listeners();
}

std::uint64_t add_close_listener(primary_store& s, std::function<void()> fn) {
  auto& p = primary_store_access::get(s);
  std::lock_guard g(p.hooks_mutex);
  auto id = p.next_hook_id++;
  p.close_listeners.emplace(id, std::move(fn));
  return id;
}

void remove_close_listener(primary_store& s, std::uint64_t id) {
  auto& p = primary_store_access::get(s);
  std::lock_guard g(p.hooks_mutex);
  p.close_listeners.erase(id);
}

write_gate& gate_of(primary_store& s) noexcept { return primary_store_access::get(s).gate; }

bool store_may_delay(primary_store& s) {
  auto& p = primary_store_access::get(s);
  return p.has_admission_hook.load(std::memory_order_acquire) || p.gate.any_closed();
}

std::uint64_t store_wal_ttl_s(const primary_store& s) noexcept { return primary_store_access::get(s).options.wal_ttl_s; }

void set_admission_hook(primary_store& s, std::function<admission(std::uint32_t)> hook) {
  auto& p = primary_store_access::get(s);
  std::lock_guard g(p.hooks_mutex);
  p.has_admission_hook.store(static_cast<bool>(hook), std::memory_order_release);
  p.admission_hook = std::move(hook);
}

std::uint64_t latest_sequence(const primary_store& s) {
  auto& p = primary_store_access::get(s);
  std::shared_lock lock(p.lifecycle);
  return p.open ? p.db->GetLatestSequenceNumber() : 0;
}

void set_space_probe(primary_store& s, space_probe probe, std::chrono::milliseconds max_age) {
  auto& p = primary_store_access::get(s);
  std::lock_guard guard(p.commit_mutex);
  p.probe = std::move(probe);
  p.space = space_gate(max_age);
}

std::uint64_t free_space_reserve(primary_store& s) {
  auto& p = primary_store_access::get(s);
  std::lock_guard guard(p.commit_mutex);
  return store_reserve_bytes(p.options.free_space_reserve_bytes, p.space.capacity_bytes());
}

std::uint64_t synced_sequence(const primary_store& s) noexcept {
  return primary_store_access::get(s).synced_sequence.load(std::memory_order_acquire);
}

result<wal_sync> sync_wal(primary_store& s, std::uint64_t covering) {
  auto& p = primary_store_access::get(s);
  std::shared_lock lock(p.lifecycle);
  if (!p.open) return error{errc::io_error, "primary store " + p.path.string() + " is closed"};
  std::lock_guard one_at_a_time(p.sync_mutex);
  if (const auto synced = p.synced_sequence.load(std::memory_order_acquire); covering != 0 && synced >= covering) {
    return wal_sync{synced, false};  // a sync that ended while this caller waited covered it
  }
  // Read first: SyncWAL makes at least everything written before it durable.
  auto latest = p.db->GetLatestSequenceNumber();
  auto st = p.db->SyncWAL();
  if (!st.ok()) return error{errc::io_error, "SyncWAL on " + p.path.string() + ": " + st.ToString()};
  p.wal_syncs.fetch_add(1, std::memory_order_relaxed);
  auto prev = p.synced_sequence.load(std::memory_order_relaxed);
  while (prev < latest && !p.synced_sequence.compare_exchange_weak(prev, latest)) {
  }
  return wal_sync{std::max(prev, latest), true};
}

namespace {

// `read(p)` under the store's commit mutex (so no commit is between its reads), the lifecycle
// held shared so the store cannot close meanwhile. io_error when it is closed.
template <class T, class Read>
result<T> under_commit_mutex(primary_store& s, Read read) {
  auto& p = primary_store_access::get(s);
  std::shared_lock lock(p.lifecycle);
  if (!p.open) return error{errc::io_error, "primary store " + p.path.string() + " is closed"};
  std::lock_guard guard(p.commit_mutex);
  return read(p);
}

}  // namespace

result<coverage_point> capture_coverage_point(primary_store& s) {
  return under_commit_mutex<coverage_point>(s, [](auto& p) {
    coverage_point point;
    point.latest_sequence = p.db->GetLatestSequenceNumber();
    point.time = process_index_time().next(system_clock().wall_now_ns());
    return point;
  });
}

result<std::uint64_t> latest_sequence_under_commit_mutex(primary_store& s) {
  return under_commit_mutex<std::uint64_t>(s, [](auto& p) { return static_cast<std::uint64_t>(p.db->GetLatestSequenceNumber()); });
}

}  // namespace dix
