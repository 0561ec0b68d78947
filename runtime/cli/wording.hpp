// How the CLI words what the runtime publishes, where the published code alone would mislead a
// person.
#pragma once

#include <string>

#include <dix/readiness.hpp>

namespace dix::cli {

// The reason of `r` as `dix status` and `dix serve` show it: the formats.md §4.5 name, except for
// the first build of a never-built index. The runtime core publishes that build as `rebuilding`
// with reason `cursor-missing` (the reason codes have none for it) and no rebuild attempt spent;
// a person should read `first-build`, not a lost cursor. A rebuild after a cursor really was lost
// has spent an attempt and keeps its name. (--json keeps the published code.)
std::string shown_reason(const readiness& r);

}  // namespace dix::cli
