// Port: a primary store as the log tailer uses it besides its WAL — point reads of stored values
// (resolution, protocol.md §4.3), its latest sequence, and the WAL sync before delivery (§4.8).
// The RocksDB adapter is runtime/adapters/rocksdb_store_reader; tests use fakes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dix/result.hpp>

namespace dix {

class store_reader {
 public:
  virtual ~store_reader() = default;
  // The stored value (8-byte version + payload, unchecked) or nullopt when absent. io_error when
  // the store is closed or unreadable (a transient fault for the runtime).
  virtual result<std::optional<std::string>> read(std::uint32_t table, std::string_view id) = 0;
  // The same for several ids of one table, in order (protocol.md §4.3 allows groups of ≤ 16).
  // Default: one read() each; the RocksDB adapter uses MultiGet.
  virtual result<std::vector<std::optional<std::string>>> read_many(std::uint32_t table,
                                                                    const std::vector<std::string_view>& ids) {
    std::vector<std::optional<std::string>> out;
    out.reserve(ids.size());
    for (auto id : ids) {
      auto one = read(table, id);
      if (!one) return one.error();
      out.push_back(std::move(*one));
    }
    return out;
  }
  virtual result<std::uint64_t> latest_sequence() = 0;
  // The highest sequence known durable in the WAL.
  virtual std::uint64_t synced_sequence() const noexcept = 0;
  // Reads the latest sequence, syncs the WAL, raises synced_sequence to it; returns it.
  virtual result<std::uint64_t> sync_wal() = 0;
};

}  // namespace dix
