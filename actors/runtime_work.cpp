#include "actors/runtime_work.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <caf/scheduled_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <dix/caf/error.hpp>

#include "adapters/primary_store_hooks.hpp"
#include "messages/values.hpp"

namespace dix {

namespace {

constexpr std::uint64_t max_query_rows = 10000;

// Answers held back while more messages wait in the committer's mailbox: how many at most
// before they go out anyway.
constexpr std::size_t max_held_answers = 8;
// Answers are held only behind fast commits: a commit that took longer (a sync, a stall) is
// answered at once with everything held, and so is everything held before a commit that may
// wait (a sync asked for, the writer gate delaying or refusing one of its tables) — so no
// answer waits behind another sender's slow commit.
constexpr std::chrono::microseconds fast_commit{1000};

result<transaction_committed> commit_checked(primary_store& store, const commit_transaction& m) {
  if (!m.log.empty() && m.log != store.log_name()) {
    return error{errc::invalid_argument,
                 "commit_transaction: this writer's store has log \"" + store.log_name() + "\", not \"" + m.log + "\""};
  }
  try {
    return commit_request(store, m);
  } catch (const std::exception& ex) {
    return error{errc::io_error, std::string("commit_transaction threw: ") + ex.what()};
  } catch (...) {
    return error{errc::io_error, "commit_transaction threw"};
  }
}

// Whether committing `m` may wait: a sync asked for, or the store's writer gate not open for some
// table (a delay or a refusal; store-wide, so no transaction is decoded twice on this path).
bool may_wait(primary_store& store, const commit_transaction& m) {
  return m.sync == commit_sync::sync || store_may_delay(store);
}

// The answers of commits already made, in commit order, not sent yet (decision 0046): while more
// messages wait, answering each commit at once would wake a waiting sender per commit, a futex
// wake paid on this thread between two commits. Held answers go out, in order, before the answer
// of a commit made when the mailbox is empty, when max_held_answers are held, and before anything
// else the committer does (an exit, an unexpected message), so each commit is still answered
// exactly once and no answer waits for a later commit.
struct committer_state {
  struct held_answer {
    caf::typed_response_promise<transaction_committed> promise;
    result<transaction_committed> outcome;
  };
  std::vector<held_answer> held;
  static inline const char* name = "dix.committer";

  committer_state() = default;
  committer_state(const committer_state&) = delete;
  committer_state& operator=(const committer_state&) = delete;
  // However the actor ends (a kill skips the exit handler), nothing held is left unanswered.
  ~committer_state() { answer_held(); }

  void answer_held() {
    for (auto& h : held) {
      if (h.outcome) h.promise.deliver(std::move(*h.outcome));
      else h.promise.deliver(make_error(h.outcome.error()));
    }
    held.clear();
  }
};

using committer_pointer = committer_actor::stateful_pointer<committer_state>;

committer_actor::behavior_type committer_fn(committer_pointer self, std::shared_ptr<primary_store> store) {
  self->set_exit_handler([self](caf::exit_msg& em) {
    self->state.answer_held();
    // As CAF's default (a normal exit is ignored), with a reason CAF can send to a remote monitor.
    if (em.reason) self->quit(wire::sendable_reason(std::move(em.reason), self->context()));
  });
  self->set_default_handler([self](caf::scheduled_actor* ptr, caf::message_view& x) -> caf::result<caf::message> {
    self->state.answer_held();
    return caf::print_and_drop(ptr, x);
  });
  return {
    [self, store](commit_transaction& m) -> caf::result<transaction_committed> {
      auto& st = self->state;
      if (!st.held.empty() && may_wait(*store, m)) st.answer_held();
      const auto started = std::chrono::steady_clock::now();
      auto outcome = commit_checked(*store, m);
      const bool fast = std::chrono::steady_clock::now() - started < fast_commit;
      if (fast && !self->mailbox().empty() && st.held.size() < max_held_answers) {
        auto promise = self->make_response_promise<transaction_committed>();
        st.held.push_back({promise, std::move(outcome)});
        return promise;
      }
      st.answer_held();
      if (!outcome) return make_error(outcome.error());
      return std::move(*outcome);
    },
  };
}

query_worker_actor::behavior_type query_worker_fn(query_worker_actor::pointer self, std::shared_ptr<backend> served) {
  return {
    [self, served](query_index& m) -> caf::result<index_rows> {
      auto answered = query_request(*served, m);
      auto promise = self->make_response_promise<index_rows>();
      if (answered) promise.deliver(std::move(*answered));
      else promise.deliver(make_error(answered.error()));
      self->quit();  // one query per worker
      return promise;
    },
  };
}

}  // namespace

committer_actor spawn_committer(caf::actor_system& sys, std::shared_ptr<primary_store> store, bool detached) {
  if (detached) return sys.spawn<caf::detached>(committer_fn, std::move(store));
  return sys.spawn(committer_fn, std::move(store));
}

store_writer spawn_store_writer(caf::actor_system& sys, std::shared_ptr<primary_store> store) {
  return spawn_committer(sys, std::move(store), true);
}

query_worker_actor spawn_query_worker(caf::actor_system& sys, std::shared_ptr<backend> served, bool detached) {
  if (detached) return sys.spawn<caf::detached>(query_worker_fn, std::move(served));
  return sys.spawn(query_worker_fn, std::move(served));
}

result<transaction_committed> commit_request(primary_store& store, const commit_transaction& m) {
  auto txn = store.begin();
  const bool decoded = m.for_each([&](write_kind kind, std::uint32_t table, std::string_view id, std::string_view payload) {
    if (kind == write_kind::put) txn.put(table, id, payload);
    else txn.del(table, id);
  });
  if (!decoded) return error{errc::invalid_argument, "commit_transaction: the writes do not decode as " + std::to_string(m.count)};
  if (m.sync != commit_sync::store_default) txn.set_sync(m.sync == commit_sync::sync);
  auto committed = txn.commit();
  if (!committed) return committed.error();
  return transaction_committed{store.log_name(), committed->sequence, committed->time};
}

std::optional<error> query_refusal(const query_index& m) {
  if (m.limit < 1 || m.limit > max_query_rows) {
    return error{errc::invalid_argument, "query_index: limit " + std::to_string(m.limit) + " outside 1…" +
                                             std::to_string(max_query_rows)};
  }
  return std::nullopt;
}

result<index_rows> query_request(backend& served, const query_index& m) {
  if (auto refused = query_refusal(m)) return *refused;
  result<query_rows> answered = error{errc::backend_failed, "backend::query gave no answer"};
  try {
    answered = served.query(to_index_query(m));
  } catch (const std::exception& ex) {
    return error{errc::backend_failed, "query_index: backend::query of " + m.id + " threw: " + ex.what()};
  } catch (...) {
    return error{errc::backend_failed, "query_index: backend::query of " + m.id + " threw"};
  }
  if (!answered) return answered.error();
  index_rows out;
  out.id = m.id;
  out.rows.reserve(answered->rows.size());
  for (auto& r : answered->rows) {
    index_row row;
    row.log = std::move(r.ref.log);
    row.table = r.ref.table;
    row.record_id = std::move(r.ref.record_id);
    row.version = r.ref.version;
    row.score_bits = score_bits_of(r.score);
    out.rows.push_back(std::move(row));
  }
  out.coverage = answered->coverage.state;
  out.tolerance_ms = answered->coverage.tolerance.count();
  out.lag_ms = answered->coverage.lag_upper_bound ? answered->coverage.lag_upper_bound->count() : -1;
  return out;
}

}  // namespace dix
