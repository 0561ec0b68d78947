// The runtime actor's workers for commits and queries as messages (<dix/caf/messages.hpp>,
// issue 29): the blocking work of commit_transaction and query_index runs on them, never on the
// runtime actor or the application's scheduler.
//
//  * committer: one per attached store, spawned at the store's first commit_transaction. It
//    commits each request as primary_store::begin() … commit() does — the writer gate's delay
//    included — one after another, on a thread of its own (detached; under the test coordinator
//    of actor tests, a plain actor). The runtime delegates the request, so the committer answers
//    the requester directly, in the order the runtime received them.
//  * query worker: one per running query, on a thread of its own; it runs backend::query once,
//    answers and ends. The runtime bounds how many run (query_gate).
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>

#include <dix/backend.hpp>
#include <dix/caf.hpp>
#include <dix/caf/messages.hpp>
#include <dix/primary_store.hpp>

namespace dix {

using committer_actor = store_writer;  // <dix/caf.hpp>
using query_worker_actor = caf::typed_actor<caf::replies_to<query_index>::with<index_rows>>;

committer_actor spawn_committer(caf::actor_system& sys, std::shared_ptr<primary_store> store, bool detached);
query_worker_actor spawn_query_worker(caf::actor_system& sys, std::shared_ptr<backend> served, bool detached);

// What commit_transaction does on the committer's thread: one transaction of `m`'s operations on
// `store`, committed. invalid_argument names the first operation the store refuses.
result<transaction_committed> commit_request(primary_store& store, const commit_transaction& m);
// What query_index does on a worker's thread: the checks of the request (limit 1…10 000), then
// backend::query, its rows as the answer.
result<index_rows> query_request(backend& served, const query_index& m);
// The checks of a request query_request makes before it asks the backend (the runtime makes them
// too, before a `wait` query waits): the error, or none.
std::optional<error> query_refusal(const query_index& m);

// How many queries of a runtime run at once and how many wait: a queued request starts when a
// running one ends, in arrival order; beyond the queue, a request is refused (timeout, retryable).
struct query_gate_limits {
  std::size_t running = 8;
  std::size_t queued = 256;
};

template <class Pending>
class query_gate {
 public:
  explicit query_gate(query_gate_limits limits = {}) : limits_(limits) {}
  // Whether `p` may start now (counted running); else it is queued, or, with the queue full,
  // handed back to be refused. `bounded` false: queued whatever the queue holds (a query bounded
  // elsewhere already: a `wait` query that waited for its coverage, counted among the runtime's
  // waiting queries, is never refused after its wait).
  enum class verdict { start, queued, refused };
  verdict admit(Pending& p, bool bounded = true) {
    if (running_ < limits_.running) {
      ++running_;
      return verdict::start;
    }
    if (bounded && queue_.size() >= limits_.queued) return verdict::refused;
    queue_.push_back(std::move(p));
    return verdict::queued;
  }
  // A running query ended: the next queued one, if any, starts (still counted running).
  std::optional<Pending> finished() {
    if (!queue_.empty()) {
      auto next = std::move(queue_.front());
      queue_.pop_front();
      return next;
    }
    if (running_ > 0) --running_;
    return std::nullopt;
  }
  // Everything still queued (the runtime stops: each is refused).
  std::deque<Pending> drain() {
    auto out = std::move(queue_);
    queue_.clear();
    return out;
  }
  std::size_t running() const noexcept { return running_; }
  std::size_t queued() const noexcept { return queue_.size(); }

 private:
  query_gate_limits limits_;
  std::size_t running_ = 0;
  std::deque<Pending> queue_;
};

}  // namespace dix
