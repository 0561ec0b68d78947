// A backend for the simulation and runner tests that behaves like a real one in everything the
// runtime can observe: deliver queues (deferring at a cap, and then emitting `changed` once room
// exists), work is applied in order with the epoch checked first (other epochs' work is dropped),
// a barrier makes the applied index and the last applied `through` durable together, a crash
// loses exactly what no barrier covered, shutdown drops queued work of its epoch, reset makes
// the cursor durably absent first and then empties the index (a crash between the two leaves a
// cursorless index that still holds entries, as a real one would). A reset can be held (it
// ends when the test says, as a slow one would); any other call made while a reset runs is a
// breach of the contract (§9.6, §11.4: nothing is asked of a backend destroying its index),
// recorded in `violation`.
// Single-threaded: the test decides when barriers run.
#pragma once

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <dix/backend.hpp>
#include <dix/digest.hpp>

namespace dix::test {

struct index_entry {
  std::uint64_t version = 0;
  std::string projection;
  friend bool operator==(const index_entry& a, const index_entry& b) {
    return a.version == b.version && a.projection == b.projection;
  }
};
using index_map = std::map<std::string, index_entry>;  // "log/table/id" → entry

inline std::string index_key(const std::string& log, std::uint32_t table, const std::string& id) {
  return log + "/" + std::to_string(table) + "/" + id;
}

class sim_backend final : public backend {
 public:
  // Knobs.
  std::size_t cap = 1u << 30;          // queued batches before `deferred`
  bool fail_next_delivery = false;
  bool reject_shutdown = false;
  bool durable_error = false;          // durable_cursor() fails (a transient fault)
  bool auto_barrier = true;            // flush runs the barrier at once
  bool hold_work_barriers = false;     // … except for flushes other than shutdown's: they wait for
                                       // barrier() (a shutdown's barrier completes them too)
  bool changed_inside_deliver = false; // a deferring deliver emits `changed` before it returns
  bool can_reset = true;               // supports_reset()
  bool fail_reset = false;             // reset answers an error (after dropping the cursor)
  bool keep_cursor_on_reset = false;   // a broken backend: reset leaves its cursor
  bool stop_inside_reset = false;      // reset drops the cursor, then never completes (a crash follows)
  bool hold_reset = false;             // reset drops the cursor, then waits for finish_reset()

  sim_backend() = default;
  explicit sim_backend(std::string id) : id_(std::move(id)) {}

  const std::string& id() const noexcept override { return id_; }
  std::string_view kind() const noexcept override { return "sim"; }
  void attach(backend_host& host) override {
    host_ = &host;
    ++attaches;
  }
  result<std::optional<cursor>> durable_cursor() override {
    if (durable_error) return error{errc::timeout, "durable_cursor failed (injected)"};
    return durable_cursor_;
  }
  delivery_result deliver(std::shared_ptr<const batch> b) override {
    during_reset("deliver");
    if (fail_next_delivery) {
      fail_next_delivery = false;
      return delivery_result::failed;
    }
    seen.push_back(b);
    if (!queue_.empty() && queue_.size() >= cap) {
      deferred_pending_ = true;
      if (changed_inside_deliver) {
        // Room appeared while deliver ran (an applier thread); the change is reported at once.
        apply_queue();
      }
      return delivery_result::deferred;
    }
    queue_.push_back(std::move(b));
    return delivery_result::accepted;
  }
  void flush(flush_reason reason, completion done) override {
    during_reset(reason == flush_reason::shutdown ? "flush(shutdown)" : "flush");
    waiters_.push_back(std::move(done));
    if (auto_barrier && (!hold_work_barriers || reason == flush_reason::shutdown)) barrier();
  }
  void shutdown(epoch_t epoch, completion done) override {
    during_reset("shutdown");
    if (reject_shutdown) {
      std::move(done)(error{errc::backend_failed, "shutdown rejected (injected)"});
      return;
    }
    for (auto it = queue_.begin(); it != queue_.end();) {
      it = (*it)->epoch == epoch ? queue_.erase(it) : std::next(it);
    }
    apply_queue();
    // backends.md §0, protocol.md §9.6: at most one successful shutdown per epoch.
    if (++shutdowns_accepted[epoch] > 1 && violation.empty()) {
      violation = "a second successful shutdown of epoch " + std::to_string(epoch);
    }
    std::move(done)(result<void>{});
  }
  bool supports_reset() const noexcept override { return can_reset; }
  // The optional hook (api.md §5): every call recorded, {coverage_time, positions}.
  std::vector<std::pair<index_time_t, positions>> coverage_hooks;
  void publish_coverage(const positions& p, index_time_t coverage_time, epoch_t) noexcept override {
    coverage_hooks.emplace_back(coverage_time, p);
  }
  void reset(epoch_t epoch, completion done) override {
    during_reset("reset");
    if (resets++ == 0) seen_before_first_reset = seen.size();
    // The cursor is durably gone before any index state is destroyed (backends.md, reset).
    if (!keep_cursor_on_reset) durable_cursor_ = applied_cursor_ = std::nullopt;
    if (stop_inside_reset || hold_reset) {
      pending_reset_ = std::move(done);
      held_reset_epoch_ = epoch;
      return;
    }
    end_reset(epoch, std::move(done));
  }
  // A held reset (hold_reset) goes on and completes; false when none is held.
  bool finish_reset() {
    if (!pending_reset_) return false;
    auto done = std::move(*pending_reset_);
    pending_reset_.reset();
    end_reset(held_reset_epoch_, std::move(done));
    return true;
  }
  bool resetting() const { return pending_reset_.has_value(); }
  subscription on_state_change(std::function<void(state_change)> callback) override {
    callback_ = std::move(callback);
    return subscription([this] { callback_ = nullptr; });
  }

  // Flushes asked for and not yet completed by a barrier.
  std::size_t flushes_waiting() const { return waiters_.size(); }
  // Barriers of work at once again (hold_work_barriers off), and one now for those waiting.
  void release_work_barriers() {
    hold_work_barriers = false;
    barrier();
  }
  // Applies the queue, makes it durable, completes waiting flushes, emits `changed`.
  void barrier() {
    apply_queue();
    durable_ = applied_;
    durable_cursor_ = applied_cursor_;
    ++barriers;
    auto waiters = std::move(waiters_);
    waiters_.clear();
    for (auto& w : waiters) std::move(w)(result<void>{});
    emit({state_change_kind::changed, 0});
  }
  // Applies queued work without a barrier (an applier making progress).
  void apply_queue() {
    while (!queue_.empty()) {
      auto b = queue_.front();
      queue_.pop_front();
      if (host_ == nullptr || !host_->is_owner_epoch(b->epoch)) {
        ++dropped_batches;
        continue;
      }
      applied_epochs.push_back(b->epoch);
      for (const auto& r : b->records) {
        auto key = index_key(r.log, r.table, r.record_id);
        if (r.state.kind == state_kind::record) applied_[key] = index_entry{r.state.version, r.state.projection};
        else applied_.erase(key);
      }
      if (b->through) applied_cursor_ = b->through;
    }
    if (deferred_pending_) {
      deferred_pending_ = false;
      emit({state_change_kind::changed, 0});
    }
  }
  // The process died: what no barrier covered is gone; pending completions are never called.
  void crash() {
    queue_.clear();
    applied_ = durable_;
    applied_cursor_ = durable_cursor_;
    for (auto& w : waiters_) w = completion([](result<void>) {});
    waiters_.clear();
    if (pending_reset_) {
      *pending_reset_ = completion([](result<void>) {});
      pending_reset_.reset();
    }
    deferred_pending_ = false;
  }
  // Accepted, non-durable work is discarded and reported (protocol.md §7).
  void lose_accepted(epoch_t epoch) {
    queue_.clear();
    applied_ = durable_;
    applied_cursor_ = durable_cursor_;
    emit({state_change_kind::accepted_work_lost, epoch});
  }
  void fail(epoch_t epoch) { emit({state_change_kind::failed, epoch}); }

  // What an interrupted reset or a copied directory leaves: durable entries, no cursor.
  void plant(const std::string& key, index_entry e) {
    durable_[key] = e;
    applied_[key] = e;
  }
  const index_map& durable_index() const { return durable_; }
  // Drift planted in the index (its files changed behind the runtime's back): the runtime cannot
  // see it, only a verify can. An entry of nullopt is removed.
  void plant_drift(const std::string& key, std::optional<index_entry> e) {
    for (auto* m : {&durable_, &applied_}) {
      if (e) (*m)[key] = *e;
      else m->erase(key);
    }
  }
  // The digest view of the durable state (formats.md §7), as a real backend reads its committed
  // files: the durable cursor, and the durable entries in merge order (logs apart, tables
  // ascending, ids bytewise), each hashed over its key, version and projection.
  result<std::unique_ptr<digest_view>> open_digest() override {
    ++digest_opens;
    if (digest_error) return *digest_error;
    auto view = std::make_unique<entries_view>();
    view->through_ = durable_cursor_;
    for (const auto& [key, e] : durable_) {
      const auto slash = key.find('/');
      const auto second = key.find('/', slash + 1);
      digest_entry d;
      d.log = key.substr(0, slash);
      d.table = static_cast<std::uint32_t>(std::stoul(key.substr(slash + 1, second - slash - 1)));
      d.record_id = key.substr(second + 1);
      d.version = e.version;
      d.hash = entry_hash(d.log, d.table, d.record_id, d.version, e.projection);
      view->digest_.add(d.hash);
      view->entries_.push_back(std::move(d));
    }
    std::sort(view->entries_.begin(), view->entries_.end(), [](const digest_entry& a, const digest_entry& b) {
      return std::tie(a.log, a.table, a.record_id) < std::tie(b.log, b.table, b.record_id);
    });
    if (digest_cursor_skew) view->through_ = std::nullopt;
    return std::unique_ptr<digest_view>(std::move(view));
  }
  std::optional<error> digest_error;  // open_digest fails with it
  bool digest_cursor_skew = false;    // out of contract: the view's cursor is not the durable one
  std::size_t digest_opens = 0;
  bool subscribed() const { return static_cast<bool>(callback_); }  // a state-change subscriber is held
  backend_host* host() const { return host_; }                      // the last host attach() was given
  const std::optional<cursor>& durable() const { return durable_cursor_; }
  std::size_t queued() const { return queue_.size(); }

  std::uint64_t barriers = 0;
  std::uint64_t resets = 0;
  std::size_t seen_before_first_reset = 0;  // deliver() calls before the first reset
  int attaches = 0;
  std::vector<std::shared_ptr<const batch>> seen;  // every deliver() call's batch
  std::uint64_t dropped_batches = 0;
  std::vector<epoch_t> applied_epochs;
  std::string violation;  // the first call made while a reset ran, or a second shutdown of an epoch
  std::map<epoch_t, int> shutdowns_accepted;  // successful shutdowns per epoch

 private:
  void during_reset(const char* what) {
    if (pending_reset_ && violation.empty()) violation = std::string(what) + " called while a reset was running";
  }
  void end_reset(epoch_t epoch, completion done) {
    if (fail_reset) {
      std::move(done)(error{errc::backend_failed, "reset failed (injected)"});
      return;
    }
    for (auto it = queue_.begin(); it != queue_.end();) {
      it = (*it)->epoch <= epoch ? queue_.erase(it) : std::next(it);
    }
    applied_.clear();
    durable_.clear();
    std::move(done)(result<void>{});
  }
  void emit(state_change c) {
    if (callback_) callback_(c);
  }
  class entries_view final : public digest_view {
   public:
    const std::optional<cursor>& through() const noexcept override { return through_; }
    const index_digest& digest() const noexcept override { return digest_; }
    result<const digest_entry*> next() override {
      if (at_ == entries_.size()) return static_cast<const digest_entry*>(nullptr);
      return &entries_[at_++];
    }
    std::optional<cursor> through_;
    index_digest digest_;
    std::vector<digest_entry> entries_;
    std::size_t at_ = 0;
  };
  std::string id_ = "sim-index";
  backend_host* host_ = nullptr;
  std::deque<std::shared_ptr<const batch>> queue_;
  index_map applied_, durable_;
  std::optional<cursor> applied_cursor_, durable_cursor_;
  std::vector<completion> waiters_;
  std::function<void(state_change)> callback_;
  bool deferred_pending_ = false;
  std::optional<completion> pending_reset_;
  epoch_t held_reset_epoch_ = 0;
};

}  // namespace dix::test
