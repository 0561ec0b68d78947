#include "core/clock.hpp"

namespace dix {
namespace {

class real_clock final : public clock {
 public:
  steady_time steady_now() const noexcept override { return std::chrono::steady_clock::now(); }
  std::uint64_t wall_now_ns() const noexcept override {
    auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch).count());
  }
};

}  // namespace

clock& system_clock() noexcept {
  static real_clock instance;
  return instance;
}

}  // namespace dix
