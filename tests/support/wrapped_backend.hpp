// A backend that forwards to a real one (e.g. rocksdb_index_backend) and lets a test interfere
// where a real backend may legitimately behave so: refuse its shutdown (it cannot prove
// quiescence, protocol.md §9.7), hold its shutdown until the test lets it finish (a slow
// backend), defer every delivery (a backend that says wait), or fail the state-change subscription (protocol.md §2.2). It remembers the host it
// was attached to, as a backend may keep it. Thread-safe: the runtime calls it from its proxy's
// thread while the test sets the knobs.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include <dix/backend.hpp>

namespace dix::test {

class wrapped_backend final : public backend {
 public:
  explicit wrapped_backend(std::shared_ptr<backend> inner) : inner_(std::move(inner)) {}

  const std::string& id() const noexcept override { return inner_->id(); }
  std::string_view kind() const noexcept override { return inner_->kind(); }
  void attach(backend_host& host) override {
    host_.store(&host);
    inner_->attach(host);
  }
  result<std::optional<cursor>> durable_cursor() override { return inner_->durable_cursor(); }
  delivery_result deliver(std::shared_ptr<const batch> b) override {
    // A backend may say "not now" (api.md §5): the runner parks in deferred and retries.
    if (defer_deliveries.load()) return delivery_result::deferred;
    return inner_->deliver(std::move(b));
  }
  void flush(flush_reason reason, completion done) override {
    if (hold_flushes.load() && reason != flush_reason::shutdown) {
      std::lock_guard g(mutex_);
      held_flushes_.emplace_back(reason, std::move(done));
      return;
    }
    inner_->flush(reason, std::move(done));
  }
  // Stops holding flushes and passes the held ones on (a backend whose barriers resume).
  void release_flushes() {
    hold_flushes.store(false);
    std::vector<std::pair<flush_reason, completion>> held;
    {
      std::lock_guard g(mutex_);
      held.swap(held_flushes_);
    }
    for (auto& [reason, done] : held) inner_->flush(reason, std::move(done));
  }
  void shutdown(epoch_t epoch, completion done) override {
    if (refuse_shutdown.load()) {
      std::move(done)(error{errc::backend_failed, "shutdown refused (test)"});
      return;
    }
    if (hold_shutdown.load()) {
      std::lock_guard g(mutex_);
      held_ = std::make_pair(epoch, std::move(done));
      held_changed_.notify_all();
      return;
    }
    inner_->shutdown(epoch, std::move(done));
  }
  // Lets a held shutdown go on into the real backend; false when none is held.
  bool finish_held_shutdown() {
    std::optional<std::pair<epoch_t, completion>> held;
    {
      std::lock_guard g(mutex_);
      held.swap(held_);
    }
    if (!held) return false;
    inner_->shutdown(held->first, std::move(held->second));
    return true;
  }
  // Waits (a condition variable, bounded by `timeout`) until a shutdown is held.
  bool wait_shutdown_held(std::chrono::milliseconds timeout) const {
    std::unique_lock g(mutex_);
    return held_changed_.wait_for(g, timeout, [this] { return held_.has_value(); });
  }
  subscription on_state_change(std::function<void(state_change)> callback) override {
    if (fail_subscription.load()) throw std::runtime_error("cannot subscribe (test)");
    auto inner = std::make_shared<subscription>(inner_->on_state_change(std::move(callback)));
    subscribers_->fetch_add(1);
    return subscription([inner, count = subscribers_] {
      inner->reset();
      count->fetch_sub(1);
    });
  }
  bool supports_reset() const noexcept override { return inner_->supports_reset(); }
  void reset(epoch_t epoch, completion done) override {
    resets.fetch_add(1);
    inner_->reset(epoch, std::move(done));
  }

  backend_host* host() const noexcept { return host_.load(); }
  int subscribers() const noexcept { return subscribers_->load(); }  // subscriptions not yet reset

  std::atomic<bool> refuse_shutdown{false};
  std::atomic<bool> defer_deliveries{false};
  std::atomic<bool> hold_shutdown{false};
  std::atomic<bool> hold_flushes{false};  // no barrier until release_flushes (flush(shutdown) passes)
  std::atomic<bool> fail_subscription{false};
  std::atomic<int> resets{0};  // reset calls passed on

 private:
  std::shared_ptr<backend> inner_;
  std::atomic<backend_host*> host_{nullptr};
  // Shared with the subscriptions handed out, which may outlive this object.
  std::shared_ptr<std::atomic<int>> subscribers_ = std::make_shared<std::atomic<int>>(0);
  mutable std::mutex mutex_;
  mutable std::condition_variable held_changed_;
  std::optional<std::pair<epoch_t, completion>> held_;
  std::vector<std::pair<flush_reason, completion>> held_flushes_;
};

}  // namespace dix::test
