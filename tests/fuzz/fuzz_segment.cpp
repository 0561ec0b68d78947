// Fuzz target: the readiness segment (formats.md §4; adapters/readiness_segment.cpp) as any
// process finds it on disk. Each input becomes the whole of `<home>/dix/readiness.seg` (a private
// temporary home made once, mode 0700/0600 as a runtime makes them), which is then opened the
// ways a tool opens it: a read-only segment_view (the layout check, then every slot read, the
// claimed ids and a find of each), the public segment_reader, and a read-write view that requests
// a rebuild in a claimed slot, as request_rebuild does. Properties: a rejected file is
// segment_layout_mismatch; an accepted one is exactly 128 + slot_count × 128 bytes, and every
// claimed id is found at its own slot.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include <dix/segment.hpp>

#include "adapters/readiness_segment.hpp"
#include "core/bytes.hpp"

#include "fuzz_check.hpp"

namespace {

namespace fs = std::filesystem;

// The temporary home with its dix/ directory (0700, as a runtime makes it), removed at exit.
class fuzz_home : public dix::fuzz::temp_home {
 public:
  fuzz_home() : temp_home("dix-fuzz-segment") {
    std::error_code ec;
    fs::create_directory(path() / "dix", ec);
    FUZZ_CHECK(!ec);
    fs::permissions(path() / "dix", fs::perms::owner_all, ec);
    FUZZ_CHECK(!ec);
  }

  void write_segment(const std::uint8_t* data, std::size_t size) const {
    dix::fuzz::write_file(path() / "dix" / "readiness.seg", data, size);
  }
};

constexpr std::size_t slot_count_offset = 20;  // formats.md §4.2

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fuzz_home home;
  home.write_segment(data, size);

  auto view = dix::segment_view::open(home.path(), dix::segment_view::access::read_only);
  if (!view) {
    FUZZ_CHECK(view.error().value() == dix::errc::segment_layout_mismatch);
  } else if (*view) {
    const auto count = dix::get_le<std::uint32_t>(dix::fuzz::as_view(data, size), slot_count_offset);
    FUZZ_CHECK(size == dix::segment_layout::header_bytes +
                           std::size_t{count} * dix::segment_layout::slot_bytes);
    for (std::uint32_t i = 0; i < count; ++i) (void)(*view)->read(i);
    for (const auto& [index, id] : (*view)->claimed()) {
      FUZZ_CHECK(index < count);
      FUZZ_CHECK(!id.empty() && id.size() <= dix::segment_layout::max_id_bytes);
      auto found = (*view)->find(id);
      FUZZ_CHECK(found && *found <= index);  // the first slot holding the id
    }
    (void)(*view)->find("fuzz-index");
    (void)(*view)->segment_change_counter();
    FUZZ_CHECK((*view)->slot(0) == nullptr);  // read-only
  }

  auto reader = dix::segment_reader::open(home.path());
  if (reader && *reader) {
    auto table = (*reader)->read();
    FUZZ_CHECK(table);
    (void)(*reader)->change_counter();
  }

  auto writable = dix::segment_view::open(home.path(), dix::segment_view::access::read_write);
  if (writable && *writable) {
    auto claimed = (*writable)->claimed();
    if (!claimed.empty()) {
      auto slot = (*writable)->slot(claimed.front().first);
      FUZZ_CHECK(slot != nullptr);
      slot->request_rebuild();
      FUZZ_CHECK(slot->rebuild_requested());
    }
  }
  return 0;
}
