// dix inside a shared library: a plugin (a MODULE library) that links dix::dix and exports one C
// function, loaded at run time by plugin_host.cpp with dlopen(). dix's static libraries are built
// position-independent so that they can be linked into it (docs/operations.md, "Linking dix into a
// shared library"). The function does what blocking_app.cpp does: a primary store, a runtime, one
// secondary index of fruit by colour, a transaction, and a read-your-writes query of the index.
//
//   dix_plugin_run(DIR)   creates DIR/primary (the store) and DIR/by-colour (the index database);
//                         returns 0 when the index answers the two red fruit, 1 otherwise
//
// The plugin is built with hidden visibility and -Wl,--exclude-libs,ALL (docs/examples/
// CMakeLists.txt): only dix_plugin_run is exported, so dix's symbols cannot clash with another
// copy of dix or of its dependencies in the host.
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
  std::cerr << "plugin: " << what << ": " << e.to_string() << "\n";
  return 1;
}

int run(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::cerr << "plugin: cannot create " << dir.string() << ": " << ec.message() << "\n";
    return 1;
  }
  dix::store_options store_options;
  store_options.log_name = "main";
  auto store = dix::primary_store::open(dir / "primary", store_options);
  if (!store) return fail("opening the store", store.error());
  if (auto ok = (*store)->create_table(fruit_table); !ok) return fail("creating the table", ok.error());

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

  auto txn = (*store)->begin();
  txn.put(fruit_table, "apple", "red");
  txn.put(fruit_table, "banana", "yellow");
  txn.put(fruit_table, "cherry", "red");
  auto committed = txn.commit();
  if (!committed) return fail("committing", committed.error());
  dix::coverage_mode mine;
  mine.kind = dix::coverage_kind::wait;
  mine.since = committed->time;
  mine.timeout = std::chrono::seconds(30);
  auto red = (*index)->lookup("red", 10, mine);
  if (!red) return fail("querying", red.error());

  if (auto stopped = (*rt)->stop().get(); !stopped) return fail("stopping", stopped.error());
  rt->reset();
  index->reset();
  if (auto closed = (*store)->close(); !closed) return fail("closing the store", closed.error());
  std::cout << "plugin: red: " << red->rows.size() << " records\n";
  return red->rows.size() == 2 ? 0 : 1;
}

}  // namespace

// The plugin's one entry point. `dir` is a directory the plugin may create and fill. No exception
// leaves it: a C caller could not catch one.
extern "C" __attribute__((visibility("default"))) int dix_plugin_run(const char* dir) noexcept {
  try {
    return run(dir);
  } catch (const std::exception& e) {
    std::cerr << "plugin: " << e.what() << "\n";
    return 1;
  }
}
