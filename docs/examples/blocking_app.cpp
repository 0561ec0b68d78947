// A first dix program, on the blocking facade: a primary store in the directory named on the
// command line, one secondary index (rocksdb_index_backend) of fruit by colour, a transaction of
// three writes, then a query that waits until the index covers the writes (read-your-writes),
// through the new index's first build.
//
//   blocking_app DIR   creates DIR/primary (the store) and DIR/by-colour (the index database)
//
// Run it again on the same DIR: the store and the index are reopened, the index resumes from its
// durable cursor, and the same three writes give the same answer.
#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/primary_store.hpp>
#include <dix/runtime.hpp>

namespace {

constexpr std::uint32_t fruit_table = 1;
constexpr const char* index_id = "by-colour";

int fail(const std::string& what, const dix::error& e) {
  std::cerr << "blocking_app: " << what << ": " << e.to_string() << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: blocking_app DIR\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::cerr << "blocking_app: cannot create " << dir.string() << ": " << ec.message() << "\n";
    return 1;
  }

  // The primary store: records live in its tables; its WAL is what the index follows.
  dix::store_options store_options;
  store_options.log_name = "main";
  auto store = dix::primary_store::open(dir / "primary", store_options);
  if (!store) return fail("opening the store", store.error());
  if (auto ok = (*store)->create_table(fruit_table); !ok) return fail("creating the table", ok.error());

  // The runtime keeps registered indexes in step with the store. The index: a fruit's payload is
  // its colour, and the projection makes that the index key.
  auto rt = dix::runtime::create({*store});
  if (!rt) return fail("creating the runtime", rt.error());
  dix::rocksdb_index_options index_options;
  index_options.path = dir / index_id;
  auto index = dix::rocksdb_index_backend::create(index_id, index_options);
  if (!index) return fail("creating the index", index.error());
  dix::registration r;
  r.backend = *index;
  r.projection_version = "colour-v1";
  r.projections[dix::table_ref{"main", fruit_table}] = [](std::string_view payload,
                                                          const dix::record_info&) -> dix::projection_result {
    return dix::encode_keys({std::string(payload)});
  };
  if (auto handle = (*rt)->register_index(std::move(r)); !handle) return fail("registering", handle.error());

  // One transaction: one WriteBatch in the WAL.
  auto txn = (*store)->begin();
  txn.put(fruit_table, "apple", "red");
  txn.put(fruit_table, "banana", "yellow");
  txn.put(fruit_table, "cherry", "red");
  auto committed = txn.commit();
  if (!committed) return fail("committing", committed.error());
  // Read your writes: a lookup in `wait` mode answers once the index covers the commit (its
  // time is a valid `since`). The index is new, so it is first built by a scan of the store
  // (`needs-rebuild`, `rebuilding`, then `ready`): the wait waits through that build, up to its
  // timeout, and the runtime asks the index for its barriers at once instead of at its flush age. A default (`bounded`) query answers from what the index holds
  // if its coverage is recent enough, and is refused with index_lagging while it is unknown.
  dix::coverage_mode mine;
  mine.kind = dix::coverage_kind::wait;
  mine.since = committed->time;
  mine.timeout = std::chrono::seconds(30);
  auto red = (*index)->lookup("red", 10, mine);
  if (!red) return fail("querying", red.error());
  std::cout << "red:";
  for (const auto& row : red->rows) std::cout << ' ' << row.record_id;
  std::cout << "\n";

  // Stop the runtime (every index released), then close the store.
  if (auto stopped = (*rt)->stop().get(); !stopped) return fail("stopping", stopped.error());
  rt->reset();
  index->reset();
  if (auto closed = (*store)->close(); !closed) return fail("closing the store", closed.error());
  return red->rows.size() == 2 ? 0 : 1;
}
