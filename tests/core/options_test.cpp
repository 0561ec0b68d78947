// Tests of validate() for the option structs (api.md §2, protocol.md §16): defaults are valid,
// every range accepts its bounds and rejects one step outside with the api.md message format.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <dix/options.hpp>

namespace {

using dix::errc;
using dix::milliseconds;
using Catch::Matchers::StartsWith;

struct range_case {
  const char* owner;  // "runner_options" or "runtime_options"
  const char* field;
  long long min;
  long long max;
  std::function<void(dix::runtime_options&, long long)> set;
  // Makes the other fields compatible with the whole range (max_rebuild_backoff ≥ rebuild_backoff).
  std::function<void(dix::runtime_options&)> prepare = {};
  bool unsigned_field = false;  // min - 1 is not representable when min is 0
};

template <class T>
T narrow(long long v) {
  return static_cast<T>(v);
}

// protocol.md §16.
std::vector<range_case> range_cases() {
  using O = dix::runtime_options;
  return {
      {"runner_options", "max_transactions_per_turn", 1, 1'000'000,
       [](O& o, long long v) { o.runner.max_transactions_per_turn = narrow<std::uint32_t>(v); }},
      {"runner_options", "max_bytes_per_turn", 1024, 1ll << 30,
       [](O& o, long long v) { o.runner.max_bytes_per_turn = narrow<std::uint64_t>(v); }},
      {"runner_options", "max_milliseconds_per_turn", 1, 1000,
       [](O& o, long long v) { o.runner.max_milliseconds_per_turn = milliseconds{v}; }},
      {"runner_options", "max_chunk_records", 1, 1'048'576,
       [](O& o, long long v) { o.runner.max_chunk_records = narrow<std::uint32_t>(v); }},
      {"runner_options", "max_chunk_bytes", 1024, 256ll << 20,
       [](O& o, long long v) { o.runner.max_chunk_bytes = narrow<std::uint64_t>(v); }},
      {"runner_options", "max_accepted_batches_ahead", 1, 4096,
       [](O& o, long long v) { o.runner.max_accepted_batches_ahead = narrow<std::uint32_t>(v); }},
      {"runner_options", "max_flush_age", 1, 600'000,
       [](O& o, long long v) { o.runner.max_flush_age = milliseconds{v}; }},
      {"runner_options", "flush_after_mutations", 1, 16'777'216,
       [](O& o, long long v) { o.runner.flush_after_mutations = narrow<std::uint32_t>(v); }},
      {"runner_options", "flush_after_bytes", 1024, 1ll << 30,
       [](O& o, long long v) { o.runner.flush_after_bytes = narrow<std::uint64_t>(v); }},
      {"runner_options", "rebuild_backoff", 1, 3'600'000,
       [](O& o, long long v) { o.runner.rebuild_backoff = milliseconds{v}; },
       [](O& o) { o.runner.max_rebuild_backoff = milliseconds{86'400'000}; }},
      // Lower bound = rebuild_backoff (default 1000 ms).
      {"runner_options", "max_rebuild_backoff", 1000, 86'400'000,
       [](O& o, long long v) { o.runner.max_rebuild_backoff = milliseconds{v}; }},
      {"runner_options", "max_rebuild_attempts", 1, 1000,
       [](O& o, long long v) { o.runner.max_rebuild_attempts = narrow<std::uint32_t>(v); }},
      {"runner_options", "max_lag", 0, 86'400'000,
       [](O& o, long long v) { o.runner.max_lag = milliseconds{v}; }},
      {"runner_options", "verify_entries_per_s", 1, 1'000'000'000,
       [](O& o, long long v) { o.runner.verify_entries_per_s = narrow<std::uint64_t>(v); }},
      {"runtime_options", "max_coverage_wait", 0, 600'000,
       [](O& o, long long v) { o.max_coverage_wait = milliseconds{v}; }},
      {"runtime_options", "max_write_delay", 1, 1000,
       [](O& o, long long v) { o.max_write_delay = milliseconds{v}; }},
      {"runtime_options", "slot_count", 1, 4096,
       [](O& o, long long v) { o.slot_count = narrow<std::uint32_t>(v); }},
  };
}

dix::result<void> validate_case(const range_case& c, long long value) {
  dix::runtime_options o;
  if (c.prepare) c.prepare(o);
  c.set(o, value);
  return dix::validate(o);
}

std::string expected_message(const range_case& c, long long value) {
  return std::string(c.owner) + "." + c.field + " = " + std::to_string(value) + ": must be in [" +
         std::to_string(c.min) + ", " + std::to_string(c.max) + "]";
}

}  // namespace

TEST_CASE("options: default runner and runtime options are valid", "[core][options]") {
  CHECK(dix::validate(dix::runner_options{}));
  CHECK(dix::validate(dix::runtime_options{}));
  CHECK(dix::validate(dix::system_options{}));
}

TEST_CASE("options: verify_every is 0 (never) or 1 s … 30 days", "[core][options][verify]") {
  dix::runner_options o;
  for (long long ok : {0ll, 1000ll, 2'592'000'000ll}) {
    o.verify_every = milliseconds{ok};
    CHECK(dix::validate(o));
  }
  for (long long bad : {1ll, 999ll, 2'592'000'001ll, -1ll}) {
    o.verify_every = milliseconds{bad};
    auto refused = dix::validate(o);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message() == "runner_options.verify_every = " + std::to_string(bad) + ": must be in [1000, 2592000000]");
  }
}

TEST_CASE("options: the facade's system options name the field out of range", "[core][options]") {
  dix::system_options o;
  o.actor_threads = 256;
  CHECK(dix::validate(o));
  o.actor_threads = 257;
  CHECK(dix::validate(o).error().message() == "system_options.actor_threads = 257: must be in [0, 256]");
  o.actor_threads = 0;
  o.scheduler = static_cast<dix::actor_scheduler>(2);
  CHECK(dix::validate(o).error().message() == "system_options.scheduler = 2: must be in [0, 1]");
  CHECK(dix::validate(o).error().value() == errc::invalid_argument);
}

TEST_CASE("options: default store options are valid once the required log name is set",
          "[core][options]") {
  dix::store_options o;
  o.log_name = "main";
  CHECK(dix::validate(o));
  auto missing = dix::validate(dix::store_options{});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().value() == errc::invalid_argument);
  CHECK_THAT(missing.error().message(), StartsWith("store_options.log_name = "));
}

TEST_CASE("options: every ranged field accepts its bounds and rejects one step outside",
          "[core][options]") {
  for (const auto& c : range_cases()) {
    CAPTURE(c.owner, c.field, c.min, c.max);
    CHECK(validate_case(c, c.min));
    CHECK(validate_case(c, c.max));
    std::vector<long long> outside{c.max + 1};
    if (!c.unsigned_field || c.min > 0) outside.push_back(c.min - 1);
    for (long long v : outside) {
      CAPTURE(v);
      auto r = validate_case(c, v);
      REQUIRE_FALSE(r);
      CHECK(r.error().value() == errc::invalid_argument);
      CHECK_THAT(r.error().message(),
                 StartsWith(std::string(c.owner) + "." + c.field + " = "));
      CHECK(r.error().message() == expected_message(c, v));
    }
  }
}

TEST_CASE("options: runner fields fail validate(runner_options) with the same message",
          "[core][options]") {
  for (const auto& c : range_cases()) {
    if (std::string(c.owner) != "runner_options") continue;
    CAPTURE(c.field);
    dix::runtime_options o;
    if (c.prepare) c.prepare(o);
    c.set(o, c.max + 1);
    auto r = dix::validate(o.runner);
    REQUIRE_FALSE(r);
    CHECK(r.error().value() == errc::invalid_argument);
    CHECK(r.error().message() == expected_message(c, c.max + 1));
    c.set(o, c.max);
    CHECK(dix::validate(o.runner));
  }
}

TEST_CASE("options: messages name field, value and range verbatim", "[core][options]") {
  {
    dix::runner_options o;
    o.max_chunk_records = 0;
    auto r = dix::validate(o);
    REQUIRE_FALSE(r);
    CHECK(r.error().message() == "runner_options.max_chunk_records = 0: must be in [1, 1048576]");
  }
  {
    dix::runner_options o;
    o.max_bytes_per_turn = 1023;
    auto r = dix::validate(o);
    REQUIRE_FALSE(r);
    CHECK(r.error().message() ==
          "runner_options.max_bytes_per_turn = 1023: must be in [1024, 1073741824]");
  }
  {
    dix::runner_options o;
    o.max_lag = milliseconds{-1};
    auto r = dix::validate(o);
    REQUIRE_FALSE(r);
    CHECK(r.error().message() == "runner_options.max_lag = -1: must be in [0, 86400000]");
  }
  {
    dix::runtime_options o;
    o.slot_count = 4097;
    auto r = dix::validate(o);
    REQUIRE_FALSE(r);
    CHECK(r.error().message() == "runtime_options.slot_count = 4097: must be in [1, 4096]");
  }
  {
    dix::runtime_options o;
    o.max_coverage_wait = milliseconds{600'001};
    auto r = dix::validate(o);
    REQUIRE_FALSE(r);
    CHECK(r.error().message() ==
          "runtime_options.max_coverage_wait = 600001: must be in [0, 600000]");
  }
  {
    dix::runtime_options o;
    o.runner.max_chunk_bytes = (256ull << 20) + 1;
    auto r = dix::validate(o);
    REQUIRE_FALSE(r);
    CHECK(r.error().message() ==
          "runner_options.max_chunk_bytes = 268435457: must be in [1024, 268435456]");
  }
}

TEST_CASE("options: max_rebuild_backoff below rebuild_backoff is rejected", "[core][options]") {
  dix::runner_options o;
  o.rebuild_backoff = milliseconds{5000};
  o.max_rebuild_backoff = milliseconds{5000};
  CHECK(dix::validate(o));
  o.max_rebuild_backoff = milliseconds{4999};
  auto r = dix::validate(o);
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::invalid_argument);
  CHECK(r.error().message() ==
        "runner_options.max_rebuild_backoff = 4999: must be in [5000, 86400000]");
  // The default max (300 000 ms) is below a rebuild_backoff of 3 600 000 ms.
  dix::runner_options p;
  p.rebuild_backoff = milliseconds{3'600'000};
  auto q = dix::validate(p);
  REQUIRE_FALSE(q);
  CHECK_THAT(q.error().message(), StartsWith("runner_options.max_rebuild_backoff = 300000"));
}

TEST_CASE("options: the first failing field is reported", "[core][options]") {
  dix::runtime_options o;
  o.runner.max_transactions_per_turn = 0;
  o.runner.max_lag = milliseconds{-5};
  o.slot_count = 0;
  auto r = dix::validate(o);
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message(), StartsWith("runner_options.max_transactions_per_turn = 0"));
}

TEST_CASE("options: store log_name follows [a-z0-9][a-z0-9._-]{0,63}", "[core][options]") {
  auto check_name = [](std::string name) {
    dix::store_options o;
    o.log_name = std::move(name);
    return dix::validate(o);
  };
  for (const std::string& good :
       std::vector<std::string>{"main", "a", "0", "9z", "log-1.a_b", std::string(64, 'x')}) {
    CAPTURE(good);
    CHECK(check_name(good));
  }
  for (const std::string& bad :
       std::vector<std::string>{"", "Main", "maIn", "-main", ".main", "_main", "ma in", "ma/in",
                                std::string(65, 'x')}) {
    CAPTURE(bad);
    auto r = check_name(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().value() == errc::invalid_argument);
    CHECK_THAT(r.error().message(), StartsWith("store_options.log_name = \""));
  }
  auto r = check_name("Main");
  REQUIRE_FALSE(r);
  CHECK(r.error().message() ==
        "store_options.log_name = \"Main\": must match [a-z0-9][a-z0-9._-]{0,63}");
}

TEST_CASE("options: store WAL limits may not both be 0", "[core][options]") {
  dix::store_options o;
  o.log_name = "main";
  o.wal_ttl_s = 0;
  CHECK(dix::validate(o));
  o.wal_ttl_s = 259200;
  o.wal_size_limit_mb = 0;
  CHECK(dix::validate(o));
  o.wal_ttl_s = 0;
  auto r = dix::validate(o);
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::invalid_argument);
  CHECK_THAT(r.error().message(), StartsWith("store_options.wal_ttl_s = 0"));
  CHECK_THAT(r.error().message(), Catch::Matchers::Contains("store_options.wal_size_limit_mb = 0"));
}

TEST_CASE("options: the store's free-space reserve is 0 (automatic) or in [1 MiB, 1 TiB]", "[core][options][space]") {
  dix::store_options o;
  o.log_name = "main";
  for (std::uint64_t ok : {0ull, 1ull << 20, 1ull << 40}) {
    o.free_space_reserve_bytes = ok;
    CHECK(dix::validate(o));
  }
  o.free_space_reserve_bytes = (1u << 20) - 1;
  CHECK(dix::validate(o).error().message() ==
        "store_options.free_space_reserve_bytes = 1048575: must be in [1048576, 1099511627776]");
  o.free_space_reserve_bytes = (1ull << 40) + 1;
  CHECK(dix::validate(o).error().value() == errc::invalid_argument);
}
