// [adapter] What one registered index costs in threads (docs/operations.md, "Threads"): a real
// runtime in a real actor system over a real primary store, indexes on the shipped RocksDB
// backend. The threads of the process are counted from /proc/self/task once a first index is
// registered and covers a write (so the process-wide threads — CAF's scheduler, RocksDB's
// background pools, the runtime's own — all exist), and again after a second index did the same:
// the difference is one index's cost. The names (/proc/self/task/*/comm) are shown, not checked: a
// thread inherits its creator's name until it sets its own, so they vary from run to run.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include <caf/scoped_actor.hpp>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/caf.hpp>

#include "adapters/test_support.hpp"
#include "support/quiet_config.hpp"

using namespace dix;
using namespace std::chrono_literals;
using dix::test::temp_dir;

namespace {

constexpr std::uint32_t table = 1;

// The threads of this process by name.
std::map<std::string, int> threads_by_name() {
  std::map<std::string, int> out;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (!name.empty()) ++out[name];
  }
  return out;
}

int total(const std::map<std::string, int>& threads) {
  int n = 0;
  for (const auto& [name, count] : threads) n += count;
  return n;
}

std::string difference(const std::map<std::string, int>& before, const std::map<std::string, int>& after) {
  std::string out;
  for (const auto& [name, count] : after) {
    auto it = before.find(name);
    const int was = it == before.end() ? 0 : it->second;
    if (count != was) out += name + ": " + std::to_string(count - was) + "\n";
  }
  return out;
}

// Registers a rocksdb index of the records by value in dir/<id>, commits one record and waits
// until the index covers it: the index's actors and threads are all up.
void register_and_cover(caf::actor_system& sys, const runtime_actor& rt, primary_store& store,
                        const std::filesystem::path& dir, const std::string& id) {
  rocksdb_index_options o;
  o.path = dir / id;
  registration r;
  r.backend = rocksdb_index_backend::create(id, o).value();
  r.projections[table_ref{"main", table}] = [](std::string_view payload, const record_info&) -> projection_result {
    return encode_keys({std::string(payload)});
  };
  caf::scoped_actor self{sys};
  bool registered = false;
  self->request(rt, 30s, register_index{std::move(r)}).receive([&](index_registered&) { registered = true; },
                                                                [](caf::error&) {});
  REQUIRE(registered);
  const auto written = test::put_records(store, id + "-", 1);
  bool covered = false;
  self->request(rt, 60s, wait_coverage{id, written.time, 30000}).receive([&](coverage_reached&) { covered = true; },
                                                                         [](caf::error&) {});
  REQUIRE(covered);
}

}  // namespace

TEST_CASE("threads: a runtime costs two threads and each registered index three more: its tailer, its backend proxy and its backend's applier", "[adapter][runtime][threads]") {
  temp_dir dir;
  auto store = test::open_store(dir / "db");
  test::quiet_config cfg;
  caf::actor_system sys{cfg};
  const auto bare = threads_by_name();
  runtime_guard guard{dix::spawn_runtime(sys, {store}).value()};
  register_and_cover(sys, guard.get(), *store, dir.path(), "first");
  const auto one = threads_by_name();
  register_and_cover(sys, guard.get(), *store, dir.path(), "second");
  const auto two = threads_by_name();
  INFO("a runtime with its first index, over the bare actor system:\n" << difference(bare, one));
  INFO("the second index:\n" << difference(one, two));
  INFO("threads: bare system " << total(bare) << ", with one index " << total(one) << ", with two " << total(two));
  // The runtime's own two (the runtime actor and its watcher) and the first index's three.
  CHECK(total(one) - total(bare) == 5);
  CHECK(total(two) - total(one) == 3);
}
