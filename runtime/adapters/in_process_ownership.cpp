#include "adapters/in_process_ownership.hpp"

namespace dix {

void in_process_lock_table::acquire(const std::string& id, std::uint64_t requester, grant granted) {
  {
    std::lock_guard lock(mutex_);
    auto& e = entries_[id];
    if (e.owner != 0 && e.owner != requester) {
      e.waiters.emplace_back(requester, std::move(granted));
      return;
    }
    e.owner = requester;
  }
  granted(result<void>{});
}

void in_process_lock_table::release(const std::string& id, std::uint64_t requester) {
  grant next;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    auto& e = it->second;
    if (e.owner != requester) {
      for (auto w = e.waiters.begin(); w != e.waiters.end(); ++w) {
        if (w->first == requester) {
          e.waiters.erase(w);
          break;
        }
      }
      return;
    }
    e.owner = 0;
    if (!e.waiters.empty()) {
      e.owner = e.waiters.front().first;
      next = std::move(e.waiters.front().second);
      e.waiters.pop_front();
    }
  }
  if (next) next(result<void>{});  // immediate in-process handoff
}

in_process_lock_table& in_process_lock_table::instance() {
  static in_process_lock_table table;
  return table;
}

}  // namespace dix
