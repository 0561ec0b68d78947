// The figures of a rebuild's progress as a person reads them (dix status, dix rebuild --wait,
// dix demo), and the ids a refusal names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <dix/segment.hpp>
#include <dix/status.hpp>

namespace dix::cli {

// A duration for a person: "0.4 s" under 10 s, "42 s" under two minutes, then "3 min 5 s",
// "2 h 7 min".
std::string duration_text(std::uint64_t ms);

// A scan's figures: "6144/14000 records (43%), 52000 records/s, ETA 0.2 s" while it runs (the
// percent capped at 100: the records are an estimate; no ETA before a rate is known), "scan done:
// 14000 records at 52000 records/s, replaying the log from the boundary" once it ended.
std::string progress_text(const rebuild_progress& p);

// "[#########-----------]": the share of the estimate rebuilt, in `cells` cells (full once the
// scan ended; empty without an estimate).
std::string progress_bar(const rebuild_progress& p, std::size_t cells);

// For a not_registered refusal: "; the ids with a slot: a, b" (in slot order), or "; no id has a
// slot yet".
std::string ids_with_slots(const readiness_table& t);

}  // namespace dix::cli
