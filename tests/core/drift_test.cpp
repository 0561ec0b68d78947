// Tests of the drift merge (core/drift.*): one pass over an index's entries and its primary's
// projection proves them equal or names each difference — missing, extra, stale, wrong
// projection — across tables and logs, up to a limit, and refuses input out of merge order.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <cstdio>
#include <random>
#include <memory>
#include <string>
#include <vector>

#include "core/drift.hpp"
#include "support/vector_entry_source.hpp"

using namespace dix;

namespace {

digest_entry entry(std::string log, std::uint32_t table, std::string id, std::uint64_t version, std::string projection = "p") {
  digest_entry e;
  e.log = std::move(log);
  e.table = table;
  e.record_id = std::move(id);
  e.version = version;
  e.hash = entry_hash(e.log, table, e.record_id, version, projection);
  return e;
}

using vector_source = test::vector_entry_source;

// The primary's entries per log.
primary_source_of primaries(std::map<std::string, std::vector<digest_entry>> by_log) {
  auto shared = std::make_shared<std::map<std::string, std::vector<digest_entry>>>(std::move(by_log));
  return [shared](const std::string& log) -> result<std::unique_ptr<entry_source>> {
    return std::unique_ptr<entry_source>(std::make_unique<vector_source>((*shared)[log]));
  };
}

// The primary's side of every log: `source` itself (one log), asked its questions (hold,
// left_out) as a backend's node would be, so a test can read what it was asked.
primary_source_of asking(std::shared_ptr<vector_source> source) {
  return [source](const std::string&) -> result<std::unique_ptr<entry_source>> {
    struct borrowed final : entry_source {
      explicit borrowed(vector_source& s) : s_(s) {}
      result<const digest_entry*> next() override { return s_.next(); }
      std::optional<std::uint64_t> hold() override { return s_.hold(); }
      result<std::vector<bool>> left_out(const std::vector<std::uint64_t>& t) override { return s_.left_out(t); }
      vector_source& s_;
    };
    return std::unique_ptr<entry_source>(std::make_unique<borrowed>(*source));
  };
}

std::string describe(const drift& d) {
  return std::string(to_string(d.kind)) + " " + d.log + "/" + std::to_string(d.table) + "/" + d.record_id + " " +
         std::to_string(d.index_version) + ":" + std::to_string(d.primary_version);
}

std::vector<std::string> describe(const drift_report& r) {
  std::vector<std::string> out;
  for (const auto& d : r.drifts) out.push_back(describe(d));
  return out;
}

}  // namespace

TEST_CASE("drift: equal sides prove equality, both digests summed from the entries read", "[core][digest][verify]") {
  const std::vector<digest_entry> same = {entry("main", 1, "a", 3), entry("main", 1, "b", 4), entry("main", 2, "a", 5)};
  vector_source index(same);
  auto r = find_drift(index, {"main"}, primaries({{"main", same}}), 10).value();
  CHECK(r.differences == 0);
  CHECK(r.drifts.empty());
  CHECK(r.index == r.primary);
  CHECK(r.index.records == 3);
}

TEST_CASE("drift: a projected record the backend leaves out is no difference when the index lacks it, and the backend is asked only about the records the index lacks, in one batch", "[core][digest][verify]") {
  // b and d are unindexable for the backend; the index lacks them (b inside the log, d at its
  // end, where the rest of the log drains). c is also named by skips but the index holds it,
  // as only apply() could have made it: it is not asked about.
  const std::vector<digest_entry> primary = {entry("main", 1, "a", 1), entry("main", 1, "b", 2), entry("main", 1, "c", 3),
                                             entry("main", 1, "d", 4)};
  vector_source index({primary[0], primary[2]});
  auto source = std::make_shared<vector_source>(primary);
  source->leave_out({"b", "c", "d"});
  auto of = asking(source);
  auto r = find_drift(index, {"main"}, of, 10).value();
  CHECK(describe(r).empty());
  CHECK(r.index == r.primary);  // what was left out is out of the primary's sum too
  CHECK(r.primary.records == 2);
  CHECK(source->left_out_asked() == 2);
  CHECK(source->left_out_batches() == 1);  // asked together, before the merge left the log

  // Without the backend leaving them out, b and d are missing.
  vector_source index2({primary[0], primary[2]});
  auto r2 = find_drift(index2, {"main"}, primaries({{"main", primary}}), 10).value();
  CHECK(describe(r2) == std::vector<std::string>{"missing main/1/b 0:2", "missing main/1/d 0:4"});
  CHECK(r2.primary.records == 4);
}

TEST_CASE("drift: differences found while questions are held are reported in merge order once answered, the questions asked in batches of at most 256, and every step ends with its questions answered", "[core][digest][verify]") {
  // 600 records; the index holds the even ones, and a stale copy of r00001 (odd): the odd ones are
  // questions, of which every third is left out.
  std::vector<digest_entry> primary, held;
  std::set<std::string> out;
  for (int i = 0; i < 600; ++i) {
    char id[8];
    std::snprintf(id, sizeof id, "r%05d", i);
    primary.push_back(entry("main", 1, id, 2));
    if (i % 2 == 0) held.push_back(primary.back());
    else if (i == 1) held.push_back(entry("main", 1, id, 1));
    else if (i % 3 == 0) out.insert(id);
  }
  auto source = std::make_shared<vector_source>(primary);
  source->leave_out(out);
  auto of = asking(source);
  vector_source index(held);
  drift_merge merge(index, {"main"}, of, 1000);
  std::size_t steps = 0;
  std::uint64_t reported = 0;
  for (;;) {
    auto done = merge.step(97).value();
    ++steps;
    // After every step nothing is held back: each step of 97 entries reads about 32 odd records,
    // so every step but the first reports some.
    if (steps > 1 && !done) CHECK(merge.report().differences > reported);
    reported = merge.report().differences;
    if (done) break;
    REQUIRE(steps < 100);
  }
  const auto& r = merge.report();
  // 300 odd records: r00001 stale, 299 questions, of which those ≡ 0 mod 3 (100: 3, 9, … 597)
  // are left out.
  CHECK(out.size() == 100);
  CHECK(source->left_out_asked() == 299);
  CHECK(source->left_out_batches() >= 2);
  CHECK(r.differences == 1 + 299 - 100);
  REQUIRE_FALSE(r.drifts.empty());
  CHECK(describe(r.drifts[0]) == "stale main/1/r00001 1:2");
  for (std::size_t k = 1; k < r.drifts.size(); ++k) {
    CHECK(r.drifts[k - 1].record_id < r.drifts[k].record_id);  // merge order
    CHECK(r.drifts[k].kind == drift_kind::missing);
    CHECK(out.count(r.drifts[k].record_id) == 0);
  }
  CHECK(r.primary.records == 600 - out.size());

  // In one pass: 299 questions in batches of at most 256, and the same outcome.
  auto again = std::make_shared<vector_source>(primary);
  again->leave_out(out);
  *source = std::move(*again);
  vector_source index2(held);
  auto whole = find_drift(index2, {"main"}, of, 1000).value();
  CHECK(source->left_out_batches() == 2);
  CHECK(source->left_out_largest_batch() == held_questions_max);
  CHECK(whole.differences == r.differences);
  CHECK(describe(whole) == describe(r));
}

TEST_CASE("drift: each kind is named at its record, with both versions, across tables", "[core][digest][verify]") {
  vector_source index({entry("main", 1, "a", 3), entry("main", 1, "c", 4), entry("main", 1, "d", 6),
                       entry("main", 2, "a", 7, "old bytes"), entry("main", 2, "z", 1)});
  auto primary = primaries({{"main", {entry("main", 1, "a", 3), entry("main", 1, "b", 2), entry("main", 1, "d", 8),
                                      entry("main", 2, "a", 7, "new bytes"), entry("main", 3, "x", 9)}}});
  auto r = find_drift(index, {"main"}, primary, 10).value();
  CHECK(describe(r) == std::vector<std::string>{"missing main/1/b 0:2", "extra main/1/c 4:0", "stale main/1/d 6:8",
                                               "wrong-projection main/2/a 7:7", "extra main/2/z 1:0",
                                               "missing main/3/x 0:9"});
  CHECK(r.differences == 6);
  CHECK(r.index != r.primary);
  CHECK(r.index.records == 5);
  CHECK(r.primary.records == 5);
}

TEST_CASE("drift: a log the registration does not project is all extra, a projected log the index lacks all missing", "[core][digest][verify]") {
  vector_source index({entry("other", 1, "a", 1), entry("main", 1, "a", 2)});
  auto primary = primaries({{"main", {entry("main", 1, "a", 2)}}, {"third", {entry("third", 5, "q", 3)}}});
  auto r = find_drift(index, {"main", "third"}, primary, 10).value();
  CHECK(describe(r) == std::vector<std::string>{"extra other/1/a 1:0", "missing third/5/q 0:3"});
}

TEST_CASE("drift: past the limit differences are counted, not kept, and the digests still cover everything", "[core][digest][verify]") {
  std::vector<digest_entry> primary_entries;
  for (int i = 0; i < 100; ++i) primary_entries.push_back(entry("main", 1, "r" + std::to_string(1000 + i), 1));
  vector_source index({});
  auto r = find_drift(index, {"main"}, primaries({{"main", primary_entries}}), 7).value();
  CHECK(r.differences == 100);
  CHECK(r.drifts.size() == 7);
  CHECK(r.drifts.front().record_id == "r1000");
  CHECK(r.primary.records == 100);
  CHECK(r.index.records == 0);
}

TEST_CASE("drift: entries out of merge order on either side, or a log split in two, are refused", "[core][digest][verify]") {
  {
    vector_source index({entry("main", 1, "b", 1), entry("main", 1, "a", 1)});
    auto r = find_drift(index, {"main"}, primaries({{"main", {}}}), 10);
    REQUIRE_FALSE(r);
    CHECK(r.error().message().find("index's entries are out of order") != std::string::npos);
  }
  {
    vector_source index({});
    auto r = find_drift(index, {"main"}, primaries({{"main", {entry("main", 2, "a", 1), entry("main", 1, "a", 1)}}}), 10);
    REQUIRE_FALSE(r);
    CHECK(r.error().message().find("projection's entries are out of order") != std::string::npos);
  }
  {
    vector_source index({entry("a", 1, "x", 1), entry("b", 1, "x", 1), entry("a", 1, "y", 1)});
    auto r = find_drift(index, {}, primaries({}), 10);
    REQUIRE_FALSE(r);
    CHECK(r.error().message().find("log a are not together") != std::string::npos);
  }
}

TEST_CASE("drift: the merge taken a bounded step at a time finds what one pass finds, reads no more than each step allows, and counts every entry read and the index side's preparation", "[core][digest][verify]") {
  std::mt19937 gen(31);
  auto rng = [&gen](std::uint32_t n) { return static_cast<std::uint32_t>(gen() % n); };
  for (int round = 0; round < 200; ++round) {
    INFO("round " << round);
    // Two projected logs and one the registration does not project; each side a random subset
    // of records, some at other versions or with other projections.
    std::vector<digest_entry> index;
    std::map<std::string, std::vector<digest_entry>> primary;
    for (const char* log : {"a", "b", "z"}) {
      for (std::uint32_t table = 1; table <= 2; ++table) {
        for (int id = 0; id < 6; ++id) {
          const auto record = "r" + std::to_string(id);
          const bool in_index = rng(3) != 0, in_primary = std::string(log) != "z" && rng(3) != 0;
          const std::uint64_t version = 1 + rng(2);
          if (in_index) index.push_back(entry(log, table, record, version, rng(4) == 0 ? "other" : "p"));
          if (in_primary) primary[log].push_back(entry(log, table, record, version + (rng(4) == 0 ? 1 : 0)));
        }
      }
    }
    const std::vector<std::string> logs{"a", "b"};
    vector_source whole(index);
    const auto once = find_drift(whole, logs, primaries(primary), 1000).value();
    std::uint64_t entries = 0;
    for (const auto& [log, list] : primary) entries += list.size();
    entries += index.size();
    const std::uint64_t step = 1 + rng(5);
    const std::uint64_t preparation = rng(3) == 0 ? 0 : rng(40);  // rows the index side reads first
    vector_source stepped(index, preparation);
    drift_merge merge(stepped, logs, primaries(primary), 1000);
    std::uint64_t steps = 0, before = 0;
    for (;;) {
      auto done = merge.step(step);
      REQUIRE(done);
      CHECK(merge.read() - before <= step + 1);  // a step may finish the pair it began
      before = merge.read();
      ++steps;
      if (*done) break;
      REQUIRE(steps < 10000);
    }
    CHECK(merge.done());
    CHECK(merge.read() >= entries + preparation);  // the preparation, every entry, and each side's end
    CHECK(merge.read() <= entries + preparation + 8);
    CHECK(describe(merge.report()) == describe(once));
    CHECK(merge.report().differences == once.differences);
    CHECK(merge.report().index == once.index);
    CHECK(merge.report().primary == once.primary);
    // Done is done: a further step reads nothing.
    CHECK(merge.step(10).value());
    CHECK(merge.read() == before);
  }
}

TEST_CASE("drift: a stepped merge that meets an error keeps failing, and never reports complete", "[core][digest][verify]") {
  vector_source index({entry("a", 1, "r2", 1), entry("a", 1, "r1", 1)});  // out of order
  drift_merge merge(index, {"a"}, primaries({{"a", {entry("a", 1, "r1", 1)}}}), 10);
  result<bool> outcome = false;
  for (int i = 0; i < 10 && outcome && !*outcome; ++i) outcome = merge.step(1);
  REQUIRE_FALSE(outcome);
  CHECK(outcome.error().value() == errc::io_error);
  CHECK_FALSE(merge.done());
  CHECK_FALSE(merge.step(10));
}
