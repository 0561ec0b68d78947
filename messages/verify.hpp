// The verify's messages (issue 31, core/verify_attempt.hpp, decision 0057). They carry objects
// that never leave the process — the fence's snapshots, the scan's job, its report — and are not
// in the type-ID block (CAF_ALLOW_UNSAFE_MESSAGE_TYPE below, as `supervise`). Every answer echoes
// the runner's generation; the runner drops another one's.
//
//   runner ── log_fence ──► tailer ── fence_taken ──► runner
//   runner ── digest_open ──► proxy ─(reply) digest_opened ──► runner   (the proxy keeps the view)
//   runner ── log_lift ──► tailer ── fence_lifted (the snapshots) ──► runner   (only when `scan`)
//   runner ── verify_run (snapshots, projections) ──► proxy ── verify_tick ──► itself (paced)
//                                                      proxy ── verify_scanned ──► runner
//                                                      proxy ── verify_progressed ──► runner (each tick)
//   runner ── verify_drop ──► proxy   (the verify ended: the view and the scan go)
//   runtime ── runner_verify ──► runner ─(reply) verify_answer
//   watcher ── verify_requested ──► runtime (a dix verify request file of an owned id)
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/error.hpp>

#include <dix/cursor.hpp>
#include <dix/projection.hpp>
#include <dix/result.hpp>
#include <dix/verify.hpp>

#include "core/drift.hpp"           // drift_report
#include "core/verify_attempt.hpp"  // verify_request, verify_outcome
#include "ports/store_reader.hpp"   // store_snapshot

namespace dix {

struct log_fence {
  std::uint64_t gen = 0;
};
struct fence_taken {
  std::uint64_t gen = 0;
  caf::error error;  // the fence was refused (tailer_core::fence)
};

// `scan`: hand the snapshots over (fence_lifted); otherwise drop them, unanswered.
struct log_lift {
  std::uint64_t gen = 0;
  bool scan = false;
};
struct fence_lifted {
  std::uint64_t gen = 0;
  std::shared_ptr<std::vector<std::unique_ptr<store_snapshot>>> snapshots;  // attach order
};

struct digest_open {
  std::uint64_t gen = 0;
};
struct digest_opened {
  std::uint64_t gen = 0;
  std::optional<cursor> through;  // the view's cursor
  caf::error error;
};

// What the proxy's scan needs besides the view it keeps: per log (attach order), its name, its
// fence snapshot and its projected tables.
struct verify_job {
  struct log {
    std::string name;
    std::unique_ptr<store_snapshot> snapshot;
    std::map<std::uint32_t, projection> tables;
  };
  std::vector<log> logs;
  verify_request request;
};
struct verify_run {
  std::uint64_t gen = 0;
  std::shared_ptr<verify_job> job;
};
struct verify_tick {
  std::uint64_t gen = 0;  // the proxy's serial of the view it scans, not the runner's generation
};
struct verify_scanned {
  std::uint64_t gen = 0;
  std::shared_ptr<const drift_report> report;  // null: `error`
  caf::error error;
};
struct verify_drop {};
// proxy → runner, after each tick of the scan: how far it read (verify_scan::progress).
struct verify_progressed {
  std::uint64_t gen = 0;
  std::uint64_t read = 0, expected = 0;
  std::int64_t eta_ms = -1;  // −1: no rate known yet
};

// runtime::verify → the runner: its outcome, with the scan's report when one ran.
struct runner_verify {
  verify_request request;
};
struct verify_answer {
  verify_outcome outcome;
  std::shared_ptr<const drift_report> report;
};

inline verify_request request_of(const verify_options& o) {
  verify_request r;
  r.report_only = o.report_only;
  r.entries_per_s = o.entries_per_s;
  r.limit = o.limit;
  r.deadline = o.deadline;
  return r;
}

// What a requester learns: the result of a verify that ran to its end, or why it did not.
inline result<verify_result> result_of(const verify_answer& a) {
  const auto& o = a.outcome;
  if (o.what != verify_outcome::kind::verified && o.what != verify_outcome::kind::drift) return error{o.code, o.message};
  verify_result r;
  r.equal = o.what == verify_outcome::kind::verified;
  r.through = o.through;
  r.records = a.report ? a.report->index.records : o.records;
  r.differences = o.differences;
  r.condemned = o.condemned;
  if (a.report) r.drifts = a.report->drifts;
  return r;
}

// watcher → runtime actor: a `dix verify` request file for a registration this process owns
// (formats.md §8); the runtime asks the runner and writes the report.
struct verify_requested {
  std::uint64_t token = 0;
  std::string id;
  std::string nonce;
  verify_options options;
};

// By identity or by value, as CAF's message comparisons need.
#define DIX_VERIFY_EQ(T, expr)                                                \
  inline bool operator==(const T& a, const T& b) { return expr; }            \
  inline bool operator!=(const T& a, const T& b) { return !(a == b); }
DIX_VERIFY_EQ(log_fence, a.gen == b.gen)
DIX_VERIFY_EQ(fence_taken, a.gen == b.gen && a.error == b.error)
DIX_VERIFY_EQ(log_lift, a.gen == b.gen && a.scan == b.scan)
DIX_VERIFY_EQ(fence_lifted, a.gen == b.gen && a.snapshots == b.snapshots)
DIX_VERIFY_EQ(digest_open, a.gen == b.gen)
DIX_VERIFY_EQ(digest_opened, a.gen == b.gen && a.through == b.through && a.error == b.error)
DIX_VERIFY_EQ(verify_run, a.gen == b.gen && a.job == b.job)
DIX_VERIFY_EQ(verify_tick, a.gen == b.gen)
DIX_VERIFY_EQ(verify_scanned, a.gen == b.gen && a.report == b.report && a.error == b.error)
DIX_VERIFY_EQ(verify_drop, ((void)a, (void)b, true))
DIX_VERIFY_EQ(runner_verify, &a == &b)
DIX_VERIFY_EQ(verify_answer, &a == &b)
DIX_VERIFY_EQ(verify_requested, a.token == b.token && a.nonce == b.nonce)
#undef DIX_VERIFY_EQ

}  // namespace dix

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::log_fence)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::fence_taken)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::log_lift)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::fence_lifted)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::digest_open)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::digest_opened)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::verify_run)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::verify_tick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::verify_scanned)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::verify_drop)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::verify_progressed)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::runner_verify)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::verify_answer)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dix::verify_requested)
