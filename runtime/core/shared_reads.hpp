// shared_reads: the primary reads of one store, shared by the tailers that follow it (issue 32
// item 1, decision 0061). Each registration's tailer resolves the keys of its chunk with point
// reads of the store (protocol.md §4.3); with several indexes on one table every index read the
// same records again. A tailer records what it read here, with the store's latest sequence taken
// just before the read; another tailer may take a recorded value instead of reading again when
// the read began after the key's last collected occurrence — exactly the rule its own read meets.
//
// Why that is safe: a point read without a snapshot sees at least every transaction up to the
// latest sequence published when it began (RocksDB's LastSequence, GetLatestSequenceNumber), so
// a value read at `read_at` ≥ the occurrence's sequence is the state after it: the one a read
// of the tailer's own would have returned, or a later state of the same key — which a read of its
// own made later may return too. The sync before delivery (§4.8) is unchanged: the tailer syncs
// up to a latest sequence it reads after its resolve, which is at least every `read_at` it took.
// (The sync's `latest` is read after this tailer's lookup, which follows the record, which follows
// the recording read's return: it is at least that read's own snapshot, not only its `read_at`.)
//
// The table holds two generations of bounded size: when the current one is full it becomes the
// previous one and the older is dropped. A key's newest read is in the current generation when
// it is there at all (no older read is recorded over a newer one), else in the previous.
// Each generation is charged its ids, values and 128 bytes per entry, up to `max_bytes` (a value
// larger than max_bytes/8 is not recorded). Its memory: an arena of at most `max_bytes` (reserved
// whole at its first entry) and slots of at most `max_bytes` (four of 32 bytes per entry at worst),
// both kept when a rotation clears and reuses it, whose largest sizes may come from different
// fills: at most four times `max_bytes` for the two generations. Whatever store
// state the values came from must still be the store's: an OS crash that loses the unsynced tail
// takes the process (and this table) with it; a store opened again gets a new table; a fake store
// that simulates the crash in process calls forget().
//
// Thread safety: any thread; one mutex, taken once per group of keys.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dix {

class shared_reads {
 public:
  struct limits {
    std::size_t max_bytes = 4u << 20;  // per generation: ids + values + 128 bytes per entry
    // Shared only while at least this many tailers follow the store: one alone gains little from
    // its own earlier reads and would pay for the copies.
    std::size_t min_followers = 2;
  };

  shared_reads() = default;
  explicit shared_reads(limits l);  // max_bytes is capped at 1 GiB (the arena's 32-bit offsets)
  shared_reads(const shared_reads&) = delete;
  shared_reads& operator=(const shared_reads&) = delete;

  struct counters {
    std::uint64_t hits = 0;       // keys found here
    std::uint64_t recorded = 0;   // keys recorded
    std::uint64_t rotations = 0;  // generations dropped
  };

  // A tailer that follows the store (while installed), and one that no longer does.
  void follow() noexcept;
  void unfollow() noexcept;
  // Whether reads are shared now (enough followers).
  bool active() const noexcept;

  // For each id (all of `table`): the value recorded for it by a read that began at or after
  // `at_least[i]`, or nothing (`found[i]` false). `values` and `found` are resized to ids.size().
  // Returns how many were found, or nullopt when reads are not shared now (too few followers):
  // the caller reads everything itself and need not record. One taking of the mutex.
  std::optional<std::size_t> lookup(std::uint32_t table, const std::vector<std::string_view>& ids,
                                    const std::vector<std::uint64_t>& at_least,
                                    std::vector<std::optional<std::string>>& values, std::vector<bool>& found);

  // Records what one read returned for `ids` (in order), the read having begun after the store's
  // latest sequence was `read_at`. A key keeps its most recent read (the larger read_at).
  void record(std::uint32_t table, const std::vector<std::string_view>& ids,
              const std::vector<std::optional<std::string>>& values, std::uint64_t read_at);

  // Drops everything (the store lost state: a simulated crash; the store's close).
  void forget();

  // Cumulative, read together.
  counters count() const;

 private:
  // One generation: an open-addressing table of slots over an arena that holds each entry's id
  // and value bytes. Linear probing, a power-of-two capacity at most half full (so at most 128
  // bytes of slots per entry, right after it doubles), no erasure: a newer read of a key
  // overwrites its slot. Entries cost no allocation of their own, and a dropped generation is
  // cleared and reused, so the tailers' threads do not churn the allocator (the node-based map
  // this replaced cost them more in malloc and free than in its lookups).
  struct slot {  // 32 bytes
    std::uint64_t hash = 0;  // 0: empty
    std::uint64_t read_at = 0;
    std::uint32_t table = 0;
    std::uint32_t offset = 0;      // of the id in the arena; the value follows it
    std::uint32_t id_size = 0;
    std::uint32_t value_size = 0;  // absent_value: the read found the key absent
  };
  static constexpr std::uint32_t absent_value = ~std::uint32_t{0};
  struct generation {
    std::vector<slot> slots;
    std::vector<char> arena;
    std::size_t used = 0;   // occupied slots
    std::size_t bytes = 0;  // charged: ids + values + entry_overhead per entry, replaced ones too

    slot* find(std::uint64_t hash, std::uint32_t table, std::string_view id);
    // The slot for a key not in the table (find() returned nullptr), grown first when needed.
    slot& insert_slot(std::uint64_t hash);
    // The first empty slot on `hash`'s probe sequence in `in` (never full: at most half).
    static slot& empty_slot(std::vector<slot>& in, std::uint64_t hash) noexcept;
    void clear() noexcept;  // keeps the capacity
    void prefetch(std::uint64_t hash) const noexcept;  // the first slot a find(hash, …) reads
  };

  static std::uint64_t hash_of(std::uint32_t table, std::string_view id) noexcept;
  static std::optional<std::string> value_of(const generation& g, const slot& e);

  limits limits_;
  mutable std::mutex mutex_;
  std::size_t followers_ = 0;
  generation current_;   // holds a key's newest read whenever it holds the key at all
  generation previous_;
  counters count_;
  std::vector<std::uint64_t> hashes_;  // lookup()'s scratch (under the mutex)
};

}  // namespace dix
