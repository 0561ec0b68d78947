#include "actors/watcher.hpp"

#include <algorithm>
#include <system_error>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "actors/coverage_waiters.hpp"
#include "adapters/verify_files.hpp"
#include "messages/publication.hpp"
#include "messages/runner.hpp"
#include "messages/verify.hpp"

namespace dix {

watcher::watcher(std::shared_ptr<readiness_segment> segment, std::shared_ptr<const runtime_registry> registry,
                 caf::actor observer, std::chrono::milliseconds timeout, caf::actor supervisor)
    : segment_(std::move(segment)),
      registry_(std::move(registry)),
      observer_(caf::actor_cast<caf::weak_actor_ptr>(observer)),
      supervisor_(caf::actor_cast<caf::weak_actor_ptr>(supervisor)),
      timeout_(timeout) {}

watcher::~watcher() { stop(); }

result<void> watcher::start() {
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error& e) {
    return error{errc::io_error, std::string("runtime: cannot start the watcher thread: ") + e.what()};
  }
  return {};
}

void watcher::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true, std::memory_order_release);
  segment_->notify();  // one header change: this watcher, and any other process's, looks once more
  thread_.join();
}

void watcher::set_coverage(std::shared_ptr<coverage_waiters> waiters) { coverage_ = std::move(waiters); }

void watcher::observe(const std::string& id, std::shared_ptr<segment_slot> slot) {
  std::lock_guard g(mutex_);
  auto& o = observed_[id];
  if (!o.slot) o.slot = std::move(slot);
}

void watcher::unobserve(const std::string& id) {
  std::lock_guard g(mutex_);
  observed_.erase(id);
}

void watcher::scan(bool timed_out) {
  std::lock_guard g(mutex_);
  const auto entries = registry_->all();
  // Registrations that ended are forgotten.
  for (auto it = woken_.begin(); it != woken_.end();) {
    const bool current = std::any_of(entries.begin(), entries.end(), [&](const auto& e) { return e->token() == it->first; });
    it = current ? std::next(it) : woken_.erase(it);
  }
  auto supervisor = caf::actor_cast<caf::actor>(supervisor_.lock());
  for (const auto& e : entries) {
    if (!e->slot()->rebuild_requested()) continue;
    auto r = e->runner();  // none yet, or none to come (escalated): the supervisor is told
    const auto counter = e->slot()->change_counter();
    const auto runner = r ? r.address() : caf::actor_addr{};
    auto last = woken_.find(e->token());
    if (!timed_out && last != woken_.end() && last->second.runner == runner && last->second.counter == counter) continue;
    woken_[e->token()] = {runner, counter};
    if (supervisor) caf::anon_send(supervisor, revive{e->token()});
    if (r) caf::anon_send(r, wake{wake_flag::rebuild});
  }
  auto observer = caf::actor_cast<caf::actor>(observer_.lock());
  for (const auto& e : entries) {
    // Only the owner takes a verify request (another registration's runner would refuse it): the
    // registration's own runner, as its last snapshot says.
    const auto& settings = e->settings();
    if (!observer || !settings.snapshot || !settings.snapshot->load().owner) continue;
    for (const auto& nonce : waiting_verify_requests(segment_->directory(), settings.id)) {
      // Taken by a rename: a requester that withdrew first, or another taker, wins instead.
      auto request = take_verify_request(segment_->directory(), settings.id, nonce);
      if (!request) {
        // Malformed (and gone): its requester's report says so.
        verify_report rejected;
        rejected.nonce = nonce;
        rejected.code = request.error().value();
        rejected.message = request.error().message();
        (void)write_verify_report(segment_->directory(), settings.id, rejected);
        e->slot()->poke();
        continue;
      }
      if (!*request) continue;
      caf::anon_send(observer, verify_requested{e->token(), settings.id, nonce, (*request)->options});
    }
  }
  for (auto& [id, o] : observed_) {
    // The counter first: the fields read after it are at least as new as that counter says.
    const auto counter = o.slot->change_counter();
    if (o.sent && counter == o.counter) continue;
    o.counter = counter;
    o.sent = true;
    if (observer) caf::anon_send(observer, readiness_observed{id, counter, o.slot->read()});
  }
  if (coverage_) coverage_->scan(timed_out);
}

void watcher::run() {
  auto seen = segment_->segment_change_counter();
  bool timed_out = false;
  while (!stop_.load(std::memory_order_acquire)) {
    scan(timed_out);
    const auto now_seen = segment_->wait_change(seen, coverage_ ? coverage_->sleep_bound(timeout_) : timeout_);
    timed_out = now_seen == seen;
    seen = now_seen;
  }
}

}  // namespace dix
