#include "adapters/metrics_segment.hpp"

#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "adapters/mapped_file.hpp"
#include "adapters/posix_files.hpp"
#include "adapters/readiness_segment.hpp"  // segment_layout::max_slot_count

namespace dix {
namespace {

namespace fs = std::filesystem;
using namespace metrics_layout;
using mapped::field;
using mapped::load;
using mapped::store;

// Header offsets past the fields every mapped file shares (docs/formats-metrics.md §1).
constexpr std::size_t h_change_counter = 24;
constexpr std::size_t h_reserved = 32;
static_assert(h_reserved + 96 == header_bytes);

// Block offsets (docs/formats-metrics.md §2).
constexpr std::size_t b_sequence = 0;
constexpr std::size_t b_written_wall_ns = 8;
constexpr std::size_t b_epoch = 16;
constexpr std::size_t b_flags = 24;
constexpr std::size_t b_rebuilt_records = 32;
constexpr std::size_t b_estimated_records = 40;
constexpr std::size_t b_scan_records_per_s = 48;
constexpr std::size_t b_rebuild_eta_ms = 56;
constexpr std::size_t b_lag_reserved = 64;   // issue 11's lag figures: 128 bytes
constexpr std::size_t b_reserved = 192;
static_assert(b_lag_reserved + 128 == b_reserved && b_reserved + 64 == block_bytes);

constexpr std::uint32_t flag_progress = 1u << 0;
constexpr std::uint32_t flag_scan_ended = 1u << 1;

constexpr std::string_view subject = "metrics segment";
constexpr file_layout layout{subject, "DIXMETRC", layout_version, header_bytes, block_bytes, "block",
                             segment_layout::max_slot_count};

// The fields a write stores, in offset order after the sequence; the reserved words stay 0.
void store_fields(unsigned char* b, const metrics_block& m) noexcept {
  const auto& p = m.progress.value_or(rebuild_progress{});
  const std::uint32_t flags = (m.progress ? flag_progress : 0) | (p.scan_ended ? flag_scan_ended : 0);
  store<std::uint64_t>(b, b_written_wall_ns, m.written_wall_ns, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_epoch, p.epoch, __ATOMIC_RELAXED);
  store<std::uint32_t>(b, b_flags, flags, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_rebuilt_records, p.rebuilt_records, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_estimated_records, p.estimated_records, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_scan_records_per_s, p.scan_records_per_s, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_rebuild_eta_ms, p.rebuild_eta_ms, __ATOMIC_RELAXED);
}

metrics_block load_fields(unsigned char* b) noexcept {
  metrics_block m;
  m.written_wall_ns = load<std::uint64_t>(b, b_written_wall_ns, __ATOMIC_RELAXED);
  const auto flags = load<std::uint32_t>(b, b_flags, __ATOMIC_RELAXED);
  rebuild_progress p;
  p.epoch = load<std::uint64_t>(b, b_epoch, __ATOMIC_RELAXED);
  p.rebuilt_records = load<std::uint64_t>(b, b_rebuilt_records, __ATOMIC_RELAXED);
  p.estimated_records = load<std::uint64_t>(b, b_estimated_records, __ATOMIC_RELAXED);
  p.scan_records_per_s = load<std::uint64_t>(b, b_scan_records_per_s, __ATOMIC_RELAXED);
  p.rebuild_eta_ms = load<std::uint64_t>(b, b_rebuild_eta_ms, __ATOMIC_RELAXED);
  p.scan_ended = (flags & flag_scan_ended) != 0;
  if ((flags & flag_progress) != 0) m.progress = p;
  return m;
}

}  // namespace

metrics_segment::metrics_segment(std::unique_ptr<mapped_file> file, std::uint32_t count)
    : file_(std::move(file)), count_(count) {}

metrics_segment::~metrics_segment() = default;

result<std::shared_ptr<metrics_segment>> metrics_segment::create_or_validate(const fs::path& directory,
                                                                             std::uint32_t block_count, bool renew) {
  const auto path = directory / "metrics.seg";
  if (!renew) {
    auto m = dix::create_or_validate(path, layout, block_count);
    if (!m) return m.error();
    return of_blocks(directory, std::move(*m), block_count);
  }
  // Made whole beside it, then renamed over it: a reader's mapping of the old file stays valid
  // (an ftruncate in place could cut it short under the reader).
  const auto next = directory / "metrics.seg.new";
  if (::unlink(next.c_str()) != 0 && errno != ENOENT) return posix_error(subject, "unlink", next, errno);
  auto m = dix::create_or_validate(next, layout, block_count);
  if (!m) return m.error();
  if (::rename(next.c_str(), path.c_str()) != 0) return posix_error(subject, "rename", next, errno);
  return of_blocks(directory, std::move(*m), block_count);
}

result<std::shared_ptr<metrics_segment>> metrics_segment::open(const fs::path& directory, std::uint32_t block_count) {
  auto m = open_existing(directory / "metrics.seg", layout, false);
  if (!m) return m.error();
  if (!*m) return std::shared_ptr<metrics_segment>();
  return of_blocks(directory, std::move(**m), block_count);
}

result<std::shared_ptr<metrics_segment>> metrics_segment::of_blocks(const fs::path& directory, mapped_layout&& m,
                                                                    std::uint32_t block_count) {
  if (m.count != block_count) {
    return layout_mismatch(subject, directory / "metrics.seg", "block_count " + std::to_string(m.count),
                           "block_count " + std::to_string(block_count) + " (the readiness segment's slot_count)");
  }
  return std::shared_ptr<metrics_segment>(new metrics_segment(std::move(m.file), m.count));
}

std::uint32_t metrics_segment::block_count() const noexcept { return count_; }

unsigned char* metrics_segment::block(std::uint32_t index) const noexcept {
  return file_->base() + header_bytes + std::size_t{index} * block_bytes;
}

void metrics_segment::write(std::uint32_t index, const metrics_block& m) noexcept {
  auto* b = block(index);
  // Even: the block is whole; the next odd value announces a write. Odd: a writer died mid-write
  // (only one writes at a time); skipping to the next odd value still tells a reader that saw
  // the dead writer's value that the block changed.
  const auto before = load<std::uint64_t>(b, b_sequence, __ATOMIC_RELAXED);
  const auto writing = (before | 1) + ((before & 1) != 0 ? 2 : 0);
  store<std::uint64_t>(b, b_sequence, writing, __ATOMIC_RELAXED);
  // The odd sequence is visible before any field: a reader that loads a new field and then the
  // sequence (behind its acquire fence) finds it odd or moved on.
  __atomic_thread_fence(__ATOMIC_RELEASE);
  store_fields(b, m);
  store<std::uint64_t>(b, b_sequence, writing + 1);  // release: the fields before it
  __atomic_fetch_add(field<std::uint64_t>(file_->base(), h_change_counter), 1, __ATOMIC_RELEASE);
  mapped::wake_all(file_->base(), h_change_counter);
}

void metrics_segment::clear() noexcept {
  for (std::uint32_t i = 0; i < count_; ++i) write(i, metrics_block{});
}

std::optional<metrics_block> metrics_segment::read(std::uint32_t index) const {
  if (index >= count_) return std::nullopt;
  auto* b = block(index);
  for (int attempt = 0; attempt < max_read_attempts; ++attempt) {
    const auto before = load<std::uint64_t>(b, b_sequence);  // acquire: the fields after it
    if ((before & 1) == 0) {
      auto m = load_fields(b);
      // The fields' loads complete before the second look at the sequence.
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      if (load<std::uint64_t>(b, b_sequence, __ATOMIC_RELAXED) == before) return m;
    }
    std::this_thread::yield();  // a write is a handful of stores: let the writer finish
  }
  return std::nullopt;
}

std::uint64_t metrics_segment::change_counter() const noexcept {
  return load<std::uint64_t>(file_->base(), h_change_counter);
}

std::uint64_t metrics_segment::wait_change(std::uint64_t seen, std::chrono::milliseconds timeout) const {
  return mapped::wait_counter(file_->base(), h_change_counter, seen, timeout);
}

}  // namespace dix
