// The store-reader port over a primary_store (raw stored values, sequences, SyncWAL, the rebuild's
// boundary commit, snapshots and estimates).
#pragma once

#include <memory>

#include "adapters/primary_store_impl.hpp"
#include "ports/store_reader.hpp"

namespace dix {

class rocksdb_store_reader final : public store_reader {
 public:
  explicit rocksdb_store_reader(std::shared_ptr<primary_store> store) : store_(std::move(store)) {}
  result<std::optional<std::string>> read(std::uint32_t table, std::string_view id) override;
  result<std::vector<std::optional<std::string>>> read_many(std::uint32_t table,
                                                            const std::vector<std::string_view>& ids) override;
  result<std::uint64_t> latest_sequence() override;
  result<coverage_point> capture_coverage() override { return capture_coverage_point(*store_); }
  std::uint64_t synced_sequence() const noexcept override { return dix::synced_sequence(*store_); }
  result<bool> sync_wal(std::uint64_t covering) override;
  shared_reads* shared() noexcept override;
  result<boundary_commit> commit_boundary(std::string_view id, epoch_t epoch) override;
  result<std::unique_ptr<store_snapshot>> snapshot() override;
  result<table_estimate> estimate(std::uint32_t table) override;

 private:
  std::shared_ptr<primary_store> store_;
};

}  // namespace dix
