// [adapter] Commits and queries as messages (issue 29) in a real actor system: the runtime actor
// over a real primary store and a real rocksdb_index_backend, an application actor system whose
// scheduler has ONE thread. What is shown: a commit held in the writer gate, and a `wait`-mode
// query waiting for coverage, never occupy that thread — another actor keeps answering meanwhile
// — and a read-your-writes query sent right after register_index answers with the write. Real
// threads; every wait is for a response, with a generous failure deadline; the gate is held by a
// latch the test opens, not by time.
#include <catch2/catch.hpp>

#include <algorithm>
#include <condition_variable>
#include <limits>
#include <mutex>

#include <caf/after.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/caf.hpp>

#include "adapters/primary_store_impl.hpp"
#include "adapters/test_support.hpp"
#include "messages/values.hpp"
#include "support/quiet_config.hpp"

using namespace dix;
using namespace std::chrono_literals;
using dix::test::temp_dir;

namespace {

constexpr std::uint32_t table = 1;

// An actor on the scheduler's one thread: answers a ping at once.
caf::behavior pong() {
  return {[](caf::atom_value a) { return a; }};
}

// A latch a test opens once.
struct latch {
  std::mutex mutex;
  std::condition_variable cv;
  bool entered = false;
  bool open = false;
  void enter_and_wait() {
    std::unique_lock lock(mutex);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
  }
  bool wait_entered() {
    std::unique_lock lock(mutex);
    return cv.wait_for(lock, 30s, [&] { return entered; });
  }
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    cv.notify_all();
  }
};

struct app {
  temp_dir dir;
  std::shared_ptr<primary_store> store = test::open_store(dir / "db");
  test::quiet_config cfg{1};
  caf::actor_system sys{cfg};
  runtime_actor rt = dix::spawn_runtime(sys, {store}).value();
  caf::actor ponger = sys.spawn(pong);
  ~app() { caf::anon_send_exit(rt, caf::exit_reason::user_shutdown); }

  // Whether the scheduler's thread is free: the ponger answers.
  bool scheduler_answers() {
    caf::scoped_actor self{sys};
    bool answered = false;
    self->request(ponger, 30s, caf::atom("ping")).receive([&](caf::atom_value) { answered = true; }, [](caf::error&) {});
    return answered;
  }
};

}  // namespace

TEST_CASE("commit_transaction: a commit the writer gate holds occupies the store's committer, never the application's scheduler thread", "[adapter][runtime][commit]") {
  app a;
  auto held = std::make_shared<latch>();
  set_admission_hook(*a.store, [held](std::uint32_t) {
    held->enter_and_wait();  // on the committer's thread: the gate's delay, as long as the test wants
    return admission{};
  });
  caf::scoped_actor self{a.sys};
  self->send(a.rt, commit_transaction{"main", {write_op{write_kind::put, table, "a", "1"}}, commit_sync::store_default});
  REQUIRE(held->wait_entered());
  CHECK(a.scheduler_answers());  // the one scheduler thread is free while the commit waits
  held->release();
  std::optional<transaction_committed> done;
  self->receive([&](transaction_committed& c) { done = c; }, [](caf::error&) {}, caf::after(30s) >> [] {});
  REQUIRE(done);
  CHECK(done->sequence > 0);
  set_admission_hook(*a.store, nullptr);
}

TEST_CASE("query_index: a read-your-writes query sent right after register_index waits through the first build on a thread of its own and reads the write", "[adapter][runtime][query][first-build]") {
  app a;
  caf::scoped_actor self{a.sys};
  std::optional<transaction_committed> written;
  self->request(a.rt, 30s, commit_transaction{"main", {write_op{write_kind::put, table, "apple", "red"}}, commit_sync::store_default})
    .receive([&](transaction_committed& c) { written = c; }, [](caf::error&) {});
  REQUIRE(written);
  rocksdb_index_options o;
  o.path = a.dir / "by-colour";
  auto index = rocksdb_index_backend::create("by-colour", o).value();
  registration r;
  r.backend = index;
  r.projections[table_ref{"main", table}] = [](std::string_view payload, const record_info&) -> projection_result {
    return encode_keys({std::string(payload)});
  };
  bool registered = false;
  self->request(a.rt, 30s, register_index{std::move(r)}).receive([&](index_registered&) { registered = true; }, [](caf::error&) {});
  REQUIRE(registered);
  index_query mine;
  mine.id = "by-colour";
  mine.kind = query_kind::lookup;
  mine.text = "red";
  mine.mode.kind = coverage_kind::wait;
  mine.mode.since = written->time;
  mine.mode.timeout = 25000ms;
  self->send(a.rt, to_query_index(mine));
  CHECK(a.scheduler_answers());  // whatever the query is doing now, it is not on the scheduler
  std::optional<index_rows> rows;
  caf::error failure;
  self->receive([&](index_rows& x) { rows = std::move(x); }, [&](caf::error& e) { failure = e; }, caf::after(60s) >> [] {});
  INFO(a.sys.render(failure));
  REQUIRE(rows);
  CHECK(rows->id == "by-colour");
  REQUIRE(rows->rows.size() == 1);
  CHECK(rows->rows[0].record_id == "apple");
  CHECK(rows->rows[0].version == written->time);
  CHECK(rows->rows[0].score() == 0.0);
  auto values = to_query_rows(*rows);
  REQUIRE(values.rows.size() == 1);
  CHECK(values.rows[0].ref.record_id == "apple");
  // A kind the index does not answer.
  index_query search = mine;
  search.kind = query_kind::search;
  caf::error refused;
  self->request(a.rt, 30s, to_query_index(search)).receive([](index_rows&) {}, [&](caf::error& e) { refused = e; });
  CHECK(to_errc(refused) == errc::not_supported);
  bool stopped = false;
  self->request(a.rt, 60s, stop_runtime{}).receive([&](runtime_stopped&) { stopped = true; }, [](caf::error&) {});
  CHECK(stopped);
}

TEST_CASE("query_index: a wait-mode query waiting for coverage never takes the scheduler's thread", "[adapter][runtime][query]") {
  app a;
  caf::scoped_actor self{a.sys};
  rocksdb_index_options o;
  o.path = a.dir / "by-colour";
  auto index = rocksdb_index_backend::create("by-colour", o).value();
  registration r;
  r.backend = index;
  r.projections[table_ref{"main", table}] = [](std::string_view payload, const record_info&) -> projection_result {
    return encode_keys({std::string(payload)});
  };
  bool registered = false;
  self->request(a.rt, 30s, register_index{std::move(r)}).receive([&](index_registered&) { registered = true; }, [](caf::error&) {});
  REQUIRE(registered);
  // An hour ahead: no commit covers it, so the query waits out its timeout on its worker.
  index_query never;
  never.id = "by-colour";
  never.text = "red";
  never.mode.kind = coverage_kind::wait;
  never.mode.since = a.store->index_time() + 3'600'000'000'000ull;
  never.mode.timeout = 3000ms;
  self->send(a.rt, to_query_index(never));
  CHECK(a.scheduler_answers());
  caf::error failure;
  self->receive([&](index_rows&) {}, [&](caf::error& e) { failure = e; }, caf::after(60s) >> [] {});
  const auto code = to_errc(failure);
  CHECK((code == errc::index_lagging || code == errc::rebuilding));  // its deadline, the build done or not
}

// A store's writer on its own (spawn_store_writer), in an actor system with one scheduler thread,
// and an actor to ask it from.
struct writer_fixture {
  temp_dir dir;
  std::shared_ptr<primary_store> store = test::open_store(dir / "db");
  test::quiet_config cfg{1};
  caf::actor_system sys{cfg};
  store_writer writer = dix::spawn_store_writer(sys, store);
  caf::scoped_actor self{sys};
};

TEST_CASE_METHOD(writer_fixture, "spawn_store_writer: a store's writer commits without a runtime, in the order it receives, and refuses another store's log", "[adapter][runtime][commit]") {
  for (int i = 0; i < 10; ++i) {
    self->send(writer, commit_transaction{"", {write_op{write_kind::put, table, "k", std::to_string(i)}}, commit_sync::store_default});
  }
  std::vector<std::uint64_t> sequences;
  for (int i = 0; i < 10; ++i) {
    self->receive([&](transaction_committed& c) { sequences.push_back(c.sequence); }, [](caf::error&) {},
                  caf::after(30s) >> [] {});
  }
  REQUIRE(sequences.size() == 10);
  CHECK(std::is_sorted(sequences.begin(), sequences.end()));
  auto last = store->get(table, "k");
  REQUIRE(last);
  REQUIRE(*last);
  CHECK((*last)->payload == "9");
  caf::error refused;
  self->request(writer, 30s, commit_transaction{"elsewhere", {write_op{write_kind::put, table, "x", "y"}}, commit_sync::store_default})
    .receive([](transaction_committed&) {}, [&](caf::error& e) { refused = e; });
  CHECK(to_errc(refused) == errc::invalid_argument);
  CHECK(store->get(table, "x").value() == std::nullopt);
  self->send_exit(writer, caf::exit_reason::user_shutdown);
}

TEST_CASE_METHOD(writer_fixture, "spawn_store_writer: an exit reason CAF could not send again (a float infinity) ends the writer with dix's stopped, which its monitors, remote ones too, can be sent", "[adapter][runtime][commit]") {
  self->monitor(writer);
  const auto reason = caf::make_error(caf::sec::runtime_error, std::numeric_limits<float>::infinity());
  REQUIRE_FALSE(wire::saves_finitely(reason, self->context()));
  self->send_exit(writer, reason);
  caf::error ended;
  self->receive([&](caf::down_msg& m) { ended = m.reason; }, caf::after(30s) >> [] {});
  CHECK(to_errc(ended) == errc::stopped);
  CHECK(wire::saves_finitely(ended, self->context()));
}

TEST_CASE_METHOD(writer_fixture, "spawn_store_writer: commits sent back to back are each answered exactly once and in order while the writer holds answers back, a refused one at its place", "[adapter][runtime][commit]") {
  constexpr int count = 100, refused_at = 37;
  for (int i = 0; i < count; ++i) {
    const std::string log = i == refused_at ? "elsewhere" : "";
    self->send(writer, commit_transaction{log, {write_op{write_kind::put, table, "k" + std::to_string(i), "v"}}, commit_sync::store_default});
  }
  // Each answer names its commit: the sequence of a success grows by one write each time.
  std::vector<std::int64_t> answers;  // a sequence, or -1 for the refusal
  bool timed_out = false;
  for (int i = 0; i < count && !timed_out; ++i) {
    self->receive([&](transaction_committed& c) { answers.push_back(static_cast<std::int64_t>(c.sequence)); },
                  [&](caf::error& e) {
                    CHECK(to_errc(e) == errc::invalid_argument);
                    answers.push_back(-1);
                  },
                  caf::after(30s) >> [&] { timed_out = true; });
  }
  REQUIRE_FALSE(timed_out);
  REQUIRE(answers.size() == static_cast<std::size_t>(count));
  CHECK(answers[refused_at] == -1);
  std::vector<std::int64_t> sequences;
  for (auto a : answers) {
    if (a >= 0) sequences.push_back(a);
  }
  REQUIRE(sequences.size() == static_cast<std::size_t>(count - 1));
  for (std::size_t i = 1; i < sequences.size(); ++i) CHECK(sequences[i] > sequences[i - 1]);
  // The last commit, made with the mailbox empty, is answered at once: no answer waits for a later commit.
  bool next_answered = false;
  self->request(writer, 30s, commit_transaction{"", {write_op{write_kind::put, table, "last", "v"}}, commit_sync::store_default})
    .receive([&](transaction_committed& c) { next_answered = static_cast<std::int64_t>(c.sequence) > sequences.back(); },
             [](caf::error&) {});
  CHECK(next_answered);
  CHECK(store->get(table, "k" + std::to_string(refused_at)).value() == std::nullopt);
  self->send_exit(writer, caf::exit_reason::user_shutdown);
}
