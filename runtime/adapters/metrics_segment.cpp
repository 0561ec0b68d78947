#include "adapters/metrics_segment.hpp"

#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <thread>

#include "adapters/mapped_file.hpp"
#include "adapters/posix_files.hpp"
#include "adapters/readiness_segment.hpp"  // segment_layout::max_slot_count
#include "core/names.hpp"

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
// The lag part (128 bytes from offset 64; zero in a block an older writer wrote, whose lag_flags
// then say "no lag figures").
constexpr std::size_t b_lag = 64;
constexpr std::size_t b_lag_epoch = 64;
constexpr std::size_t b_lag_taken_wall_ns = 72;
constexpr std::size_t b_lag_ms = 80;
constexpr std::size_t b_cursor_lag_ms = 88;
constexpr std::size_t b_stalled_ms = 96;
constexpr std::size_t b_unread_age_ms = 104;
constexpr std::size_t b_oldest_accepted_age_ms = 112;
constexpr std::size_t b_accepted_batches = 120;
constexpr std::size_t b_max_accepted_batches_ahead = 124;
constexpr std::size_t b_lag_gate = 128;
constexpr std::size_t b_transient_faults = 132;
constexpr std::size_t b_runner_state = 136;
constexpr std::size_t b_lag_flags = 137;
constexpr std::size_t b_last_fault = 138;
constexpr std::size_t b_log_count = 139;
constexpr std::size_t b_max_flush_age_ms = 140;  // 0: unknown (a writer before decision 0031)
constexpr std::size_t b_lag_logs = 144;  // lag_log_slots × 24: sequence_lag, read_per_s, retention_headroom_ms
constexpr std::size_t lag_log_bytes = 24;
constexpr std::size_t b_reserved = 192;
static_assert(b_lag_logs + lag_log_slots * lag_log_bytes == b_reserved && b_lag + 128 == b_reserved &&
              b_reserved + 64 == names_free_block_bytes);
// The link part (64 bytes from offset 192, issue 28): a remote backend's link, written with the
// lag part. Zero (an older writer: the bytes were reserved) reads as no link figures.
constexpr std::size_t b_link_flags = 192;  // u32: bit 0 present, bit 1 connected
constexpr std::size_t b_link_window_batches = 196;
constexpr std::size_t b_link_window_bytes = 200;
constexpr std::size_t b_link_round_trip_us = 208;
constexpr std::size_t b_link_durable_sequence = 216;
constexpr std::size_t b_link_connects = 224;
constexpr std::size_t b_link_address = 232;  // 24 bytes, zero padded
constexpr std::size_t link_address_bytes = 24;
static_assert(b_link_address + link_address_bytes == b_reserved + 64);
constexpr std::uint32_t link_present = 1u << 0;
constexpr std::uint32_t link_connected = 1u << 1;
// The names part (layout 2, decision 0030): the names of the logs the lag part has figures of.
constexpr std::size_t b_name_lengths = 256;  // lag_log_slots × 1: 0 no name, 1…64
constexpr std::size_t b_names = 264;         // lag_log_slots × 64: the name, zero padded
constexpr std::size_t name_bytes = 64;
constexpr std::size_t b_names_reserved = 392;
static_assert(b_name_lengths + lag_log_slots <= b_names && b_names + lag_log_slots * name_bytes == b_names_reserved &&
              b_names_reserved + 120 == block_bytes);
// The verify part (72 bytes from offset 392, issue 31), written with the lag part. Zero (an older
// writer: the bytes were reserved) reads as no verify figures.
constexpr std::size_t b_verify_flags = 392;  // u32: bit 0 present, bit 1 verifying, bit 2 verified
constexpr std::size_t b_verify_failures = 400;
constexpr std::size_t b_verified_records = 408;
constexpr std::size_t b_verified_age_ms = 416;
constexpr std::size_t b_verified_sequences = 424;  // lag_log_slots × u64, the logs of the lag part
constexpr std::size_t b_verify_read = 440;      // the running scan's entries read
constexpr std::size_t b_verify_expected = 448;  // … and expected
constexpr std::size_t b_verify_eta_ms = 456;    // when verify_eta_known
constexpr std::size_t b_verify_reserved = 464;
static_assert(b_verified_sequences + lag_log_slots * 8 == b_verify_read && b_verify_reserved + 48 == block_bytes);
constexpr std::uint32_t verify_present = 1u << 0;
constexpr std::uint32_t verify_running = 1u << 1;
constexpr std::uint32_t verify_verified = 1u << 2;
constexpr std::uint32_t verify_eta_known = 1u << 3;

constexpr std::uint8_t lag_present = 1u << 0;
constexpr std::uint8_t lag_stalled_growing = 1u << 1;
constexpr std::uint8_t lag_unread_growing = 1u << 2;
constexpr std::uint8_t lag_oldest_accepted_growing = 1u << 3;

constexpr std::uint32_t flag_progress = 1u << 0;
constexpr std::uint32_t flag_scan_ended = 1u << 1;

constexpr std::string_view subject = "metrics segment";
constexpr file_layout layout{subject, "DIXMETRC", layout_version, header_bytes, block_bytes, "block",
                             segment_layout::max_slot_count};
constexpr file_layout names_free_layout{subject, "DIXMETRC", names_free_layout_version, header_bytes,
                                        names_free_block_bytes, "block", segment_layout::max_slot_count};

// A name as eight 64-bit words, little-endian, zero padded (as a readiness slot's id, formats.md
// §4.4); a name outside the rules is stored as none.
void store_name(unsigned char* b, std::size_t i, std::string_view name) noexcept {
  if (!is_valid_log_name(name)) name = {};
  store<std::uint8_t>(b, b_name_lengths + i, static_cast<std::uint8_t>(name.size()), __ATOMIC_RELAXED);
  for (std::size_t w = 0; w < name_bytes / 8; ++w) {
    std::uint64_t word = 0;
    for (std::size_t k = 8; k-- > 0;) {
      const auto at = w * 8 + k;
      word = (word << 8) | (at < name.size() ? static_cast<unsigned char>(name[at]) : 0u);
    }
    store<std::uint64_t>(b, b_names + i * name_bytes + w * 8, word, __ATOMIC_RELAXED);
  }
}

// The name stored at position i; empty for none (or, from a foreign writer, one outside the rules).
std::string load_name(unsigned char* b, std::size_t i) {
  const auto length = load<std::uint8_t>(b, b_name_lengths + i, __ATOMIC_RELAXED);
  if (length == 0 || length > name_bytes) return {};
  std::string name(name_bytes, '\0');
  for (std::size_t w = 0; w < name_bytes / 8; ++w) {
    auto word = load<std::uint64_t>(b, b_names + i * name_bytes + w * 8, __ATOMIC_RELAXED);
    for (std::size_t k = 0; k < 8; ++k, word >>= 8) name[w * 8 + k] = static_cast<char>(word & 0xFF);
  }
  name.resize(length);
  return is_valid_log_name(name) ? name : std::string();
}

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
  const auto& l = m.lag.value_or(lag_figures{});
  const auto lag_flags = static_cast<std::uint8_t>((m.lag ? lag_present : 0) | (l.stalled_growing ? lag_stalled_growing : 0) |
                                                   (l.unread_growing ? lag_unread_growing : 0) |
                                                   (l.oldest_accepted_growing ? lag_oldest_accepted_growing : 0));
  store<std::uint64_t>(b, b_lag_epoch, l.epoch, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_lag_taken_wall_ns, l.taken_wall_ns, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_lag_ms, l.lag_ms, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_cursor_lag_ms, l.cursor_lag_ms, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_stalled_ms, l.stalled_ms, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_unread_age_ms, l.unread_age_ms, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_oldest_accepted_age_ms, l.oldest_accepted_age_ms, __ATOMIC_RELAXED);
  store<std::uint32_t>(b, b_accepted_batches, l.accepted_batches, __ATOMIC_RELAXED);
  store<std::uint32_t>(b, b_max_accepted_batches_ahead, l.max_accepted_batches_ahead, __ATOMIC_RELAXED);
  store<std::uint32_t>(b, b_lag_gate, l.lag_gate, __ATOMIC_RELAXED);
  store<std::uint32_t>(b, b_transient_faults, l.transient_faults, __ATOMIC_RELAXED);
  store<std::uint32_t>(b, b_max_flush_age_ms, l.max_flush_age_ms, __ATOMIC_RELAXED);
  store<std::uint8_t>(b, b_runner_state, static_cast<std::uint8_t>(l.state), __ATOMIC_RELAXED);
  store<std::uint8_t>(b, b_lag_flags, lag_flags, __ATOMIC_RELAXED);
  store<std::uint8_t>(b, b_last_fault, static_cast<std::uint8_t>(l.last_fault), __ATOMIC_RELAXED);
  store<std::uint8_t>(b, b_log_count, static_cast<std::uint8_t>(std::min<std::uint32_t>(l.log_count, 255)),
                      __ATOMIC_RELAXED);
  for (std::size_t i = 0; i < lag_log_slots; ++i) {
    const auto& g = i < l.logs.size() ? l.logs[i] : log_lag_figures{0, 0, 0};
    const auto at = b_lag_logs + i * lag_log_bytes;
    store<std::uint64_t>(b, at, g.sequence_lag, __ATOMIC_RELAXED);
    store<std::uint64_t>(b, at + 8, g.read_per_s, __ATOMIC_RELAXED);
    store<std::uint64_t>(b, at + 16, static_cast<std::uint64_t>(g.retention_headroom_ms), __ATOMIC_RELAXED);
    store_name(b, i, g.log);
    store<std::uint64_t>(b, b_verified_sequences + i * 8, g.verified_sequence, __ATOMIC_RELAXED);
  }
  store<std::uint32_t>(b, b_verify_flags,
                       (m.lag ? verify_present : 0) | (l.verifying ? verify_running : 0) | (l.verified ? verify_verified : 0) |
                         (l.verify_eta_ms >= 0 ? verify_eta_known : 0),
                       __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_verify_failures, l.verify_failures, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_verified_records, l.verified_records, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_verified_age_ms, l.verified_age_ms, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_verify_read, l.verify_read_entries, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_verify_expected, l.verify_expected_entries, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_verify_eta_ms, l.verify_eta_ms >= 0 ? static_cast<std::uint64_t>(l.verify_eta_ms) : 0,
                       __ATOMIC_RELAXED);
  const auto& k = l.link.value_or(link_figures{});
  store<std::uint32_t>(b, b_link_flags, (l.link ? link_present : 0) | (k.connected ? link_connected : 0), __ATOMIC_RELAXED);
  store<std::uint32_t>(b, b_link_window_batches, k.window_batches, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_link_window_bytes, k.window_bytes, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_link_round_trip_us, k.round_trip_us, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_link_durable_sequence, k.durable_sequence, __ATOMIC_RELAXED);
  store<std::uint64_t>(b, b_link_connects, k.connects, __ATOMIC_RELAXED);
  for (std::size_t w = 0; w < link_address_bytes / 8; ++w) {
    std::uint64_t word = 0;
    for (std::size_t c = 0; c < 8; ++c) {
      const auto at = w * 8 + c;
      if (at < k.address.size()) word |= static_cast<std::uint64_t>(static_cast<unsigned char>(k.address[at])) << (8 * c);
    }
    store<std::uint64_t>(b, b_link_address + w * 8, word, __ATOMIC_RELAXED);
  }
}

// `names`: the block is of layout 2 (a layout-1 block ends before the names part).
metrics_block load_fields(unsigned char* b, bool names) {
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
  const auto lag_flags = load<std::uint8_t>(b, b_lag_flags, __ATOMIC_RELAXED);
  if ((lag_flags & lag_present) == 0) return m;
  lag_figures l;
  l.epoch = load<std::uint64_t>(b, b_lag_epoch, __ATOMIC_RELAXED);
  l.taken_wall_ns = load<std::uint64_t>(b, b_lag_taken_wall_ns, __ATOMIC_RELAXED);
  l.lag_ms = load<std::uint64_t>(b, b_lag_ms, __ATOMIC_RELAXED);
  l.cursor_lag_ms = load<std::uint64_t>(b, b_cursor_lag_ms, __ATOMIC_RELAXED);
  l.stalled_ms = load<std::uint64_t>(b, b_stalled_ms, __ATOMIC_RELAXED);
  l.unread_age_ms = load<std::uint64_t>(b, b_unread_age_ms, __ATOMIC_RELAXED);
  l.oldest_accepted_age_ms = load<std::uint64_t>(b, b_oldest_accepted_age_ms, __ATOMIC_RELAXED);
  l.accepted_batches = load<std::uint32_t>(b, b_accepted_batches, __ATOMIC_RELAXED);
  l.max_accepted_batches_ahead = load<std::uint32_t>(b, b_max_accepted_batches_ahead, __ATOMIC_RELAXED);
  l.lag_gate = load<std::uint32_t>(b, b_lag_gate, __ATOMIC_RELAXED);
  l.transient_faults = load<std::uint32_t>(b, b_transient_faults, __ATOMIC_RELAXED);
  l.max_flush_age_ms = load<std::uint32_t>(b, b_max_flush_age_ms, __ATOMIC_RELAXED);
  // A value out of range (a torn or foreign block cannot pass the seqlock, but a newer writer's
  // state might) reads as the nearest safe meaning rather than an invalid enum.
  const auto state = load<std::uint8_t>(b, b_runner_state, __ATOMIC_RELAXED);
  l.state = state <= static_cast<std::uint8_t>(runner_state::stopped) ? static_cast<runner_state>(state) : runner_state::running;
  const auto fault = load<std::uint8_t>(b, b_last_fault, __ATOMIC_RELAXED);
  l.last_fault = fault <= static_cast<std::uint8_t>(last_readiness_reason) ? static_cast<readiness_reason>(fault)
                                                                                     : readiness_reason::none;
  l.stalled_growing = (lag_flags & lag_stalled_growing) != 0;
  l.unread_growing = (lag_flags & lag_unread_growing) != 0;
  l.oldest_accepted_growing = (lag_flags & lag_oldest_accepted_growing) != 0;
  l.log_count = load<std::uint8_t>(b, b_log_count, __ATOMIC_RELAXED);
  for (std::size_t i = 0; i < lag_log_slots && i < l.log_count; ++i) {
    const auto at = b_lag_logs + i * lag_log_bytes;
    l.logs.push_back(log_lag_figures{load<std::uint64_t>(b, at, __ATOMIC_RELAXED), load<std::uint64_t>(b, at + 8, __ATOMIC_RELAXED),
                                     static_cast<std::int64_t>(load<std::uint64_t>(b, at + 16, __ATOMIC_RELAXED)),
                                     names ? load_name(b, i) : std::string()});
    if (names) l.logs.back().verified_sequence = load<std::uint64_t>(b, b_verified_sequences + i * 8, __ATOMIC_RELAXED);
  }
  const auto verify_flags = names ? load<std::uint32_t>(b, b_verify_flags, __ATOMIC_RELAXED) : 0;
  if ((verify_flags & verify_present) != 0) {
    l.verifying = (verify_flags & verify_running) != 0;
    l.verified = (verify_flags & verify_verified) != 0;
    l.verify_failures = load<std::uint64_t>(b, b_verify_failures, __ATOMIC_RELAXED);
    l.verified_records = load<std::uint64_t>(b, b_verified_records, __ATOMIC_RELAXED);
    l.verified_age_ms = load<std::uint64_t>(b, b_verified_age_ms, __ATOMIC_RELAXED);
    l.verify_read_entries = load<std::uint64_t>(b, b_verify_read, __ATOMIC_RELAXED);
    l.verify_expected_entries = load<std::uint64_t>(b, b_verify_expected, __ATOMIC_RELAXED);
    if ((verify_flags & verify_eta_known) != 0) {
      l.verify_eta_ms = static_cast<std::int64_t>(
        std::min<std::uint64_t>(load<std::uint64_t>(b, b_verify_eta_ms, __ATOMIC_RELAXED), static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())));
    }
  }
  const auto link_flags = load<std::uint32_t>(b, b_link_flags, __ATOMIC_RELAXED);
  if ((link_flags & link_present) != 0) {
    link_figures k;
    k.connected = (link_flags & link_connected) != 0;
    k.window_batches = load<std::uint32_t>(b, b_link_window_batches, __ATOMIC_RELAXED);
    k.window_bytes = load<std::uint64_t>(b, b_link_window_bytes, __ATOMIC_RELAXED);
    k.round_trip_us = load<std::uint64_t>(b, b_link_round_trip_us, __ATOMIC_RELAXED);
    k.durable_sequence = load<std::uint64_t>(b, b_link_durable_sequence, __ATOMIC_RELAXED);
    k.connects = load<std::uint64_t>(b, b_link_connects, __ATOMIC_RELAXED);
    for (std::size_t w = 0; w < link_address_bytes / 8; ++w) {
      const auto word = load<std::uint64_t>(b, b_link_address + w * 8, __ATOMIC_RELAXED);
      for (std::size_t c = 0; c < 8; ++c) {
        const auto ch = static_cast<char>((word >> (8 * c)) & 0xFF);
        if (ch == '\0') break;
        k.address.push_back(ch);
      }
      if (k.address.size() < (w + 1) * 8) break;
    }
    l.link = std::move(k);
  }
  m.lag = std::move(l);
  return m;
}

}  // namespace

metrics_segment::metrics_segment(std::unique_ptr<mapped_file> file, std::uint32_t count, bool names)
    : file_(std::move(file)), count_(count), names_(names) {}

metrics_segment::~metrics_segment() = default;

result<std::shared_ptr<metrics_segment>> metrics_segment::create_or_validate(const fs::path& directory,
                                                                             std::uint32_t block_count, bool renew,
                                                                             bool first) {
  const auto path = directory / "metrics.seg";
  if (!renew) {
    auto m = dix::create_or_validate(path, layout, block_count);
    if (m) return of_blocks(directory, std::move(*m), block_count);
    // A layout-1 file holds only the figures of runtimes that were attached: with none attached
    // now nothing of it is live, so the first attacher replaces it (decision 0030). A later
    // attacher refuses it: an older runtime is attached and writes it.
    if (m.error().value() != errc::segment_layout_mismatch || !first) return m.error();
    auto older = open_existing(path, names_free_layout, true);
    if (!older || !*older) return m.error();
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
  if (!m && m.error().value() == errc::segment_layout_mismatch) {
    // An older runtime's file: its figures read as before, without names.
    if (auto older = open_existing(directory / "metrics.seg", names_free_layout, false); older && *older) {
      return of_blocks(directory, std::move(**older), block_count, false);
    }
  }
  if (!m) return m.error();
  if (!*m) return std::shared_ptr<metrics_segment>();
  return of_blocks(directory, std::move(**m), block_count);
}

result<std::shared_ptr<metrics_segment>> metrics_segment::of_blocks(const fs::path& directory, mapped_layout&& m,
                                                                    std::uint32_t block_count, bool names) {
  if (m.count != block_count) {
    return layout_mismatch(subject, directory / "metrics.seg", "block_count " + std::to_string(m.count),
                           "block_count " + std::to_string(block_count) + " (the readiness segment's slot_count)");
  }
  return std::shared_ptr<metrics_segment>(new metrics_segment(std::move(m.file), m.count, names));
}

std::uint32_t metrics_segment::block_count() const noexcept { return count_; }

std::uint32_t metrics_segment::layout_version() const noexcept {
  return names_ ? metrics_layout::layout_version : names_free_layout_version;
}

unsigned char* metrics_segment::block(std::uint32_t index) const noexcept {
  return file_->base() + header_bytes + std::size_t{index} * (names_ ? block_bytes : names_free_block_bytes);
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
      auto m = load_fields(b, names_);
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
