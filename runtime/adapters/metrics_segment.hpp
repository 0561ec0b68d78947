// The metrics segment (docs/formats-metrics.md): `<home>/dix/metrics.seg` beside the readiness
// segment, one fixed-size block per readiness slot (block i belongs to the id of slot i), where
// the owner of an id publishes figures no readiness slot has room for — today a rebuild's
// progress and its lag figures (decision 0021). Written only by the owner's readiness
// publisher (one writer per block), read lock-free by any process under a seqlock: the block's
// sequence is odd while it is written, and a reader that saw it odd or changed reads again, so it
// never returns a torn block. Every field is an `__atomic_*` builtin of its width on the mapping.
//
// Lifetimes: the attaching runtime creates or validates the file inside readiness_segment::attach
// (holding readiness.lock), which keeps the writable mapping; readers map it read-only with open().
//
// Thread safety: every method may be called from any thread; write() and clear() by one writer
// of a block at a time (the owner's publisher; the first attacher), which the caller ensures.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

#include <dix/activity.hpp>
#include <dix/result.hpp>
#include <dix/status.hpp>

namespace dix {

// docs/formats-metrics.md: sizes as numbers the tests check against the document.
namespace metrics_layout {
inline constexpr std::uint32_t layout_version = 2;
inline constexpr std::uint32_t header_bytes = 128;
inline constexpr std::uint32_t block_bytes = 512;
// Layout 1 (before decision 0030): the same first 256 bytes of a block, no log names. Readers
// still read it; the first attacher replaces it; any other attacher refuses it.
inline constexpr std::uint32_t names_free_layout_version = 1;
inline constexpr std::uint32_t names_free_block_bytes = 256;
// A reader gives up on a block after this many reads that saw a writer at work (a writer that
// died mid-write leaves the sequence odd until the next owner writes the block).
inline constexpr int max_read_attempts = 64;
}  // namespace metrics_layout

// What one block holds.
struct metrics_block {
  std::uint64_t written_wall_ns = 0;          // wall clock when the owner wrote it; 0 = never
  std::optional<rebuild_progress> progress;   // absent: no scan ran under the block's epoch
  std::optional<lag_figures> lag = std::nullopt;  // absent: the owner published none (an older writer)
};

class mapped_file;
struct mapped_layout;

class metrics_segment {
 public:
  // The attaching runtime, holding readiness.lock: creates `directory/metrics.seg` (0600) with
  // `block_count` zeroed blocks, or validates an existing one (private, magic, layout, and
  // exactly `block_count` blocks: the readiness segment's slot count). A zero magic or an empty
  // file (an interrupted creation) is created anew; with `renew` (the readiness segment was just
  // created, so no block pairs with its slots) any existing one is replaced by a new file renamed
  // over it (readers keep the file they mapped). The `first` attacher (no other runtime attached,
  // so no writer of the file lives) also replaces a private, whole layout-1 file that way; any
  // other attacher refuses one (decision 0030). Fails segment_layout_mismatch (the message names
  // the path, what was found and the remedy), io_error.
  static result<std::shared_ptr<metrics_segment>> create_or_validate(const std::filesystem::path& directory,
                                                                     std::uint32_t block_count, bool renew,
                                                                     bool first);
  // Any process: maps `directory/metrics.seg` read-only, of this layout or of layout 1 (whose
  // blocks read without log names). nullptr when it does not exist (yet), is empty or its magic
  // is zero. Fails segment_layout_mismatch (any other layout, naming this one as expected; also
  // a block count other than `block_count`, the readiness segment's slot count), io_error.
  static result<std::shared_ptr<metrics_segment>> open(const std::filesystem::path& directory,
                                                       std::uint32_t block_count);

  ~metrics_segment();
  metrics_segment(const metrics_segment&) = delete;
  metrics_segment& operator=(const metrics_segment&) = delete;

  std::uint32_t block_count() const noexcept;
  // 2, or 1 for a layout-1 file a reader mapped (never written: attach replaces or refuses it).
  std::uint32_t layout_version() const noexcept;
  // The owner: stores `b` in block `index` under the seqlock (sequence odd, fields, sequence
  // even, release), then bumps the header's change counter and wakes its waiters. Only on a
  // writable mapping; `index` < block_count().
  void write(std::uint32_t index, const metrics_block& b) noexcept;
  // The first attacher (no owner writes meanwhile): every block as never written.
  void clear() noexcept;
  // A whole copy of block `index` as one write left it; nullopt when a writer was at work at
  // every one of max_read_attempts reads (or `index` is out of range).
  std::optional<metrics_block> read(std::uint32_t index) const;

  std::uint64_t change_counter() const noexcept;  // acquire
  // Blocks until the change counter differs from `seen` or `timeout` passed; returns it.
  std::uint64_t wait_change(std::uint64_t seen, std::chrono::milliseconds timeout) const;

 private:
  metrics_segment(std::unique_ptr<mapped_file> file, std::uint32_t count, bool names);
  // The segment over `m` (of layout 2 when `names`, else 1), unless its count is not `block_count`.
  static result<std::shared_ptr<metrics_segment>> of_blocks(const std::filesystem::path& directory, mapped_layout&& m,
                                                            std::uint32_t block_count, bool names = true);
  unsigned char* block(std::uint32_t index) const noexcept;

  std::unique_ptr<mapped_file> file_;
  std::uint32_t count_;
  bool names_;  // layout 2: the blocks carry the logs' names
};

}  // namespace dix
