// <dix/applier.hpp>: the applier skeleton every shipped backend runs on (decision 0050).
#include <dix/applier.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "core/assert.hpp"

namespace dix {

result<void> applier_engine::reset_index() { return {errc::not_supported, "this backend cannot be reset"}; }

namespace {

struct control_item {
  enum class kind { shutdown, reset } what;
  epoch_t epoch;
  completion done;
};

struct queued {
  std::uint64_t seq = 0;
  std::variant<std::shared_ptr<const batch>, control_item> item;
};

// Every flush request made while it was pending; it runs once the queue's front is past `mark`.
struct barrier_request {
  std::vector<completion> done;
  std::uint64_t mark = 0;  // the last item queued when a request joined
  bool unspaced = false;   // a shutdown flush joined: never delayed by barrier_delay()
};

std::uint64_t weight(const batch& b) { return std::max<std::uint64_t>(b.bytes, 1); }

}  // namespace

struct applier::state {
  state(std::string i, applier_engine& e, applier_limits l) : id(std::move(i)), engine(e), limits(l) {}

  const std::string id;
  applier_engine& engine;
  const applier_limits limits;
  std::atomic<backend_host*> host{nullptr};

  // The queue; counts include the batch in flight.
  mutable std::mutex mutex;
  std::condition_variable cv;
  std::deque<queued> queue;
  std::uint64_t next_seq = 1;
  std::optional<barrier_request> pending;
  std::uint64_t bytes = 0;
  std::uint64_t batches = 0;
  bool owed = false;                     // a delivery was deferred at the cap: `changed` at half
  std::shared_ptr<const batch> held;     // the delivery last held by the engine, watched
  epoch_t hold_epoch = 0;                // the hold last reported to the host
  backend_hold hold = backend_hold::none;
  bool front_waits = false;              // the front batch answered `later`: wait one poll
  bool stopping = false;
  bool stopped = false;

  // Applier-only.
  std::optional<cursor> applied_through;  // the last applied `through`
  epoch_t applied_epoch = 0;              // the last applied batch's epoch
  bool poisoned = false;
  std::atomic<std::uint64_t> applied{0};
  std::atomic<std::uint64_t> dropped{0};

  // The durable cursor, once known.
  std::mutex durable_mutex;
  std::optional<cursor> durable;
  bool durable_known = false;

  // Subscriptions. Callbacks run under the recursive mutex, so an unsubscribe waits for a call in
  // progress on another thread (and a callback may subscribe or unsubscribe on its own).
  std::recursive_mutex callbacks_mutex;
  std::map<std::uint64_t, std::function<void(state_change)>> callbacks;
  std::uint64_t next_key = 1;

  std::thread thread;

  void emit(state_change change) {
    std::lock_guard g(callbacks_mutex);
    std::vector<std::uint64_t> keys;
    for (const auto& entry : callbacks) keys.push_back(entry.first);
    for (auto key : keys) {
      auto it = callbacks.find(key);
      if (it == callbacks.end()) continue;
      auto fn = it->second;  // a callback that unsubscribes itself must not destroy what runs
      fn(change);
    }
  }
  bool owner(epoch_t e) const {
    auto* h = host.load();
    return h != nullptr && h->is_owner_epoch(e);
  }
  bool over_cap() const {
    return bytes >= limits.max_queued_bytes || (limits.max_queued_batches != 0 && batches >= limits.max_queued_batches);
  }
  bool at_half() const {
    return bytes <= limits.max_queued_bytes / 2 && (limits.max_queued_batches == 0 || batches <= limits.max_queued_batches / 2);
  }
  // A batch leaves the counts. True: the `changed` owed to a deferral is due. Caller holds mutex.
  bool release(const batch& b) {
    DIX_ASSERT(bytes >= weight(b) && batches > 0);
    bytes -= weight(b);
    --batches;
    try {
      engine.on_released(b);
    } catch (...) {
      // A figure of the engine's: the counts above stay right, and nothing else depends on it.
    }
    return owed_due();
  }
  // Whether the `changed` owed to a deferral is due now (and no longer owed). Caller holds mutex.
  bool owed_due() {
    if (owed && at_half() && !busy_now()) {
      owed = false;
      return true;
    }
    return false;
  }
  // engine.busy(0); a throw counts as not busy (the owed `changed` goes out, the runtime offers
  // again, and a deliver that still finds it busy defers again).
  bool busy_now() {
    try {
      return engine.busy(0);
    } catch (...) {
      return false;
    }
  }
  // Removes queued batches of `epoch` (0: every epoch). Caller holds mutex.
  bool drop_queued(epoch_t epoch) {
    bool due = false;
    front_waits = false;  // a batch that answered `later` may be among them
    for (auto it = queue.begin(); it != queue.end();) {
      auto* b = std::get_if<std::shared_ptr<const batch>>(&it->item);
      if (b != nullptr && (epoch == 0 || (*b)->epoch == epoch)) {
        due = release(**b) || due;
        ++dropped;
        it = queue.erase(it);
      } else {
        ++it;
      }
    }
    return due;
  }

  // A shutdown or reset after the step in flight; the epoch's queued batches are dropped now.
  void control(control_item::kind what, epoch_t epoch, completion done) {
    bool due = false;
    {
      std::unique_lock lock(mutex);
      if (stopped) {
        lock.unlock();
        std::move(done)(error{errc::backend_failed, "index " + id + ": the applier is stopped"});
        return;
      }
      due = drop_queued(epoch);
      queue.push_back(queued{next_seq++, control_item{what, epoch, std::move(done)}});
    }
    cv.notify_one();
    if (due) emit({state_change_kind::changed, 0});
  }

  // The work of `epoch` since the last barrier is lost (applier thread).
  void lose(epoch_t epoch) {
    bool due = false;
    {
      std::lock_guard lock(mutex);
      due = drop_queued(epoch);
    }
    applied_through.reset();  // never committed: no later commit may publish it
    emit({state_change_kind::accepted_work_lost, epoch});
    if (due) emit({state_change_kind::changed, 0});
  }

  // The backend cannot go on (applier thread): drop everything until a shutdown or reset.
  void fail(epoch_t epoch) {
    poisoned = true;
    bool due = false;
    {
      std::lock_guard lock(mutex);
      due = drop_queued(0);
    }
    emit({state_change_kind::failed, epoch});
    if (due) emit({state_change_kind::changed, 0});
  }

  struct work {
    std::optional<queued> item;
    std::optional<barrier_request> barrier;
    bool resumed = false;  // the held delivery would pass now
  };
  work next();
  // An engine hook called by next() threw: the backend is poisoned as by an apply error, the held
  // delivery forgotten and a pending barrier failed, so the applier does not call the hook again
  // for the same work.
  void hook_failed(const char* what);
  void run();
  void finish(const batch& b);
  result<void> run_barrier();
};

applier::state::work applier::state::next() {
  std::unique_lock lock(mutex);
  for (;;) {
    if (stopping) return {};
    auto* front = queue.empty() ? nullptr : std::get_if<std::shared_ptr<const batch>>(&queue.front().item);
    // A front batch that must wait lets a barrier and a shutdown or reset behind it go ahead: a
    // barrier syncs what was applied, a shutdown or reset dropped its epoch's batches already, so
    // a release never waits for the resource.
    const bool blocked = front != nullptr && (front_waits || !engine.ready(**front));
    if (pending && (queue.empty() || queue.front().seq > pending->mark || blocked)) {
      const bool control_next = !queue.empty() && std::holds_alternative<control_item>(queue.front().item);
      const auto delay = pending->unspaced || control_next || blocked ? std::chrono::milliseconds{0} : engine.barrier_delay();
      if (delay.count() <= 0) {
        work w;
        w.barrier = std::move(pending);
        pending.reset();
        return w;
      }
      if (queue.empty()) {
        engine.on_barrier_held();
        cv.wait_for(lock, delay);  // or until work comes, or a shutdown flush joins
        continue;
      }
    }
    auto next = queue.begin();
    if (blocked) {
      next = std::find_if(queue.begin(), queue.end(), [](const queued& q) { return std::holds_alternative<control_item>(q.item); });
    }
    if (next != queue.end()) {
      work w;
      w.item = std::move(*next);
      queue.erase(next);
      return w;
    }
    // The engine is called only about work: an idle applier started inside the constructor of an
    // applier_backend never calls into an object still being built.
    const auto poll = blocked || held ? engine.poll_interval() : std::chrono::milliseconds{0};
    if (held && poll.count() > 0 && engine.hold_for(*held) == backend_hold::none) {
      held.reset();
      return {std::nullopt, std::nullopt, true};
    }
    const bool watching = poll.count() > 0 && (blocked || held);
    if (!watching && !blocked) {
      cv.wait(lock);
      continue;
    }
    cv.wait_for(lock, poll.count() > 0 ? poll : std::chrono::milliseconds{10});  // `later` without a poll
    front_waits = false;
    lock.unlock();
    engine.on_poll();
    lock.lock();
  }
}

void applier::state::finish(const batch& b) {
  bool due = false;
  {
    std::lock_guard lock(mutex);
    due = release(b);
  }
  if (due) emit({state_change_kind::changed, 0});
}

result<void> applier::state::run_barrier() {
  if (poisoned) return {errc::backend_failed, "index " + id + " lost accepted work"};
  // Publish only the owner's work (protocol.md §9.4): a superseded epoch commits nothing.
  if (applied_epoch != 0 && !owner(applied_epoch)) return {};
  result<bool> committed = false;
  try {
    committed = engine.commit(applied_through, applied_epoch);
  } catch (const std::exception& e) {
    committed = error{errc::io_error, "index " + id + ": commit: " + e.what()};
  } catch (...) {
    committed = error{errc::io_error, "index " + id + ": commit threw"};
  }
  if (!committed) return committed.error();
  // A commit that stopped because the epoch was superseded meanwhile made nothing durable.
  if (applied_through && *committed) {
    std::lock_guard g(durable_mutex);
    durable = applied_through;
    durable_known = true;
  }
  return {};
}

void applier::state::hook_failed(const char* what) {
  std::optional<barrier_request> failed_barrier;
  {
    std::lock_guard lock(mutex);
    held.reset();
    front_waits = false;
    failed_barrier = std::move(pending);
    pending.reset();
  }
  fail(applied_epoch);
  if (!failed_barrier) return;
  for (auto& done : failed_barrier->done) {
    std::move(done)(error{errc::backend_failed, "index " + id + ": an engine hook threw: " + what});
  }
}

void applier::state::run() {
  for (;;) {
    work w;
    try {
      w = next();
    } catch (const std::exception& e) {
      hook_failed(e.what());
      continue;
    } catch (...) {
      hook_failed("an exception not derived from std::exception");
      continue;
    }
    if (w.resumed) {
      bool report = false;
      epoch_t epoch = 0;
      {
        std::lock_guard lock(mutex);
        epoch = hold_epoch;
        report = hold != backend_hold::none;
        hold = backend_hold::none;
      }
      if (auto* h = host.load(); report && h != nullptr) h->note_hold(epoch, backend_hold::none);
      emit({state_change_kind::changed, 0});
      continue;
    }
    if (w.barrier) {
      auto outcome = run_barrier();
      for (auto& done : w.barrier->done) std::move(done)(outcome);
      emit({state_change_kind::changed, 0});
      continue;
    }
    if (!w.item) return;  // stopping
    if (auto* b = std::get_if<std::shared_ptr<const batch>>(&w.item->item)) {
      const auto& bt = **b;
      if (poisoned || !owner(bt.epoch)) {
        ++dropped;
        finish(bt);
        continue;
      }
      // Work of another epoch since the last barrier is not this epoch's to publish (an engine may
      // have cancelled it): its cursor is forgotten, so a barrier never claims it.
      if (applied_epoch != 0 && bt.epoch != applied_epoch) applied_through.reset();
      result<apply_outcome> outcome = apply_outcome::applied;
      try {
        outcome = engine.apply_batch(bt);
      } catch (const std::exception& e) {
        outcome = error{errc::io_error, "index " + id + ": applying a batch: " + e.what()};
      } catch (...) {
        outcome = error{errc::io_error, "index " + id + ": applying a batch threw"};
      }
      if (outcome && *outcome == apply_outcome::later) {
        std::lock_guard lock(mutex);
        // Back to the front, unless the applier stops or a shutdown or reset of its epoch came
        // meanwhile (it dropped the batch's queued peers already).
        const bool superseded = std::any_of(queue.begin(), queue.end(), [&](const queued& q) {
          auto* c = std::get_if<control_item>(&q.item);
          return c != nullptr && c->epoch == bt.epoch;
        });
        if (!stopping && !superseded) {
          front_waits = true;
          queue.push_front(queued{w.item->seq, std::move(*b)});
          continue;
        }
      }
      if (outcome && *outcome == apply_outcome::applied) {
        ++applied;
        if (bt.through) applied_through = bt.through;
        applied_epoch = bt.epoch;
        finish(bt);
        continue;
      }
      ++dropped;
      finish(bt);
      if (outcome && *outcome == apply_outcome::lost) {
        lose(bt.epoch);
      } else if (!outcome) {
        // Batches carry resolved states: applying later ones over a lost one would let a cursor
        // claim work the index lacks.
        fail(bt.epoch);
      }
      continue;
    }
    auto& control = std::get<control_item>(w.item->item);
    result<void> outcome;
    try {
      outcome = control.what == control_item::kind::reset ? engine.reset_index() : engine.close();
    } catch (const std::exception& e) {
      outcome = error{errc::io_error, "index " + id + ": " + e.what()};
    } catch (...) {
      outcome = error{errc::io_error, "index " + id + ": the engine threw"};
    }
    if (outcome) poisoned = false;  // a failed shutdown or reset leaves the backend fenced
    applied_through.reset();
    applied_epoch = 0;
    {
      std::lock_guard g(durable_mutex);
      // After a shutdown the next owner reads the cursor again; after a reset there is none, and
      // after a failed one only the disk knows how far it got.
      durable.reset();
      durable_known = control.what == control_item::kind::reset && outcome;
    }
    const bool released = static_cast<bool>(outcome);
    std::move(control.done)(std::move(outcome));
    bool due = false;
    if (released) {
      std::lock_guard lock(mutex);
      due = owed_due();
    }
    if (due) emit({state_change_kind::changed, 0});
  }
}

applier::applier(std::string id, applier_engine& engine, applier_limits limits)
    : state_(std::make_unique<state>(std::move(id), engine, limits)) {
  auto* s = state_.get();
  state_->thread = std::thread([s] { s->run(); });
}

applier::~applier() { stop(); }

void applier::stop() {
  {
    std::lock_guard lock(state_->mutex);
    if (state_->stopped) return;
    state_->stopping = state_->stopped = true;
    state_->queue.clear();  // never durable: a restart replays it from the durable cursor
    state_->pending.reset();
  }
  state_->cv.notify_all();
  if (state_->thread.joinable()) state_->thread.join();
}

void applier::resume() {
  bool due = false;
  {
    std::lock_guard lock(state_->mutex);
    due = std::exchange(state_->owed, false);
  }
  if (due) state_->emit({state_change_kind::changed, 0});
}

void applier::lose(epoch_t epoch) { state_->lose(epoch); }
void applier::fail(epoch_t epoch) { state_->fail(epoch); }

void applier::wake() {
  { std::lock_guard lock(state_->mutex); }
  state_->cv.notify_all();
}

const std::string& applier::id() const noexcept { return state_->id; }
void applier::attach(backend_host& host) { state_->host = &host; }
backend_host* applier::host() const noexcept { return state_->host.load(); }
void applier::emit(state_change change) { state_->emit(change); }

result<std::optional<cursor>> applier::durable_cursor() {
  std::lock_guard g(state_->durable_mutex);
  if (state_->durable_known) return state_->durable;
  auto loaded = state_->engine.load_cursor();
  if (!loaded) return loaded.error();
  state_->durable = std::move(*loaded);
  state_->durable_known = true;
  return state_->durable;
}

delivery_result applier::deliver(std::shared_ptr<const batch> b) {
  if (!b) return delivery_result::failed;
  auto& s = *state_;
  const auto epoch = b->epoch;
  const auto hold = s.engine.hold_for(*b);
  bool report = false;
  bool accepted = false;
  {
    std::lock_guard lock(s.mutex);
    if (s.stopped) return delivery_result::failed;
    report = s.hold_epoch != epoch || s.hold != hold;
    s.hold_epoch = epoch;
    s.hold = hold;
    if (hold != backend_hold::none) {
      // Held: nothing is queued, not even into an empty queue; a watching applier emits
      // `changed` when it would pass.
      s.held = std::move(b);
    } else if (s.engine.busy(epoch)) {
      s.owed = true;
    } else if (!s.queue.empty() && s.over_cap()) {
      s.owed = true;  // soft cap: an empty queue takes any single batch
    } else {
      s.engine.on_accepted(*b);  // first: a throw (deliver → failed) leaves the counts untouched
      s.held.reset();  // the runner holds one deferred batch: this was it
      s.bytes += weight(*b);
      ++s.batches;
      s.queue.push_back(queued{s.next_seq++, std::move(b)});
      accepted = true;
    }
  }
  if (auto* h = s.host.load(); report && h != nullptr) h->note_hold(epoch, hold);
  s.cv.notify_one();
  return accepted ? delivery_result::accepted : delivery_result::deferred;
}

void applier::flush(flush_reason reason, completion done) {
  {
    std::unique_lock lock(state_->mutex);
    if (state_->stopped) {
      lock.unlock();
      std::move(done)(error{errc::backend_failed, "index " + state_->id + ": the applier is stopped"});
      return;
    }
    auto& pending = state_->pending;
    if (!pending) pending.emplace();
    pending->done.push_back(std::move(done));
    pending->mark = state_->next_seq - 1;  // after everything queued so far
    pending->unspaced = pending->unspaced || reason == flush_reason::shutdown;
  }
  state_->cv.notify_one();
}

void applier::shutdown(epoch_t epoch, completion done) { state_->control(control_item::kind::shutdown, epoch, std::move(done)); }
void applier::reset(epoch_t epoch, completion done) { state_->control(control_item::kind::reset, epoch, std::move(done)); }

subscription applier::on_state_change(std::function<void(state_change)> callback) {
  auto* s = state_.get();
  std::lock_guard g(s->callbacks_mutex);
  const auto key = s->next_key++;
  s->callbacks.emplace(key, std::move(callback));
  return subscription([s, key] {
    std::lock_guard g2(s->callbacks_mutex);
    s->callbacks.erase(key);
  });
}

std::uint64_t applier::queued_bytes() const {
  std::lock_guard lock(state_->mutex);
  return state_->bytes;
}
std::uint64_t applier::queued_batches() const {
  std::lock_guard lock(state_->mutex);
  return state_->batches;
}
std::uint64_t applier::applied_batches() const noexcept { return state_->applied.load(); }
std::uint64_t applier::dropped_batches() const noexcept { return state_->dropped.load(); }

}  // namespace dix
