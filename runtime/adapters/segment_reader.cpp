// <dix/segment.hpp>: the public segment reader over a read-only segment_view.
#include <dix/segment.hpp>

#include "adapters/readiness_segment.hpp"

namespace dix {

struct segment_reader::impl {
  std::shared_ptr<segment_view> view;
};

segment_reader::segment_reader(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
segment_reader::~segment_reader() = default;

result<std::unique_ptr<segment_reader>> segment_reader::open(const std::filesystem::path& home_db) {
  auto view = segment_view::open(home_db, segment_view::access::read_only);
  if (!view) return view.error();
  if (!*view) return std::unique_ptr<segment_reader>();
  return std::unique_ptr<segment_reader>(new segment_reader(std::make_unique<impl>(impl{std::move(*view)})));
}

result<readiness_table> segment_reader::read() const {
  const auto& view = *impl_->view;
  readiness_table table;
  // The lock before the slots, as read_readiness: a state read after seeing a runtime attached
  // was published by an attached runtime, never a leftover a later stale reset clears.
  auto attached = view.runtime_attached();
  if (!attached) return attached.error();
  table.attached = *attached;
  table.store_reserve_bytes = view.store_reserve();
  for (auto& [index, id] : view.claimed()) {
    auto r = view.read(index);
    auto hold = view.hold(index);
    if (!table.attached) {
      r = readiness{readiness_state::unknown, readiness_reason::none, 0, r.owner_epoch};
      hold = backend_hold::none;
    }
    table.entries.push_back(readiness_entry{std::move(id), r, hold});
  }
  return table;
}

std::uint64_t segment_reader::change_counter() const noexcept { return impl_->view->segment_change_counter(); }

std::uint64_t segment_reader::wait_change(std::uint64_t seen, std::chrono::milliseconds timeout) const {
  return impl_->view->wait_change(seen, timeout);
}

}  // namespace dix
