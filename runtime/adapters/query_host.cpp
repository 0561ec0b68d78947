#include "adapters/query_host.hpp"

#include <utility>

#include <dix/free_functions.hpp>

#include "adapters/coverage_readers.hpp"
#include "core/coverage_read.hpp"

namespace dix {
namespace {

// Holds no state but its two names and the clock: every answer is read from the segment at the
// call, so concurrent calls need no lock.
class query_host final : public backend_host {
 public:
  query_host(std::filesystem::path home_db, std::string id, const clock& time)
      : home_db_(std::move(home_db)), id_(std::move(id)), time_(time) {}

  bool is_owner_epoch(epoch_t) const noexcept override { return false; }
  dix::readiness readiness() const noexcept override {
    try {
      if (auto r = read_readiness(home_db_, id_)) return *r;
    } catch (...) {
    }
    return dix::readiness{};
  }
  void note_unindexable(std::string_view) noexcept override {}
  void request_rebuild() noexcept override {}
  void note_hold(epoch_t, backend_hold) noexcept override {}

  result<coverage> admit_query(const coverage_mode& mode, cancel_token cancel) override {
    // `wait` first (api.md §7): it waits through `unknown` and fails on rebuilding, needs-rebuild
    // and unavailable itself; a covered wait is admitted whatever the time path then reads.
    if (mode.kind == coverage_kind::wait) {
      if (auto waited = wait_for_coverage(home_db_, id_, mode.since, mode.timeout, std::move(cancel)); !waited) {
        return waited.error();
      }
    }
    auto r = read_readiness(home_db_, id_);
    if (!r) return r.error();
    if (r->state == readiness_state::rebuilding) return error{errc::rebuilding, "index " + id_ + " is rebuilding"};
    if (r->state != readiness_state::ready) {
      return error{errc::unavailable, "index " + id_ + " is " + std::string(to_string(r->state))};
    }
    auto c = read_coverage_at(home_db_, id_, mode.tolerance, time_);
    if (mode.kind != coverage_kind::wait) {
      if (auto refused = admission_refusal(c, mode.kind)) return *refused;
    }
    return c;
  }

 private:
  const std::filesystem::path home_db_;
  const std::string id_;
  const clock& time_;
};

}  // namespace

std::shared_ptr<backend_host> make_query_host_at(std::filesystem::path home_db, std::string id, const clock& time) {
  return std::make_shared<query_host>(std::move(home_db), std::move(id), time);
}

std::shared_ptr<backend_host> make_query_host(std::filesystem::path home_db, std::string id) {
  return make_query_host_at(std::move(home_db), std::move(id), system_clock());
}

}  // namespace dix
