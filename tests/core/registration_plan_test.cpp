// [core] The registration checks of protocol.md §2.1 as a pure function (core/registration_plan):
// their order, the messages that name the field, and the plan a registration yields.
#include <catch2/catch.hpp>

#include <set>

#include "core/fingerprint.hpp"
#include "core/registration_plan.hpp"
#include "support/sim_backend.hpp"

using namespace dix;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// A backend of another kind: the remote chunk limit applies by kind (backends.md §4).
class remote_kind final : public backend {
 public:
  const std::string& id() const noexcept override { return id_; }
  std::string_view kind() const noexcept override { return "remote"; }
  void attach(backend_host&) override {}
  result<std::optional<cursor>> durable_cursor() override { return std::optional<cursor>{}; }
  delivery_result deliver(std::shared_ptr<const batch>) override { return delivery_result::accepted; }
  void flush(flush_reason, completion done) override { std::move(done)(result<void>{}); }
  void shutdown(epoch_t, completion done) override { std::move(done)(result<void>{}); }
  subscription on_state_change(std::function<void(state_change)>) override { return {}; }
  bool supports_reset() const noexcept override { return true; }

 private:
  std::string id_ = "far";
};

projection identity() {
  return [](std::string_view p, const record_info&) -> projection_result { return std::string(p); };
}

struct checks {
  std::vector<attached_store> attached;
  runner_options defaults;
  bool stopped = false;
  std::set<std::string> registered;

  checks() {
    attached.push_back(attached_store{"main", "id-main", 259200, [](std::uint32_t t) { return t == 1 || t == 2; }});
    attached.push_back(attached_store{"aux", "id-aux", 80, [](std::uint32_t t) { return t == 7; }});
    attached.push_back(attached_store{"idle", "id-idle", 0, [](std::uint32_t) { return true; }});
  }
  result<registration_plan> plan(const registration& r) const {
    registration_context c;
    c.stopped = stopped;
    c.attached = &attached;
    c.defaults = &defaults;
    c.registered = [this](const std::string& id) { return registered.count(id) != 0; };
    return plan_registration(r, c);
  }
};

registration of(std::shared_ptr<backend> b, std::map<table_ref, projection> p) {
  registration r;
  r.backend = std::move(b);
  r.projections = std::move(p);
  return r;
}

}  // namespace

TEST_CASE("registration plan: the checks fail in the order of protocol §2.1", "[core][registration]") {
  checks c;
  auto good = of(std::make_shared<test::sim_backend>("idx"), {{table_ref{"main", 1}, identity()}});
  c.stopped = true;
  CHECK(c.plan(registration{}).error().value() == errc::stopped);  // before anything else
  c.stopped = false;
  CHECK_THAT(c.plan(registration{}).error().message(), Contains("backend is null"));
  CHECK_THAT(c.plan(of(std::make_shared<test::sim_backend>(".hidden"), good.projections)).error().message(),
             StartsWith("backend id \".hidden\""));
  CHECK_THAT(c.plan(of(good.backend, {})).error().message(), Contains("has no projection"));
  CHECK_THAT(c.plan(of(good.backend, {{table_ref{"ghost", 1}, identity()}})).error().message(),
             Contains("log ghost, which is not attached"));
  CHECK_THAT(c.plan(of(good.backend, {{table_ref{"main", 9}, identity()}})).error().message(),
             Contains("log main table 9, which does not exist"));
  CHECK_THAT(c.plan(of(good.backend, {{table_ref{"main", 1}, projection{}}})).error().message(),
             Contains("log main table 1 is empty"));
  auto long_version = good;
  long_version.projection_version = std::string(257, 'v');
  CHECK_THAT(c.plan(long_version).error().message(), Contains("257 bytes: at most 256"));
  auto bad_options = good;
  bad_options.options = runner_options{};
  bad_options.options->max_chunk_records = 0;
  CHECK_THAT(c.plan(bad_options).error().message(), StartsWith("runner_options.max_chunk_records = 0"));
  auto remote = of(std::make_shared<remote_kind>(), {{table_ref{"main", 1}, identity()}});
  remote.options = runner_options{};
  remote.options->max_chunk_bytes = (32u << 20) + 1;
  CHECK_THAT(c.plan(remote).error().message(), Contains("at most 33554432 for a remote backend"));
  remote.options->max_chunk_bytes = 32u << 20;
  CHECK(c.plan(remote));
  c.registered.insert("idx");
  CHECK(c.plan(good).error().value() == errc::already_registered);
  // Every failure above but these two is invalid_argument.
  c.registered.clear();
  CHECK(c.plan(of(good.backend, {})).error().value() == errc::invalid_argument);
}

TEST_CASE("registration plan: the registration's logs in attach order, its options, cursor flush age and fingerprint", "[core][registration]") {
  checks c;
  c.defaults.max_chunk_records = 77;
  auto r = of(std::make_shared<test::sim_backend>("idx"),
              {{table_ref{"aux", 7}, identity()}, {table_ref{"main", 2}, identity()}, {table_ref{"main", 1}, identity()}});
  r.projection_version = "v3";
  auto plan = c.plan(r);
  REQUIRE(plan);
  CHECK(plan->id == "idx");
  CHECK(plan->logs == std::vector<std::size_t>{0, 1});  // main, aux: attach order; idle holds nothing projected
  CHECK(plan->options.max_chunk_records == 77);         // the runtime's options
  // min(wal_ttl / 8, 10 min) over the registration's logs: aux's 80 s TTL gives 10 s.
  CHECK(plan->cursor_flush_age == std::chrono::milliseconds(10000));
  auto expected = registration_fingerprint("sim", "idx", "v3", {{"main", 1}, {"main", 2}, {"aux", 7}});
  REQUIRE(expected);
  CHECK(plan->fingerprint == *expected);
  CHECK(plan->rebuildable);  // sim_backend implements reset
  auto fixed = std::make_shared<test::sim_backend>("idx");
  fixed->can_reset = false;
  r.backend = fixed;
  CHECK_FALSE(c.plan(r)->rebuildable);

  r.options = runner_options{};
  r.options->max_chunk_records = 5;
  CHECK(c.plan(r)->options.max_chunk_records == 5);  // a registration's options replace the runtime's whole
  auto only_main = of(r.backend, {{table_ref{"main", 1}, identity()}});
  CHECK(c.plan(only_main)->cursor_flush_age == std::chrono::milliseconds(600000));  // 3 days / 8 > 10 min
  CHECK(c.plan(of(std::make_shared<remote_kind>(), {{table_ref{"main", 1}, identity()}}))->rebuildable);
}
