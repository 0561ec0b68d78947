// make_query_host (<dix/query_host.hpp>) with the wall clock injected, for the tests that judge a
// coverage time's age.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include <dix/query_host.hpp>

#include "core/clock.hpp"

namespace dix {

// make_query_host whose read_coverage ages coverage times by `time`'s wall clock; `time` outlives
// the host.
std::shared_ptr<backend_host> make_query_host_at(std::filesystem::path home_db, std::string id, const clock& time);

}  // namespace dix
