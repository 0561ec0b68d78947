// The public runtime API over real RocksDB stores and backends (real threads, real time; waits
// are on futures, never sleeps).
#include <catch2/catch.hpp>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/runtime.hpp>

#include "adapters/test_support.hpp"

using namespace dix;
using dix::test::temp_dir;

namespace {

registration index_registration(std::shared_ptr<backend> b) {
  registration r;
  r.backend = std::move(b);
  r.projections[table_ref{"main", 1}] = [](std::string_view payload, const record_info&) -> projection_result {
    return encode_keys({std::string(payload)});
  };
  return r;
}

std::shared_ptr<rocksdb_index_backend> make_index(const temp_dir& dir, const std::string& id = "by-value") {
  rocksdb_index_options o;
  o.path = dir / id;
  return rocksdb_index_backend::create(id, o).value();
}

}  // namespace

TEST_CASE("runtime: registration checks fail without side effects (protocol §2.1)", "[adapter][runtime]") {
  temp_dir dir;
  auto store = test::open_store(dir / "db");
  auto rt = runtime::create({store}).value();
  registration none;
  CHECK(rt->register_index(none).error().value() == errc::invalid_argument);
  auto r = index_registration(make_index(dir));
  r.projections.clear();
  CHECK(rt->register_index(r).error().value() == errc::invalid_argument);
  auto wrong_log = index_registration(make_index(dir, "x"));
  wrong_log.projections = {{table_ref{"aux", 1}, wrong_log.projections.begin()->second}};
  CHECK_THAT(rt->register_index(wrong_log).error().message(), Catch::Contains("not attached"));
  auto wrong_table = index_registration(make_index(dir, "y"));
  wrong_table.projections = {{table_ref{"main", 9}, wrong_table.projections.begin()->second}};
  CHECK_THAT(rt->register_index(wrong_table).error().message(), Catch::Contains("does not exist"));
  auto bad_options = index_registration(make_index(dir, "z"));
  bad_options.options = runner_options{};
  bad_options.options->max_chunk_records = 0;
  CHECK_THAT(rt->register_index(bad_options).error().message(), Catch::StartsWith("runner_options.max_chunk_records = 0"));
  auto long_version = index_registration(make_index(dir, "w"));
  long_version.projection_version = std::string(257, 'v');
  CHECK(rt->register_index(long_version).error().value() == errc::invalid_argument);
  REQUIRE(rt->register_index(index_registration(make_index(dir))));
  CHECK(rt->register_index(index_registration(make_index(dir, "by-value"))).error().value() == errc::already_registered);
  CHECK(rt->status("x") == std::nullopt);  // nothing of the failed registrations remains
}

TEST_CASE("runtime: stop returns the same future every call, afterwards registration fails stopped", "[adapter][runtime][stop]") {
  temp_dir dir;
  auto store = test::open_store(dir / "db");
  auto rt = runtime::create({store}).value();
  auto index = make_index(dir);
  REQUIRE(rt->register_index(index_registration(index)));
  test::put_records(*store, "k", 10);
  auto a = rt->stop();
  auto b = rt->stop();
  REQUIRE(a.get().has_value());
  REQUIRE(b.get().has_value());
  CHECK(&a.get() == &b.get());  // one shared state
  CHECK(rt->register_index(index_registration(make_index(dir, "later"))).error().value() == errc::stopped);
  // What became durable is exactly described by the index's cursor.
  auto durable = index->durable_cursor();
  REQUIRE(durable);
}

TEST_CASE("runtime: create refuses an empty store list and duplicate log names", "[adapter][runtime]") {
  temp_dir dir;
  auto one = test::open_store(dir / "one");
  auto two = test::open_store(dir / "two");  // also log "main"
  CHECK(runtime::create({}).error().value() == errc::invalid_argument);
  CHECK(runtime::create({one, two}).error().value() == errc::invalid_argument);
  runtime_options o;
  o.max_write_delay = std::chrono::milliseconds(0);
  CHECK_THAT(runtime::create({one}, o).error().message(), Catch::StartsWith("runtime_options.max_write_delay = 0"));
}
