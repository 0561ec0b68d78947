// A backend that forwards to a real one (e.g. rocksdb_index_backend) and lets a test interfere
// where a real backend may legitimately behave so: refuse its shutdown (it cannot prove
// quiescence, protocol.md §9.7), hold its shutdown, its barriers or its reset until the test lets
// them finish (a slow backend), defer every delivery (a backend that says wait), or fail the
// state-change subscription (protocol.md §2.2), or throw from query(). It remembers the host it was attached to, as a
// backend may keep it, and the order of the calls that matter to a release (`calls()`: reset
// start and end, flush, shutdown), naming any flush, shutdown or delivery made while a reset was
// still running (`calls_during_reset()`). Thread-safe: the runtime calls it from its proxy's
// thread while the test sets the knobs; the test's waits are condition-variable waits.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
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
    note("deliver", false);
    // A backend may say "not now" (api.md §5): the runner parks in deferred and retries.
    if (defer_deliveries.load()) return delivery_result::deferred;
    auto r = inner_->deliver(std::move(b));
    {
      std::lock_guard g(mutex_);
      if (r == delivery_result::accepted) ++accepted_;
    }
    held_changed_.notify_all();
    return r;
  }
  void flush(flush_reason reason, completion done) override {
    note(reason == flush_reason::shutdown ? "flush(shutdown)" : "flush", true);
    if (hold_flushes.load() && reason != flush_reason::shutdown) {
      std::lock_guard g(mutex_);
      held_flushes_.emplace_back(reason, std::move(done));
      held_changed_.notify_all();
      return;
    }
    inner_->flush(reason, std::move(done));
  }
  // Waits until `n` deliveries in all were accepted (bounded by `timeout`).
  bool wait_accepted(int n, std::chrono::milliseconds timeout) const {
    std::unique_lock g(mutex_);
    return held_changed_.wait_for(g, timeout, [&] { return accepted_ >= n; });
  }
  int accepted() const {
    std::lock_guard g(mutex_);
    return accepted_;
  }
  // Waits until a barrier (a flush other than shutdown) is held (bounded by `timeout`).
  bool wait_flush_held(std::chrono::milliseconds timeout) const {
    std::unique_lock g(mutex_);
    return held_changed_.wait_for(g, timeout, [this] { return !held_flushes_.empty(); });
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
    note("shutdown(" + std::to_string(epoch) + ")", true);
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
  result<query_rows> query(const index_query& q) override {
    if (throw_on_query.load()) throw std::runtime_error("query exploded (test)");
    return inner_->query(q);
  }
  bool supports_reset() const noexcept override { return inner_->supports_reset(); }
  void reset(epoch_t epoch, completion done) override {
    resets.fetch_add(1);
    note("reset(" + std::to_string(epoch) + ")", true);
    // The end is when the inner backend calls the completion, on whichever thread.
    auto inner_done = std::make_shared<completion>(std::move(done));
    completion traced([this, inner_done](result<void> r) {
      {
        std::lock_guard g(mutex_);
        calls_.push_back(r ? "reset end" : "reset failed");
        resetting_ = false;
      }
      held_changed_.notify_all();
      std::move(*inner_done)(std::move(r));
    });
    {
      std::lock_guard g(mutex_);
      resetting_ = true;
      if (hold_resets.load()) {
        held_reset_ = std::make_pair(epoch, std::move(traced));
        held_changed_.notify_all();
        return;
      }
    }
    inner_->reset(epoch, std::move(traced));
  }
  // Waits until a reset is held (bounded by `timeout`).
  bool wait_reset_held(std::chrono::milliseconds timeout) const {
    std::unique_lock g(mutex_);
    return held_changed_.wait_for(g, timeout, [this] { return held_reset_.has_value(); });
  }
  // Lets a held reset go on into the real backend (or fail it: the backend's reset reported an
  // error); false when none is held.
  bool finish_held_reset(bool fail = false) {
    std::optional<std::pair<epoch_t, completion>> held;
    {
      std::lock_guard g(mutex_);
      held.swap(held_reset_);
    }
    if (!held) return false;
    if (fail) std::move(held->second)(error{errc::io_error, "reset failed (test)"});
    else inner_->reset(held->first, std::move(held->second));
    return true;
  }
  // Waits until `pred(calls())` holds (bounded by `timeout`).
  template <class Pred>
  bool wait_calls(Pred pred, std::chrono::milliseconds timeout) const {
    std::unique_lock g(mutex_);
    return held_changed_.wait_for(g, timeout, [&] { return pred(calls_); });
  }
  std::vector<std::string> calls() const {
    std::lock_guard g(mutex_);
    return calls_;
  }
  std::vector<std::string> calls_during_reset() const {
    std::lock_guard g(mutex_);
    return during_reset_;
  }

  backend_host* host() const noexcept { return host_.load(); }
  int subscribers() const noexcept { return subscribers_->load(); }  // subscriptions not yet reset

  std::atomic<bool> refuse_shutdown{false};
  std::atomic<bool> defer_deliveries{false};
  std::atomic<bool> hold_shutdown{false};
  std::atomic<bool> hold_flushes{false};  // no barrier until release_flushes (flush(shutdown) passes)
  std::atomic<bool> fail_subscription{false};
  std::atomic<bool> throw_on_query{false};  // query() throws (a third-party backend's bug)
  std::atomic<int> resets{0};  // reset calls passed on
  std::atomic<bool> hold_resets{false};  // a reset waits for finish_held_reset

 private:
  // Records a call; `traced` calls go to calls(). Any call but reset while one runs is a breach.
  void note(const std::string& what, bool traced) {
    {
      std::lock_guard g(mutex_);
      if (traced) calls_.push_back(what);
      if (resetting_) during_reset_.push_back(what);
    }
    held_changed_.notify_all();
  }

  std::shared_ptr<backend> inner_;
  std::atomic<backend_host*> host_{nullptr};
  // Shared with the subscriptions handed out, which may outlive this object.
  std::shared_ptr<std::atomic<int>> subscribers_ = std::make_shared<std::atomic<int>>(0);
  mutable std::mutex mutex_;
  mutable std::condition_variable held_changed_;
  std::optional<std::pair<epoch_t, completion>> held_;
  std::vector<std::pair<flush_reason, completion>> held_flushes_;
  int accepted_ = 0;
  bool resetting_ = false;
  std::vector<std::string> calls_;         // reset(E), reset end/failed, flush, flush(shutdown), shutdown(E)
  std::vector<std::string> during_reset_;  // calls made while a reset ran
  // Last: destroyed first, so a held reset's completion dropped here still finds calls_.
  std::optional<std::pair<epoch_t, completion>> held_reset_;
};

}  // namespace dix::test
