// dix::testing::memory_backend (<dix/testing/memory_backend.hpp>): the backend contract kept in
// memory, every call completed on the calling thread.
#include <dix/testing/memory_backend.hpp>

#include <algorithm>
#include <utility>
#include <vector>

namespace dix::testing {

memory_backend::memory_backend(std::string id, bool resettable) : id_(std::move(id)), resettable_(resettable) {}

memory_backend::entries memory_backend::applied() const {
  std::lock_guard g(mutex_);
  return applied_;
}

memory_backend::entries memory_backend::durable() const {
  std::lock_guard g(mutex_);
  return durable_;
}

std::optional<cursor> memory_backend::durable_cursor_now() const {
  std::lock_guard g(mutex_);
  return durable_cursor_;
}

std::uint64_t memory_backend::barriers() const {
  std::lock_guard g(mutex_);
  return barriers_;
}

std::uint64_t memory_backend::resets() const {
  std::lock_guard g(mutex_);
  return resets_;
}

void memory_backend::fail_next_delivery() {
  std::lock_guard g(mutex_);
  fail_next_ = true;
}

void memory_backend::hold_deliveries(bool hold) {
  bool release = false;
  {
    std::lock_guard g(mutex_);
    holding_ = hold;
    release = !hold && std::exchange(deferred_, false);
  }
  if (release) emit({state_change_kind::changed, 0});  // a deferral owes a `changed`
}

void memory_backend::lose_applied_work() {
  epoch_t lost = 0;
  {
    std::lock_guard g(mutex_);
    applied_ = durable_;
    applied_cursor_ = durable_cursor_;
    lost = applied_epoch_;
  }
  emit({state_change_kind::accepted_work_lost, lost});
}

void memory_backend::attach(backend_host& host) {
  std::lock_guard g(mutex_);
  host_ = &host;  // the newest registration's
}

result<std::optional<cursor>> memory_backend::durable_cursor() {
  std::lock_guard g(mutex_);
  return durable_cursor_;
}

delivery_result memory_backend::deliver(std::shared_ptr<const batch> b) {
  std::lock_guard g(mutex_);
  if (fail_next_) {
    fail_next_ = false;
    return delivery_result::failed;
  }
  if (holding_) {
    deferred_ = true;
    return delivery_result::deferred;
  }
  if (host_ == nullptr || !host_->is_owner_epoch(b->epoch)) return delivery_result::accepted;  // not the owner's: dropped
  for (const auto& r : b->records) {
    key k{r.log, r.table, r.record_id};
    if (r.state.kind == state_kind::record) {
      applied_[std::move(k)] = entry{r.state.version, r.state.projection};
    } else {
      applied_.erase(k);
    }
  }
  if (b->through) applied_cursor_ = b->through;
  applied_epoch_ = b->epoch;
  return delivery_result::accepted;
}

void memory_backend::flush(flush_reason, completion done) {
  {
    std::lock_guard g(mutex_);
    // A barrier publishes only the owner's work (protocol.md §9.4).
    if (host_ != nullptr && applied_epoch_ != 0 && host_->is_owner_epoch(applied_epoch_)) {
      durable_ = applied_;
      durable_cursor_ = applied_cursor_;
      ++barriers_;
    }
  }
  std::move(done)(result<void>{});
  emit({state_change_kind::changed, 0});
}

void memory_backend::shutdown(epoch_t, completion done) {
  // Nothing is queued and nothing runs: the epoch is quiet already.
  std::move(done)(result<void>{});
}

subscription memory_backend::on_state_change(std::function<void(state_change)> callback) {
  std::lock_guard g(callbacks_mutex_);
  const auto k = next_callback_++;
  callbacks_.emplace(k, std::move(callback));
  return subscription([this, k] {
    std::lock_guard c(callbacks_mutex_);
    callbacks_.erase(k);
  });
}

void memory_backend::reset(epoch_t, completion done) {
  if (!resettable_) {
    std::move(done)(error{errc::not_supported, "memory_backend " + id_ + " was made without reset"});
    return;
  }
  {
    std::lock_guard g(mutex_);
    // The cursor goes first, then the entries (one step here).
    durable_cursor_.reset();
    applied_cursor_.reset();
    durable_.clear();
    applied_.clear();
    applied_epoch_ = 0;
    ++resets_;
  }
  std::move(done)(result<void>{});
}

result<query_rows> memory_backend::query(const index_query& q) {
  if (q.kind != query_kind::lookup && q.kind != query_kind::range) {
    return error{errc::not_supported, "memory_backend answers lookup and range only"};
  }
  backend_host* host = nullptr;
  {
    std::lock_guard g(mutex_);
    host = host_;
  }
  if (host == nullptr) return error{errc::not_registered, "memory_backend " + id_ + " is not registered"};
  auto admitted = host->admit_query(q.mode);
  if (!admitted) return admitted.error();
  std::vector<std::pair<const key*, const entry*>> hits;
  query_rows out;
  out.coverage = *admitted;
  std::lock_guard g(mutex_);
  for (const auto& [k, e] : applied_) {
    const bool hit = q.kind == query_kind::lookup
                         ? e.projection == q.text
                         : e.projection >= q.text && (q.end.empty() || e.projection < q.end);
    if (hit) hits.emplace_back(&k, &e);
  }
  std::sort(hits.begin(), hits.end(), [](const auto& a, const auto& b) {
    if (a.second->projection != b.second->projection) return a.second->projection < b.second->projection;
    return *a.first < *b.first;
  });
  if (hits.size() > q.limit) hits.resize(q.limit);
  for (const auto& [k, e] : hits) out.rows.push_back(scored_ref{record_ref{k->log, k->table, k->record_id, e->version}, 0});
  return out;
}

void memory_backend::emit(state_change change) {
  // Under the callbacks' lock, so that none runs after its subscription was reset.
  std::lock_guard g(callbacks_mutex_);
  for (const auto& [k, callback] : callbacks_) callback(change);
}

}  // namespace dix::testing
