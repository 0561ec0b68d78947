// <dix/wal.hpp>: the public WAL reader, a read-only primary store (open_read_only) and the
// tailer's own log source over it.
#include <dix/wal.hpp>

#include "adapters/primary_store_impl.hpp"
#include "adapters/rocksdb_log_source.hpp"
#include "core/clock.hpp"

namespace dix {

struct wal_reader::impl {
  explicit impl(std::shared_ptr<primary_store> s) : store(std::move(s)), source(store) {}
  std::shared_ptr<primary_store> store;  // declared first: the source is destroyed before it
  rocksdb_log_source source;
};

wal_reader::wal_reader(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
wal_reader::~wal_reader() = default;

result<std::unique_ptr<wal_reader>> wal_reader::open(const std::filesystem::path& path,
                                                     const std::string& log_name) {
  auto store = open_read_only(path, log_name);
  if (!store) return store.error();
  return std::unique_ptr<wal_reader>(new wal_reader(std::make_unique<impl>(std::move(*store))));
}

const std::string& wal_reader::log_name() const noexcept { return impl_->source.log_name(); }
const std::string& wal_reader::identity() const noexcept { return impl_->source.identity(); }

result<std::uint64_t> wal_reader::latest_sequence() const { return impl_->source.latest_sequence(); }

result<wal_retention> wal_reader::retention(std::uint64_t anchor_sequence) const {
  return impl_->source.retention(anchor_sequence, system_clock().wall_now_ns());
}

result<wal_transaction> wal_reader::seek(std::uint64_t sequence, index_time_t time) {
  return impl_->source.open(sequence, time);
}

result<wal_transaction> wal_reader::seek_at_or_before(std::uint64_t sequence) {
  return impl_->source.open_unchecked(sequence);
}

result<std::optional<wal_transaction>> wal_reader::next() { return impl_->source.next(); }

}  // namespace dix
