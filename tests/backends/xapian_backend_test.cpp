#include <catch2/catch.hpp>

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <dix/backends/xapian_backend.hpp>
#include <xapian.h>

#include "backends/xapian_probe.hpp"

#include "core/drift.hpp"
#include "core/projection_digest.hpp"
#include "support/fake_store.hpp"
#include "support/child.hpp"
#include "support/backend_batches.hpp"
#include "support/fake_host.hpp"
#include "support/fake_space.hpp"
#include "support/temp_dir.hpp"
#include "support/xapian_support.hpp"

using namespace dix;
using dix::test::temp_dir;

namespace {

using fields_t = test::xapian_fields;

using test::absent;
using test::barrier;
using test::make_batch;
using test::make_cursor;
using test::reset;
using test::shut;
using test::stored;

record_entry entry(const std::string& id, fields_t fields, std::uint64_t version) {
  return test::xapian_entry(id, std::move(fields), version);
}

xapian_options options_at(const std::filesystem::path& path) { return test::xapian_options_at(path); }

struct fixture {
  temp_dir dir;
  test::fake_host host;
  test::change_log changes;
  std::shared_ptr<xapian_backend> index;
  subscription sub;

  explicit fixture(std::size_t max_batches = 16, std::uint64_t max_bytes = 64u << 20) {
    auto o = options_at(dir / "index");
    o.max_queued_batches = max_batches;
    o.max_queued_bytes = max_bytes;
    index = xapian_backend::create("products", o).value();
    index->attach(host);
    sub = index->on_state_change(changes.callback());
  }

  std::vector<std::string> search(const std::string& query) {
    std::vector<std::string> ids;
    auto found = index->search(query, 0, 100).value();
    for (auto& row : found.rows) ids.push_back(row.ref.record_id);
    return ids;
  }
};

// Counts calls of a hook and lets a test wait for a count (bounded, generous; never a sleep).
class counter {
 public:
  void bump() {
    std::lock_guard lock(mutex_);
    ++n_;
    cv_.notify_all();
  }
  bool wait_for(int n) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return n_ >= n; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int n_ = 0;
};

}  // namespace

TEST_CASE("xapian: encode_fields round-trips and malformed encodings are bad_encoding", "[adapter][backend][xapian]") {
  fields_t fields{{"title", "Red shoes"}, {"body", std::string("a\0b", 3)}, {"body", ""}};
  CHECK(decode_fields(encode_fields(fields)).value() == fields);
  CHECK(decode_fields(encode_fields({})).value().empty());
  const auto good = encode_fields({{"title", "x"}});
  CHECK(decode_fields("abc").error().message() == "bad_encoding");
  CHECK(decode_fields(good + "x").error().message() == "bad_encoding");
  CHECK(decode_fields(good.substr(0, good.size() - 1)).error().message() == "bad_encoding");
  CHECK(decode_fields(encode_fields({{"", "x"}})).error().message() == "bad_encoding");
}

TEST_CASE("xapian: bad options and ids are invalid_argument naming the field", "[adapter][backend][xapian]") {
  temp_dir dir;
  auto refused = [&](auto change) {
    auto o = options_at(dir / "index");
    change(o);
    auto made = xapian_backend::create("products", o);
    REQUIRE_FALSE(made);
    CHECK(made.error().value() == errc::invalid_argument);
    return made.error().message();
  };
  CHECK_THAT(refused([](xapian_options& o) { o.path.clear(); }), Catch::Contains("path"));
  CHECK_THAT(refused([](xapian_options& o) { o.fields.clear(); }), Catch::Contains("fields"));
  CHECK_THAT(refused([](xapian_options& o) { o.fields["Title"] = {"T", 1}; }), Catch::Contains("field name"));
  CHECK_THAT(refused([](xapian_options& o) { o.fields["tag"] = {"Q", 1}; }), Catch::Contains("fields[\"tag\"].prefix"));
  CHECK_THAT(refused([](xapian_options& o) { o.fields["tag"] = {"xt", 1}; }), Catch::Contains("prefix"));
  CHECK_THAT(refused([](xapian_options& o) { o.fields["tag"] = {"XT", 0}; }), Catch::Contains("fields[\"tag\"].weight = 0"));
  CHECK_THAT(refused([](xapian_options& o) { o.stemmer = "klingon"; }), Catch::Contains("stemmer = \"klingon\""));
  CHECK_THAT(refused([](xapian_options& o) { o.max_queued_batches = 0; }), Catch::Contains("max_queued_batches = 0"));
  CHECK_THAT(refused([](xapian_options& o) { o.max_queued_bytes = 10; }), Catch::Contains("max_queued_bytes = 10"));
  CHECK(xapian_backend::create("bad id!", options_at(dir / "index")).error().value() == errc::invalid_argument);
  auto none = options_at(dir / "index");
  none.stemmer = "none";
  CHECK(xapian_backend::create("products", none));
}

TEST_CASE("xapian: applies, updates and deletes documents, each keeping its record ref and version", "[adapter][backend][xapian]") {
  fixture f;
  REQUIRE(f.index->deliver(make_batch(1, {entry("p1", {{"title", "red shoes"}}, 11), entry("p2", {{"title", "blue hat"}}, 12)}, 1)) ==
          delivery_result::accepted);
  REQUIRE(barrier(*f.index));
  CHECK(stored(*f.index) == std::map<std::string, std::uint64_t>{{"p1", 11}, {"p2", 12}});
  CHECK(f.search("shoes") == std::vector<std::string>{"p1"});
  REQUIRE(f.index->deliver(make_batch(1, {entry("p1", {{"title", "green boots"}}, 13), absent("p2")}, 2)) ==
          delivery_result::accepted);
  REQUIRE(barrier(*f.index));
  CHECK(stored(*f.index) == std::map<std::string, std::uint64_t>{{"p1", 13}});
  CHECK(f.search("shoes").empty());
  CHECK(f.search("hat").empty());
  CHECK(f.search("boots") == std::vector<std::string>{"p1"});
  auto rows = f.index->search("boots", 0, 10).value();
  REQUIRE(rows.rows.size() == 1);
  CHECK(rows.rows[0].ref == record_ref{"main", 1, "p1", 13});
  CHECK(rows.rows[0].score > 0);
  CHECK(rows.coverage.state == coverage_state::current);
  CHECK(*f.index->durable_cursor().value() == make_cursor(2));
  CHECK(f.changes.wait_for(state_change_kind::changed));  // every barrier emits changed
}

TEST_CASE("xapian: search is ranked, stemmed and knows the field prefixes, and offset and limit page it", "[adapter][backend][xapian]") {
  fixture f;
  REQUIRE(f.index->deliver(make_batch(1,
                                      {entry("a", {{"title", "Running shoes"}, {"body", "light and fast"}}, 1),
                                       entry("b", {{"title", "Leather boots"}, {"body", "good for runs in the rain"}}, 1),
                                       entry("c", {{"title", "Rain hat"}, {"body", "keeps you dry"}}, 1)},
                                      1)) == delivery_result::accepted);
  REQUIRE(barrier(*f.index));
  // "run" stems "Running" and "runs"; the title's weight 5 ranks a's match above b's body match.
  CHECK(f.search("run") == std::vector<std::string>{"a", "b"});
  CHECK(f.search("title:rain") == std::vector<std::string>{"c"});
  CHECK(f.search("body:rain") == std::vector<std::string>{"b"});
  CHECK(f.search("rain") == std::vector<std::string>{"c", "b"});
  CHECK(f.search("title:run").size() == 1);
  CHECK(f.search("rain NOT hat") == std::vector<std::string>{"b"});
  CHECK(f.search("\"leather boots\"") == std::vector<std::string>{"b"});
  auto page = f.index->search("rain", 1, 1).value();
  REQUIRE(page.rows.size() == 1);
  CHECK(page.rows[0].ref.record_id == "b");
  CHECK(f.index->search("rain", 5, 10).value().rows.empty());
  f.host.refuse = true;  // admission comes first
  CHECK(f.index->search("rain", 0, 10).error().value() == errc::unavailable);
}

TEST_CASE("xapian: a barrier makes documents and the cursor durable together, and before it a reader sees neither", "[adapter][backend][xapian]") {
  fixture f;
  CHECK_FALSE(f.index->durable_cursor().value());
  f.host.close_gate();  // hold the applier in the first batch's epoch check
  REQUIRE(f.index->deliver(make_batch(1, {entry("p1", {{"title", "red shoes"}}, 1)}, 1)) == delivery_result::accepted);
  REQUIRE(f.index->deliver(make_batch(1, {entry("p2", {{"title", "red hat"}}, 2)}, 2)) == delivery_result::accepted);
  counter applied;
  xapian_probe::on_applied(*f.index, [&](std::uint64_t) { applied.bump(); });
  f.host.open_gate();
  REQUIRE(applied.wait_for(2));  // both applied inside the transaction, not committed
  // A second instance reads through a read-only database: no documents, no cursor yet.
  test::fake_host other_host;
  auto other = xapian_backend::create("products", options_at(f.dir / "index")).value();
  other->attach(other_host);
  CHECK(other->stored_records().value().empty());
  CHECK_FALSE(other->durable_cursor().value());
  CHECK(f.index->search("red", 0, 10).value().rows.empty());  // queries see committed state only
  REQUIRE(barrier(*f.index));
  CHECK(stored(*other) == std::map<std::string, std::uint64_t>{{"p1", 1}, {"p2", 2}});
  auto third = xapian_backend::create("products", options_at(f.dir / "index")).value();
  third->attach(other_host);
  CHECK(*third->durable_cursor().value() == make_cursor(2));
  CHECK(f.search("red").size() == 2);
}

TEST_CASE("xapian: queries on another thread while batches commit see only whole commits, never fewer documents than before", "[adapter][backend][xapian]") {
  fixture f;
  constexpr std::size_t commits = 40;
  std::atomic<bool> done{false};
  std::vector<std::size_t> seen;
  std::vector<std::string> failures;
  std::size_t retryable = 0;
  std::thread reader([&] {
    while (!done.load()) {
      auto found = f.index->search("k", 0, 1000);
      if (!found) {
        // A reader descheduled across two commits twice in a row gets the documented retryable
        // io_error (DatabaseModifiedError after its one reopen); anything else is a failure.
        if (found.error().value() == errc::io_error && found.error().message().find("Modified") != std::string::npos) ++retryable;
        else failures.push_back(found.error().message());
        continue;
      }
      seen.push_back(found->rows.size());
    }
  });
  for (std::size_t n = 1; n <= commits; ++n) {
    // Two documents per commit: a reader that saw an odd count saw half a commit.
    REQUIRE(f.index->deliver(make_batch(1, {entry("a" + std::to_string(n), {{"title", "k"}}, n)}, 2 * n - 1)) ==
            delivery_result::accepted);
    REQUIRE(f.index->deliver(make_batch(1, {entry("b" + std::to_string(n), {{"title", "k"}}, n)}, 2 * n)) ==
            delivery_result::accepted);
    REQUIRE(barrier(*f.index));
  }
  done = true;
  reader.join();
  CHECK(failures.empty());
  INFO(retryable << " retryable failures, " << seen.size() << " answers");
  CHECK(std::is_sorted(seen.begin(), seen.end()));
  CHECK(std::all_of(seen.begin(), seen.end(), [](std::size_t count) { return count % 2 == 0 && count <= 2 * commits; }));
  CHECK(f.search("k").size() == 2 * commits);
}

TEST_CASE("xapian: two commits between a query's reopen and its read throw DatabaseModifiedError, and the query reopens and answers once more", "[adapter][backend][xapian][modified]") {
  fixture f;
  test::rewrite_documents(*f.index, 1);
  SECTION("once: the retry answers from the latest commit") { test::check_modified_retry(*f.index, *f.index, false); }
  SECTION("at every attempt: a retryable io_error after the one retry") { test::check_modified_retry(*f.index, *f.index, true); }
}

TEST_CASE("xapian: unindexable projections remove the document, note their code and still advance the cursor", "[adapter][backend][xapian]") {
  fixture f;
  REQUIRE(f.index->deliver(make_batch(1, {entry("p1", {{"title", "shoes"}}, 1), entry("p2", {{"title", "shoes"}}, 1)}, 1)) ==
          delivery_result::accepted);
  auto bad = entry("p1", {}, 2);
  bad.state.projection = "ab";
  auto unknown = entry("p2", {{"colour", "red"}}, 2);
  // The ref is 1 + 4 ("main") + 4 + id bytes; base64url of 183 bytes is 244: a term of 245 fits.
  auto long_id = entry(std::string(175, 'x'), {{"title", "shoes"}}, 2);  // a term of 247 bytes
  auto fits = entry(std::string(174, 'y'), {{"title", "shoes"}}, 2);
  REQUIRE(f.index->deliver(make_batch(1, {bad, unknown, long_id, fits}, 2)) == delivery_result::accepted);
  REQUIRE(barrier(*f.index));
  CHECK(stored(*f.index) == std::map<std::string, std::uint64_t>{{fits.record_id, 2}});
  CHECK(f.host.unindexable() == std::vector<std::string>{"bad_encoding", "unknown_field", "id_too_long"});
  // skips() names the same records with the same codes, and keeps the one that fits (issue 31).
  CHECK(f.index->skips(bad) == std::optional<std::string>("bad_encoding"));
  CHECK(f.index->skips(unknown) == std::optional<std::string>("unknown_field"));
  CHECK(f.index->skips(long_id) == std::optional<std::string>("id_too_long"));
  CHECK_FALSE(f.index->skips(fits));
  CHECK(*f.index->durable_cursor().value() == make_cursor(2));
  // A record the runtime found unindexable is removed too (its code is the runtime's to note).
  auto runtime_unindexable = absent(fits.record_id);
  runtime_unindexable.state.kind = state_kind::unindexable;
  runtime_unindexable.state.reason = "projection_failed";
  REQUIRE(f.index->deliver(make_batch(1, {runtime_unindexable}, 3)) == delivery_result::accepted);
  REQUIRE(barrier(*f.index));
  CHECK(stored(*f.index).empty());
  CHECK(f.host.unindexable().size() == 3);
}

TEST_CASE("xapian: work of another epoch is dropped, and a superseded epoch's transaction is never committed", "[adapter][backend][xapian][epoch]") {
  fixture f;
  f.host.epoch = 2;
  REQUIRE(f.index->deliver(make_batch(1, {entry("old", {{"title", "shoes"}}, 1)}, 9)) == delivery_result::accepted);
  REQUIRE(f.index->deliver(make_batch(2, {entry("new", {{"title", "shoes"}}, 2)}, 3)) == delivery_result::accepted);
  REQUIRE(barrier(*f.index));
  CHECK(stored(*f.index) == std::map<std::string, std::uint64_t>{{"new", 2}});
  CHECK(*f.index->durable_cursor().value() == make_cursor(3));
  CHECK(xapian_probe::dropped_batches(*f.index) == 1);
  // Applied under epoch 2, then the ownership moves on before the barrier: nothing is written.
  counter applied;
  xapian_probe::on_applied(*f.index, [&](std::uint64_t) { applied.bump(); });
  REQUIRE(f.index->deliver(make_batch(2, {entry("late", {{"title", "shoes"}}, 3)}, 4)) == delivery_result::accepted);
  REQUIRE(applied.wait_for(1));
  f.host.epoch = 3;
  REQUIRE(barrier(*f.index));
  CHECK(stored(*f.index) == std::map<std::string, std::uint64_t>{{"new", 2}});
  CHECK(*f.index->durable_cursor().value() == make_cursor(3));
  // The next owner's work starts a fresh transaction.
  REQUIRE(f.index->deliver(make_batch(3, {entry("next", {{"title", "shoes"}}, 4)}, 5)) == delivery_result::accepted);
  REQUIRE(barrier(*f.index));
  CHECK(stored(*f.index) == std::map<std::string, std::uint64_t>{{"new", 2}, {"next", 4}});
  CHECK(*f.index->durable_cursor().value() == make_cursor(5));
}

TEST_CASE("xapian: a full queue defers, and `changed` follows once it drains to half", "[adapter][backend][xapian][deferred]") {
  SECTION("16 batches by default, here 2") {
    fixture f(2);
    f.host.close_gate();
    REQUIRE(f.index->deliver(make_batch(1, {entry("a", {{"title", "k"}}, 1)}, 1)) == delivery_result::accepted);
    REQUIRE(f.host.wait_calls(1));  // "a" in flight, still counted; the queue itself is empty
    REQUIRE(f.index->deliver(make_batch(1, {entry("b", {{"title", "k"}}, 2)}, 2)) == delivery_result::accepted);
    CHECK(f.index->deliver(make_batch(1, {entry("c", {{"title", "k"}}, 3)}, 3)) == delivery_result::deferred);
    CHECK(xapian_probe::queued_batches(*f.index) == 2);
    CHECK(f.changes.count_locked(state_change_kind::changed) == 0);
    f.host.open_gate();
    REQUIRE(f.changes.wait_for(state_change_kind::changed));
    CHECK(f.index->deliver(make_batch(1, {entry("c", {{"title", "k"}}, 3)}, 3)) == delivery_result::accepted);
    REQUIRE(barrier(*f.index));
    CHECK(f.search("k").size() == 3);
  }
  SECTION("64 MiB by default, here 4 KiB; an empty queue takes any batch") {
    fixture f(16, 4096);
    f.host.close_gate();
    REQUIRE(f.index->deliver(make_batch(1, {entry("a", {{"title", "k"}}, 1)}, 1, 100000)) == delivery_result::accepted);
    REQUIRE(f.host.wait_calls(1));
    REQUIRE(f.index->deliver(make_batch(1, {entry("b", {{"title", "k"}}, 2)}, 2, 10)) == delivery_result::accepted);
    CHECK(f.index->deliver(make_batch(1, {entry("c", {{"title", "k"}}, 3)}, 3, 10)) == delivery_result::deferred);
    CHECK(xapian_probe::queued_bytes(*f.index) == 100010);
    f.host.open_gate();
    REQUIRE(f.changes.wait_for(state_change_kind::changed));
    CHECK(f.index->deliver(make_batch(1, {entry("c", {{"title", "k"}}, 3)}, 3, 10)) == delivery_result::accepted);
    REQUIRE(barrier(*f.index));
    CHECK(*f.index->durable_cursor().value() == make_cursor(3));
  }
}

TEST_CASE("xapian: while another writer holds the lock deliveries are deferred, barriers do not wait, and `changed` follows the open once it frees", "[adapter][backend][xapian][deferred]") {
  temp_dir dir;
  const auto o = options_at(dir / "index");
  test::fake_host host_a;
  auto holder = xapian_backend::create("products", o).value();
  holder->attach(host_a);
  REQUIRE(holder->deliver(make_batch(1, {entry("p1", {{"title", "shoes"}}, 1)}, 1)) == delivery_result::accepted);
  REQUIRE(barrier(*holder));  // its WritableDatabase stays open: it holds the lock

  test::fake_host host_b;
  host_b.epoch = 2;
  auto next = xapian_backend::create("products", o).value();
  next->attach(host_b);
  test::change_log changes;
  auto sub = next->on_state_change(changes.callback());
  counter busy;
  xapian_probe::on_writer_busy(*next, [&] { busy.bump(); });
  CHECK(*next->durable_cursor().value() == make_cursor(1));  // read-only: no lock needed
  REQUIRE(next->deliver(make_batch(2, {entry("p2", {{"title", "shoes"}}, 2)}, 2)) == delivery_result::accepted);
  REQUIRE(busy.wait_for(2));  // the first open and at least one retry met the lock
  CHECK(next->deliver(make_batch(2, {entry("p3", {{"title", "shoes"}}, 3)}, 3)) == delivery_result::deferred);
  CHECK(changes.count_locked(state_change_kind::changed) == 0);
  REQUIRE(barrier(*next));  // nothing uncommitted: completes at once, then emits `changed`
  CHECK(*next->durable_cursor().value() == make_cursor(1));

  REQUIRE(shut(*holder, 1));  // closes its writer
  REQUIRE(changes.wait_for(state_change_kind::changed, 2));  // the barrier's and the open's
  CHECK(next->deliver(make_batch(2, {entry("p3", {{"title", "shoes"}}, 3)}, 3)) == delivery_result::accepted);
  REQUIRE(barrier(*next));
  CHECK(*next->durable_cursor().value() == make_cursor(3));
  CHECK(stored(*next) == std::map<std::string, std::uint64_t>{{"p1", 1}, {"p2", 2}, {"p3", 3}});
}

TEST_CASE("xapian: a writer lock held by another process defers deliveries until that process dies, then the open and `changed` follow", "[adapter][backend][xapian][deferred]") {
  temp_dir dir;
  const auto o = options_at(dir / "index");
  test::pipe_pair holding, never;
  // The child opens the writer (this process has not touched the database) and keeps it.
  pid_t child = test::fork_child([&] {
    test::fake_host host;
    auto holder = xapian_backend::create("products", o).value();
    holder->attach(host);
    if (holder->deliver(make_batch(1, {entry("p1", {{"title", "shoes"}}, 1)}, 1)) != delivery_result::accepted) return 4;
    test::waiter w;
    holder->flush(flush_reason::age, w.make());
    if (!w.wait()) return 5;
    char c = 'h';
    if (::write(holding.write_end, &c, 1) != 1) return 6;
    test::read_byte(never.read_end);  // blocks until killed
    return 7;
  });
  REQUIRE(holding.receive() == 'h');

  test::fake_host host;
  host.epoch = 2;
  auto next = xapian_backend::create("products", o).value();
  next->attach(host);
  test::change_log changes;
  auto sub = next->on_state_change(changes.callback());
  counter busy;
  xapian_probe::on_writer_busy(*next, [&] { busy.bump(); });
  CHECK(*next->durable_cursor().value() == make_cursor(1));
  REQUIRE(next->deliver(make_batch(2, {entry("p2", {{"title", "shoes"}}, 2)}, 2)) == delivery_result::accepted);
  REQUIRE(busy.wait_for(2));
  CHECK(next->deliver(make_batch(2, {entry("p3", {{"title", "shoes"}}, 3)}, 3)) == delivery_result::deferred);
  CHECK(changes.count_locked(state_change_kind::changed) == 0);

  REQUIRE(::kill(child, SIGKILL) == 0);  // the previous owner dies: the kernel drops its lock
  REQUIRE(test::wait_exit(child) == 128 + SIGKILL);
  REQUIRE(changes.wait_for(state_change_kind::changed));
  CHECK(next->deliver(make_batch(2, {entry("p3", {{"title", "shoes"}}, 3)}, 3)) == delivery_result::accepted);
  REQUIRE(barrier(*next));
  CHECK(*next->durable_cursor().value() == make_cursor(3));
  CHECK(stored(*next) == std::map<std::string, std::uint64_t>{{"p1", 1}, {"p2", 2}, {"p3", 3}});
}

TEST_CASE("xapian: shutdown drops queued work, releases the writer for another owner, and the same object serves a later epoch", "[adapter][backend][xapian][shutdown]") {
  fixture f;
  REQUIRE(f.index->deliver(make_batch(1, {entry("a", {{"title", "k"}}, 1)}, 1)) == delivery_result::accepted);
  REQUIRE(barrier(*f.index));
  f.host.close_gate();
  REQUIRE(f.index->deliver(make_batch(1, {entry("b", {{"title", "k"}}, 2)}, 2)) == delivery_result::accepted);
  REQUIRE(f.host.wait_calls(3));  // "b" in flight (after the checks of "a" and of the barrier)
  REQUIRE(f.index->deliver(make_batch(1, {entry("c", {{"title", "k"}}, 3)}, 3)) == delivery_result::accepted);
  test::waiter done;
  f.index->shutdown(1, done.make());
  f.host.open_gate();
  REQUIRE(done.wait());
  CHECK(xapian_probe::queued_batches(*f.index) == 0);
  {
    // "b" was applied but never committed: shutdown cancelled it. Another instance opens the
    // writer at once (a barrier that commits proves it: with the lock busy it would commit nothing).
    test::fake_host other_host;
    other_host.epoch = 2;
    auto other = xapian_backend::create("products", options_at(f.dir / "index")).value();
    other->attach(other_host);
    CHECK(*other->durable_cursor().value() == make_cursor(1));
    CHECK(stored(*other) == std::map<std::string, std::uint64_t>{{"a", 1}});
    REQUIRE(other->deliver(make_batch(2, {entry("d", {{"title", "k"}}, 4)}, 4)) == delivery_result::accepted);
    REQUIRE(barrier(*other));
    CHECK(*other->durable_cursor().value() == make_cursor(4));
    REQUIRE(shut(*other, 2));
  }
  f.host.epoch = 3;
  CHECK(*f.index->durable_cursor().value() == make_cursor(4));  // read from disk again
  REQUIRE(f.index->deliver(make_batch(3, {entry("e", {{"title", "k"}}, 5)}, 5)) == delivery_result::accepted);
  REQUIRE(barrier(*f.index));
  CHECK(*f.index->durable_cursor().value() == make_cursor(5));
  CHECK(stored(*f.index) == std::map<std::string, std::uint64_t>{{"a", 1}, {"d", 4}, {"e", 5}});
}

TEST_CASE("xapian: reset removes the cursor and every document, also over a missing, a half-deleted or a corrupt database", "[adapter][backend][xapian][reset]") {
  fixture f;
  const auto path = f.dir / "index";
  auto fill = [&](std::uint64_t n) {
    REQUIRE(f.index->deliver(make_batch(1, {entry("a" + std::to_string(n), {{"title", "k"}}, n)}, n)) == delivery_result::accepted);
    REQUIRE(barrier(*f.index));
    REQUIRE(f.index->durable_cursor().value());
  };
  auto check_empty_and_working = [&] {
    CHECK_FALSE(f.index->durable_cursor().value());
    CHECK(stored(*f.index).empty());
    CHECK(f.search("k").empty());
    test::fake_host other_host;
    auto other = xapian_backend::create("products", options_at(path)).value();
    other->attach(other_host);
    CHECK_FALSE(other->durable_cursor().value());  // durably gone
    REQUIRE(f.index->deliver(make_batch(1, {entry("b", {{"title", "k"}}, 9)}, 9)) == delivery_result::accepted);
    REQUIRE(barrier(*f.index));
    CHECK(stored(*f.index) == std::map<std::string, std::uint64_t>{{"b", 9}});
    CHECK(f.search("k") == std::vector<std::string>{"b"});
  };
  SECTION("a live database, its writer open") {
    fill(1);
    CHECK(f.search("k").size() == 1);  // the reader holds the old files
    REQUIRE(reset(*f.index, 1));
    check_empty_and_working();
  }
  SECTION("a missing database") {
    REQUIRE(reset(*f.index, 1));
    CHECK(std::filesystem::exists(path / "iamglass"));
    check_empty_and_working();
  }
  SECTION("a database whose version file a crashed reset already deleted") {
    fill(1);
    REQUIRE(shut(*f.index, 1));
    std::filesystem::remove(path / "iamglass");
    CHECK_FALSE(f.index->durable_cursor().value());  // no version file: no database
    REQUIRE(reset(*f.index, 1));
    check_empty_and_working();
  }
  SECTION("a database beside a file it did not write (decision 0038: the file stays)") {
    fill(1);
    std::ofstream(path / "thesis.docx") << "a user's file\n";
    std::filesystem::create_directory(path / "sub");
    REQUIRE(reset(*f.index, 1));
    CHECK(std::filesystem::exists(path / "thesis.docx"));
    CHECK(std::filesystem::is_directory(path / "sub"));
    CHECK(std::filesystem::exists(path / "dix-index"));
    check_empty_and_working();
  }
  SECTION("a corrupt database") {
    fill(1);
    REQUIRE(shut(*f.index, 1));
    std::ofstream(path / "iamglass", std::ios::trunc) << "garbage";
    auto unreadable = f.index->durable_cursor();
    REQUIRE_FALSE(unreadable);
    CHECK(unreadable.error().value() == errc::cursor_invalid);  // damaged: condemned at once, rebuilt
    CHECK_THAT(unreadable.error().message(), Catch::Contains(path.string()));
    REQUIRE(reset(*f.index, 1));
    check_empty_and_working();
  }
}

TEST_CASE("xapian: an apply error loses the transaction's work, defers until the runtime reads the cursor again, and replay restores it", "[adapter][backend][xapian][lost]") {
  fixture f;
  REQUIRE(f.index->deliver(make_batch(1, {entry("a", {{"title", "k"}}, 1)}, 1)) == delivery_result::accepted);
  REQUIRE(barrier(*f.index));
  f.host.close_gate();
  REQUIRE(f.index->deliver(make_batch(1, {entry("b", {{"title", "k"}}, 2)}, 2)) == delivery_result::accepted);
  REQUIRE(f.host.wait_calls(3));  // "b" in flight: it fails, inside a transaction of its own
  xapian_probe::fail_next_applies(*f.index, 1);
  REQUIRE(f.index->deliver(make_batch(1, {entry("c", {{"title", "k"}}, 3), entry("d", {{"title", "k"}}, 3)}, 3)) ==
          delivery_result::accepted);
  REQUIRE(f.index->deliver(make_batch(1, {entry("e", {{"title", "k"}}, 4)}, 4)) == delivery_result::accepted);
  f.host.open_gate();
  REQUIRE(f.changes.wait_for(state_change_kind::accepted_work_lost));
  CHECK(xapian_probe::queued_batches(*f.index) == 0);  // the batches queued behind are lost with it
  CHECK(f.index->deliver(make_batch(1, {entry("e", {{"title", "k"}}, 4)}, 4)) == delivery_result::deferred);
  CHECK(stored(*f.index) == std::map<std::string, std::uint64_t>{{"a", 1}});  // "b" was cancelled
  const auto changed = f.changes.count_locked(state_change_kind::changed);
  // The runtime replays from the durable cursor (protocol.md §5.7): its reading ends the deferral.
  CHECK(*f.index->durable_cursor().value() == make_cursor(1));
  CHECK(f.changes.count_locked(state_change_kind::changed) == changed + 1);
  REQUIRE(f.index->deliver(make_batch(1, {entry("b", {{"title", "k"}}, 2)}, 2)) == delivery_result::accepted);
  REQUIRE(f.index->deliver(make_batch(1, {entry("c", {{"title", "k"}}, 3), entry("d", {{"title", "k"}}, 3)}, 3)) ==
          delivery_result::accepted);
  REQUIRE(f.index->deliver(make_batch(1, {entry("e", {{"title", "k"}}, 4)}, 4)) == delivery_result::accepted);
  REQUIRE(barrier(*f.index));
  CHECK(*f.index->durable_cursor().value() == make_cursor(4));
  CHECK(stored(*f.index) == std::map<std::string, std::uint64_t>{{"a", 1}, {"b", 2}, {"c", 3}, {"d", 3}, {"e", 4}});
  CHECK(f.changes.count_locked(state_change_kind::failed) == 0);
}

TEST_CASE("xapian: a commit that fails forgets its cursor, so a later commit of a rebuild's scan chunks reports none", "[adapter][backend][xapian][lost]") {
  fixture f;
  REQUIRE(f.index->deliver(make_batch(1, {entry("a", {{"title", "k"}}, 1)}, 1)) == delivery_result::accepted);
  REQUIRE(barrier(*f.index));
  counter applied;
  xapian_probe::on_applied(*f.index, [&](std::uint64_t) { applied.bump(); });
  REQUIRE(f.index->deliver(make_batch(1, {entry("b", {{"title", "k"}}, 2)}, 2)) == delivery_result::accepted);
  REQUIRE(applied.wait_for(1));  // "b" and its cursor inside the open transaction
  // The commit fails for real: glass cannot write its new version file where the database was.
  const auto path = f.dir / "index";
  std::filesystem::rename(path, f.dir / "away");
  const auto failed = barrier(*f.index);
  std::filesystem::rename(f.dir / "away", path);
  REQUIRE_FALSE(failed);
  REQUIRE(f.changes.wait_for(state_change_kind::accepted_work_lost));
  // The runtime rebuilds: the epoch shut down, a reset under the next, a scan chunk (no cursor).
  REQUIRE(shut(*f.index, 1));
  f.host.epoch = 2;
  REQUIRE(reset(*f.index, 2));
  REQUIRE_FALSE(f.index->durable_cursor().value());
  REQUIRE(f.index->deliver(make_batch(2, {entry("a", {{"title", "k"}}, 1)}, std::nullopt)) == delivery_result::accepted);
  REQUIRE(barrier(*f.index));
  // Cursor 2 was never committed: reporting it durable here was a cursor the runtime never offered.
  CHECK_FALSE(f.index->durable_cursor().value());
  CHECK(stored(*f.index) == std::map<std::string, std::uint64_t>{{"a", 1}});
}

TEST_CASE("xapian: three apply errors without a successful barrier between them are `failed`, until a shutdown", "[adapter][backend][xapian][lost]") {
  fixture f;
  xapian_probe::fail_next_applies(*f.index, 3);
  for (std::size_t lost = 1; lost <= 2; ++lost) {
    REQUIRE(f.index->deliver(make_batch(1, {entry("a", {{"title", "k"}}, 1)}, 1)) == delivery_result::accepted);
    REQUIRE(f.changes.wait_for(state_change_kind::accepted_work_lost, lost));
    CHECK_FALSE(f.index->durable_cursor().value());  // the replay's reading
  }
  REQUIRE(f.index->deliver(make_batch(1, {entry("a", {{"title", "k"}}, 1)}, 1)) == delivery_result::accepted);
  REQUIRE(f.changes.wait_for(state_change_kind::failed));
  CHECK(f.changes.count_locked(state_change_kind::accepted_work_lost) == 2);
  REQUIRE(f.index->deliver(make_batch(1, {entry("b", {{"title", "k"}}, 2)}, 2)) == delivery_result::accepted);
  auto refused = barrier(*f.index);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::backend_failed);
  CHECK(stored(*f.index).empty());
  REQUIRE(shut(*f.index, 1));
  f.host.epoch = 2;
  REQUIRE(f.index->deliver(make_batch(2, {entry("c", {{"title", "k"}}, 3)}, 3)) == delivery_result::accepted);
  REQUIRE(barrier(*f.index));
  CHECK(stored(*f.index) == std::map<std::string, std::uint64_t>{{"c", 3}});
}

namespace {

// Batch n of the crash tests: record r<n> appears, record "hot" moves to version n.
std::shared_ptr<const batch> crash_batch(std::uint64_t n, epoch_t epoch = 1) {
  return make_batch(epoch, {entry("r" + std::to_string(n), {{"title", "item " + std::to_string(n)}}, n),
                            entry("hot", {{"body", "step " + std::to_string(n)}}, n)},
                    n);
}

std::map<std::string, std::uint64_t> crash_expected(std::uint64_t n) {
  std::map<std::string, std::uint64_t> out;
  for (std::uint64_t i = 1; i <= n; ++i) out["r" + std::to_string(i)] = i;
  if (n > 0) out["hot"] = n;
  return out;
}

}  // namespace

TEST_CASE("xapian: a process killed between apply and barrier, or deep inside a transaction, leaves a cursor over exactly its documents, and replay completes them",
          "[adapter][backend][xapian][crash]") {
  constexpr std::uint64_t total = 120;
  struct kill_point {
    const char* name;
    std::uint64_t barrier_at;  // batches made durable first
    std::uint64_t killed_at;   // applied when killed
  };
  for (auto point : {kill_point{"right after applying, before any barrier", 0, 3},
                     kill_point{"between apply and barrier, after a barrier", 20, 21},
                     kill_point{"inside a transaction that Xapian flushed to its tables several times", 20, total}}) {
    DYNAMIC_SECTION("killed " << point.name) {
      temp_dir dir;
      const auto path = dir / "index";
      test::pipe_pair reached, never;
      pid_t child = test::fork_child([&] {
        // Xapian flushes its buffered changes to the tables every 10 documents, so the last
        // kill point is inside a transaction with many flushes and no commit.
        ::setenv("XAPIAN_FLUSH_THRESHOLD", "10", 1);
        test::fake_host host;
        auto o = options_at(path);
        o.max_queued_batches = 1024;  // never deferred: the only barrier is the test's
        auto index = xapian_backend::create("products", o).value();
        index->attach(host);
        xapian_probe::on_applied(*index, [&](std::uint64_t n) {
          if (n != point.killed_at) return;
          char c = 'k';
          if (::write(reached.write_end, &c, 1) != 1) ::_exit(6);
          test::read_byte(never.read_end);  // blocks: nothing is ever written
          ::_exit(7);
        });
        for (std::uint64_t n = 1; n <= total; ++n) {
          if (index->deliver(crash_batch(n)) != delivery_result::accepted) return 4;
          if (n == point.barrier_at) {
            test::waiter w;
            index->flush(flush_reason::age, w.make());
            if (!w.wait()) return 5;
          }
        }
        test::read_byte(never.read_end);
        return 8;
      });
      REQUIRE(reached.receive() == 'k');
      REQUIRE(::kill(child, SIGKILL) == 0);
      REQUIRE(test::wait_exit(child) == 128 + SIGKILL);

      test::fake_host host;
      host.epoch = 2;
      auto index = xapian_backend::create("products", options_at(path)).value();
      index->attach(host);
      auto durable = index->durable_cursor().value();
      const std::uint64_t at = durable ? durable->logs().front().sequence : 0;
      CHECK(at == point.barrier_at);
      CHECK(stored(*index) == crash_expected(at));  // the cursor describes exactly what is stored
      // Replay from the cursor, as the runtime resumes.
      for (std::uint64_t n = at + 1; n <= total; ++n) {
        while (index->deliver(crash_batch(n, 2)) != delivery_result::accepted) REQUIRE(barrier(*index));
      }
      REQUIRE(barrier(*index));
      CHECK(*index->durable_cursor().value() == make_cursor(total));
      CHECK(stored(*index) == crash_expected(total));
      auto hot = index->search("body:step", 0, 10).value();
      REQUIRE(hot.rows.size() == 1);
      CHECK(hot.rows[0].ref.version == total);
    }
  }
}

TEST_CASE("xapian: below its free-space reserve a delivery is deferred with nothing queued and the host hears low-disk-space, and once space returns the retried delivery is accepted (issue 34 item 3)", "[adapter][backend][xapian][space]") {
  fixture f;
  test::fake_space space(1u << 30);  // automatic reserve: half of 128 MiB
  xapian_probe::set_space_probe(*f.index, space.probe(), std::chrono::milliseconds(0));
  REQUIRE(f.index->deliver(make_batch(1, {entry("a", {{"title", "k"}}, 1)}, 1)) == delivery_result::accepted);
  REQUIRE(barrier(*f.index));
  CHECK(f.host.holds() == std::vector<std::pair<epoch_t, backend_hold>>{{1, backend_hold::none}});
  space.set_available(64u << 20);  // the reserve exactly: the batch's writes would go below it
  CHECK(f.index->deliver(make_batch(1, {entry("b", {{"title", "k"}}, 2)}, 2)) == delivery_result::deferred);
  CHECK(xapian_probe::queued_batches(*f.index) == 0);
  CHECK(f.host.holds().back() == std::pair<epoch_t, backend_hold>{1, backend_hold::low_disk_space});
  space.set_available(1u << 30);
  REQUIRE(f.index->deliver(make_batch(1, {entry("b", {{"title", "k"}}, 2)}, 2)) == delivery_result::accepted);
  CHECK(f.host.holds().back() == std::pair<epoch_t, backend_hold>{1, backend_hold::none});
  REQUIRE(barrier(*f.index));
  CHECK(f.search("k").size() == 2);
}

TEST_CASE("xapian: a database written before digests answers open_digest not_supported and keeps indexing without one, until a reset starts an empty digest (issue 31)", "[adapter][backend][xapian][digest]") {
  temp_dir dir;
  const auto path = dir / "index";
  {
    test::fake_host host;
    auto index = xapian_backend::create("products", options_at(path)).value();
    index->attach(host);
    REQUIRE(index->deliver(make_batch(1, {entry("p1", {{"title", "red shoes"}}, 11)}, 1)) == delivery_result::accepted);
    REQUIRE(barrier(*index));
    REQUIRE(index->open_digest().value()->digest().records == 1);
    REQUIRE(shut(*index, 1));
  }
  {  // As a version before digests left it: documents and cursor, no dix.digest.
    Xapian::WritableDatabase db(path.string(), Xapian::DB_OPEN);
    db.set_metadata("dix.digest", "");
    db.commit();
  }
  test::fake_host host;
  auto index = xapian_backend::create("products", options_at(path)).value();
  index->attach(host);
  auto refused = index->open_digest();
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::not_supported);
  CHECK_THAT(refused.error().message(), Catch::Contains("rebuild"));
  // It keeps indexing, without a digest it cannot vouch for.
  REQUIRE(index->deliver(make_batch(1, {entry("p2", {{"title", "blue hat"}}, 12)}, 2)) == delivery_result::accepted);
  REQUIRE(barrier(*index));
  CHECK(stored(*index) == std::map<std::string, std::uint64_t>{{"p1", 11}, {"p2", 12}});
  CHECK(index->open_digest().error().value() == errc::not_supported);
  // A reset empties it: the digest starts from nothing and counts again.
  REQUIRE(reset(*index, 1));
  CHECK(index->open_digest().value()->digest() == index_digest{});
  REQUIRE(index->deliver(make_batch(1, {entry("p3", {{"title", "green boots"}}, 13)}, 3)) == delivery_result::accepted);
  REQUIRE(barrier(*index));
  auto view = index->open_digest().value();
  CHECK(view->digest().records == 1);
  index_digest sum;
  REQUIRE(view->for_each_entry([&](const digest_entry& e) {
    sum.add(e.hash);
    return true;
  }));
  CHECK(sum == view->digest());
}

TEST_CASE("xapian: drift planted in its documents with the backend closed (one deleted, one added, one at an older version, one with another projection's hash) is found, each record by its kind and no other (issue 31)", "[adapter][backend][xapian][digest][verify]") {
  temp_dir dir;
  const auto path = dir / "index";
  test::fake_store store("main", "identity-1");
  const projection fn = [](std::string_view payload, const record_info&) -> projection_result {
    return encode_fields({{"title", std::string(payload)}});
  };
  std::map<std::string, std::uint64_t> versions;
  for (int i = 1; i <= 6; ++i) {
    const auto id = "p" + std::to_string(i);
    versions[id] = store.commit({test::put(1, id, "title " + id)}).second;
  }
  {
    test::fake_host host;
    auto index = xapian_backend::create("products", options_at(path)).value();
    index->attach(host);
    std::vector<record_entry> records;
    for (const auto& [id, version] : versions) records.push_back(entry(id, {{"title", "title " + id}}, version));
    REQUIRE(index->deliver(make_batch(1, records, 6)) == delivery_result::accepted);
    REQUIRE(barrier(*index));
    REQUIRE(shut(*index, 1));
  }
  auto verify = [&] {
    test::fake_host host;
    auto index = xapian_backend::create("products", options_at(path)).value();
    index->attach(host);
    auto view = index->open_digest().value();
    test::fake_store::reader reader{store};
    auto snapshot = reader.snapshot().value();
    auto primary_of = [&](const std::string& log) -> result<std::unique_ptr<entry_source>> {
      return std::unique_ptr<entry_source>(std::make_unique<projection_entries>(*snapshot, log, std::map<std::uint32_t, projection>{{1, fn}}));
    };
    view_entries source(*view);
    auto report = find_drift(source, {"main"}, primary_of, 100).value();
    std::vector<std::string> found;
    for (const auto& d : report.drifts) found.push_back(std::string(to_string(d.kind)) + " " + d.record_id);
    return std::make_pair(found, report.differences);
  };
  CHECK(verify().second == 0);
  {
    // As a stray tool would, through Xapian's own API: documents keyed by their id term, data
    // (u8 log length, log, u32 LE table, u64 LE version, id), value slot 0 the entry hash.
    Xapian::WritableDatabase db(path.string(), Xapian::DB_OPEN);
    auto term = [](const std::string& id) { return xapian_id_term("main", 1, id); };
    auto data = [](const std::string& id, std::uint64_t version) {
      std::string out(1, '\x04');
      out += "main";
      for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(i == 0 ? 1 : 0));
      for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((version >> (8 * i)) & 0xFF));
      return out + id;
    };
    auto hash_value = [](const hash128& h) {
      std::string out;
      for (auto word : {h.lo, h.hi}) {
        for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((word >> (8 * i)) & 0xFF));
      }
      return out;
    };
    db.delete_document(term("p2"));  // removed
    Xapian::Document added;            // added: a record the primary never had
    added.set_data(data("p9", 3));
    added.add_boolean_term(term("p9"));
    added.add_value(0, hash_value(entry_hash("main", 1, "p9", 3, encode_fields({{"title", "title p9"}}))));
    db.replace_document(term("p9"), added);
    auto stale = db.get_document(*db.postlist_begin(term("p3")));  // an older version
    stale.set_data(data("p3", 1));
    db.replace_document(term("p3"), stale);
    auto wrong = db.get_document(*db.postlist_begin(term("p4")));  // another projection at its version
    wrong.add_value(0, hash_value(entry_hash("main", 1, "p4", versions["p4"], encode_fields({{"title", "other"}}))));
    db.replace_document(term("p4"), wrong);
    db.commit();
  }
  const auto [found, differences] = verify();
  CHECK(found == std::vector<std::string>{"missing p2", "stale p3", "wrong-projection p4", "extra p9"});
  CHECK(differences == 4);
}
