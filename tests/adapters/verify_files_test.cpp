// dix verify's request and report files (runtime/adapters/verify_files.cpp, formats.md §8): the
// take, the withdrawal and the report's read remove only what dix wrote under dix's own names;
// files planted beside them — other names, another id's, a directory or a symlink under a
// request's name, a malformed request, a garbage report — stay.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "adapters/verify_files.hpp"
#include "support/temp_dir.hpp"

using namespace dix;
using dix::test::temp_dir;
namespace fs = std::filesystem;

namespace {

void plant(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
}

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

}  // namespace

TEST_CASE("verify files: taking, withdrawing and reading remove only dix's own files, never one planted beside them", "[adapter][verify]") {
  temp_dir dir;
  const auto home = dir / "db";
  const auto dix_dir = home / "dix";
  fs::create_directories(dix_dir);
  fs::permissions(dix_dir, fs::perms::owner_all);
  const std::string a = "00112233445566aa", b = "00112233445566bb", c = "00112233445566cc";
  REQUIRE(write_verify_request(dix_dir, "by-key", verify_file_request{a, verify_options{}}));
  const auto verify = dix_dir / "verify";
  // Planted: other names, another id's request, a directory and a symlink under request names,
  // a malformed request, and a garbage report under a report's name.
  plant(verify / "notes.txt", "mine");
  plant(verify / "by-key.request", "an old name");
  plant(verify / ("by-key." + a + ".request.bak"), "a copy");
  plant(verify / "by-key.00112233445566AA.request", "upper case: not a nonce");
  REQUIRE(write_verify_request(dix_dir, "other", verify_file_request{a, verify_options{}}));
  fs::create_directory(verify / "by-key.00112233445566dd.request");
  fs::create_symlink(verify / "notes.txt", verify / "by-key.00112233445566ee.request");
  plant(verify / ("by-key." + b + ".request"), "not a request");
  plant(verify / ("by-key." + c + ".report"), "not a report");
  const auto before = names_in(verify);

  // Only the regular files of dix's naming are waiting requests.
  auto waiting = waiting_verify_requests(dix_dir, "by-key");
  CHECK(std::set<std::string>(waiting.begin(), waiting.end()) == std::set<std::string>{a, b});

  // A good request is taken and gone; nothing else moved.
  auto taken = take_verify_request(dix_dir, "by-key", a);
  REQUIRE(taken);
  REQUIRE(*taken);
  CHECK((*taken)->nonce == a);
  auto after = before;
  after.erase("by-key." + a + ".request");
  CHECK(names_in(verify) == after);

  // A malformed one is refused and kept, as .taken, for the operator.
  auto bad = take_verify_request(dix_dir, "by-key", b);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().value() == errc::record_corrupt);
  after.erase("by-key." + b + ".request");
  after.insert("by-key." + b + ".taken");
  CHECK(names_in(verify) == after);
  CHECK(std::ifstream(verify / ("by-key." + b + ".taken")).good());

  // Withdrawing a request that is not there (taken, or never made) removes nothing.
  CHECK_FALSE(withdraw_verify_request(home, "by-key", a).value());
  CHECK_FALSE(withdraw_verify_request(home, "by-key", "00112233445566ff").value());
  CHECK(names_in(verify) == after);

  // A garbage report under a report's name is an error and stays; a real one is read and removed.
  auto garbage = take_verify_report(home, "by-key", c);
  REQUIRE_FALSE(garbage);
  CHECK(garbage.error().value() == errc::record_corrupt);
  CHECK(names_in(verify) == after);
  verify_report mine;
  mine.nonce = a;
  mine.code = errc::timeout;
  mine.message = "a test";
  REQUIRE(write_verify_report(dix_dir, "by-key", mine));
  auto read = take_verify_report(home, "by-key", a);
  REQUIRE(read);
  REQUIRE(*read);
  CHECK((*read)->code == errc::timeout);
  CHECK((*read)->message == "a test");
  CHECK(names_in(verify) == after);  // its own report gone, everything planted still there
  CHECK(fs::is_directory(verify / "by-key.00112233445566dd.request"));
  CHECK(fs::is_symlink(verify / "by-key.00112233445566ee.request"));
}
