// The index digest (issue 31): an order-independent summary of an index's entries, kept by a
// backend in the same atomic write as its entries and stored beside its cursor, so it is exactly
// as durable as the cursor. dix verify compares it with the same digest computed from a scan of
// the primary store, and a mismatch is localised by merging the backend's key-ordered entry
// hashes with the scan's (formats.md §7).
//
// An entry is one record the index holds: a record delivered with state_kind::record, identified
// by (log, table, record id), with its version and projected bytes. Its hash is SipHash-2-4 with
// a 128-bit tag over the fields, each length-prefixed so no two entries encode alike, under a
// fixed public key: the digest detects drift, not an adversary who can write the index's files.
// The digest is the entries' hashes summed modulo 2^128 and their count, so adding and removing
// entries commutes and a batch updates it in O(records): remove the old entry's hash, add the
// new one's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dix {

// A 128-bit value: one entry's hash, or a sum of them.
struct hash128 {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;

  friend bool operator==(const hash128& a, const hash128& b) noexcept { return a.lo == b.lo && a.hi == b.hi; }
  friend bool operator!=(const hash128& a, const hash128& b) noexcept { return !(a == b); }
  // Modulo 2^128.
  friend hash128 operator+(const hash128& a, const hash128& b) noexcept {
    const std::uint64_t low = a.lo + b.lo;
    return {low, a.hi + b.hi + (low < a.lo ? 1u : 0u)};
  }
  friend hash128 operator-(const hash128& a, const hash128& b) noexcept {
    return {a.lo - b.lo, a.hi - b.hi - (a.lo < b.lo ? 1u : 0u)};
  }
};

// 32 lowercase hex digits, the high half first.
std::string to_hex(const hash128& h);

// SipHash-2-4 with a 128-bit tag (Aumasson and Bernstein, 2012), fed incrementally. The tag's
// 16 bytes, little-endian, are lo then hi.
class siphash128 {
 public:
  siphash128(std::uint64_t k0, std::uint64_t k1) noexcept;
  void update(const void* data, std::size_t size) noexcept;
  void update(std::string_view bytes) noexcept { update(bytes.data(), bytes.size()); }
  // The tag of everything fed so far; the hasher is left as it was.
  hash128 finish() const noexcept;

 private:
  std::uint64_t v0_, v1_, v2_, v3_;
  std::uint64_t tail_ = 0;    // bytes not yet in a full word, little-endian
  std::size_t tail_size_ = 0;
  std::uint64_t length_ = 0;  // bytes fed (its low byte enters the last block)
};

// The hash of one entry: u8 log length, log, u32 table, u32 record id length, record id,
// u64 version, projected bytes (the rest), integers little-endian.
hash128 entry_hash(std::string_view log, std::uint32_t table, std::string_view record_id, std::uint64_t version,
                   std::string_view projection) noexcept;

// The digest of a set of entries: their hashes' sum and their count.
struct index_digest {
  hash128 sum;
  std::uint64_t records = 0;

  void add(const hash128& entry) noexcept {
    sum = sum + entry;
    ++records;
  }
  void remove(const hash128& entry) noexcept {
    sum = sum - entry;
    --records;
  }

  // 24 bytes: sum.lo, sum.hi, records, each u64 little-endian (formats.md §7).
  static constexpr std::size_t encoded_size = 24;
  std::string encode() const;
  // nullopt unless exactly encoded_size bytes.
  static std::optional<index_digest> decode(std::string_view bytes) noexcept;

  friend bool operator==(const index_digest& a, const index_digest& b) noexcept {
    return a.sum == b.sum && a.records == b.records;
  }
  friend bool operator!=(const index_digest& a, const index_digest& b) noexcept { return !(a == b); }
};

}  // namespace dix
