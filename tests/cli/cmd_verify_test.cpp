// `dix verify` (runtime/cli/cmd_verify.cpp) as a user runs it, against an owner runtime in this
// test process (issue 31): exit 3 while no owner is attached, 0 with the proof, 1 with the records
// drift planted in the RocksDB index's files while nothing ran (named, then condemned and rebuilt),
// 2 for bad arguments, --json.
#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <string>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/runtime.hpp>

#include "cli/dix_cli.hpp"
#include "harness/child_process.hpp"
#include "support/lag_wait.hpp"
#include "support/rocksdb_tamper.hpp"

using namespace dix;
using dix::test::dix_cli;
using dix::test::temp_dir;

namespace {

registration by_key(const std::filesystem::path& path) {
  registration r;
  r.backend = rocksdb_index_backend::create("by-key", rocksdb_index_options{path}).value();
  r.projections[table_ref{"main", 1}] = [](std::string_view payload, const record_info&) -> projection_result {
    return encode_keys({std::string(payload)});
  };
  return r;
}

}  // namespace

TEST_CASE("dix verify: exit 3 without an owner, 0 with the proof, 1 naming drift planted in the index's files (condemned, then rebuilt and proven), 2 for bad arguments",
          "[system][cli][verify]") {
  temp_dir dir;
  const auto home = dir / "db";
  const auto db = home.string();
  {
    auto store = test::open_store(home);
    // No runtime has attached: no segment, nobody to ask.
    auto none = dix_cli(dir, {"verify", "--db", db, "by-key"});
    CHECK(none.exit_code == 3);
    CHECK(none.err.find("no owner") != std::string::npos);
    // --json: every outcome past the arguments is one object on stdout, a failure's too.
    auto none_json = dix_cli(dir, {"verify", "--db", db, "by-key", "--json"});
    CHECK(none_json.exit_code == 3);
    CHECK(none_json.out.rfind("{\"id\":\"by-key\",\"verified\":false,\"code\":\"unavailable\",\"message\":\"", 0) == 0);
    CHECK(std::count(none_json.out.begin(), none_json.out.end(), '\n') == 1);

    auto rt = runtime::create({store}).value();
    REQUIRE(rt->register_index(by_key(dir / "index")));
    auto txn = store->begin();
    for (int i = 1; i <= 6; ++i) txn.put(1, "r" + std::to_string(i), "k" + std::to_string(i));
    REQUIRE(txn.commit());
    REQUIRE(test::wait_readiness(home, "by-key", test::is_ready));

    auto proof = dix_cli(dir, {"verify", "--db", db, "by-key"});
    INFO(proof.out << proof.err);
    CHECK(proof.exit_code == 0);
    CHECK(proof.out.find("verified by-key through main:") != std::string::npos);
    CHECK(proof.out.find(": 6 records") != std::string::npos);
    auto json = dix_cli(dir, {"verify", "--db", db, "by-key", "--json", "--rate", "1000"});
    INFO(json.out << json.err);
    CHECK(json.exit_code == 0);
    CHECK(json.out.find("\"equal\":true") != std::string::npos);
    CHECK(json.out.find("\"records\":6") != std::string::npos);
    // Unpaced on request (the default paces at a quarter of the rate it measures).
    CHECK(dix_cli(dir, {"verify", "--db", db, "by-key", "--rate", "max"}).exit_code == 0);
    auto fast = dix_cli(dir, {"verify", "--db", db, "by-key", "--rate", "fast"});
    CHECK(fast.exit_code == 2);
    CHECK_THAT(fast.err, Catch::Contains("must be a whole number in [1, ") && Catch::Contains("], or max"));
    // Any process sees the proof in dix status (plain, --json, --prometheus) once the owner
    // published it in the metrics segment.
    REQUIRE(test::wait_lag(home, "by-key", [](const lag_figures& l) { return l.verified && l.verified_records == 6; }));
    auto status = dix_cli(dir, {"status", "--db", db});
    INFO(status.out << status.err);
    CHECK(status.out.find("verify by-key: verified through main:") != std::string::npos);
    CHECK(status.out.find(" (6 records) ") != std::string::npos);
    auto status_json = dix_cli(dir, {"status", "--db", db, "--json"});
    CHECK(status_json.out.find("\"verified_records\":6") != std::string::npos);
    CHECK(status_json.out.find("\"verify_failures\":0") != std::string::npos);
    CHECK(status_json.out.find("\"verified_sequence\":") != std::string::npos);
    auto prom = dix_cli(dir, {"status", "--db", db, "--prometheus"});
    CHECK(prom.out.find("dix_verified_sequence{index=\"by-key\",log=\"main\"} ") != std::string::npos);
    CHECK(prom.out.find("dix_verify_failures_total{index=\"by-key\"} 0") != std::string::npos);

    CHECK(dix_cli(dir, {"verify", "by-key"}).exit_code == 2);                          // no --db
    CHECK(dix_cli(dir, {"verify", "--db", db, "no such id!"}).exit_code == 2);         // not a backend id
    CHECK(dix_cli(dir, {"verify", "--db", db, "by-key", "--rate", "0"}).exit_code == 2);  // out of range
    CHECK(dix_cli(dir, {"verify", "--db", db, "nobody"}).exit_code == 4);             // no slot
    auto nobody_json = dix_cli(dir, {"verify", "--db", db, "nobody", "--json"});
    CHECK(nobody_json.exit_code == 4);
    CHECK(nobody_json.out.rfind("{\"id\":\"nobody\",\"verified\":false,\"code\":\"not_registered\",", 0) == 0);
    CHECK_THAT(nobody_json.out, Catch::Contains("; the ids with a slot: by-key\"}"));
    CHECK(dix_cli(dir, {"verify", "by-key", "--json"}).out.empty());  // bad arguments: exit 2, stderr only
    REQUIRE(rt->stop().get());
    // Still attached, the slot still `ready`, but nobody owns the index: the request is not taken.
    auto stopped = dix_cli(dir, {"verify", "--db", db, "by-key", "--timeout", "1"});
    CHECK(stopped.exit_code == 3);
    CHECK(stopped.err.find("no owner of by-key took the request") != std::string::npos);
    for (const auto& f : std::filesystem::directory_iterator(home / "dix" / "verify")) {
      CHECK(f.path().extension() != ".request");  // withdrawn
      CHECK(f.path().extension() != ".report");   // each requester took its own
    }
  }
  test::plant_four_drifts(dir / "index");

  auto store = test::open_store(home);
  auto rt = runtime::create({store}).value();
  REQUIRE(rt->register_index(by_key(dir / "index")));
  REQUIRE(test::wait_readiness(home, "by-key", test::is_ready));
  auto found = dix_cli(dir, {"verify", "--db", db, "by-key", "--report-only"});
  INFO(found.out << found.err);
  CHECK(found.exit_code == 1);
  CHECK(found.out.find("4 records") != std::string::npos);
  for (const char* line : {"  missing main/1/r2\n", "  stale main/1/r3 (index version 1", "  wrong-projection main/1/r4\n",
                           "  extra main/1/r9\n", "--report-only: nothing was condemned"}) {
    CHECK(found.out.find(line) != std::string::npos);
  }
  CHECK(rt->readiness("by-key").value().state == readiness_state::ready);
  REQUIRE(test::wait_lag(home, "by-key", [](const lag_figures& l) { return l.verify_failures == 1; }));
  auto failed = dix_cli(dir, {"status", "--db", db, "--prometheus"});
  CHECK(failed.out.find("dix_verify_failures_total{index=\"by-key\"} 1") != std::string::npos);
  CHECK(dix_cli(dir, {"status", "--db", db}).out.find("verify by-key: never verified since the owner registered it; 1 verify found a difference") != std::string::npos);
  const auto epoch = rt->readiness("by-key").value().owner_epoch;

  auto condemning = dix_cli(dir, {"verify", "--db", db, "by-key", "--json"});
  INFO(condemning.out << condemning.err);
  CHECK(condemning.exit_code == 1);
  CHECK(condemning.out.find("\"differences\":4") != std::string::npos);
  CHECK(condemning.out.find("\"condemned\":true") != std::string::npos);
  CHECK(condemning.out.find("{\"kind\":\"missing\",\"log\":\"main\",\"table\":1,\"record_id\":\"r2\"") != std::string::npos);
  REQUIRE(test::wait_readiness(home, "by-key", [&](const readiness& r) {
    return r.state == readiness_state::ready && r.owner_epoch > epoch;
  }));
  auto again = dix_cli(dir, {"verify", "--db", db, "by-key"});
  INFO(again.out << again.err);
  CHECK(again.exit_code == 0);
  CHECK(again.out.find(": 6 records") != std::string::npos);
  REQUIRE(rt->stop().get());
}

TEST_CASE("dix verify: a paced verify prints its progress and ETA while the owner scans, then the proof, and with --json no progress",
          "[system][cli][verify]") {
  temp_dir dir;
  const auto home = dir / "db";
  const auto db = home.string();
  auto store = test::open_store(home);
  auto rt = runtime::create({store}).value();
  REQUIRE(rt->register_index(by_key(dir / "index")));
  auto txn = store->begin();
  for (int i = 0; i < 300; ++i) txn.put(1, "r" + std::to_string(1000 + i), "k" + std::to_string(i));
  REQUIRE(txn.commit());
  REQUIRE(test::wait_readiness(home, "by-key", test::is_ready));
  // About 1 200 entries (each side's 300, the family check's 600) at 500 a second: over two
  // seconds, past the 64-entry burst, and the CLI looks at least once a second.
  auto paced = dix_cli(dir, {"verify", "--db", db, "by-key", "--rate", "500"});
  INFO(paced.out << paced.err);
  CHECK(paced.exit_code == 0);
  const auto at = paced.out.find("progress by-key: ");
  REQUIRE(at != std::string::npos);
  const auto line = paced.out.substr(at, paced.out.find('\n', at) - at);
  CHECK_THAT(line, Catch::Matches("progress by-key: [0-9]+/[0-9]+ entries \\([0-9]+%\\)(, ETA .+)?"));
  CHECK(at < paced.out.find("verified by-key through main:"));
  auto json = dix_cli(dir, {"verify", "--db", db, "by-key", "--rate", "500", "--json"});
  CHECK(json.exit_code == 0);
  CHECK(json.out.find("progress") == std::string::npos);
  REQUIRE(rt->stop().get());
}

TEST_CASE("dix verify: a SIGKILL of the owner during a verify proves nothing either way, and the next owner's verify of every index is equal while its writer goes on",
          "[system][cli][verify][kill]") {
  using namespace std::chrono_literals;
  temp_dir dir;
  const auto demo = dir / "serve";
  const auto home = demo / "primary";
  const auto db = home.string();
  const std::vector<std::string> ids{"by-category", "by-brand", "fulltext", "similar"};
  // A writer the slowest index (hnsw, under ASan) keeps up with: a verify first waits for its
  // index to be durable at the fence, within the verify's 60 s deadline.
  auto serve = [&] { return cli::child_process::spawn({DIX_BINARY, "serve", "--dir", demo.string(), "--rate", "500"}); };
  auto owner = serve();
  REQUIRE(owner);
  auto deadline = std::chrono::steady_clock::now() + 120s;
  REQUIRE(owner->wait_line("serve: owner of", deadline));
  REQUIRE(cli::wait_ready(home, ids, 0, deadline));
  REQUIRE(owner->wait_line("similar ready", deadline));

  // A slow verify (its scan paced at 100 entries/s), the owner killed once it was asked.
  auto slow = cli::child_process::spawn({DIX_BINARY, "verify", "--db", db, "by-brand", "--rate", "100", "--timeout", "5"});
  REQUIRE(slow);
  REQUIRE(slow->wait_line("verifying by-brand", deadline));
  owner->reap(SIGKILL);
  const int status = slow->reap(0);
  REQUIRE(WIFEXITED(status));
  // No report came: not verified (4), or the request was never taken (3). Never a difference.
  CHECK((WEXITSTATUS(status) == 3 || WEXITSTATUS(status) == 4));

  // The next owner resumes every index from its durable cursor; each is proven equal.
  owner = serve();
  REQUIRE(owner);
  deadline = std::chrono::steady_clock::now() + 120s;
  REQUIRE(owner->wait_line("serve: owner of", deadline));
  REQUIRE(cli::wait_ready(home, ids, 0, deadline));
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) {  // the vector index first, nearest the restart
    const auto& id = *it;
    auto proof = dix_cli(dir, {"verify", "--db", db, id, "--timeout", "100"});
    INFO(id << ": " << proof.out << proof.err);
    CHECK(proof.exit_code == 0);
    CHECK(proof.out.find("verified " + id + " through main:") != std::string::npos);
  }
  owner->reap(SIGTERM);
}
