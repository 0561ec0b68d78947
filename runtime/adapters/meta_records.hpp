// The metadata records of formats.md §5 in one place: their keys, their value encodings, and the
// meta_store port of one backend id over the home store. `format` and `clock` belong to the store
// itself (primary_store_open.cpp); the records here belong to the runtime.
//
//   epoch/<id>         8 bytes LE: the highest minted epoch of <id>
//   condemned/<id>     1 byte 01: the durable condemnation marker
//   registration/<id>  8 bytes LE: the fingerprint of the registration that made the index
//   boundary/<id>      8 bytes LE: the rebuild epoch; written in every store of the registration's
//                      logs, its transaction is that log's rebuild boundary (protocol.md §11.5)
//
// Every write is a system transaction (sync) under the store's commit mutex (commit_system).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <dix/primary_store.hpp>
#include <dix/result.hpp>

#include "ports/meta_store.hpp"

namespace dix::meta {

std::string epoch_key(std::string_view id);
std::string condemned_key(std::string_view id);
std::string registration_key(std::string_view id);
std::string boundary_key(std::string_view id);

std::string encode_u64(std::uint64_t value);  // 8 bytes little-endian
// The 8-byte value stored under `key`; record_corrupt naming the key when it has another size.
result<std::uint64_t> decode_u64(std::string_view key, std::string_view value);
inline constexpr std::string_view marker_value{"\x01", 1};

// epoch/<id> as stored in `home`, nullopt when absent. io_error when the store cannot be read,
// record_corrupt when the value is not 8 bytes or is 2^64-1 (an epoch that cannot be incremented).
result<std::optional<epoch_t>> read_epoch(const primary_store& home, std::string_view id);

// The meta_store of one id over the home store.
class home_meta_store final : public meta_store {
 public:
  home_meta_store(std::shared_ptr<primary_store> home, std::string id);
  result<void> persist_epoch(epoch_t epoch) override;
  result<void> write_marker() override;
  result<void> settle(std::uint64_t fingerprint) override;
  result<meta_records> read_records() override;

 private:
  std::shared_ptr<primary_store> home_;
  std::string id_;
};

}  // namespace dix::meta
