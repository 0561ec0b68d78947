#include "core/publication_fence.hpp"

#include <utility>

namespace dix {

void publication_fence::then(step f) {
  if (waiting_.empty()) {
    f();
    return;
  }
  waiting_.push_back(waiting{false, std::move(f)});
}

void publication_fence::after_landed(step f) {
  if (waiting_.empty() && in_flight_ == 0) {
    f();
    return;
  }
  waiting_.push_back(waiting{true, std::move(f)});
}

void publication_fence::landed() {
  if (in_flight_ > 0) --in_flight_;
  drain();
}

void publication_fence::drain() {
  if (draining_) return;  // a step run below that lands or sends comes back here
  draining_ = true;
  while (!waiting_.empty() && !(waiting_.front().needs_landed && in_flight_ > 0)) {
    auto next = std::move(waiting_.front());
    waiting_.pop_front();
    next.f();
  }
  draining_ = false;
}

}  // namespace dix
