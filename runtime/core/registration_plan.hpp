// The registration checks of protocol.md §2.1 as a pure function: given a registration and what
// the runtime has attached, either the error the checks require (in their order, before any side
// effect) or the plan the runtime carries out — the registration's logs in attach order, its
// runner options, the runner configuration derived from them, and the fingerprint (§2.5,
// formats.md §5). The effects of §2.2 (slot claim, epoch floor, attach, subscription, wiring)
// are the runtime actor's.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <dix/options.hpp>
#include <dix/result.hpp>
#include <dix/runtime.hpp>

namespace dix {

// One attached store as the checks see it, in attach order (the first is the home store).
struct attached_store {
  std::string name;
  std::string identity;
  std::uint64_t wal_ttl_s = 0;                   // store_options::wal_ttl_s, 0 = none
  std::function<bool(std::uint32_t)> has_table;  // whether the store has table.<id>
};

struct registration_plan {
  std::string id;
  std::vector<std::size_t> logs;  // indices into the attached logs: those holding a projected table
  runner_options options;         // the registration's, else the runtime's
  std::uint64_t fingerprint = 0;
  bool rebuildable = false;       // the backend implements reset (protocol.md §11.1)
  // min(wal_ttl/8, 10 min) over the registration's logs (protocol.md §16).
  std::chrono::milliseconds cursor_flush_age{600000};
};

struct registration_context {
  bool stopped = false;
  const std::vector<attached_store>* attached = nullptr;
  const runner_options* defaults = nullptr;
  std::function<bool(const std::string& id)> registered;  // already registered in this runtime
};

// protocol.md §2.1, in order: stopped; invalid_argument (no backend, id outside formats.md §4.1,
// no projection, a projection on a log not attached or a table that does not exist or an empty
// projection — the message names them —, projection_version over 256 bytes, options failing
// validate(), a remote backend with max_chunk_bytes over 32 MiB); already_registered. The slot
// claim (segment_full) follows in the runtime.
result<registration_plan> plan_registration(const registration& r, const registration_context& context);

}  // namespace dix
