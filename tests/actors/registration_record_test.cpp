// [actor] One registration's lifecycle (actors/registration_record.hpp) with plain values: which
// steps are legal, what each gives back (the lock table's count, the write gates' entries), that
// along every path each is given back exactly once, and that an illegal step aborts (in a forked
// child, every build). The runtime actor's use of it is tested through the runtime
// (runtime_actor_test, deterministic_runtime_test).
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "actors/registration_record.hpp"
#include "support/run_in_child.hpp"

using namespace dix;

namespace {

using stage = registration_stage;

constexpr stage all_stages[] = {stage::registered, stage::releasing, stage::held,
                                stage::retrying,   stage::released,  stage::abandoned};

registration_record record_of(const std::string& id, std::uint64_t token) {
  auto s = std::make_shared<registration_settings>();
  s->id = id;
  s->token = token;
  return registration_record(std::move(s));
}

bool terminal(stage s) { return s == stage::released || s == stage::abandoned; }

// Every path from registered to a terminal stage (the held/retrying rounds cut at `depth`
// steps), each replayed on a record of its own and checked: the count and the gates are given
// back exactly once by the time it ends.
void walk(std::vector<stage>& path, int depth, std::size_t& paths) {
  if (terminal(path.back())) {
    auto r = record_of("idx", 1);
    int uncounted = 0, ungated = 0;
    for (std::size_t i = 1; i < path.size(); ++i) {
      auto undo = r.transition(path[i]);
      uncounted += undo.uncount ? 1 : 0;
      ungated += undo.ungate ? 1 : 0;
    }
    CHECK(uncounted == 1);
    CHECK(ungated == 1);
    ++paths;
    return;
  }
  if (depth == 0) return;
  for (auto to : all_stages) {
    if (!legal(path.back(), to)) continue;
    path.push_back(to);
    walk(path, depth - 1, paths);
    path.pop_back();
  }
}

}  // namespace

TEST_CASE("registration record: the settings are shared, not copied, and a record starts registered", "[actor][registration]") {
  auto s = std::make_shared<registration_settings>();
  s->id = "idx";
  s->token = 7;
  registration_record r(s);
  CHECK(r.stage() == stage::registered);
  CHECK_FALSE(r.releasing());
  CHECK(&r.settings() == s.get());
  CHECK(r.id() == "idx");
  CHECK(r.token() == 7);
  CHECK(r.snapshot() == s->snapshot);
  CHECK_FALSE(r.runner());  // none spawned yet
}

TEST_CASE("registration record: a release gives the count back as it starts and the gates as it settles, each once (protocol 2.4)", "[actor][registration]") {
  auto r = record_of("idx", 1);
  auto undo = r.transition(stage::releasing);
  CHECK(undo.uncount);
  CHECK_FALSE(undo.ungate);
  CHECK(r.releasing());
  undo = r.transition(stage::released);
  CHECK_FALSE(undo.uncount);
  CHECK(undo.ungate);
  CHECK_FALSE(r.releasing());
}

TEST_CASE("registration record: a rejected shutdown holds the lock without the gates, and its retries give back nothing more (protocol 9.7)", "[actor][registration]") {
  auto r = record_of("idx", 1);
  CHECK(r.transition(stage::releasing).uncount);
  auto undo = r.transition(stage::held);
  CHECK(undo.ungate);
  CHECK_FALSE(r.releasing());
  for (int round = 0; round < 2; ++round) {
    undo = r.transition(stage::retrying);
    CHECK_FALSE(undo.uncount);
    CHECK_FALSE(undo.ungate);
    CHECK(r.releasing());
    undo = r.transition(round == 0 ? stage::held : stage::released);
    CHECK_FALSE(undo.uncount);
    CHECK_FALSE(undo.ungate);
  }
  CHECK(r.stage() == stage::released);
}

TEST_CASE("registration record: the runtime's end abandons a registration at any stage before it settled, giving back what that stage held", "[actor][registration]") {
  auto registered = record_of("idx", 1);
  auto undo = registered.transition(stage::abandoned);
  CHECK(undo.uncount);
  CHECK(undo.ungate);

  auto releasing = record_of("idx", 2);
  (void)releasing.transition(stage::releasing);
  undo = releasing.transition(stage::abandoned);
  CHECK_FALSE(undo.uncount);
  CHECK(undo.ungate);

  auto held = record_of("idx", 3);
  (void)held.transition(stage::releasing);
  (void)held.transition(stage::held);
  undo = held.transition(stage::abandoned);
  CHECK_FALSE(undo.uncount);
  CHECK_FALSE(undo.ungate);

  auto retrying = record_of("idx", 4);
  (void)retrying.transition(stage::releasing);
  (void)retrying.transition(stage::held);
  (void)retrying.transition(stage::retrying);
  undo = retrying.transition(stage::abandoned);
  CHECK_FALSE(undo.uncount);
  CHECK_FALSE(undo.ungate);
}

TEST_CASE("registration record: the legal steps are the diagram's and no other", "[actor][registration]") {
  const std::vector<std::pair<stage, stage>> steps = {
    {stage::registered, stage::releasing}, {stage::registered, stage::abandoned}, {stage::releasing, stage::released},
    {stage::releasing, stage::held},       {stage::releasing, stage::abandoned},  {stage::held, stage::retrying},
    {stage::held, stage::abandoned},       {stage::retrying, stage::released},    {stage::retrying, stage::held},
    {stage::retrying, stage::abandoned},
  };
  for (auto from : all_stages) {
    for (auto to : all_stages) {
      const bool listed = std::find(steps.begin(), steps.end(), std::make_pair(from, to)) != steps.end();
      INFO(static_cast<int>(from) << " -> " << static_cast<int>(to));
      CHECK(legal(from, to) == listed);
    }
  }
}

TEST_CASE("registration record: along every path to released or abandoned the count and the gates are given back exactly once", "[actor][registration]") {
  std::size_t paths = 0;
  std::vector<stage> path{stage::registered};
  walk(path, 8, paths);
  CHECK(paths > 10);  // the walk reached the held/retrying rounds
}

TEST_CASE("registration record: an illegal transition aborts, naming the machine and both stages", "[actor][registration]") {
  // released straight from registered would skip the release: its gates would never be removed.
  auto skipped = test::run_in_child([] { (void)record_of("idx", 1).transition(stage::released); });
  CHECK(skipped.aborted);
  CHECK(skipped.stderr_text.find("dix: illegal registration transition 0 -> 4") != std::string::npos);
  // A second release of a registration that released already.
  auto twice = test::run_in_child([] {
    auto r = record_of("idx", 1);
    (void)r.transition(stage::releasing);
    (void)r.transition(stage::released);
    (void)r.transition(stage::releasing);
  });
  CHECK(twice.aborted);
  CHECK(twice.stderr_text.find("dix: illegal registration transition 4 -> 1") != std::string::npos);
  CHECK_FALSE(test::run_in_child([] { (void)record_of("idx", 1).transition(stage::releasing); }).aborted);
}
