// drain_pipeline: the runner's drain of its logs into its backend (protocol.md §5–§6), a machine
// of runner_core: the cursor installed in the tailer and what is in flight on it — one pull or
// one delivery at a time (a deferred batch waits in `held` while open) — with the entries offered
// to the backend, the work not yet anchored or flushed, the transaction cut open by a chunk, and
// the flush timers.
//
//   closed ──log opened──► open ──pull──► pulling ──chunk with a batch──► delivering
//                          ▲ ▲ │             │                                │
//                          │ │ └─retry the deferred batch────────────────────►│
//                          │ └──chunk without one─┘                           │
//                          └────────────────────── result ◄───────────────────┘
//   every phase ──discard progress (§1.4)──► closed
//
//   closed      no cursor installed in the tailer (acquisition, a reinstall, a rebuild's
//               boundary being opened); left when the log is opened (→ open).
//   open        a cursor installed and nothing in flight; left by a pull (→ pulling) or a
//               deferred batch retried (→ delivering).
//   pulling     a pull (or a scan chunk) is on its way; left by its answer.
//   delivering  `in_flight` is with the backend; left by the delivery's answer (→ open).
//
// The reconciliation's durable_cursor() queries (§5.4) are a machine of their own: at most one in
// flight; a reconciliation asked for meanwhile runs once it is answered.
//
//   none ──reconcile──► asked ──reconcile──► asked_again;  asked / asked_again ──answer──► none
//
// The offered list: offered[0] is the durable entry (or the start cursor), the later entries
// were accepted but are not durable yet (§5.3).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <dix/batch.hpp>
#include <dix/cursor.hpp>

namespace dix {

class drain_pipeline {
 public:
  enum class phase : std::uint8_t { closed, open, pulling, delivering };
  enum class durable_query : std::uint8_t { none, asked, asked_again };

  // An entry offered to the backend (§5.3).
  struct entry {
    cursor through;
    std::uint64_t bytes = 0;
    std::uint64_t mutations = 0;
    bool cursor_only = false;
    std::chrono::steady_clock::time_point accepted_at{};
    dix::positions ends;  // per log, the end sequence of `through`'s anchor (§5.3, §12.2)
    // It completes a transaction cut open by an earlier chunk whose entry took some of its
    // operations: it certifies (§12.3) as if it carried a mutation, since its cursor is the
    // first to cover the transaction.
    bool completes_cut = false;
  };

  static bool legal(phase from, phase to) noexcept;
  static bool legal(durable_query from, durable_query to) noexcept;
  // Abort on an illegal step, in every build.
  void to(phase next) noexcept;
  void to(durable_query next) noexcept;
  phase current() const noexcept { return phase_; }
  durable_query query() const noexcept { return query_; }

  // A batch goes to the backend (open or pulling → delivering): what `changed` notices arrive
  // from now on may have made room for it, should it be deferred.
  void issue(std::shared_ptr<const batch> b, dix::positions ends);
  // The delivery's answer (delivering → open): the batch that was in flight.
  std::shared_ptr<const batch> answered();
  // A `changed` notice counted since the batch in flight was issued (§5.2).
  bool changed_since_issue() const noexcept { return changed_count_ > changed_at_issue_; }
  void note_changed() noexcept { ++changed_count_; }
  // §1.4: every phase to closed; nothing in flight, held, anchored-but-unoffered, unflushed or
  // timed is kept. The offered list is the caller's to keep (a transient fault keeps it).
  void discard() noexcept;

  // The offered list and its figures (§5.3, §13.1).
  std::vector<entry> offered;
  // A rebuild's boundary became durable while the logs were still opening at it (decision 0062):
  // the rest of the rebuild's end (the settle, `ready`) waits for log_opened, and a durable answer
  // meanwhile is no acquisition's. Cleared by log_opened and discard().
  bool rebuilt_while_opening = false;
  std::uint64_t unanchored_bytes = 0, unanchored_mutations = 0;  // accepted, no cursor of their own yet
  std::uint64_t unflushed_bytes = 0, unflushed_mutations = 0;    // since the last flush request (§6.1)
  // The newest offered entry preceded by nothing but cursor-only work (else the durable one), §13.1.
  std::size_t effective_entry() const noexcept;
  // When the oldest non-durable, non-cursor-only entry was accepted (§13.1).
  std::optional<std::chrono::steady_clock::time_point> oldest_accepted_at() const;
  // Accepted work the backend has not made durable, beyond cursor-only progress (§6.2).
  bool non_durable_work() const noexcept;

  std::shared_ptr<const batch> in_flight;
  dix::positions in_flight_ends;       // the ends of the batch in flight, for the entry it makes
  std::shared_ptr<const batch> held;   // deferred, retried unchanged (§5.5)
  // What the last chunk said about the log: `more` also when a commit came since (a turn is due).
  bool more = true;
  bool end_of_log = false;
  bool cut_open = false;
  bool cut_delivered = false;  // an accepted batch left a transaction cut open: the next entry completes it
  std::optional<std::chrono::steady_clock::time_point> stalled_since;  // parked in deferred / waiting-durable
  // The flush timers (§6.2): a flush_age event pending and the moment its clock runs until; a
  // cursor_flush event pending.
  bool age_timer_armed = false;
  std::optional<std::chrono::steady_clock::time_point> age_deadline;
  bool cursor_timer_armed = false;

 private:
  phase phase_ = phase::closed;
  durable_query query_ = durable_query::none;
  std::uint64_t changed_count_ = 0, changed_at_issue_ = 0;
};

}  // namespace dix
