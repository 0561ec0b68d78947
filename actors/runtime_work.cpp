#include "actors/runtime_work.hpp"

#include <string>
#include <utility>

#include <caf/typed_event_based_actor.hpp>

#include <dix/caf/error.hpp>

namespace dix {

namespace {

constexpr std::uint64_t max_query_rows = 10000;

committer_actor::behavior_type committer_fn(committer_actor::pointer self, std::shared_ptr<primary_store> store) {
  (void)self;
  return {
    [store](commit_transaction& m) -> caf::result<transaction_committed> {
      if (!m.log.empty() && m.log != store->log_name()) {
        return make_error(errc::invalid_argument, "commit_transaction: this writer's store has log \"" +
                                                      store->log_name() + "\", not \"" + m.log + "\"");
      }
      result<transaction_committed> done = error{errc::io_error, "commit_transaction: no outcome"};
      try {
        done = commit_request(*store, m);
      } catch (const std::exception& ex) {
        done = error{errc::io_error, std::string("commit_transaction threw: ") + ex.what()};
      }
      if (!done) return make_error(done.error());
      return std::move(*done);
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

result<index_rows> query_request(backend& served, const query_index& m) {
  if (m.limit < 1 || m.limit > max_query_rows) {
    return error{errc::invalid_argument, "query_index: limit " + std::to_string(m.limit) + " outside 1…" +
                                             std::to_string(max_query_rows)};
  }
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
