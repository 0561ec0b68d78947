#include "actors/coverage_waiters.hpp"

#include <algorithm>
#include <future>
#include <utility>

#include <caf/send.hpp>

#include "actors/backend_host_impl.hpp"
#include "actors/runtime_actor.hpp"
#include "adapters/primary_store_hooks.hpp"
#include "messages/runner.hpp"

namespace dix {

using std::chrono::milliseconds;

namespace {

std::mutex proof_mutex;
std::map<std::uint64_t, std::weak_ptr<coverage_proof_box>>& proof_boxes() {
  static std::map<std::uint64_t, std::weak_ptr<coverage_proof_box>> boxes;
  return boxes;
}

}  // namespace

void publish_proof_box(std::uint64_t token, const std::shared_ptr<coverage_proof_box>& box) {
  std::lock_guard g(proof_mutex);
  auto& boxes = proof_boxes();
  for (auto it = boxes.begin(); it != boxes.end();) it = it->second.expired() ? boxes.erase(it) : std::next(it);
  boxes[token] = box;
}

std::shared_ptr<coverage_proof_box> proof_box_of(std::uint64_t token) {
  std::lock_guard g(proof_mutex);
  auto it = proof_boxes().find(token);
  return it == proof_boxes().end() ? nullptr : it->second.lock();
}

coverage read_coverage_here(const readiness_segment& segment, const process_lock_table& locks,
                            const std::vector<std::shared_ptr<primary_store>>& stores, std::string_view id,
                            milliseconds tolerance, const clock& time) {
  coverage unknown;
  unknown.tolerance = tolerance;
  auto slot = const_cast<readiness_segment&>(segment).find(id);
  if (!slot) return unknown;
  const auto first = slot->read_coverage();
  auto c = time_path(first, time.wall_now_ns(), tolerance);
  if (c.state == coverage_state::bounded || first.state != readiness_state::ready) return c;
  const std::string name(id);
  auto box = proof_box_of(locks.owner_of(name));
  if (!box) return c;
  auto proof = box->load();
  if (!proof) return c;
  std::map<std::string, std::uint64_t> latest;
  for (const auto& [log, end] : proof->durable_end) {
    auto store = std::find_if(stores.begin(), stores.end(), [&](const auto& s) { return s->log_name() == log; });
    if (store == stores.end()) return c;  // the owner tails a log this runtime cannot capture
    auto sequence = latest_sequence_under_commit_mutex(**store);
    if (!sequence) return c;
    latest[log] = *sequence;
  }
  const auto second = slot->read_coverage();
  if (!proves_current(*proof, latest, first, second)) return c;
  c.state = coverage_state::current;
  c.lag_upper_bound = milliseconds(0);
  return c;
}

coverage_waiters::coverage_waiters(std::shared_ptr<readiness_segment> segment,
                                   std::shared_ptr<const runtime_registry> registry, const clock& time,
                                   milliseconds max_wait, std::shared_ptr<const clock> keep_time)
    : segment_(std::move(segment)),
      registry_(std::move(registry)),
      time_(time),
      keep_time_(std::move(keep_time)),
      max_wait_(max_wait) {}

void coverage_waiters::add(const std::string& id, index_time_t since, milliseconds timeout, cancel_token cancel,
                           done_fn done) {
  if (auto ok = check_wait_arguments("wait_for_coverage", since, timeout, max_wait_); !ok) {
    done(std::move(ok));
    return;
  }
  std::shared_ptr<registration_record> e;
  bool first = false;
  std::optional<error> refused;
  {
    std::lock_guard g(mutex_);
    // Looked up under the lock: an unregister that detaches the entry after this look runs its
    // end_registration after the waiter is queued (it takes this lock), so it fails the waiter
    // with `stopped`; looked up before the lock, an unregister between the two was missed and the
    // waiter stayed queued under a token nothing would end.
    e = registry_->find(id);
    if (closed_) {
      refused = error{errc::stopped, "wait_for_coverage(" + id + "): the runtime is stopped"};
    } else if (!e) {
      refused = error{errc::not_registered, "wait_for_coverage: backend id " + id + " is not registered in this runtime"};
    } else {
      auto w = std::make_shared<waiter>();
      w->id = id;
      w->token = e->token();
      w->slot = e->slot();
      w->rebuilds = e->settings().runner.rebuildable;
      w->since = since;
      w->deadline = time_.steady_now() + timeout;  // fixed at the call, as since
      w->cancel = cancel;
      w->done = std::move(done);
      first = std::none_of(waiters_.begin(), waiters_.end(), [&](const auto& o) { return o->id == id; });
      waiters_.push_back(w);
      // cancel() wakes the watcher: a header change makes its futex wait return (§12.6: ≤ 10 ms).
      std::weak_ptr<readiness_segment> seg = segment_;
      w->wake = w->cancel.on_cancel([seg] {
        if (auto s = seg.lock()) s->notify();
      });
    }
  }
  if (refused) {
    done(std::move(*refused));  // outside the lock, as every outcome
    return;
  }
  if (first) {
    if (auto r = e->runner()) caf::anon_send(r, wake{wake_flag::coverage});
  }
  segment_->notify();  // the watcher looks now and sleeps no longer than the new deadline
}

template <class Pick>
std::vector<std::shared_ptr<coverage_waiters::waiter>> coverage_waiters::take(Pick pick) {
  std::vector<std::shared_ptr<waiter>> out;
  auto keep = std::stable_partition(waiters_.begin(), waiters_.end(), [&](const auto& w) { return !pick(*w); });
  out.assign(std::make_move_iterator(keep), std::make_move_iterator(waiters_.end()));
  waiters_.erase(keep, waiters_.end());
  return out;
}

void coverage_waiters::scan(bool timed_out) {
  std::vector<std::pair<std::shared_ptr<waiter>, result<void>>> resolved;
  std::vector<runner_actor> wakes;
  {
    std::lock_guard g(mutex_);
    const auto now = time_.steady_now();
    std::map<std::string, coverage_reading> readings;  // one double read per id and look
    std::map<std::string, index_time_t> demand;        // the largest pending since per id
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      auto& w = **it;
      auto r = readings.find(w.id);
      if (r == readings.end()) r = readings.emplace(w.id, w.slot->read_coverage()).first;
      auto verdict = judge_waiter(w.cancel.cancelled(), r->second, w.since, w.deadline, now, w.rebuilds);
      if (verdict != waiter_verdict::waiting) {
        resolved.emplace_back(*it, waiter_outcome(verdict, w.id, w.since));
        it = waiters_.erase(it);
        continue;
      }
      auto& d = demand[w.id];
      d = std::max(d, w.since);
      ++it;
    }
    for (const auto& [id, since] : demand) {
      auto reading = readings[id];
      if (!reading.coverage_time || *reading.coverage_time < since) {
        for (const auto& w : waiters_) {
          if (w->id == id) {
            w->slot->raise_coverage_demand(since);
            break;
          }
        }
      }
    }
    // §12.4: a demand (this runtime's waiters' or another process's) wakes the local runner.
    const auto entries = registry_->all();
    for (auto it = demand_woken_.begin(); it != demand_woken_.end();) {
      const bool current = std::any_of(entries.begin(), entries.end(), [&](const auto& e) { return e->token() == it->first; });
      it = current ? std::next(it) : demand_woken_.erase(it);
    }
    for (const auto& e : entries) {
      if (e->slot()->coverage_demand() <= e->slot()->coverage_time()) continue;
      auto r = e->runner();
      if (!r) continue;
      const auto counter = e->slot()->change_counter();
      auto last = demand_woken_.find(e->token());
      if (!timed_out && last != demand_woken_.end() && last->second == counter) continue;
      demand_woken_[e->token()] = counter;
      wakes.push_back(r);
    }
  }
  for (auto& r : wakes) caf::anon_send(r, wake{wake_flag::coverage});
  for (auto& [w, outcome] : resolved) w->done(std::move(outcome));
}

milliseconds coverage_waiters::sleep_bound(milliseconds cap) const {
  std::vector<steady_point> deadlines;
  {
    std::lock_guard g(mutex_);
    for (const auto& w : waiters_) deadlines.push_back(w->deadline);
  }
  return dix::sleep_bound(deadlines, time_.steady_now(), cap);
}

void coverage_waiters::end_registration(std::uint64_t token) {
  std::vector<std::shared_ptr<waiter>> ended;
  {
    std::lock_guard g(mutex_);
    ended = take([&](const waiter& w) { return w.token == token; });
  }
  for (auto& w : ended) w->done(error{errc::stopped, "wait_for_coverage(" + w->id + "): the id was unregistered"});
}

void coverage_waiters::close() {
  std::vector<std::shared_ptr<waiter>> ended;
  {
    std::lock_guard g(mutex_);
    closed_ = true;
    ended = take([](const waiter&) { return true; });
  }
  for (auto& w : ended) w->done(error{errc::stopped, "wait_for_coverage(" + w->id + "): the runtime stopped"});
}

std::size_t coverage_waiters::pending() const {
  std::lock_guard g(mutex_);
  return waiters_.size();
}

void prepare_coverage(runtime_context& ctx) {
  if (ctx.waiters) return;
  ctx.waiters = std::make_shared<coverage_waiters>(ctx.segment, ctx.registry, *ctx.time,
                                                   ctx.options.max_coverage_wait, ctx.owned_time);
  std::weak_ptr<coverage_waiters> weak = ctx.waiters;
  ctx.registry->set_detach_listener([weak](std::uint64_t token) {
    if (auto w = weak.lock()) w->end_registration(token);
  });
}

future<void> wait_for_coverage_here(coverage_waiters& waiters, const std::string& id, index_time_t since,
                                    milliseconds timeout, cancel_token cancel) {
  auto promise = std::make_shared<std::promise<result<void>>>();
  auto f = promise->get_future();
  waiters.add(id, since, timeout, std::move(cancel), [promise](result<void> outcome) { promise->set_value(std::move(outcome)); });
  return f;
}

coverage_services coverage_services_for(const std::shared_ptr<runtime_context>& ctx, const std::string& id) {
  std::weak_ptr<runtime_context> weak = ctx;
  coverage_services s;
  s.read = [weak, id](milliseconds tolerance) {
    auto c = weak.lock();
    if (!c) return coverage{coverage_state::unknown, tolerance, std::nullopt};
    return read_coverage_here(*c->segment, *c->locks, c->stores, id, tolerance, *c->time);
  };
  s.wait = [weak, id](index_time_t since, milliseconds timeout, cancel_token cancel) -> result<void> {
    auto c = weak.lock();
    if (!c || !c->waiters) return error{errc::stopped, "wait_for_coverage(" + id + "): the runtime is gone"};
    auto waiters = c->waiters;
    const bool looks_itself = !c->watcher_thread;
    c.reset();  // the wait must not keep the runtime alive
    if (looks_itself) {
      // No watcher thread (the deterministic runtime under the test coordinator): nothing else
      // could resolve the wait while this thread blocks, and time does not move. The runtime ran
      // the wait before the query took its worker (query_one), so the answer is known now: a
      // look at once, with the deadline already reached.
      auto f = wait_for_coverage_here(*waiters, id, since, milliseconds(0), std::move(cancel));
      waiters->scan(false);
      return f.get();
    }
    return wait_for_coverage_here(*waiters, id, since, timeout, std::move(cancel)).get();
  };
  s.enforce = query_admission_enforced;
  return s;
}

}  // namespace dix
