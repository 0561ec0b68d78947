// The backend contract (api.md §5, backends.md §0). A backend accepts, defers or fails batches,
// makes work durable at flush barriers, and stores the batch's `through` cursor atomically with
// the index state it covers. The runtime calls a backend's members from one thread at a time;
// callbacks and completions may run on any thread, inside the causing call included.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <dix/batch.hpp>
#include <dix/cursor.hpp>
#include <dix/readiness.hpp>
#include <dix/result.hpp>

namespace dix {

enum class delivery_result : std::int8_t { accepted = 1, deferred = 0, failed = -1 };
enum class flush_reason : std::uint8_t { age, threshold, shutdown, coverage };
enum class state_change_kind : std::uint8_t { changed, accepted_work_lost, failed };

struct state_change {
  state_change_kind kind = state_change_kind::changed;
  epoch_t epoch = 0;  // the work concerned; 0 = none in particular
};

// Called exactly once with the outcome, on any thread, now or later. Move-only. Dropped uncalled,
// it reports backend_failed ("completion dropped"), so a lost completion is never a hang.
class completion {
 public:
  completion() = default;
  explicit completion(std::function<void(result<void>)> fn) : fn_(std::move(fn)) {}
  completion(completion&& other) noexcept : fn_(std::exchange(other.fn_, nullptr)) {}
  completion& operator=(completion&& other) noexcept;
  completion(const completion&) = delete;
  completion& operator=(const completion&) = delete;
  ~completion();

  void operator()(result<void> outcome) &&;
  explicit operator bool() const noexcept { return static_cast<bool>(fn_); }

 private:
  std::function<void(result<void>)> fn_;
};

// Unsubscribes when reset or destroyed. Move-only.
class subscription {
 public:
  subscription() = default;
  explicit subscription(std::function<void()> unsubscribe) : unsubscribe_(std::move(unsubscribe)) {}
  subscription(subscription&& other) noexcept : unsubscribe_(std::exchange(other.unsubscribe_, nullptr)) {}
  subscription& operator=(subscription&& other) noexcept {
    if (this != &other) {
      reset();
      unsubscribe_ = std::exchange(other.unsubscribe_, nullptr);
    }
    return *this;
  }
  subscription(const subscription&) = delete;
  subscription& operator=(const subscription&) = delete;
  ~subscription() { reset(); }
  void reset() noexcept {
    if (auto fn = std::exchange(unsubscribe_, nullptr)) fn();
  }

 private:
  std::function<void()> unsubscribe_;
};

// The runtime side a backend talks to. Thread-safe; only admit_query in wait mode blocks. It
// outlives the registration that handed it out: a backend may keep the reference and call it
// from any thread until the runtime is destroyed (after its last shutdown settled a backend
// makes no call). Once the registration has ended, is_owner_epoch answers false for every
// epoch, readiness() the value it had then, admit_query not_registered, and the other calls do
// nothing.
class backend_host {
 public:
  virtual ~backend_host() = default;
  // owner_epoch.load(acquire) == e (protocol.md §9.4): check before applying each batch, after
  // each asynchronous step and before publishing a barrier's cursor; drop other epochs' work.
  virtual bool is_owner_epoch(epoch_t e) const noexcept = 0;
  virtual dix::readiness readiness() const noexcept = 0;
  virtual void note_unindexable(std::string_view reason) noexcept = 0;
  virtual void request_rebuild() noexcept = 0;
  virtual result<coverage> admit_query(const coverage_mode& mode, cancel_token cancel = {}) = 0;
  // Why the backend holds deliveries of `epoch` back, or backend_hold::none once it takes them
  // again. Stored for readers in other processes (`dix status`) while `epoch` is the owner's;
  // cheap when nothing changes. Default: ignored.
  virtual void note_hold(epoch_t epoch, backend_hold hold) noexcept {
    (void)epoch;
    (void)hold;
  }
  // A backend that reaches its index over a network (remote_backend) reports its link, at most
  // every 100 ms, for readers in other processes (`dix status`), while `epoch` is the owner's. Never
  // blocks. Default: ignored.
  virtual void note_link(epoch_t epoch, const link_figures& link) noexcept {
    (void)epoch;
    (void)link;
  }
};

class backend {
 public:
  virtual ~backend() = default;
  virtual const std::string& id() const noexcept = 0;
  virtual std::string_view kind() const noexcept = 0;  // e.g. "rocksdb_index"; in the fingerprint
  virtual void attach(backend_host& host) = 0;  // once per registration, before any other call
  virtual result<std::optional<cursor>> durable_cursor() = 0;  // as of the last barrier
  virtual delivery_result deliver(std::shared_ptr<const batch> b) = 0;  // retain without copying
  virtual void flush(flush_reason reason, completion done) = 0;
  virtual void shutdown(epoch_t epoch, completion done) = 0;
  virtual subscription on_state_change(std::function<void(state_change)> callback) = 0;
  virtual bool supports_reset() const noexcept { return false; }
  virtual void reset(epoch_t epoch, completion done);  // default: not_supported
  virtual std::chrono::milliseconds min_barrier_interval() const noexcept { return std::chrono::milliseconds{0}; }
  virtual void publish_coverage(const positions& p, index_time_t coverage_time, epoch_t epoch) noexcept {
    (void)p;
    (void)coverage_time;
    (void)epoch;
  }
};

}  // namespace dix
