// <dix/segment.hpp>: the public segment reader over a read-only segment_view and, once it exists,
// the read-only metrics segment beside it.
#include <dix/segment.hpp>

#include <dix/names.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <map>
#include <mutex>

#include "adapters/metrics_segment.hpp"
#include "adapters/posix_files.hpp"
#include "adapters/readiness_segment.hpp"

namespace dix {

struct segment_reader::impl {
  std::shared_ptr<segment_view> view;
  mutable std::mutex mutex;                          // guards `metrics`: read() may map it late
  mutable std::shared_ptr<metrics_segment> metrics;  // nullptr until metrics.seg exists

  // The metrics segment, mapped when first found; nullptr while there is none.
  result<std::shared_ptr<metrics_segment>> find_metrics() const {
    std::lock_guard guard(mutex);
    if (metrics) return metrics;
    auto opened = metrics_segment::open(view->directory(), view->slot_count());
    if (!opened) return opened.error();
    metrics = std::move(*opened);
    return metrics;
  }
};

segment_reader::segment_reader(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
segment_reader::~segment_reader() = default;

result<std::unique_ptr<segment_reader>> segment_reader::open(const std::filesystem::path& home_db) {
  auto view = segment_view::open(home_db, segment_view::access::read_only);
  if (!view) return view.error();
  if (!*view) return std::unique_ptr<segment_reader>();
  auto p = std::make_unique<impl>();
  p->view = std::move(*view);
  if (auto metrics = p->find_metrics(); !metrics) return metrics.error();
  return std::unique_ptr<segment_reader>(new segment_reader(std::move(p)));
}

result<void> check_attachable(const std::filesystem::path& home_db) {
  namespace fs = std::filesystem;
  const auto dir = home_db / "dix";
  auto check = [](const fs::path& p) -> result<void> {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) {
      // Missing, or a path through a plain file: nothing of a runtime's there (the store's own
      // open names what is wrong with the path).
      if (errno == ENOENT || errno == ENOTDIR) return {};
      return posix_error("readiness segment", "stat", p, errno);
    }
    return check_private(st, p, "readiness segment");
  };
  if (auto ok = check(dir); !ok) return ok;
  for (const char* name : {"attach.lock", "readiness.lock", "readiness.seg", "metrics.seg", "runner"}) {
    if (auto ok = check(dir / name); !ok) return ok;
  }
  std::error_code ec;
  for (fs::directory_iterator it(dir / "runner", ec), end; !ec && it != end; it.increment(ec)) {
    if (auto ok = check(it->path()); !ok) return ok;
  }
  return {};
}

result<bool> segment_reader::runtime_attached(const std::filesystem::path& home_db) {
  return attach_lock_held(home_db / "dix");
}

result<readiness_table> segment_reader::read() const {
  const auto& view = *impl_->view;
  auto metrics = impl_->find_metrics();
  if (!metrics) return metrics.error();
  readiness_table table;
  // The lock before the slots, as read_readiness: a state read after seeing a runtime attached
  // was published by an attached runtime, never a leftover a later stale reset clears.
  auto attached = view.runtime_attached();
  if (!attached) return attached.error();
  table.attached = *attached;
  table.store_reserve_bytes = view.store_reserve();
  for (const auto& [index, len] : view.damaged_ids()) {
    table.problems.push_back("slot " + std::to_string(index) + " has an id length of " + std::to_string(len) +
                             " bytes (at most 64): a damaged slot, not listed");
  }
  std::map<std::string, std::uint32_t> first_slot;
  for (auto& [index, id] : view.claimed()) {
    if (auto [at, fresh] = first_slot.emplace(id, index); !fresh) {
      table.problems.push_back("slot " + std::to_string(index) + " repeats the id " + escape_bytes(id) + " of slot " +
                               std::to_string(at->second) + ": a damaged segment, listed once (slot " +
                               std::to_string(at->second) + ")");
      continue;
    }
    readiness_entry entry{std::move(id), view.read(index), view.hold(index), std::nullopt, 0, std::nullopt,
                          view.rebuild_requested(index)};
    if (!table.attached) {
      entry.readiness = readiness{readiness_state::unknown, readiness_reason::none, 0, entry.readiness.owner_epoch};
      entry.hold = backend_hold::none;
    } else if (*metrics) {
      // Figures of the epoch the slot holds: any other epoch's are an earlier attempt's or owner's.
      auto block = (*metrics)->read(index);
      if (block && block->progress && block->progress->epoch == entry.readiness.owner_epoch) {
        entry.progress = block->progress;
        entry.progress_written_ns = block->written_wall_ns;
      }
      if (block && block->lag && block->lag->epoch == entry.readiness.owner_epoch) entry.lag = block->lag;
    }
    table.entries.push_back(std::move(entry));
  }
  return table;
}

std::uint64_t segment_reader::change_counter() const noexcept { return impl_->view->segment_change_counter(); }

std::uint64_t segment_reader::wait_change(std::uint64_t seen, std::chrono::milliseconds timeout) const {
  return impl_->view->wait_change(seen, timeout);
}

}  // namespace dix
