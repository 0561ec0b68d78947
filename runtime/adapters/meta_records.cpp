#include "adapters/meta_records.hpp"

#include "adapters/primary_store_impl.hpp"
#include "core/bytes.hpp"

#include <limits>
#include <mutex>

namespace dix::meta {

std::string epoch_key(std::string_view id) { return "epoch/" + std::string(id); }
std::string condemned_key(std::string_view id) { return "condemned/" + std::string(id); }
std::string registration_key(std::string_view id) { return "registration/" + std::string(id); }
std::string boundary_key(std::string_view id) { return "boundary/" + std::string(id); }

std::string encode_u64(std::uint64_t value) {
  std::string out;
  put_le<std::uint64_t>(out, value);
  return out;
}

result<std::uint64_t> decode_u64(std::string_view key, std::string_view value) {
  if (value.size() != 8) {
    return error{errc::record_corrupt, std::string(key) + " holds " + std::to_string(value.size()) + " bytes, not 8"};
  }
  return get_le<std::uint64_t>(value, 0);
}

namespace {

result<void> commit(primary_store& home, std::vector<meta_op> ops) {
  auto done = commit_system(home, ops);
  if (!done) return done.error();
  return {};
}

// A failed read names the record it tried.
result<std::optional<std::string>> read_record(const primary_store& home, const std::string& key) {
  auto value = read_meta(home, key);
  if (!value) return error{value.error().value(), "reading " + key + ": " + value.error().message()};
  return value;
}

}  // namespace

result<std::optional<epoch_t>> read_epoch(const primary_store& home, std::string_view id) {
  const auto key = epoch_key(id);
  auto value = read_record(home, key);
  if (!value) return value.error();
  if (!*value) return std::optional<epoch_t>{};
  auto epoch = decode_u64(key, **value);
  if (!epoch) return epoch.error();
  // The floor of the next mint: an epoch that cannot be incremented would wrap to 0.
  if (*epoch == std::numeric_limits<epoch_t>::max()) {
    return error{errc::record_corrupt, key + " holds 2^64-1, an epoch that cannot be incremented"};
  }
  return std::optional<epoch_t>{*epoch};
}

home_meta_store::home_meta_store(std::shared_ptr<primary_store> home, std::string id)
    : home_(std::move(home)), id_(std::move(id)) {}

result<void> home_meta_store::persist_epoch(epoch_t epoch) {
  // The highest minted epoch (formats.md §5): never lowered. Two runtimes of one process persist
  // through their own tailers, so a write of an older epoch can land after a newer one (a stop
  // during the mint, a handoff, the successor's mint); as a plain put it lowered the record, and
  // with the segment lost the next floor let a used epoch be minted again. One process writes a
  // store (RocksDB's LOCK), so a process-wide mutex makes the read and the write one step.
  static std::mutex epoch_writes;
  std::lock_guard lock(epoch_writes);
  if (auto current = read_epoch(*home_, id_); current && *current && **current >= epoch) return {};
  return commit(*home_, {meta_op{op_kind::put, epoch_key(id_), encode_u64(epoch)}});
}

result<void> home_meta_store::write_marker() {
  return commit(*home_, {meta_op{op_kind::put, condemned_key(id_), std::string(marker_value)}});
}

result<void> home_meta_store::settle(std::uint64_t fingerprint) {
  return commit(*home_, {meta_op{op_kind::put, registration_key(id_), encode_u64(fingerprint)},
                         meta_op{op_kind::del, condemned_key(id_), {}}});
}

result<meta_records> home_meta_store::read_records() {
  meta_records r;
  auto marker = read_record(*home_, condemned_key(id_));
  if (!marker) return marker.error();
  r.condemned = marker->has_value();
  const auto key = registration_key(id_);
  auto fingerprint = read_record(*home_, key);
  if (!fingerprint) return fingerprint.error();
  if (*fingerprint) {
    auto value = decode_u64(key, **fingerprint);
    if (!value) return value.error();
    r.fingerprint = *value;
  }
  return r;
}

}  // namespace dix::meta
