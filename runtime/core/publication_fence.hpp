// publication_fence: a lock holder's unlock kept behind its readiness publications (decision
// 0008). Single-threaded: the runner's or the supervisor's, on their own actor.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>

namespace dix {

// Keeps a lock holder's unlock behind its publications (decision 0008). A publication is a
// request to the runtime's readiness publisher and lands when `published` comes back; the lock
// table's release is immediate. The ordering obligation — every publication of an owner has
// landed before its lock-table entry is released or handed over, so an old owner's late
// publication never overwrites a new owner's (two runtimes of one process have two publishers) —
// is kept here: the shell runs each effect through then(), except the unlock, which goes through
// after_landed(); while that one waits for publications in flight, every later effect waits
// behind it, so the effects keep the order the core gave them.
class publication_fence {
 public:
  using step = std::function<void()>;
  // Runs `f` now, unless something waits: then after it, in order.
  void then(step f);
  // Runs `f` once no publication is in flight (and nothing before it waits).
  void after_landed(step f);
  void sent() noexcept { ++in_flight_; }  // a publication left
  void landed();                          // its answer came (an error counts: it will not land later)
  std::size_t in_flight() const noexcept { return in_flight_; }

 private:
  void drain();
  struct waiting {
    bool needs_landed;
    step f;
  };
  std::size_t in_flight_ = 0;
  bool draining_ = false;
  std::deque<waiting> waiting_;
};

}  // namespace dix
