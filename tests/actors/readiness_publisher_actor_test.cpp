// [actor] The readiness publisher (actors.md §1, protocol.md §1.5) on CAF's test coordinator over
// a real readiness segment in a temporary directory: a client actor sends it publications as
// requests and records the answers, an observer actor records what the publisher tells it, and
// the test reads the slot back between steps.
#include <catch2/catch.hpp>

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <caf/send.hpp>

#include "actors/readiness_publisher_actor.hpp"
#include "adapters/metrics_segment.hpp"
#include "adapters/readiness_segment.hpp"
#include "core/clock.hpp"
#include "messages/errors.hpp"
#include "support/caf_fixture.hpp"
#include "support/recorders.hpp"
#include "support/temp_dir.hpp"
#include "support/futex_probe.hpp"

using namespace dix;
using namespace std::chrono_literals;

namespace {

// One answer of the publisher, in the order the client received them.
struct outcome {
  std::optional<published> reply;
  caf::error error;
};

struct client_state {
  std::vector<outcome> outcomes;
  std::vector<metrics_published> metrics_replies;
  std::vector<caf::error> metrics_errors;
};

// Forwards every publication it is sent to the publisher as a request (no timeout, like the
// runners will) and records the answer.
caf::behavior client(caf::stateful_actor<client_state>* self, readiness_publisher_actor publisher) {
  return {[self, publisher](publication& p) {
            self->request(publisher, caf::infinite, std::move(p))
              .then([self](published& r) { self->state.outcomes.push_back({std::move(r), {}}); },
                    [self](caf::error& e) { self->state.outcomes.push_back({std::nullopt, std::move(e)}); });
          },
          [self, publisher](metrics_publication& p) {
            self->request(publisher, caf::infinite, std::move(p))
              .then([self](metrics_published& r) { self->state.metrics_replies.push_back(std::move(r)); },
                    [self](caf::error& e) { self->state.metrics_errors.push_back(std::move(e)); });
          },
          [self, publisher](lag_publication& p) {
            self->request(publisher, caf::infinite, std::move(p))
              .then([self](metrics_published& r) { self->state.metrics_replies.push_back(std::move(r)); },
                    [self](caf::error& e) { self->state.metrics_errors.push_back(std::move(e)); });
          }};
}

struct publisher_fixture : test::caf_fixture {
  test::temp_dir dir;
  std::shared_ptr<readiness_segment> segment = attach();
  std::shared_ptr<segment_slot> slot = claim("idx");
  caf::actor watcher = sys.spawn(test::recording_observer);
  readiness_publisher_actor publisher = spawn_readiness_publisher(sys, segment, watcher);
  caf::actor sender = sys.spawn(client, publisher);

  std::shared_ptr<readiness_segment> attach() {
    auto s = readiness_segment::attach(dir.path());
    if (!s) FAIL(s.error().to_string());
    return *s;
  }

  std::shared_ptr<segment_slot> claim(const std::string& id) {
    auto s = segment->claim(id);
    if (!s) FAIL(s.error().to_string());
    return *s;
  }

  // Sends `p` through the client and runs until every mailbox is empty.
  void publish(publication p) {
    caf::anon_send(sender, std::move(p));
    run();
  }

  std::vector<outcome>& outcomes() { return state_of<client_state>(sender).outcomes; }
  std::vector<readiness_observed>& observed() { return state_of<test::observer_state>(watcher).seen; }
};

publication make(std::string id, readiness_state state, readiness_reason reason, std::uint32_t attempts,
                 std::optional<index_time_t> coverage_time = std::nullopt,
                 std::optional<std::uint32_t> lag_gate = std::nullopt) {
  return publication{std::move(id), state, reason, attempts, coverage_time, lag_gate};
}

using dix::test::in_futex_wait;

}  // namespace

TEST_CASE_METHOD(publisher_fixture,
                 "readiness publisher: two publications of one id land in the slot in order, each read back after it",
                 "[actor][publisher]") {
  run();
  auto start = slot->change_counter();
  publish(make("idx", readiness_state::rebuilding, readiness_reason::rebuild_requested, 1));
  auto first = slot->read();
  CHECK(first.state == readiness_state::rebuilding);
  CHECK(first.reason == readiness_reason::rebuild_requested);
  CHECK(first.rebuild_attempts == 1);
  CHECK(slot->change_counter() == start + 1);  // one publication, one notify

  publish(make("idx", readiness_state::ready, readiness_reason::none, 0));
  auto second = slot->read();
  CHECK(second.state == readiness_state::ready);
  CHECK(second.reason == readiness_reason::none);
  CHECK(second.rebuild_attempts == 0);
  CHECK(slot->change_counter() == start + 2);

  // Both in the mailbox at once: applied in arrival order, the later one wins.
  caf::anon_send(sender, make("idx", readiness_state::needs_rebuild, readiness_reason::backend_failed, 0));
  caf::anon_send(sender, make("idx", readiness_state::unavailable, readiness_reason::rebuild_exhausted, 3));
  run();
  auto last = slot->read();
  CHECK(last.state == readiness_state::unavailable);
  CHECK(last.reason == readiness_reason::rebuild_exhausted);
  CHECK(last.rebuild_attempts == 3);
  REQUIRE(observed().size() == 4);
  CHECK(observed()[2].readiness.state == readiness_state::needs_rebuild);
  CHECK(observed()[2].readiness.reason == readiness_reason::backend_failed);
  CHECK(observed()[3].readiness.state == readiness_state::unavailable);
}

TEST_CASE_METHOD(publisher_fixture,
                 "readiness publisher: each reply and observer message echoes the id with the slot's rising change counter",
                 "[actor][publisher]") {
  auto epoch = slot->mint_epoch().value();
  run();
  publish(make("idx", readiness_state::ready, readiness_reason::none, 0, 1'500u));
  publish(make("idx", readiness_state::needs_rebuild, readiness_reason::log_retention, 2));
  REQUIRE(outcomes().size() == 2);
  REQUIRE(observed().size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    REQUIRE(outcomes()[i].reply.has_value());
    CHECK(!outcomes()[i].error);
    CHECK(outcomes()[i].reply->id == "idx");
    CHECK(observed()[i].id == "idx");
    CHECK(observed()[i].change_counter == outcomes()[i].reply->change_counter);
    CHECK(observed()[i].readiness.owner_epoch == epoch);  // the slot read back, epoch included
  }
  CHECK(outcomes()[1].reply->change_counter > outcomes()[0].reply->change_counter);
  CHECK(outcomes()[1].reply->change_counter == slot->change_counter());
  CHECK(observed()[0].readiness.state == readiness_state::ready);
  CHECK(observed()[1].readiness.state == readiness_state::needs_rebuild);
  CHECK(observed()[1].readiness.reason == readiness_reason::log_retention);
  CHECK(observed()[1].readiness.rebuild_attempts == 2);
}

TEST_CASE_METHOD(publisher_fixture,
                 "readiness publisher: a non-ready publication zeroes coverage_time, a ready one stores what it carries",
                 "[actor][publisher]") {
  run();
  publish(make("idx", readiness_state::ready, readiness_reason::none, 0, 1'500u, 250u));
  CHECK(slot->coverage_time() == 1'500);
  CHECK(slot->lag_gate() == 250);

  // ready without a coverage time or gate: both unchanged.
  publish(make("idx", readiness_state::ready, readiness_reason::none, 0));
  CHECK(slot->coverage_time() == 1'500);
  CHECK(slot->lag_gate() == 250);

  // Any other state certifies no coverage, even one that carries a coverage time.
  publish(make("idx", readiness_state::rebuilding, readiness_reason::reload, 1, 9'000u, 0u));
  CHECK(slot->coverage_time() == 0);
  CHECK(slot->lag_gate() == 0);
  CHECK(slot->read().state == readiness_state::rebuilding);

  publish(make("idx", readiness_state::ready, readiness_reason::none, 0, 2'000u, 0xFFFFFFFFu));
  CHECK(slot->coverage_time() == 2'000);
  CHECK(slot->lag_gate() == 0xFFFFFFFFu);

  publish(make("idx", readiness_state::needs_rebuild, readiness_reason::condemned, 1));
  CHECK(slot->coverage_time() == 0);
  CHECK(slot->lag_gate() == 0xFFFFFFFFu);  // absent: unchanged
  REQUIRE(outcomes().size() == 5);
  for (auto& o : outcomes()) CHECK(o.reply.has_value());
}

TEST_CASE_METHOD(publisher_fixture,
                 "readiness publisher: an id without a claimed slot is answered not_registered and the publisher goes on",
                 "[actor][publisher]") {
  run();
  auto segment_before = segment->segment_change_counter();
  publish(make("other", readiness_state::ready, readiness_reason::none, 0));
  publish(make("not a valid id", readiness_state::ready, readiness_reason::none, 0));
  REQUIRE(outcomes().size() == 2);
  for (auto& o : outcomes()) {
    CHECK_FALSE(o.reply.has_value());
    CHECK(to_errc(o.error) == errc::not_registered);
  }
  CHECK(error_text(outcomes()[0].error).find("\"other\"") != std::string::npos);
  CHECK(observed().empty());                                     // nothing published, nothing told
  CHECK(segment->segment_change_counter() == segment_before);   // nothing written
  CHECK(segment->find("other") == nullptr);                      // and nothing claimed

  // A slot claimed later — here by a second runtime of the database — is found then.
  auto second = attach();
  auto other = second->claim("other");
  REQUIRE(other);
  publish(make("other", readiness_state::ready, readiness_reason::none, 0));
  REQUIRE(outcomes().size() == 3);
  REQUIRE(outcomes()[2].reply.has_value());
  CHECK(outcomes()[2].reply->id == "other");
  CHECK((*other)->read().state == readiness_state::ready);
  CHECK(slot->read().state == readiness_state::unknown);  // idx untouched
}

TEST_CASE_METHOD(test::caf_fixture, "readiness publisher: without an observer it publishes and replies all the same",
                 "[actor][publisher]") {
  test::temp_dir dir;
  auto segment = readiness_segment::attach(dir.path());
  REQUIRE(segment);
  auto slot = (*segment)->claim("idx");
  REQUIRE(slot);
  auto publisher = spawn_readiness_publisher(sys, *segment, caf::actor{});
  auto sender = sys.spawn(client, publisher);
  caf::anon_send(sender, publication{"idx", readiness_state::ready, readiness_reason::none, 0, 7u, std::nullopt});
  run();
  auto& got = state_of<client_state>(sender).outcomes;
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].reply.has_value());
  CHECK(got[0].reply->change_counter == (*slot)->change_counter());
  CHECK((*slot)->read().state == readiness_state::ready);
  CHECK((*slot)->coverage_time() == 7);
}

TEST_CASE_METHOD(publisher_fixture,
                 "readiness publisher: a reader asleep on a read-only view's futex in another thread wakes on a publication",
                 "[actor][publisher]") {
  run();
  auto view = segment_view::open(dir.path(), segment_view::access::read_only);
  REQUIRE(view);
  REQUIRE(*view);
  auto index = (*view)->find("idx");
  REQUIRE(index);
  auto seen = (*view)->segment_change_counter();
  std::atomic<pid_t> tid{0};
  std::uint64_t after = 0;
  dix::readiness read_after;
  std::thread reader([&] {
    tid = static_cast<pid_t>(::syscall(SYS_gettid));
    after = (*view)->wait_change(seen, 10s);
    read_after = (*view)->read(*index);
  });
  // The reader must be asleep in FUTEX_WAIT before the publication, so the wake (not the
  // pre-check) is what returns it. Bounded spin on /proc, no sleep.
  auto deadline = std::chrono::steady_clock::now() + 10s;
  bool asleep = false;
  while (!asleep && std::chrono::steady_clock::now() < deadline) {
    asleep = tid != 0 && in_futex_wait(tid);
    if (!asleep) std::this_thread::yield();
  }
  CHECK(asleep);
  auto start = std::chrono::steady_clock::now();
  publish(make("idx", readiness_state::ready, readiness_reason::none, 0));
  reader.join();
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  CHECK(after != seen);
  CHECK(read_after.state == readiness_state::ready);
}

TEST_CASE_METHOD(publisher_fixture,
                 "readiness publisher: a metrics publication writes the id's metrics block, stamped with the wall clock, and changes no readiness",
                 "[actor][publisher][metrics]") {
  run();
  const auto slot_counter = slot->change_counter();
  const auto metrics_counter = segment->metrics().change_counter();
  const auto before_ns = system_clock().wall_now_ns();
  caf::anon_send(sender, metrics_publication{"idx", rebuild_progress{4, 120, 900, 3000, 260, false}});
  run();
  const auto after_ns = system_clock().wall_now_ns();
  auto& st = state_of<client_state>(sender);
  REQUIRE(st.metrics_replies.size() == 1);
  CHECK(st.metrics_replies[0].id == "idx");
  CHECK(st.metrics_replies[0].change_counter == metrics_counter + 1);
  auto block = segment->metrics().read(slot->index());
  REQUIRE(block);
  REQUIRE(block->progress);
  CHECK(block->progress->epoch == 4);
  CHECK(block->progress->rebuilt_records == 120);
  CHECK(block->progress->estimated_records == 900);
  CHECK(block->progress->scan_records_per_s == 3000);
  CHECK(block->progress->rebuild_eta_ms == 260);
  CHECK(block->written_wall_ns >= before_ns);
  CHECK(block->written_wall_ns <= after_ns);
  CHECK(slot->change_counter() == slot_counter);  // readiness untouched, nobody observed
  CHECK(observed().empty());

  // An id without a slot: not_registered, no block written.
  caf::anon_send(sender, metrics_publication{"nope", rebuild_progress{1, 1, 1, 1, 1, false}});
  run();
  REQUIRE(st.metrics_errors.size() == 1);
  CHECK(to_errc(st.metrics_errors[0]) == errc::not_registered);
  CHECK(segment->metrics().change_counter() == metrics_counter + 1);
}

TEST_CASE_METHOD(publisher_fixture,
                 "readiness publisher: a lag publication replaces the block's lag part and keeps its progress, shows the slot's gate, and a new gate refreshes it, the log names kept",
                 "[actor][publisher][metrics][lag]") {
  run();
  caf::anon_send(sender, metrics_publication{"idx", rebuild_progress{4, 120, 900, 3000, 260, false}});
  run();
  lag_figures l;
  l.epoch = 4;
  l.state = runner_state::waiting_durable;
  l.accepted_batches = 64;
  l.max_accepted_batches_ahead = 64;
  l.lag_gate = 77;  // the runner's value is not the slot's: the publisher writes the slot's
  l.log_count = 1;
  l.logs = {log_lag_figures{9, 0, -1, "main"}};
  caf::anon_send(sender, lag_publication{"idx", l});
  run();
  auto& st = state_of<client_state>(sender);
  REQUIRE(st.metrics_replies.size() == 2);
  auto block = segment->metrics().read(slot->index());
  REQUIRE(block);
  REQUIRE(block->progress);
  CHECK(block->progress->rebuilt_records == 120);  // kept
  REQUIRE(block->lag);
  CHECK(block->lag->state == runner_state::waiting_durable);
  CHECK(block->lag->accepted_batches == 64);
  CHECK(block->lag->lag_gate == 0);  // the slot's gate: open
  REQUIRE(block->lag->logs.size() == 1);
  CHECK(block->lag->logs[0].log == "main");  // the names part (decision 0030)

  // A later progress keeps the lag part; a publication storing a gate shows it in the block.
  caf::anon_send(sender, metrics_publication{"idx", rebuild_progress{4, 900, 900, 3000, 0, true}});
  auto gated = make("idx", readiness_state::ready, readiness_reason::none, 0);
  gated.lag_gate = lag_gate_exceeded;
  publish(gated);
  run();
  block = segment->metrics().read(slot->index());
  REQUIRE(block);
  REQUIRE(block->lag);
  CHECK(block->lag->accepted_batches == 64);
  CHECK(block->lag->lag_gate == lag_gate_exceeded);
  CHECK(block->progress->scan_ended);
  REQUIRE(block->lag->logs.size() == 1);
  CHECK(block->lag->logs[0].log == "main");  // rewritten with the gate and the progress
}
