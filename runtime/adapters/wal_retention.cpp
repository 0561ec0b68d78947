// The WAL figures of protocol.md §13.2: the store's WAL listing (GetSortedWalFiles), the
// retention figures for a durable anchor computed from it (retention_of), and sampled_retention
// (adapters/wal_sample.hpp), which shares one listing per interval among a store's readers.
#include "adapters/primary_store_impl.hpp"

#include <sys/stat.h>

#include <rocksdb/transaction_log.h>

#include "adapters/wal_sample.hpp"

namespace dix {

result<std::vector<wal_file_info>> list_wal_files(const primary_store::impl& p) {
  rocksdb::VectorLogPtr files;
  auto s = p.db->GetSortedWalFiles(files);
  if (!s.ok()) return error{errc::io_error, "listing WAL files of " + p.path.string() + ": " + s.ToString()};
  std::vector<wal_file_info> out;
  out.reserve(files.size());
  for (const auto& f : files) {
    out.push_back(wal_file_info{f->StartSequence(), f->SizeFileBytes(), f->Type() == rocksdb::kArchivedLogFile,
                                p.path.string() + f->PathName()});
  }
  return out;
}

wal_retention retention_of(const std::vector<wal_file_info>& files, const store_options& o,
                           std::uint64_t anchor_sequence, std::uint64_t wall_now_ns) {
  wal_retention r;
  const wal_file_info* holder = nullptr;
  for (const auto& f : files) {
    r.wal_retained_bytes += f.size;
    if (f.archived) r.archived_bytes += f.size;
    if (r.wal_oldest_sequence == 0 && f.start_sequence != 0) r.wal_oldest_sequence = f.start_sequence;
    if (anchor_sequence != 0 && f.start_sequence <= anchor_sequence) holder = &f;
  }
  r.wal_files = files.size();
  if (anchor_sequence == 0 && !files.empty()) holder = &files.front();
  if (o.wal_size_limit_mb != 0) {
    r.retention_headroom_bytes = static_cast<std::int64_t>(o.wal_size_limit_mb << 20) -
                                 static_cast<std::int64_t>(r.archived_bytes);
  }
  auto mtime_ns_of = [](const wal_file_info& f) -> std::optional<std::int64_t> {
    struct stat st{};
    if (::stat(f.path.c_str(), &st) != 0) return std::nullopt;
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  };
  if (files.size() >= 2) {
    const auto oldest = mtime_ns_of(files.front());
    const auto span_ns = oldest ? static_cast<std::int64_t>(wall_now_ns) - *oldest : 0;
    if (span_ns > 0) {
      const auto bytes = static_cast<long double>(r.wal_retained_bytes - files.front().size);
      r.wal_write_bytes_per_s = static_cast<std::uint64_t>(bytes * 1e9L / static_cast<long double>(span_ns));
    }
  }
  // RocksDB's own TTL purge goes by mtime: the archive age is now − the holder's mtime.
  if (o.wal_ttl_s != 0 && holder != nullptr && holder->archived) {
    struct stat st{};
    if (::stat(holder->path.c_str(), &st) == 0) {
      auto mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
      auto age_ms = (static_cast<std::int64_t>(wall_now_ns) - mtime_ns) / 1'000'000;
      r.retention_headroom_ms = static_cast<std::int64_t>(o.wal_ttl_s) * 1000 - age_ms;
    }
  }
  return r;
}

struct primary_store::impl::wal_sample {
  std::chrono::steady_clock::time_point at;
  std::vector<wal_file_info> files;
};

result<wal_retention> sampled_retention(primary_store& s, std::uint64_t anchor_sequence, std::uint64_t wall_now_ns,
                                        std::chrono::steady_clock::time_point now, std::chrono::milliseconds max_age) {
  auto& p = primary_store_access::get(s);
  std::shared_ptr<const primary_store::impl::wal_sample> sample;
  {
    std::lock_guard g(p.wal_sample_mutex);
    sample = p.last_wal_sample;
  }
  if (!sample || now < sample->at || now - sample->at >= max_age) {
    std::shared_lock lock(p.lifecycle);
    if (!p.open) return error{errc::io_error, "primary store " + p.path.string() + " is closed"};
    auto files = list_wal_files(p);
    if (!files) return files.error();
    auto fresh = std::make_shared<primary_store::impl::wal_sample>();
    fresh->at = now;
    fresh->files = std::move(*files);
    std::lock_guard g(p.wal_sample_mutex);
    p.last_wal_sample = fresh;
    sample = std::move(fresh);
  }
  return retention_of(sample->files, p.options, anchor_sequence, wall_now_ns);
}

}  // namespace dix
