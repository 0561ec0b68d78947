// The applier skeleton (decision 0050): everything of backends.md §0 that is not the index itself,
// written once. A backend supplies an `applier_engine` (apply a batch, commit with a cursor, load
// the stored cursor, close, reset); an `applier` owns the rest:
//   * the queue between the runtime's calls and one applier thread, with its deferral cap
//     (bytes and batches, soft: an empty queue takes any batch) and the `changed` owed to a
//     deferral once the queue is at half its cap;
//   * epoch fencing: backend_host::is_owner_epoch before each apply and before publishing a
//     barrier's cursor; work of another epoch is dropped, never applied;
//   * barriers: flushes made while one is pending join it; a barrier runs after everything queued
//     before its last request, commits the last applied `through` and reports it durable;
//   * poisoning: an apply error drops the queued work, emits `failed` and fails every barrier
//     until a shutdown or reset;
//   * shutdown and reset: the epoch's queued work is dropped, the apply or barrier in flight
//     finishes, then the engine closes (shutdown) or empties the index (reset);
//   * on_state_change subscriptions, never invoked once their subscription was reset;
//   * the durable cursor: loaded once through the engine, then kept as barriers publish it.
// Compose it (a backend owns an applier and forwards its members, as the shipped backends do) or
// derive from `applier_backend`, which does the forwarding (docs/examples/applier_example.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <dix/backend.hpp>

namespace dix {

// What a batch's apply came to, besides an error.
enum class apply_outcome : std::uint8_t {
  applied,  // done: its `through`, if any, is what the next barrier commits
  later,    // not now, nothing of it applied (a resource that frees itself is busy): the batch goes
            // back to the front of the queue and is offered again after engine.poll_interval()
  lost,     // not applied, and the work of its epoch since the last barrier is gone with it (a
            // cancelled transaction): as applier::lose(b.epoch), the batch counted dropped
};

// The index itself. THREADS: load_cursor() runs on the thread of durable_cursor(); hold_for(),
// busy() and on_accepted() on the thread of deliver() (the runtime's proxy) — and hold_for() and
// busy(0) also on the applier thread (watching a held delivery, releasing a deferral's owed
// `changed`), busy(0) also on the threads of shutdown() and reset(); every other member on the
// applier thread. Synchronise what they share. busy(), ready(), hold_for() on the applier
// thread, on_accepted(), on_released() and on_barrier_held() run under the queue's lock: cheap,
// and never a call into the applier. A member that throws is an error of that step: apply_batch
// and commit as their error; close and reset_index fail their shutdown or reset; a hook the
// applier thread calls (ready, hold_for, barrier_delay, poll_interval, on_poll, on_barrier_held)
// poisons the backend and fails a pending barrier; on_accepted fails its deliver (nothing queued);
// a throw from busy() counts as not busy and one from on_released() is ignored (figures).
class applier_engine {
 public:
  virtual ~applier_engine() = default;
  // The stored cursor (none: a fresh or reset index). May block briefly. Called when the applier
  // does not know it: first use, after a shutdown, after a failed reset. cursor_invalid condemns
  // the index; any other error is a transient fault (backend.hpp, durable_cursor).
  virtual result<std::optional<cursor>> load_cursor() = 0;
  // Applies one batch of the owner's epoch (the applier asked is_owner_epoch just before). An
  // error poisons the backend (`failed`): batches carry resolved states, so nothing later may be
  // applied over a lost one. An engine that can recover answers `lost` instead.
  virtual result<apply_outcome> apply_batch(const batch& b) = 0;
  // Makes everything applied durable, with `through` (the last applied batch's cursor; none when
  // no batch of this ownership carried one) atomically beside it. Called at each barrier; the
  // applier asked is_owner_epoch(epoch) for the last applied batch's epoch just before (epoch 0:
  // nothing applied since the ownership began). True: `through` is durable now, and the
  // applier reports it from durable_cursor(). False: nothing was published (an engine that writes
  // in several steps may ask is_owner_epoch again between them and stop when superseded). An
  // error fails the barrier.
  virtual result<bool> commit(const std::optional<cursor>& through, epoch_t epoch) = 0;
  // Shutdown: release what is exclusive (handles, writer locks). The next use reopens lazily.
  virtual result<void> close() = 0;
  // Reset: remove the stored cursor durably FIRST, then destroy the index state (backends.md §0).
  // Default: not_supported.
  virtual result<void> reset_index();

  // Optional hooks, for engines that defer for a resource of their own (free space, a lock) or
  // keep figures of the queue.
  // Why a delivery must be deferred now (backend_hold::none: it may be queued). Reported to the
  // host per epoch. With poll_interval() > 0 the applier looks again at that interval and emits
  // `changed` once the held delivery would pass. Default: never held.
  virtual backend_hold hold_for(const batch& b) {
    (void)b;
    return backend_hold::none;
  }
  // Whether deliveries of `epoch` (0: any) are deferred for a state of the engine's that it ends
  // itself (a writer lock held elsewhere, a loss the runtime has not replayed yet), with `changed`
  // owed: the engine calls applier::resume() when it ends. Default: never.
  virtual bool busy(epoch_t epoch) {
    (void)epoch;
    return false;
  }
  // Whether the queue's front batch may be applied now; false: it waits (barriers and shutdowns
  // behind it go ahead) and the applier asks again after poll_interval(). Default: always.
  virtual bool ready(const batch& b) {
    (void)b;
    return true;
  }
  // How often a waiting applier looks again (held deliveries, a batch not ready, `later`); 0: it
  // never watches held deliveries, and a batch that waits is looked at every 10 ms. Default: 0.
  virtual std::chrono::milliseconds poll_interval() { return std::chrono::milliseconds{0}; }
  // Called after each such look while something waits (a RocksDB engine flushes its memtables).
  virtual void on_poll() {}
  // A delivery was queued. Called under the queue's lock, before the applier can take it: cheap,
  // and no call into the applier (an engine counting what its next save will write).
  virtual void on_accepted(const batch& b) { (void)b; }
  // A batch left the queue's counts: applied, dropped or lost.
  virtual void on_released(const batch& b) { (void)b; }
  // How long a barrier that is due must still wait (an engine that spaces its barriers); batches
  // queued behind it are applied meanwhile. A shutdown flush or a shutdown/reset next never waits.
  virtual std::chrono::milliseconds barrier_delay() { return std::chrono::milliseconds{0}; }
  // Each time a due barrier waits with nothing to apply (a test point).
  virtual void on_barrier_held() {}
};

struct applier_limits {
  std::uint64_t max_queued_bytes = 64ull << 20;  // Default: 64 MiB (batch.bytes, at least 1 each)
  std::uint64_t max_queued_batches = 0;           // Default: 0, no limit on the count
};

// The applier thread and everything around it. The backend members below have backend.hpp's
// contracts. The engine must outlive the applier: destroy (or stop()) the applier first.
class applier {
 public:
  // Starts the applier thread; it calls the engine only for work the backend members queue.
  applier(std::string id, applier_engine& engine, applier_limits limits);
  ~applier();  // stop()
  applier(const applier&) = delete;
  applier& operator=(const applier&) = delete;

  const std::string& id() const noexcept;
  void attach(backend_host& host);
  result<std::optional<cursor>> durable_cursor();
  delivery_result deliver(std::shared_ptr<const batch> b);
  void flush(flush_reason reason, completion done);
  void shutdown(epoch_t epoch, completion done);
  void reset(epoch_t epoch, completion done);
  subscription on_state_change(std::function<void(state_change)> callback);

  // The host of the newest registration (nullptr before attach). Thread-safe.
  backend_host* host() const noexcept;
  // Calls the subscribed callbacks. Thread-safe.
  void emit(state_change change);
  // The engine's busy() state ended: emits the `changed` owed to deferrals, if any. Thread-safe.
  void resume();
  // From the applier thread (a commit that lost its transaction): the work of `epoch` since the
  // last barrier is gone; its queued batches are dropped, the last applied cursor forgotten, and
  // accepted_work_lost{epoch} emitted (the runtime replays from durable_cursor()).
  void lose(epoch_t epoch);
  // From the applier thread (a commit that failed for good): poisons the backend as an apply
  // error does, and emits failed{epoch}.
  void fail(epoch_t epoch);
  // Drops queued work (never durable: a restart replays it), waits for the step in flight and
  // ends the thread. Idempotent; later deliveries fail and later flushes, shutdowns and resets
  // complete at once with backend_failed.
  void stop();
  // Makes a waiting applier look again now (a test that moved its clock).
  void wake();

  // What tests observe: bytes and batches queued and in flight; batches applied, dropped.
  std::uint64_t queued_bytes() const;
  std::uint64_t queued_batches() const;
  std::uint64_t applied_batches() const noexcept;
  std::uint64_t dropped_batches() const noexcept;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

// A backend that is its own engine: derive, implement applier_engine's members (override
// supports_reset() with reset_index()), and call stop() first in the destructor: the thread must
// not call an engine that is half destroyed.
class applier_backend : public backend, protected applier_engine {
 public:
  const std::string& id() const noexcept override { return applier_.id(); }
  void attach(backend_host& host) override { applier_.attach(host); }
  result<std::optional<cursor>> durable_cursor() override { return applier_.durable_cursor(); }
  delivery_result deliver(std::shared_ptr<const batch> b) override { return applier_.deliver(std::move(b)); }
  void flush(flush_reason reason, completion done) override { applier_.flush(reason, std::move(done)); }
  void shutdown(epoch_t epoch, completion done) override { applier_.shutdown(epoch, std::move(done)); }
  void reset(epoch_t epoch, completion done) override { applier_.reset(epoch, std::move(done)); }
  subscription on_state_change(std::function<void(state_change)> callback) override {
    return applier_.on_state_change(std::move(callback));
  }

 protected:
  applier_backend(std::string id, applier_limits limits) : applier_(std::move(id), *this, limits) {}
  applier& skeleton() noexcept { return applier_; }
  void stop() { applier_.stop(); }

 private:
  applier applier_;
};

}  // namespace dix
