// Transactions (<dix/primary_store.hpp>): primary_store::begin, the operations validated as they
// arrive and encoded straight into the batch_builder, and commit(), which asks the writer gate
// (protocol.md §13.5) before the store's one write path (primary_store_commit.cpp).
#include "adapters/primary_store_detail.hpp"

#include <algorithm>

namespace dix {

using namespace store_detail;

transaction primary_store::begin(txn_flags flags) {
  auto st = std::make_unique<transaction::state>();
  st->store = shared_from_this();
  st->flags = flags;
  st->sync = impl_->options.sync_commits;
  return transaction(std::move(st));
}

namespace {

// Records the first failure; later operations are ignored and commit() reports it.
void fail_txn(transaction::state& st, errc code, std::string message) {
  if (!st.failed) st.failed = error{code, std::move(message)};
}

// The handle of `table` for an operation, or null after recording why not. Caller holds lifecycle.
rocksdb::ColumnFamilyHandle* table_handle(transaction::state& st, primary_store::impl& p, std::uint32_t table,
                                          std::size_t op_index) {
  if (!p.open) {
    fail_txn(st, errc::io_error, "primary store " + p.path.string() + " is closed");
    return nullptr;
  }
  if (st.cached_handle != nullptr && st.cached_table == table) return st.cached_handle;
  auto where = "operation " + std::to_string(op_index) + ": ";
  if (table == 0) {
    fail_txn(st, errc::invalid_argument, where + "table id 0: must be in [1, 4294967295]");
    return nullptr;
  }
  auto it = p.tables.find(table);
  if (it == p.tables.end()) {
    fail_txn(st, errc::invalid_argument, where + "unknown table " + std::to_string(table) + " (create_table first)");
    return nullptr;
  }
  if (std::find(st.tables.begin(), st.tables.end(), table) == st.tables.end()) st.tables.push_back(table);
  st.cached_table = table;
  st.cached_handle = it->second;
  return it->second;
}

// Record ids are 1…4096 bytes; anything else fails the transaction.
bool valid_record_id(transaction::state& st, std::string_view id) {
  if (!id.empty() && id.size() <= max_record_id_bytes) return true;
  fail_txn(st, errc::invalid_argument, "operation " + std::to_string(st.batch.ops()) + ": record id of " +
                                           std::to_string(id.size()) + " bytes: must be 1…4096");
  return false;
}

bool usable(const std::unique_ptr<transaction::state>& st) { return st && !st->committed && !st->failed; }

}  // namespace

transaction::transaction(std::unique_ptr<state> s) : state_(std::move(s)) {}
transaction::transaction(transaction&&) noexcept = default;
transaction& transaction::operator=(transaction&&) noexcept = default;
transaction::~transaction() = default;

namespace {

// Checks a keyed operation and, under the lifecycle lock, hands the table's handle to `add`.
template <class Add>
void add_keyed(std::unique_ptr<transaction::state>& state, std::uint32_t table, std::string_view id, Add add) {
  if (!usable(state)) return;
  auto& st = *state;
  auto& p = primary_store_access::get(*st.store);
  std::shared_lock lock(p.lifecycle);
  auto* handle = table_handle(st, p, table, st.batch.ops());
  if (handle == nullptr || !valid_record_id(st, id)) return;
  add(st.batch, handle);
}

}  // namespace

void transaction::put(std::uint32_t table, std::string_view id, std::string_view payload) {
  add_keyed(state_, table, id, [&](batch_builder& b, rocksdb::ColumnFamilyHandle* h) { b.put_versioned(h, id, payload); });
}

void transaction::del(std::uint32_t table, std::string_view id) {
  add_keyed(state_, table, id, [&](batch_builder& b, rocksdb::ColumnFamilyHandle* h) { b.del(h, id); });
}

void transaction::delete_range(std::uint32_t table, std::string_view begin, std::string_view end) {
  if (!usable(state_)) return;
  auto& st = *state_;
  auto where = "operation " + std::to_string(st.batch.ops()) + ": ";
  if ((st.flags & txn_flags::reload) != txn_flags::reload) {
    return fail_txn(st, errc::invalid_argument, where + "delete_range needs a transaction flagged reload");
  }
  if (begin.size() > max_record_id_bytes || end.size() > max_record_id_bytes || !(begin < end)) {
    return fail_txn(st, errc::invalid_argument, where + "delete_range needs begin < end, each at most 4096 bytes");
  }
  auto& p = primary_store_access::get(*st.store);
  std::shared_lock lock(p.lifecycle);
  auto* handle = table_handle(st, p, table, st.batch.ops());
  if (handle == nullptr) return;
  st.batch.delete_range(handle, begin, end);
}

void transaction::set_sync(bool sync) {
  if (state_) state_->sync = sync;
}

std::size_t transaction::size() const noexcept { return state_ ? state_->batch.ops() : 0; }

result<commit_info> transaction::commit() {
  if (!state_ || state_->committed) return error{errc::invalid_argument, "transaction already committed"};
  auto& st = *state_;
  st.committed = true;
  if (st.failed) return *st.failed;
  auto& store = *st.store;
  // protocol.md §13.5: never gated are replicated and recovery transactions (system ones do not
  // come here), and tables nobody projects; a store no registration gates pays two atomic loads.
  const auto never_gated = txn_flags::replicated | txn_flags::recovery;
  auto& impl = primary_store_access::get(store);
  const bool hooked = impl.has_admission_hook.load(std::memory_order_acquire);
  if ((st.flags & never_gated) == txn_flags::none && (hooked || !impl.gate.empty())) {
    std::chrono::microseconds delay{0};
    auto refuse = [](const admission& a, const std::string& tables) {
      return error{errc::index_lagging, "index " + a.backend_id + " lags too far behind " + tables +
                                            "; nothing was written, retry after a pause"};
    };
    if (hooked) {
      for (auto table : st.tables) {
        auto a = store.admit(table);
        if (a.kind == admit_kind::reject) return refuse(a, "table " + std::to_string(table));
        if (a.kind == admit_kind::delay) delay = std::max(delay, a.delay);
      }
    } else {
      auto a = impl.gate.admit(st.tables, true);  // a refusal wakes the id's local runners
      if (a.kind == admit_kind::reject) return refuse(a, "the tables written");
      if (a.kind == admit_kind::delay) delay = a.delay;
    }
    // Throttled: wait outside the commit mutex (protocol.md §13.5), then commit.
    if (delay.count() > 0) impl.gate.wait(delay);
  }
  return primary_store_access::get(store).write(static_cast<std::uint8_t>(st.flags), st.batch, st.sync);
}

}  // namespace dix
