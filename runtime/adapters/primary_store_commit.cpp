// The one write path of a primary store: impl::write stamps and writes a WriteBatch under the
// commit mutex (so one batch is one WAL record), after the free-space gate of decision 0013
// (admit_space, with a flush when the unflushed WAL is what keeps the store below its reserve);
// the system transactions on dix.meta (write_meta, write_clock, commit_system) and read_meta.
#include "adapters/primary_store_detail.hpp"

#include <algorithm>
#include <new>

#include <dix/memory.hpp>

#include "adapters/write_batch_reader.hpp"

#include "core/bytes.hpp"
#include "core/clock.hpp"
#include "core/index_time.hpp"
#include "core/names.hpp"
#include "core/txn_header.hpp"

namespace dix {
namespace store_detail {

// Caller holds lifecycle.
result<commit_info> write_meta(primary_store::impl& p, const std::vector<meta_op>& ops) {
  batch_builder batch;
  for (const auto& op : ops) {
    if (op.kind == op_kind::del) batch.del(p.meta, op.key);
    else batch.put_plain(p.meta, op.key, op.value);
  }
  return p.write_locked(header_flag::system, batch, true);
}

result<void> write_clock(primary_store::impl& p) {
  std::string value;
  put_le<std::uint64_t>(value, process_index_time().next(system_clock().wall_now_ns()));
  auto done = write_meta(p, {meta_op{op_kind::put, "clock", std::move(value)}});
  if (!done) return done.error();
  return {};
}

}  // namespace store_detail

using namespace store_detail;

result<commit_info> primary_store::impl::write(std::uint8_t flags, batch_builder& batch, bool sync) {
  std::shared_lock lock(lifecycle);
  return write_locked(flags, batch, sync);
}

result<commit_info> primary_store::impl::write_locked(std::uint8_t flags, batch_builder& batch, bool sync) {
  if (!open) return error{errc::io_error, "primary store " + path.string() + " is closed"};
  if (read_only) return error{errc::invalid_argument, "primary store " + path.string() + " is open read-only"};
  const auto ops = batch.ops();
  if (ops == 0) return commit_info{};
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  wo.disableWAL = false;
  std::unique_lock guard(commit_mutex);
  // The WAL record now and the memtable's flush later: each takes about the batch's size.
  if (auto room = admit_space(flags, 2 * std::uint64_t{batch.GetDataSize()}); !room) return room.error();
  commit_info info;
  info.time = process_index_time().next(system_clock().wall_now_ns());
  batch.stamp(flags, info.time);
  auto s = db->Write(wo, &batch);
  // What the tail drops is freed after the commit mutex (declared before `guard`'s unlock).
  std::vector<std::shared_ptr<const wal_transaction>> dropped;
  if (!s.ok()) {
    // The record may be in the WAL all the same: no follower may step over it from the tail.
    tail->reset();
    return error{errc::io_error, "writing to " + path.string() + ": " + s.ToString()};
  }
  info.sequence = db->GetLatestSequenceNumber() - ops + 1;
  if (tail->wanted()) dropped = append_to_tail(batch, info.sequence);
  else tail->missed();
  if (sync) {
    auto end = info.sequence + ops - 1;
    auto prev = synced_sequence.load(std::memory_order_relaxed);
    while (prev < end && !synced_sequence.compare_exchange_weak(prev, end)) {
    }
  }
  guard.unlock();
  notify(commit_event{info, flags});
  return info;
}

std::vector<std::shared_ptr<const wal_transaction>> primary_store::impl::append_to_tail(const rocksdb::WriteBatch& batch,
                                                                                       std::uint64_t sequence) {
  // The commit is written: whatever happens here, it stands, and the tail is only an optimisation.
  // A batch that cannot be decoded (the WAL reader meets the same batch and reports it) or memory
  // that cannot be had ends the tail's generation: its followers read the WAL.
  try {
    if (!tail->fits(batch.GetDataSize())) return tail->take_all();  // read from the WAL instead
    // A copy of the bytes RocksDB wrote as the WAL record, decoded by the WAL reader's decoder.
    auto copy = std::make_shared<const rocksdb::WriteBatch>(batch);
    auto txn = read_write_batch(*copy, sequence, tail_scratch);
    if (txn) {
      if (tail_families.empty() || has_unknown_family(tail_scratch, tail_families)) tail_families = families();
      auto decoded = decode_transaction(tail_scratch, tail_families);
      if (decoded) {
        decoded->storage = std::move(copy);
        return tail->append(std::make_shared<const wal_transaction>(std::move(*decoded)));
      }
    }
  } catch (...) {  // std::bad_alloc, or anything else: the tail is only an optimisation
  }
  tail->reset();
  return {};
}

commit_tail::limits primary_store::impl::commit_tail_limits() {
  commit_tail::limits l;
  l.max_bytes = std::min<std::uint64_t>(l.max_bytes, memory_budget().budget_bytes / 16);
  return l;
}

bool primary_store::impl::flush_for_space(std::uint64_t floor) {
  if (space.own_pending_bytes() < (64u << 10) || space.available_bytes() < space.pending_bytes() + floor / 2) return false;
  rocksdb::FlushOptions fo;
  fo.wait = true;
  fo.allow_write_stall = true;
  return db->Flush(fo, handles).ok();
}

namespace {
// What the gate counted as used beside the reading: the store's unflushed WAL, and what the
// process's other writers on the filesystem (its indexes) will still write.
// "of A available, W of unflushed WAL [and I its indexes in this process will still write]
// counted as used": the free figure the refusal shows is A less these (issue 34).
std::string pending_words(const space_gate& space) {
  std::string words = "of " + describe_bytes(space.available_bytes()) + " available, " +
                      describe_bytes(space.own_pending_bytes()) + " of unflushed WAL";
  const auto others = space.pending_bytes() - std::min(space.pending_bytes(), space.own_pending_bytes());
  if (others != 0) words += " and " + describe_bytes(others) + " its indexes in this process will still write";
  return words + " counted as used";
}
}  // namespace

result<void> primary_store::impl::admit_space(std::uint8_t flags, std::uint64_t bytes) {
  const bool system = (flags & header_flag::system) != 0;
  auto floor = [&] {
    const auto reserve = store_reserve_bytes(options.free_space_reserve_bytes, space.capacity_bytes());
    return system ? reserve / 2 : reserve;
  };
  const auto now = system_clock().steady_now();
  auto read_again = [&]() -> result<void> {
    auto reading = probe(path);
    if (!reading) return reading.error();
    space.record(*reading, live_wal_bytes(path), now);
    return {};
  };
  if (space.due(now, bytes, floor())) {
    if (auto read = read_again(); !read) return read;
  }
  if (space.admits(bytes, floor())) {
    space.charge(bytes);
    return {};
  }
  // The unflushed WAL counts as used because its memtables' flush will write about as much. When
  // that is what keeps the store below its reserve, flush now — what it writes is real then, not
  // an estimate (deduplicated, compressed: usually far less) — and measure again (issue 34: with
  // no more commits nothing else would flush, and the store stayed refused with room to spare).
  // Only with room for the flush itself above half the reserve; under the commit mutex, so no
  // commit waits behind it that was not refused anyway.
  if (flush_for_space(floor())) {
    if (auto read = read_again(); !read) return read;
    if (space.admits(bytes, floor())) {
      space.charge(bytes);
      return {};
    }
  }
  auto limit = system ? "half its free-space reserve, " + describe_bytes(floor()) + " (a system transaction)"
                      : "its free-space reserve of " + describe_bytes(floor());
  // Free at or above the reserve itself, this commit is what would take it below (issue 34: "X
  // free, below a reserve smaller than X" read wrong).
  if (space.free_bytes() >= floor()) limit += " plus this commit's " + describe_bytes(bytes);
  return error{errc::io_error, describe_shortage("primary store " + path.string(), space.free_bytes(), limit) +
                                   " (" + pending_words(space) + "); nothing written, retry once space is freed"};
}

result<commit_info> commit_system(primary_store& s, const std::vector<meta_op>& ops) {
  auto& p = primary_store_access::get(s);
  std::shared_lock lock(p.lifecycle);
  return write_meta(p, ops);
}

result<std::optional<std::string>> read_meta(const primary_store& s, std::string_view key) {
  auto& p = primary_store_access::get(s);
  std::shared_lock lock(p.lifecycle);
  if (!p.open) return error{errc::io_error, "primary store " + p.path.string() + " is closed"};
  std::string value;
  auto st = p.db->Get(rocksdb::ReadOptions{}, p.meta, slice(key), &value);
  if (st.IsNotFound()) return std::optional<std::string>{};
  if (!st.ok()) return error{errc::io_error, "reading dix.meta: " + st.ToString()};
  return std::optional<std::string>{std::move(value)};
}

}  // namespace dix
