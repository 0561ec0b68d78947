// Whether the owner runner's proof for `current` coverage reads (protocol.md §12.5 step 3) changed
// since the runner last stored it in its coverage_proof_box: the runner takes a snapshot after
// every event (and is the box's only writer), but its epoch and durable anchor ends move only at
// a durable advance or an ownership change, and each store takes the box's mutex that `current`
// readers contend for.
// Pure; std only.
#pragma once

#include <optional>

#include "core/coverage_read.hpp"

namespace dix {

class proof_latch {
 public:
  // True when `next` (nullopt: no proof, the box is to be cleared) differs from what the last
  // call was given, and remembers it. The first call is always true: the box may still hold a
  // proof an earlier runner of the registration stored.
  bool changed(const std::optional<coverage_proof>& next) {
    const bool same = told_ && last_.has_value() == next.has_value() &&
                      (!next || (last_->epoch == next->epoch && last_->durable_end == next->durable_end));
    if (same) return false;
    told_ = true;
    last_ = next;
    return true;
  }

 private:
  bool told_ = false;
  std::optional<coverage_proof> last_;
};

}  // namespace dix
