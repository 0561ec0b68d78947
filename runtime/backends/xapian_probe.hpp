// What tests observe and inject inside a xapian_backend (not public API): the batches queued for
// the applier, the batches it applied and dropped (another epoch's, protocol.md §9.4), a hook
// after each applied batch, a hook at each open refused for the writer lock, a fault point
// making the next applies fail (off unless a test sets it), and, in the backend's and a
// xapian_reader's searches, a hook between the handle's refresh and the read.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include <dix/backends/xapian_backend.hpp>

#include "core/free_space.hpp"

namespace dix {

struct xapian_probe {
  static std::uint64_t queued_batches(const xapian_backend& b);
  static std::uint64_t queued_bytes(const xapian_backend& b);
  static std::uint64_t applied_batches(const xapian_backend& b);
  static std::uint64_t dropped_batches(const xapian_backend& b);
  // Called on the applier thread after each batch it applied, with the count applied so far.
  static void on_applied(xapian_backend& b, std::function<void(std::uint64_t)> hook);
  // Called on the applier thread each time opening the writer meets DatabaseLockError.
  static void on_writer_busy(xapian_backend& b, std::function<void()> hook);
  // The next `n` batches that reach the engine fail inside their transaction (a Xapian
  // DatabaseError thrown after their first document), as a failing disk would.
  static void fail_next_applies(xapian_backend& b, int n);
  // Called on the querying thread inside search(), after the read handle was brought to the
  // latest commit and before the read, with the attempt: 0, then 1 on the retry after a
  // DatabaseModifiedError. Commits made here land between the refresh and the read.
  static void on_query_refreshed(xapian_backend& b, std::function<void(int)> hook);
  static void on_query_refreshed(xapian_reader& r, std::function<void(int)> hook);
  // The free-space reading its deliveries are admitted against (decision 0013), and its age.
  static void set_space_probe(xapian_backend& b, space_probe probe, std::chrono::milliseconds max_age);
};

}  // namespace dix
