// Fuzz target: the metrics segment (docs/formats-metrics.md; adapters/metrics_segment.cpp) as a
// reader finds it on disk beside a valid readiness segment. A runtime of this process stays
// attached to a private temporary home made once (a readiness segment of 2 slots, "by-brand"
// claimed and rebuilding), so readers take the path that reads the blocks; each input becomes the
// whole of `<home>/dix/metrics.seg` (written aside and renamed over it: the attached runtime's
// own mapping keeps the old file). It is then opened as `dix status` opens it: metrics_segment::open
// and every block read, and the public segment_reader. Properties: a rejected file is
// segment_layout_mismatch; an accepted one is exactly 128 + 2 × 512 bytes (128 + 2 × 256 for an
// older runtime's layout 1); a block read is whole or nothing, never a crash.
#include <filesystem>
#include <memory>
#include <system_error>

#include <dix/segment.hpp>

#include "adapters/metrics_segment.hpp"
#include "adapters/readiness_segment.hpp"

#include "fuzz_check.hpp"

namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t slots = 2;

// The temporary home and the runtime attached to it, removed at exit.
class fuzz_home : public dix::fuzz::temp_home {
 public:
  fuzz_home() : temp_home("dix-fuzz-metrics") {
    auto segment = dix::readiness_segment::attach(path(), slots);
    FUZZ_CHECK(segment);
    segment_ = std::move(*segment);
    auto slot = segment_->claim("by-brand");
    FUZZ_CHECK(slot);
    slot_ = std::move(*slot);
    FUZZ_CHECK(slot_->mint_epoch());
    slot_->publish(dix::readiness_state::rebuilding, dix::readiness_reason::rebuild_requested, 1);
  }
  ~fuzz_home() {
    slot_.reset();
    segment_.reset();
  }

  // Written aside, then renamed over metrics.seg: the attached runtime keeps mapping its own file.
  void write_metrics(const std::uint8_t* data, std::size_t size) const {
    const auto aside = path() / "dix" / "metrics.seg.next";
    dix::fuzz::write_file(aside, data, size);
    std::error_code ec;
    fs::rename(aside, path() / "dix" / "metrics.seg", ec);
    FUZZ_CHECK(!ec);
  }

 private:
  std::shared_ptr<dix::readiness_segment> segment_;
  std::shared_ptr<dix::segment_slot> slot_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fuzz_home home;
  home.write_metrics(data, size);

  auto metrics = dix::metrics_segment::open(home.path() / "dix", slots);
  if (!metrics) {
    FUZZ_CHECK(metrics.error().value() == dix::errc::segment_layout_mismatch);
  } else if (*metrics) {
    const auto block_bytes = (*metrics)->layout_version() == dix::metrics_layout::layout_version
                               ? dix::metrics_layout::block_bytes
                               : dix::metrics_layout::names_free_block_bytes;
    FUZZ_CHECK(size == dix::metrics_layout::header_bytes + std::size_t{slots} * block_bytes);
    for (std::uint32_t i = 0; i < slots; ++i) (void)(*metrics)->read(i);
    FUZZ_CHECK(!(*metrics)->read(slots));
    (void)(*metrics)->change_counter();
  }

  auto reader = dix::segment_reader::open(home.path());
  if (!reader) {
    FUZZ_CHECK(reader.error().value() == dix::errc::segment_layout_mismatch);
  } else {
    FUZZ_CHECK(*reader != nullptr);  // the readiness segment is valid
    auto table = (*reader)->read();
    FUZZ_CHECK(table);
    FUZZ_CHECK(table->attached);
  }
  return 0;
}
