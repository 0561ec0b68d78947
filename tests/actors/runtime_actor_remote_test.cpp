// [adapter] The runtime actor over the CAF middleman on 127.0.0.1: published by one actor system,
// reached from another over a real TCP connection (BASP), it answers the serializable requests of
// <dix/caf/messages.hpp> — what an operator's tool in another process would ask — and sends a
// remote subscriber its events. Real threads and real time; every wait is for a response or an
// event, each with a generous deadline.
#include <catch2/catch.hpp>

#include <chrono>

#include <caf/after.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/caf.hpp>

#include "adapters/test_support.hpp"
#include "support/sim_backend.hpp"

using namespace dix;
using namespace std::chrono_literals;
using dix::test::temp_dir;

namespace {

struct networked_config : caf::actor_system_config {
  networked_config() {
    dix::configure(*this);
    load<caf::io::middleman>();
    set("logger.console-verbosity", caf::atom("quiet"));
    set("logger.file-verbosity", caf::atom("quiet"));
  }
};

// A runtime in the server's actor system with the index "idx" (over `backend`, projecting each
// payload as `project` says) registered and ready after three records, published on 127.0.0.1,
// and the client's handle to it from an actor system of its own.
struct remote_runtime {
  temp_dir dir;
  std::shared_ptr<primary_store> store = test::open_store(dir / "db");
  networked_config server_cfg;
  caf::actor_system server{server_cfg};
  runtime_actor rt;
  runtime_actor gate;
  std::uint16_t port = 0;
  networked_config client_cfg;
  caf::actor_system client{client_cfg};
  runtime_actor remote;

  remote_runtime(std::shared_ptr<backend> backend, std::function<projection_result(std::string_view)> project) {
    auto spawned = dix::spawn_runtime(server, {store});
    REQUIRE(spawned);
    rt = *spawned;
    {
      caf::scoped_actor self{server};
      registration r;
      r.backend = std::move(backend);
      r.projections[table_ref{"main", 1}] = [project](std::string_view p, const record_info&) { return project(p); };
      bool registered = false;
      self->request(rt, 30s, register_index{std::move(r)}).receive([&](index_registered&) { registered = true; }, [](caf::error&) {});
      REQUIRE(registered);
    }
    test::put_records(*store, "k", 3);
    REQUIRE(test::wait_readiness(dir / "db", "idx", test::is_ready));  // the runner has read the log
    gate = dix::spawn_runtime_gate(server, rt);  // published instead of the runtime actor itself
    auto published = server.middleman().publish(gate, 0, "127.0.0.1");
    REQUIRE(published);
    port = *published;
    // The client names the same typed interface: the middleman compares the two sides' signatures.
    auto found = client.middleman().remote_actor<runtime_actor>("127.0.0.1", port);
    INFO((found ? std::string() : client.render(found.error())));
    REQUIRE(found);
    remote = *found;
  }
  ~remote_runtime() { caf::anon_send_exit(rt, caf::exit_reason::user_shutdown); }

  // Asks the remote runtime from `self` and returns the answer, or nullopt on an error.
  template <class T, class Request>
  std::optional<T> ask(caf::scoped_actor& self, Request request) {
    std::optional<T> out;
    self->request(remote, 30s, std::move(request)).receive([&](T& x) { out = std::move(x); }, [](caf::error&) {});
    return out;
  }
};

std::shared_ptr<test::sim_backend> simulated() { return std::make_shared<test::sim_backend>("idx"); }
projection_result as_is(std::string_view p) { return std::string(p); }

}  // namespace

TEST_CASE("runtime actor: published over the middleman on 127.0.0.1 it answers status, metrics, readiness and stop from another actor system", "[adapter][runtime][remote]") {
  remote_runtime f(simulated(), as_is);
  caf::scoped_actor self{f.client};
  auto readiness = f.ask<readiness_report>(self, query_readiness{"idx"});
  REQUIRE(readiness);
  CHECK(readiness->id == "idx");
  CHECK(readiness->value.state == readiness_state::ready);
  CHECK(readiness->value.owner_epoch >= 1);
  auto status = f.ask<status_report>(self, query_status{"idx"});
  REQUIRE(status);
  REQUIRE(status->status);
  auto metrics = f.ask<metrics_report>(self, query_metrics{"idx"});
  REQUIRE(metrics);
  REQUIRE(metrics->metrics);
  CHECK(metrics->metrics->logs.size() == 1);
  caf::error missing;
  self->request(f.remote, 30s, query_readiness{"nobody"}).receive([](readiness_report&) {}, [&](caf::error& e) { missing = e; });
  CHECK(to_errc(missing) == errc::not_registered);  // the dix error category crosses the wire
  // Issue 29: the gate serves tools, never the data: a peer can neither commit nor query.
  const auto before = latest_sequence(*f.store);
  caf::error refused_commit;
  self->request(f.remote, 30s, commit_transaction{"main", {write_op{write_kind::put, 1, "x", "y"}}, commit_sync::store_default})
    .receive([](transaction_committed&) {}, [&](caf::error& e) { refused_commit = e; });
  CHECK(to_errc(refused_commit) == errc::not_supported);
  CHECK(latest_sequence(*f.store) == before);  // nothing written
  caf::error refused_query;
  query_index q;
  q.id = "idx";
  self->request(f.remote, 30s, q).receive([](index_rows&) {}, [&](caf::error& e) { refused_query = e; });
  CHECK(to_errc(refused_query) == errc::not_supported);
  CHECK(f.ask<runtime_stopped>(self, stop_runtime{}));
}

TEST_CASE("runtime actor: a subscriber in another actor system hears over the middleman the readiness and runner state a remote rebuild_index causes", "[adapter][runtime][remote][subscribe]") {
  rocksdb_index_options o;
  temp_dir index_dir;
  o.path = index_dir / "idx";
  remote_runtime f(rocksdb_index_backend::create("idx", o).value(),  // it can reset: rebuildable
                   [](std::string_view p) -> projection_result { return encode_keys({std::string(p)}); });
  caf::scoped_actor self{f.client};
  auto first = f.ask<subscribed>(self, subscribe{"idx"});
  REQUIRE(first);
  CHECK(first->id == "idx");
  CHECK(first->readiness.state == readiness_state::ready);
  REQUIRE(first->status);  // registered in that runtime: its runner's status comes with it
  const auto epoch = first->readiness.owner_epoch;
  CHECK(epoch >= 1);

  auto unknown = f.ask<rebuild_requested>(self, rebuild_index{"nobody"});
  REQUIRE(unknown);
  CHECK_FALSE(unknown->accepted);  // §11.2: not registered
  auto asked = f.ask<rebuild_requested>(self, rebuild_index{"idx"});
  REQUIRE(asked);
  CHECK(asked->id == "idx");
  CHECK(asked->accepted);

  // The owner rebuilds (behaviour 20): `rebuilding` with the request as its reason under a new
  // epoch, then `ready` once the boundary is durable. The events are level-triggered, so
  // intermediate values may be folded away; the runner's rebuilding state and the final
  // readiness say what happened.
  std::optional<runner_state_changed> rebuilding;
  std::optional<readiness_changed> rebuilt;
  bool timed_out = false;
  while (!timed_out && !(rebuilding && rebuilt)) {
    self->receive(
      [&](readiness_changed& e) {
        CHECK(e.id == "idx");
        if (e.readiness.state == readiness_state::ready && e.readiness.owner_epoch > epoch) rebuilt = e;
      },
      [&](runner_state_changed& e) {
        CHECK(e.id == "idx");
        if (e.status.state == runner_state::rebuilding && e.status.reason == readiness_reason::rebuild_requested) {
          rebuilding = e;
        }
      },
      caf::after(30s) >> [&] { timed_out = true; });
  }
  REQUIRE(rebuilding);
  CHECK(rebuilding->status.epoch > epoch);  // the rebuild's own epoch
  REQUIRE(rebuilt);
  CHECK(rebuilt->readiness.rebuild_attempts == 0);
  auto now = f.ask<readiness_report>(self, query_readiness{"idx"});
  REQUIRE(now);
  CHECK(now->value.state == readiness_state::ready);
  CHECK(now->value.owner_epoch == rebuilt->readiness.owner_epoch);
  auto metrics = f.ask<metrics_report>(self, query_metrics{"idx"});
  REQUIRE(metrics);
  REQUIRE(metrics->metrics);
  CHECK(metrics->metrics->rebuilt_records == 3);  // the scan indexed the three records again

  auto gone = f.ask<unsubscribed>(self, unsubscribe{"idx"});
  REQUIRE(gone);
  CHECK(gone->id == "idx");
  CHECK(f.ask<runtime_stopped>(self, stop_runtime{}));
}

TEST_CASE("runtime actor: verify_index from another actor system over the middleman proves the index equal through a cursor, and names the errors of an unknown id", "[adapter][runtime][remote][verify]") {
  rocksdb_index_options o;
  temp_dir index_dir;
  o.path = index_dir / "idx";
  remote_runtime f(rocksdb_index_backend::create("idx", o).value(),
                   [](std::string_view p) -> projection_result { return encode_keys({std::string(p)}); });
  caf::scoped_actor self{f.client};
  verify_options report_only;
  report_only.report_only = true;
  report_only.entries_per_s = 1000;
  auto proof = f.ask<index_verified>(self, verify_index{"idx", report_only});
  REQUIRE(proof);
  CHECK(proof->id == "idx");
  CHECK(proof->result.equal);
  CHECK(proof->result.records == 3);
  CHECK(proof->result.differences == 0);
  REQUIRE(proof->result.through);  // the cursor crossed the wire whole
  CHECK(proof->result.through->find("main") != nullptr);
  CHECK(proof->result.through->find("main")->sequence >= 1);
  caf::error missing;
  self->request(f.remote, 30s, verify_index{"nobody", {}}).receive([](index_verified&) {}, [&](caf::error& e) { missing = e; });
  CHECK(to_errc(missing) == errc::not_registered);
  caf::error bad;
  self->request(f.remote, 30s, verify_index{"no such id!", {}}).receive([](index_verified&) {}, [&](caf::error& e) { bad = e; });
  CHECK(to_errc(bad) == errc::invalid_argument);
  // Options out of range are answered (a frame the middleman could not load would not be).
  verify_options no_deadline;
  no_deadline.deadline = std::chrono::milliseconds(0);
  caf::error refused;
  self->request(f.remote, 30s, verify_index{"idx", no_deadline}).receive([](index_verified&) {}, [&](caf::error& e) { refused = e; });
  CHECK(to_errc(refused) == errc::invalid_argument);
  // In the runtime's own process the same message answers alike.
  caf::scoped_actor local{f.server};
  std::optional<index_verified> here;
  local->request(f.rt, 30s, verify_index{"idx", {}}).receive([&](index_verified& v) { here = std::move(v); }, [](caf::error&) {});
  REQUIRE(here);
  CHECK(here->result.equal);
  CHECK(here->result.records == 3);
}

TEST_CASE("runtime actor: a peer's exit messages and errors sent to the published gate stop nothing, and a kill ends "
          "the gate only",
          "[adapter][runtime][remote]") {
  remote_runtime f(simulated(), as_is);
  caf::scoped_actor self{f.client};
  caf::anon_send_exit(f.remote, caf::exit_reason::user_shutdown);
  self->send_exit(f.remote, caf::exit_reason::unhandled_exception);
  caf::anon_send(caf::actor_cast<caf::actor>(f.remote), caf::make_error(caf::sec::runtime_error));
  auto still = f.ask<readiness_report>(self, query_readiness{"idx"});  // ordered after them on the connection
  REQUIRE(still);
  CHECK(still->value.state == readiness_state::ready);
  // kill cannot be ignored (CAF): it ends the gate, never the runtime behind it.
  caf::scoped_actor local{f.server};
  local->monitor(f.gate);
  caf::anon_send_exit(f.remote, caf::exit_reason::kill);
  bool gate_down = false;
  local->receive([&](caf::down_msg& m) { gate_down = m.source == f.gate.address(); }, caf::after(30s) >> [] {});
  CHECK(gate_down);
  std::optional<readiness_report> local_answer;
  local->request(f.rt, 30s, query_readiness{"idx"}).receive([&](readiness_report& r) { local_answer = r; },
                                                           [](caf::error&) {});
  REQUIRE(local_answer);
  CHECK(local_answer->value.state == readiness_state::ready);
  std::optional<runtime_stopped> stopped;
  local->request(f.rt, 30s, stop_runtime{}).receive([&](runtime_stopped& r) { stopped = r; }, [](caf::error&) {});
  CHECK(stopped);
}

TEST_CASE("runtime actor: a peer never learns the runtime actor's own handle, as every answer comes from the gate and "
          "every event from nobody, and the runtime takes no anonymous commit",
          "[adapter][runtime][remote]") {
  remote_runtime f(simulated(), as_is);
  caf::scoped_actor self{f.client};
  const auto gate = caf::actor_cast<caf::strong_actor_ptr>(f.remote);
  // Before decision 0066 the gate delegated, so the runtime answered with itself as the sender,
  // and a peer could commit and query through that handle.
  caf::strong_actor_ptr answered_by;
  self->request(f.remote, 30s, query_readiness{"idx"})
    .receive([&](readiness_report&) { answered_by = self->current_sender(); }, [](caf::error&) {});
  CHECK(answered_by == gate);
  caf::strong_actor_ptr subscription_answered_by;
  self->request(f.remote, 30s, subscribe_all{})
    .receive([&](subscribed_all&) { subscription_answered_by = self->current_sender(); }, [](caf::error&) {});
  CHECK(subscription_answered_by == gate);
  // subscribe_all sends the values now at once, as events, anonymously.
  bool heard = false;
  caf::strong_actor_ptr event_sender;
  self->receive([&](readiness_changed&) { heard = true; event_sender = self->current_sender(); }, caf::after(30s) >> [] {});
  CHECK(heard);
  CHECK(event_sender == nullptr);
  // An anonymous commit in the runtime's own process is refused as well (nobody would hear its
  // outcome; a peer's anonymous send arrives the same way): the next commit takes the next sequence.
  caf::scoped_actor local{f.server};
  const auto before = latest_sequence(*f.store);
  caf::anon_send(f.rt, commit_transaction{"main", {write_op{write_kind::put, 1, "z", "y"}}, commit_sync::store_default});
  std::optional<transaction_committed> committed;
  local->request(f.rt, 30s, commit_transaction{"main", {write_op{write_kind::put, 1, "w", "y"}}, commit_sync::store_default})
    .receive([&](transaction_committed& c) { committed = c; }, [](caf::error&) {});
  REQUIRE(committed);
  CHECK(committed->sequence == before + 1);
  CHECK(latest_sequence(*f.store) == before + 1);
}

TEST_CASE("runtime actor: a gate killed while it relays a request answers it stopped, as the runtime would have",
          "[adapter][runtime][remote]") {
  remote_runtime f(simulated(), as_is);
  caf::scoped_actor self{f.client};
  // A wait for a write an hour from now: the runtime holds it, the gate holds its promise.
  const auto hour_on = static_cast<index_time_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch() + 1h)
          .count());
  auto waiting = self->request(f.remote, 25s, wait_coverage{"idx", hour_on, 30'000});
  // Answered after the gate took the wait (one connection, one mailbox, in order).
  REQUIRE(f.ask<readiness_report>(self, query_readiness{"idx"}));
  caf::anon_send_exit(f.gate, caf::exit_reason::kill);
  caf::error ended;
  bool answered = false;
  waiting.receive([&](coverage_reached&) { answered = true; },
                  [&](caf::error& e) {
                    answered = true;
                    ended = e;
                  });
  REQUIRE(answered);
  INFO(error_text(ended));
  CHECK(to_errc(ended) == errc::stopped);
}
