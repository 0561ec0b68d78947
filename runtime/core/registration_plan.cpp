#include "core/registration_plan.hpp"

#include <algorithm>

#include "core/fingerprint.hpp"
#include "core/names.hpp"

namespace dix {

namespace {

constexpr std::uint64_t max_remote_chunk_bytes = 32u << 20;  // backends.md §4
constexpr std::size_t max_projection_version_bytes = 256;    // protocol.md §2.5

std::string table_name(const table_ref& ref) { return "log " + ref.log + " table " + std::to_string(ref.table); }

}  // namespace

result<registration_plan> plan_registration(const registration& r, const registration_context& context) {
  const auto& attached = *context.attached;
  if (context.stopped) return error{errc::stopped, "the runtime is stopped"};
  if (!r.backend) return error{errc::invalid_argument, "registration.backend is null"};
  registration_plan plan;
  plan.id = r.backend->id();
  if (auto ok = check_backend_id(plan.id); !ok) return ok.error();
  if (r.projections.empty()) return error{errc::invalid_argument, "registration of " + plan.id + " has no projection"};
  for (const auto& [ref, fn] : r.projections) {
    // A named reference, not the binding: C++17 lambdas cannot capture structured bindings (clang).
    const auto& log = ref.log;
    auto store = std::find_if(attached.begin(), attached.end(), [&](const attached_store& l) { return l.name == log; });
    if (store == attached.end()) return error{errc::invalid_argument, "projection on log " + ref.log + ", which is not attached"};
    if (!store->has_table(ref.table)) return error{errc::invalid_argument, "projection on " + table_name(ref) + ", which does not exist"};
    if (!fn) return error{errc::invalid_argument, "projection on " + table_name(ref) + " is empty"};
  }
  if (r.projection_version.size() > max_projection_version_bytes) {
    return error{errc::invalid_argument, "registration.projection_version has " + std::to_string(r.projection_version.size()) +
                                             " bytes: at most 256"};
  }
  plan.options = r.options.value_or(*context.defaults);
  if (auto ok = validate(plan.options); !ok) return ok.error();
  if (r.backend->kind() == "remote" && plan.options.max_chunk_bytes > max_remote_chunk_bytes) {
    return error{errc::invalid_argument, "runner_options.max_chunk_bytes = " + std::to_string(plan.options.max_chunk_bytes) +
                                             ": must be at most 33554432 for a remote backend"};
  }
  if (context.registered && context.registered(plan.id)) {
    return error{errc::already_registered, "backend id " + plan.id + " is registered in this runtime"};
  }

  std::uint64_t flush_age_ms = 600000;
  for (std::size_t i = 0; i < attached.size(); ++i) {
    const bool projected = std::any_of(r.projections.begin(), r.projections.end(),
                                       [&](const auto& p) { return p.first.log == attached[i].name; });
    if (!projected) continue;
    plan.logs.push_back(i);
    if (attached[i].wal_ttl_s != 0) flush_age_ms = std::min<std::uint64_t>(flush_age_ms, attached[i].wal_ttl_s * 1000 / 8);
  }
  plan.cursor_flush_age = std::chrono::milliseconds(std::max<std::uint64_t>(flush_age_ms, 1));
  std::vector<projected_table> tables;
  for (const auto& [ref, fn] : r.projections) tables.push_back(projected_table{ref.log, ref.table});
  auto fingerprint = registration_fingerprint(r.backend->kind(), plan.id, r.projection_version, std::move(tables));
  if (!fingerprint) return fingerprint.error();
  plan.fingerprint = *fingerprint;
  plan.rebuildable = r.backend->supports_reset();
  return plan;
}

}  // namespace dix
