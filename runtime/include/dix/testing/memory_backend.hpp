// An index backend in memory for an application's actor tests with the real runtime
// (<dix/testing/deterministic_runtime.hpp>): it keeps the contract of <dix/backend.hpp> that the
// runtime can observe, and completes every call on the calling thread, so the runtime stays on
// the test coordinator's one thread. docs/testing.md.
//
// What it does: deliver applies the batch of the owner's epoch at once (work of another epoch is
// dropped) — each record present is stored with its version and projected bytes, an absent or
// unindexable one removed — and remembers the batch's `through`; flush makes the applied entries
// and that cursor durable together (a barrier whose work is of a superseded epoch publishes
// nothing), completes and emits `changed`; shutdown and reset complete at once, reset removing
// the cursor and every entry. Nothing is written to disk: "durable" means it survives the
// runtime's release and a new registration of the same object in this process.
//
// Two departures from what backends.md §0 asks of a real backend, harmless here: it applies inside
// deliver instead of on a thread of its own (applying to a map never blocks), and a test thread
// may call the knobs below at any time.
//
// Queries (backend::query, the runtime's query_index): `lookup` answers the records whose
// projected bytes equal `text`, `range` those with text <= bytes < end (end empty: no bound), in
// the order of (bytes, log, table, record id), at most `limit`, each after the host's admission
// of the query's coverage mode; other kinds are not_supported.
//
// Thread-safety: every member may be called from any thread. Callbacks of on_state_change run on
// the thread of the call that causes them, under a lock of their own (never the state's), so none
// runs after its subscription was reset.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include <dix/backend.hpp>

namespace dix::testing {

class memory_backend final : public backend {
 public:
  struct key {
    std::string log;
    std::uint32_t table = 0;
    std::string record_id;
    friend bool operator<(const key& a, const key& b) {
      return std::tie(a.log, a.table, a.record_id) < std::tie(b.log, b.table, b.record_id);
    }
    friend bool operator==(const key& a, const key& b) {
      return a.log == b.log && a.table == b.table && a.record_id == b.record_id;
    }
  };
  struct entry {
    std::uint64_t version = 0;
    std::string projection;
    friend bool operator==(const entry& a, const entry& b) {
      return a.version == b.version && a.projection == b.projection;
    }
  };
  using entries = std::map<key, entry>;

  // `id`: the backend id (formats.md §4.1). `resettable`: supports_reset(), so a condemned index
  // is rebuilt (false: it parks in needs-rebuild).
  explicit memory_backend(std::string id, bool resettable = true);

  // What the index holds now (applied), and as of its last barrier (durable).
  entries applied() const;
  entries durable() const;
  std::optional<cursor> durable_cursor_now() const;
  // How many barriers (successful flushes) and resets it made.
  std::uint64_t barriers() const;
  std::uint64_t resets() const;

  // Knobs for tests of an application's reactions:
  //  * fail_next_delivery: the next deliver answers `failed` (the runtime condemns the index:
  //    needs-rebuild, then a rebuild if resettable).
  //  * hold_deliveries(true): deliveries answer `deferred` (the index lags); false again emits
  //    `changed`, and the runtime offers the held batch again.
  //  * lose_applied_work: what was applied since the last barrier is lost, as in a crash of the
  //    backend's process, and `accepted_work_lost` is emitted: the runtime reads durable_cursor
  //    and replays from there.
  void fail_next_delivery();
  void hold_deliveries(bool hold);
  void lose_applied_work();

  // backend
  const std::string& id() const noexcept override { return id_; }
  std::string_view kind() const noexcept override { return "memory"; }
  void attach(backend_host& host) override;
  result<std::optional<cursor>> durable_cursor() override;
  delivery_result deliver(std::shared_ptr<const batch> b) override;
  void flush(flush_reason reason, completion done) override;
  void shutdown(epoch_t epoch, completion done) override;
  subscription on_state_change(std::function<void(state_change)> callback) override;
  bool supports_reset() const noexcept override { return resettable_; }
  void reset(epoch_t epoch, completion done) override;
  result<query_rows> query(const index_query& q) override;

 private:
  void emit(state_change change);

  const std::string id_;
  const bool resettable_;
  mutable std::mutex mutex_;  // guards what follows
  backend_host* host_ = nullptr;
  entries applied_, durable_;
  std::optional<cursor> applied_cursor_, durable_cursor_;
  epoch_t applied_epoch_ = 0;  // the epoch of the newest applied work
  std::uint64_t barriers_ = 0, resets_ = 0;
  bool fail_next_ = false, holding_ = false, deferred_ = false;
  std::mutex callbacks_mutex_;  // guards what follows; never held with mutex_
  std::map<std::uint64_t, std::function<void(state_change)>> callbacks_;
  std::uint64_t next_callback_ = 0;
};

}  // namespace dix::testing
