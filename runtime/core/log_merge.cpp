#include "core/log_merge.hpp"

namespace dix {

log_merge::log_merge(std::vector<log_source*> sources)
    : sources_(std::move(sources)), pending_(sources_.size()) {}

result<std::optional<merged_transaction>> log_merge::next() {
  std::optional<std::size_t> best;
  holding_ = false;
  for (std::size_t i = 0; i < sources_.size(); ++i) {
    if (!pending_[i]) {
      auto pulled = sources_[i]->next();
      if (!pulled) {
        return error{pulled.error().value(),
                     "log " + sources_[i]->log_name() + ": " + pulled.error().message()};
      }
      pending_[i] = std::move(*pulled);
    }
    if (!pending_[i]) continue;
    if (!hold_.empty() && pending_[i]->end_sequence() > hold_[i]) {
      holding_ = true;
      continue;
    }
    if (!best || pending_[i]->time < pending_[*best]->time) best = i;
  }
  if (!best) return std::optional<merged_transaction>{};
  merged_transaction out{*best, std::move(*pending_[*best])};
  pending_[*best].reset();
  return std::optional<merged_transaction>{std::move(out)};
}

}  // namespace dix
