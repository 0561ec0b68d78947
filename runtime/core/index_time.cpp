#include "core/index_time.hpp"

namespace dix {

index_time_source& process_index_time() noexcept {
  static index_time_source instance;
  return instance;
}

}  // namespace dix
