// The index directory rule (backends/index_dir.*, decision 0038) alone and through each shipped
// backend's create(): a directory holding anything dix did not create is refused byte for byte
// unchanged; an empty or missing one is claimed with its marker; a reset removes only the
// backend's own files.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <rocksdb/db.h>

#include <dix/backends/hnsw_backend.hpp>
#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/backends/xapian_backend.hpp>

#include "adapters/test_support.hpp"
#include "backends/index_dir.hpp"
#include "support/dir_snapshot.hpp"
#include "support/temp_dir.hpp"

using namespace dix;
using dix::test::temp_dir;

namespace {

namespace fs = std::filesystem;

// Each shipped backend made over `dir`, as an application would (the demo's options).
result<void> create_rocksdb(const fs::path& dir) {
  rocksdb_index_options o;
  o.path = dir;
  auto b = rocksdb_index_backend::create("by-category", o);
  if (!b) return b.error();
  return {};
}
result<void> create_xapian(const fs::path& dir) {
  xapian_options o;
  o.path = dir;
  o.fields["name"] = xapian_field{"S", 1};
  auto b = xapian_backend::create("fulltext", o);
  if (!b) return b.error();
  return {};
}
result<void> create_hnsw(const fs::path& dir) {
  hnsw_options o;
  o.state_dir = dir;
  o.dimension = 4;
  auto b = hnsw_backend::create("similar", o);
  if (!b) return b.error();
  return {};
}

struct subject {
  const char* name;
  result<void> (*create)(const fs::path&);
};
const subject subjects[] = {{"rocksdb_index", create_rocksdb}, {"xapian", create_xapian}, {"hnsw", create_hnsw}};

}  // namespace

TEST_CASE("index directory: every shipped backend refuses a directory holding files it did not create, byte for byte unchanged (issue 34 item 1)", "[adapter][backend][foreign]") {
  for (const auto& s : subjects) {
    INFO(s.name);
    temp_dir dir;
    const auto path = dir / "index";
    fs::create_directories(path / "sub");
    std::ofstream(path / "thesis.docx") << "a\n";
    const auto before = test::snapshot_dir(dir.path());
    auto refused = s.create(path);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().value() == errc::store_format_mismatch);
    CHECK_THAT(refused.error().message(), Catch::Contains(path.string()) && Catch::Contains("sub") &&
                                              Catch::Contains("did not create"));
    CHECK(test::snapshot_dir(dir.path()) == before);
  }
}

TEST_CASE("index directory: every shipped backend refuses another program's RocksDB database, its families and keys untouched (issue 34 item 2)", "[adapter][backend][foreign]") {
  for (const auto& s : subjects) {
    INFO(s.name);
    temp_dir dir;
    const auto path = dir / "by-category";
    test::make_foreign_rocksdb(path);
    const auto before = test::snapshot_dir(dir.path());
    auto refused = s.create(path);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().value() == errc::store_format_mismatch);
    CHECK(test::snapshot_dir(dir.path()) == before);
    std::vector<std::string> families;
    REQUIRE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions{}, path.string(), &families).ok());
    CHECK(families == std::vector<std::string>{"default", "entries"});
  }
}

TEST_CASE("index directory: a missing directory is created (its last component only, mode 0700) with its marker, an empty one is claimed, and a missing parent is refused", "[adapter][backend][foreign]") {
  for (const auto& s : subjects) {
    INFO(s.name);
    temp_dir dir;
    const auto fresh = dir / "fresh";
    REQUIRE(s.create(fresh));
    CHECK(fs::is_regular_file(fresh / index_dir::marker_name));
    struct stat st {};
    REQUIRE(::stat(fresh.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    REQUIRE(s.create(fresh));  // again: its own
    const auto empty = dir / "empty";
    fs::create_directory(empty);
    REQUIRE(s.create(empty));
    CHECK(fs::is_regular_file(empty / index_dir::marker_name));
    auto orphan = s.create(dir / "no" / "such");
    REQUIRE_FALSE(orphan);
    CHECK(orphan.error().value() == errc::io_error);
    CHECK_THAT(orphan.error().message(), Catch::Contains("does not exist"));
    CHECK_FALSE(fs::exists(dir / "no"));
  }
}

TEST_CASE("index directory: a directory claimed by another index, or by another kind of backend, is refused", "[adapter][backend][foreign]") {
  temp_dir dir;
  const auto path = dir / "shared";
  REQUIRE(index_dir::claim(path, "xapian", "fulltext"));
  const auto before = test::snapshot_dir(dir.path());
  for (const auto& s : subjects) {
    INFO(s.name);
    if (std::string(s.name) == "xapian") continue;
    auto refused = s.create(path);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().value() == errc::store_format_mismatch);
    CHECK_THAT(refused.error().message(), Catch::Contains("the xapian index fulltext"));
  }
  auto other_id = index_dir::claim(path, "xapian", "titles");
  REQUIRE_FALSE(other_id);
  CHECK_THAT(other_id.error().message(), Catch::Contains("needs a directory of its own"));
  std::ofstream(path / index_dir::marker_name, std::ios::trunc) << "something else\n";
  auto garbled = index_dir::claim(path, "xapian", "fulltext");
  REQUIRE_FALSE(garbled);
  CHECK(garbled.error().value() == errc::store_format_mismatch);
  CHECK(index_dir::look(path, "xapian", "fulltext").error().value() == errc::store_format_mismatch);
  (void)before;
}

TEST_CASE("index directory: remove_own removes only what its predicate names, never the marker, and a directory it names with its contents", "[adapter][backend][foreign]") {
  temp_dir dir;
  const auto path = dir / "idx";
  REQUIRE(index_dir::claim(path, "rocksdb_index", "by-brand"));
  std::ofstream(path / "000001.sst") << "x";
  std::ofstream(path / "CURRENT") << "x";
  fs::create_directory(path / "archive");
  std::ofstream(path / "archive" / "000002.log") << "x";
  std::ofstream(path / "notes.txt") << "mine";
  fs::create_directory(path / "sub");  // a directory the predicate does not name
  std::ofstream(path / "sub" / "000009.sst") << "mine too";
  auto ends = [](std::string_view n, std::string_view tail) { return n.size() > tail.size() && n.substr(n.size() - tail.size()) == tail; };
  auto own = [&](std::string_view n) { return n == "CURRENT" || n == "archive" || ends(n, ".sst") || ends(n, ".log"); };
  REQUIRE(index_dir::remove_own(path, own, "test"));
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(path)) left.insert(e.path().filename().string());
  CHECK(left == std::set<std::string>{"dix-index", "notes.txt", "sub"});
  CHECK(fs::exists(path / "sub" / "000009.sst"));  // never entered: `own` does not name "sub"
  // A file someone put into a directory the backend writes survives, and so does that directory.
  fs::create_directory(path / "archive");
  std::ofstream(path / "archive" / "000003.log") << "x";
  std::ofstream(path / "archive" / "keep.txt") << "theirs";
  REQUIRE(index_dir::remove_own(path, own, "test"));
  CHECK_FALSE(fs::exists(path / "archive" / "000003.log"));
  CHECK(fs::exists(path / "archive" / "keep.txt"));
  CHECK(index_dir::look(path, "rocksdb_index", "by-brand").value() == index_dir::state::ours);
  CHECK(index_dir::look(dir / "none", "rocksdb_index", "by-brand").value() == index_dir::state::absent);
}

TEST_CASE("index directory: a symlink to a directory is followed (an index on another disk), a symlink to nothing is refused", "[adapter][backend][foreign]") {
  temp_dir dir;
  fs::create_directory(dir / "elsewhere");
  fs::create_directory_symlink(dir / "elsewhere", dir / "link");
  REQUIRE(index_dir::claim(dir / "link", "hnsw", "similar"));
  CHECK(fs::is_regular_file(dir / "elsewhere" / index_dir::marker_name));
  CHECK(index_dir::look(dir / "link", "hnsw", "similar").value() == index_dir::state::ours);
  fs::create_directory_symlink(dir / "gone", dir / "dangling");
  auto refused = index_dir::claim(dir / "dangling", "hnsw", "similar");
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message(), Catch::Contains("a symlink to nothing"));
}

TEST_CASE("index directory: a dix-index.tmp that is not a marker's temporary makes the directory someone else's, byte for byte unchanged, and an interrupted claim's temporary does not", "[adapter][backend][foreign]") {
  temp_dir dir;
  const auto theirs = dir / "theirs";
  fs::create_directory(theirs);
  std::ofstream(theirs / "dix-index.tmp") << "a user's notes that happen to bear this name\n";
  const auto before = test::snapshot_dir(theirs);
  auto refused = index_dir::claim(theirs, "xapian", "fulltext");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::store_format_mismatch);
  CHECK(test::snapshot_dir(theirs) == before);  // not truncated into a marker
  const auto interrupted = dir / "interrupted";
  fs::create_directory(interrupted);
  std::ofstream(interrupted / "dix-index.tmp") << "dix-index 1\nkin";  // a claim killed mid-write
  REQUIRE(index_dir::claim(interrupted, "xapian", "fulltext"));
  CHECK(index_dir::look(interrupted, "xapian", "fulltext").value() == index_dir::state::ours);
}
