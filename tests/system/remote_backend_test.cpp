// Remote backends with real processes on loopback (issue 28, decision 0043): this process is the
// owner (store, runtime, remote_backend); `dix serve-backend` children are index nodes. Waits are
// the runtime's coverage futures and pipe reads of the children's output, each bounded; nothing
// sleeps. The index is checked at the end by opening the host's index directory here, after the
// host stopped: every live record exactly once, at its current key, nothing else.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <map>
#include <random>
#include <set>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/remote_actor.hpp>
#include <caf/scoped_actor.hpp>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/remote.hpp>
#include <dix/runtime.hpp>

#include "adapters/test_support.hpp"
#include "harness/child_process.hpp"
#include "messages/type_ids.hpp"
#include "support/fake_host.hpp"
#include "support/index_registration.hpp"
#include "support/lag_wait.hpp"
#include "support/owner_process.hpp"
#include "support/rocksdb_tamper.hpp"

using dix::cli::child_process;
using dix::test::temp_dir;
using namespace std::chrono_literals;

namespace {

dix::cli::steady_time in_30s() { return std::chrono::steady_clock::now() + 30s; }

// A `dix serve-backend --kind rocksdb` over `dir` serving id "by-value"; its port.
std::pair<child_process, std::uint16_t> start_host(const std::filesystem::path& dir, std::uint16_t port = 0) {
  auto host = child_process::spawn({DIX_BINARY, "serve-backend", "--kind", "rocksdb", "--path", dir.string(), "--id",
                                    "by-value", "--listen", "127.0.0.1:" + std::to_string(port)})
                  .value();
  auto line = host.wait_line("dix serve-backend: listening on 127.0.0.1:", in_30s());
  REQUIRE(line);
  auto at = static_cast<std::uint16_t>(std::stoul(line->substr(line->rfind(':') + 1)));
  REQUIRE(at != 0);
  if (port != 0) REQUIRE(at == port);
  return {std::move(host), at};
}

std::shared_ptr<dix::remote_backend> remote_to(std::uint16_t port) {
  dix::remote_backend_options o;
  o.id = "by-value";
  o.kind = "rocksdb_index";
  o.port = port;
  o.heartbeat.interval = 200ms;
  o.heartbeat.connection_timeout = 2000ms;
  o.request_timeout = 5000ms;
  return dix::remote_backend::create(o).value();
}

// The owner's side of most tests: a store in `dir`/db, a runtime, a remote_backend to the host
// at `port` registered as by-value, ready (built from a scan first).
struct owner_side {
  std::shared_ptr<dix::primary_store> store;
  std::unique_ptr<dix::runtime> rt;
  std::shared_ptr<dix::remote_backend> remote;
};

owner_side start_owner(const temp_dir& dir, std::uint16_t port) {
  owner_side o;
  o.store = dix::test::open_store(dir / "db");
  o.rt = dix::runtime::create({o.store}).value();
  o.remote = remote_to(port);
  o.rt->register_index(dix::test::index_registration(o.remote)).value();
  REQUIRE(dix::test::wait_readiness(dir / "db", "by-value", dix::test::is_ready));
  return o;
}

// The test's model of table 1: record id → payload (= the one key it is indexed under).
using model = std::map<std::string, std::string>;

// One transaction of `ops` random puts and deletes over 40 record ids, applied to `m` too.
dix::commit_info write_some(dix::primary_store& store, model& m, std::mt19937_64& rng, int ops) {
  auto txn = store.begin();
  for (int i = 0; i < ops; ++i) {
    auto id = "r" + std::to_string(rng() % 40);
    if (rng() % 5 == 0) {
      txn.del(1, id);
      m.erase(id);
    } else {
      auto payload = "key-" + std::to_string(rng() % 1000);
      txn.put(1, id, payload);
      m[id] = payload;
    }
  }
  return txn.commit().value();
}

void cover(dix::runtime& rt, dix::index_time_t since) {
  auto waiting = rt.wait_for_coverage("by-value", since, 30000ms);
  REQUIRE(waiting.wait_for(180s) == std::future_status::ready);  // failure guard only
  auto r = waiting.get();
  INFO((r ? std::string() : r.error().to_string()));
  REQUIRE(r);
}

// The slot's rebuild attempts so far: a link's loss must cost a replay, never a rebuild.
std::uint32_t rebuild_attempts(const dix::runtime& rt) { return rt.metrics("by-value").value().rebuild_attempts; }

// Opens the stopped host's index here and compares it with the model.
void check_index(const std::filesystem::path& host_dir, const model& m) {
  auto index = dix::test::make_index_at(host_dir / "index", "by-value");
  dix::test::fake_host h;
  h.epoch = 0;
  index->attach(h);
  auto all = index->range("", std::string(1025, '\xff'), std::size_t{1} << 20);
  REQUIRE(all);
  std::map<std::string, int> seen;
  for (const auto& row : all->rows) ++seen[row.record_id];
  CHECK(all->rows.size() == m.size());  // one key per record: a stale key would be a second row
  for (const auto& [id, payload] : m) {
    INFO(id << " = " << payload);
    CHECK(seen[id] == 1);
    auto rows = index->lookup(payload, 100);
    REQUIRE(rows);
    bool found = false;
    for (const auto& row : rows->rows) found = found || row.record_id == id;
    CHECK(found);
  }
}

}  // namespace

TEST_CASE("remote backend: a host process indexes the owner's writes, a barrier makes them durable, "
          "and the index equals the projection after the host stops",
          "[system][remote]") {
  temp_dir dir;
  auto [host, port] = start_host(dir / "host");
  auto owner = start_owner(dir, port);  // built from a scan first
  auto& store = owner.store;
  auto& rt = owner.rt;
  auto& remote = owner.remote;
  // The build took one attempt: the reset's epoch opened its own session without judging the
  // acquisition's work lost, and the reset emptied the owner's cached cursor.
  CHECK(rt->metrics("by-value")->last_fault == dix::readiness_reason::cursor_missing);  // no failed attempt since
  std::mt19937_64 rng(7);
  model m;
  dix::commit_info last{};
  for (int i = 0; i < 20; ++i) last = write_some(*store, m, rng, 10);
  cover(*rt, last.time);
  auto status = remote->link_status();
  CHECK(status.connected);
  CHECK(status.connects >= 1);
  REQUIRE(rt->stop().get());
  CHECK(host.reap(SIGTERM) == 0);  // a clean stop: exit 0
  check_index(dir / "host", m);
}

TEST_CASE("remote backend: a verify reads the node's digest view through the session — equal with a record the node's "
          "backend skips, and after drift planted in the node's files each planted record named and no other",
          "[system][remote][verify]") {
  temp_dir dir;
  // r0…r5 indexed under k0…k5; r7's projection is bytes the RocksDB index cannot decode, which it
  // skips as unindexable: only the node's backend knows, and the verify must ask it there.
  auto registration_for = [](std::shared_ptr<dix::backend> b) {
    auto r = dix::test::index_registration(std::move(b));
    r.projections[dix::table_ref{"main", 1}] = [](std::string_view payload, const dix::record_info&) -> dix::projection_result {
      if (payload == "bad") return std::string("\xff\xff\xff");
      return dix::encode_keys({std::string(payload)});
    };
    return r;
  };
  auto run_verify = [&](std::uint16_t port, bool write) {
    auto store = dix::test::open_store(dir / "db");
    auto rt = dix::runtime::create({store}).value();
    auto remote = remote_to(port);
    rt->register_index(registration_for(remote)).value();
    REQUIRE(dix::test::wait_readiness(dir / "db", "by-value", dix::test::is_ready));
    dix::commit_info last{};
    if (write) {  // the first run writes the records
      for (int i = 0; i < 6; ++i) {
        auto txn = store->begin();
        txn.put(1, "r" + std::to_string(i), "k" + std::to_string(i));
        last = txn.commit().value();
      }
      auto txn = store->begin();
      txn.put(1, "r7", "bad");
      last = txn.commit().value();
      cover(*rt, last.time);
    }
    dix::verify_options o;
    o.report_only = true;
    auto r = rt->verify("by-value", o);
    REQUIRE(rt->stop().get());
    return r;
  };
  {
    auto [host, port] = start_host(dir / "host");
    auto equal = run_verify(port, true);
    INFO((equal ? std::string() : equal.error().to_string()));
    REQUIRE(equal);
    CHECK(equal->equal);
    CHECK(equal->records == 6);
    CHECK(equal->through.has_value());
    CHECK(host.reap(SIGTERM) == 0);
  }
  dix::test::plant_four_drifts(dir / "host" / "index");  // the node stopped
  auto [host, port] = start_host(dir / "host");
  auto found = run_verify(port, false);
  INFO((found ? std::string() : found.error().to_string()));
  REQUIRE(found);
  CHECK_FALSE(found->equal);
  CHECK(found->differences == 4);
  std::set<std::string> named;
  for (const auto& d : found->drifts) named.insert(std::string(dix::to_string(d.kind)) + " " + d.record_id);
  CHECK(named == std::set<std::string>{"missing r2", "stale r3", "wrong-projection r4", "extra r9"});
  CHECK(host.reap(SIGTERM) == 0);
}

TEST_CASE("remote backend: the index node SIGKILLed while a verify reads its digest view fails that verify with "
          "the session, condemns nothing, and the next verify through the restarted node proves the index equal",
          "[system][remote][verify]") {
  temp_dir dir;
  auto [host, port] = start_host(dir / "host");
  auto owner = start_owner(dir, port);
  auto& rt = owner.rt;
  dix::commit_info last{};
  for (int t = 0; t < 4; ++t) {
    auto txn = owner.store->begin();
    for (int i = 0; i < 100; ++i) txn.put(1, "r" + std::to_string(t * 100 + i), "k" + std::to_string(i));
    last = txn.commit().value();
  }
  cover(*rt, last.time);
  const auto epoch = rt->readiness("by-value")->owner_epoch;
  const auto attempts = rebuild_attempts(*rt);
  dix::verify_options slow;
  slow.entries_per_s = 100;  // 800 entries: about 8 s, the node killed once the scan reads
  auto verifying = std::async(std::launch::async, [&] { return rt->verify("by-value", slow); });
  REQUIRE(dix::test::wait_lag(dir / "db", "by-value", [](const dix::lag_figures& l) { return l.verify_read_entries > 0; }));
  host.reap(SIGKILL);
  REQUIRE(verifying.wait_for(60s) == std::future_status::ready);  // failure guard only
  auto failed = verifying.get();
  REQUIRE_FALSE(failed);
  INFO(failed.error().to_string());
  CHECK((failed.error().value() == dix::errc::unavailable || failed.error().value() == dix::errc::timeout));
  auto after = rt->readiness("by-value").value();
  CHECK(after.state != dix::readiness_state::needs_rebuild);
  CHECK(after.owner_epoch == epoch);

  auto [again, again_port] = start_host(dir / "host", port);
  REQUIRE(dix::test::wait_readiness(dir / "db", "by-value", dix::test::is_ready));
  auto proven = rt->verify("by-value");
  INFO((proven ? std::string() : proven.error().to_string()));
  REQUIRE(proven);
  CHECK(proven->equal);
  CHECK(proven->records == 400);
  CHECK(rebuild_attempts(*rt) == attempts);
  REQUIRE(rt->stop().get());
  CHECK(again.reap(SIGTERM) == 0);
}

TEST_CASE("remote backend: the host SIGKILLed 30 times at random points and restarted on its port loses nothing "
          "and applies nothing twice",
          "[system][remote]") {
  temp_dir dir;
  auto started = start_host(dir / "host");
  auto host = std::move(started.first);
  const auto port = started.second;
  auto owner = start_owner(dir, port);
  auto& store = owner.store;
  auto& rt = owner.rt;
  auto& remote = owner.remote;
  std::mt19937_64 rng(28);
  model m;
  dix::commit_info last{};
  const auto attempts = rebuild_attempts(*rt);
  for (int round = 0; round < 30; ++round) {
    INFO("round " << round);
    // Some writes the runtime is delivering while the host dies: a random number of them before
    // the kill, the rest while it is down.
    auto before = static_cast<int>(rng() % 12);
    for (int i = 0; i < before; ++i) last = write_some(*store, m, rng, 5);
    host.reap(SIGKILL);
    for (int i = 0; i < 3; ++i) last = write_some(*store, m, rng, 5);
    host = start_host(dir / "host", port).first;
    cover(*rt, last.time);
  }
  auto status = remote->link_status();
  CHECK(status.connects >= 31);
  CHECK(status.cursor_regressions == 0);
  CHECK(rebuild_attempts(*rt) == attempts);
  REQUIRE(rt->stop().get());
  CHECK(host.reap(SIGTERM) == 0);
  check_index(dir / "host", m);
}

TEST_CASE("remote backend: a peer's exit_msg(kill) to the gate ends it, the host publishes a new gate on the same "
          "port and the owner goes on indexing",
          "[system][remote]") {
  temp_dir dir;
  auto [host, port] = start_host(dir / "host");
  auto owner = start_owner(dir, port);
  auto& store = owner.store;
  auto& rt = owner.rt;
  auto& remote = owner.remote;
  std::mt19937_64 rng(3);
  model m;
  cover(*rt, write_some(*store, m, rng, 10).time);
  auto connects_before = remote->link_status().connects;
  {
    // A hostile peer: its own actor system, a plain connect to the port, the gate killed.
    caf::actor_system_config cfg;
    dix::configure_dix(cfg);
    cfg.load<caf::io::middleman>();
    caf::actor_system sys{cfg};
    auto gate = sys.middleman().remote_actor("127.0.0.1", port);
    REQUIRE(gate);
    caf::scoped_actor self{sys};
    self->monitor(*gate);
    caf::anon_send_exit(*gate, caf::exit_reason::kill);
    bool down = false;
    self->receive([&](caf::down_msg&) { down = true; }, caf::after(30s) >> [] {});
    CHECK(down);
  }
  // The owner's session ended with the gate; it reconnects to the new gate and replays.
  dix::commit_info last{};
  for (int i = 0; i < 5; ++i) last = write_some(*store, m, rng, 10);
  cover(*rt, last.time);
  CHECK(remote->link_status().connects > connects_before);
  REQUIRE(rt->stop().get());
  CHECK(host.reap(SIGTERM) == 0);
  check_index(dir / "host", m);
}

namespace {

// A peer of its own: an actor system with the middleman and dix's types, connected to the gate.
struct hostile_peer {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::actor gate;
  explicit hostile_peer(std::uint16_t port) {
    dix::configure_dix(cfg);
    cfg.load<caf::io::middleman>();
    sys = std::make_unique<caf::actor_system>(cfg);
    auto g = sys->middleman().remote_actor("127.0.0.1", port);
    REQUIRE(g);
    gate = *g;
  }
  // Sends `msg` to the gate from `self` and returns the host's answer: a refusal's text, or
  // "welcome", "ack" (nullopt: nothing within 10 s).
  template <class Message>
  std::optional<std::string> ask(caf::scoped_actor& self, Message msg) {
    self->send(gate, std::move(msg));
    std::optional<std::string> answer;
    self->receive([&](dix::rb_refused& r) { answer = std::string(dix::to_string(static_cast<dix::errc>(r.code))) + ": " + r.text; },
                  [&](dix::rb_welcome&) { answer = "welcome"; }, [&](dix::rb_ack&) { answer = "ack"; },
                  [&](dix::rb_rows& r) {
                    answer = r.code == 0 ? "rows" : std::string(dix::to_string(static_cast<dix::errc>(r.code))) + ": " + r.text;
                  },
                  [&](dix::rb_digest_reply& r) {
                    answer = r.code == 0 ? "digest " + std::to_string(r.entries.size()) + (r.end ? " end" : "")
                                         : std::string(dix::to_string(static_cast<dix::errc>(r.code))) + ": " + r.text;
                  },
                  caf::after(10s) >> [] {});
    return answer;
  }
};

dix::rb_hello hello(dix::epoch_t epoch, std::uint64_t session) {
  dix::rb_hello h;
  h.version = 1;
  h.backend_id = "by-value";
  h.kind = "rocksdb_index";
  h.epoch = epoch;
  h.session = session;
  return h;
}

}  // namespace

TEST_CASE("remote backend: a hostile peer's wrong version, backend, kind, epochs, sessions, sequence gaps, oversized "
          "batches, errors and exit messages are refused or ignored while the owner goes on indexing",
          "[system][remote]") {
  temp_dir dir;
  auto [host, port] = start_host(dir / "host");
  auto owner = start_owner(dir, port);
  auto& store = owner.store;
  auto& rt = owner.rt;
  std::mt19937_64 rng(11);
  model m;
  cover(*rt, write_some(*store, m, rng, 10).time);
  const auto epoch = rt->readiness("by-value")->owner_epoch;
  REQUIRE(epoch >= 1);

  hostile_peer peer(port);
  caf::scoped_actor self{*peer.sys};
  auto h = hello(epoch, 77);
  h.version = 2;
  CHECK_THAT(peer.ask(self, h).value_or("none"), Catch::StartsWith("message_invalid: hello: protocol version 2"));
  h = hello(epoch, 77);
  h.backend_id = "someone-else";
  CHECK_THAT(peer.ask(self, h).value_or("none"), Catch::Contains("backend id"));
  h = hello(epoch, 77);
  h.kind = "xapian";
  CHECK_THAT(peer.ask(self, h).value_or("none"), Catch::Contains("backend kind"));
  CHECK_THAT(peer.ask(self, hello(0, 77)).value_or("none"), Catch::Contains("epoch 0"));
  if (epoch > 1) CHECK_THAT(peer.ask(self, hello(epoch - 1, 77)).value_or("none"), Catch::StartsWith("stopped: epoch superseded"));
  CHECK_THAT(peer.ask(self, hello(epoch, 0)).value_or("none"), Catch::Contains("session 0"));

  // Work for a session nobody opened, or of another epoch.
  auto b = std::make_shared<dix::batch>();
  b->epoch = epoch;
  CHECK_THAT(peer.ask(self, dix::rb_deliver{12345, epoch, 1, dix::batch_msg{b}}).value_or("none"),
             Catch::Contains("session: 12345 is not open"));
  CHECK_THAT(peer.ask(self, dix::rb_op{12345, epoch, 1, dix::rb_op_kind::flush, dix::flush_reason::age}).value_or("none"),
             Catch::Contains("is not open"));

  // Messages of a future epoch outside any session are refused, and the fence does not move:
  // only a hello adopts an epoch.
  auto future = std::make_shared<dix::batch>();
  future->epoch = epoch + 5;
  CHECK_THAT(peer.ask(self, dix::rb_deliver{12346, epoch + 5, 1, dix::batch_msg{future}}).value_or("none"),
             Catch::Contains("session: 12346 is not open"));
  CHECK_THAT(peer.ask(self, dix::rb_op{12346, epoch + 5, 2, dix::rb_op_kind::reset, dix::flush_reason::age}).value_or("none"),
             Catch::Contains("is not open"));
  // A frame CAF cannot load (a mutation naming a record its batch lacks) is dropped by CAF 0.17
  // without a word; the host answers the next message as before.
  auto bad = std::make_shared<dix::batch>();
  bad->epoch = epoch;
  bad->transactions.push_back(dix::log_transaction{"main", 1, 1, {dix::mutation{5, 1}}});
  self->send(peer.gate, dix::rb_deliver{12347, epoch, 1, dix::batch_msg{bad}});
  CHECK_THAT(peer.ask(self, hello(0, 80)).value_or("none"), Catch::Contains("epoch 0"));

  // Queries out of range are answered with the rule, never run.
  auto q = [](std::string id, std::uint64_t limit, std::string vector) {
    dix::rb_query query;
    query.id = 5;
    query.backend_id = std::move(id);
    query.limit = limit;
    query.vector = std::move(vector);
    return query;
  };
  CHECK_THAT(peer.ask(self, q("someone-else", 10, {})).value_or("none"), Catch::StartsWith("message_invalid: query: this node serves by-value, not someone-else (ask it for by-value)"));
  CHECK_THAT(peer.ask(self, q("by-value", 0, {})).value_or("none"), Catch::StartsWith("invalid_argument: query: limit"));
  CHECK_THAT(peer.ask(self, q("by-value", 10001, {})).value_or("none"), Catch::StartsWith("invalid_argument"));
  CHECK_THAT(peer.ask(self, q("by-value", 10, "abc")).value_or("none"), Catch::StartsWith("invalid_argument"));
  auto waits = q("by-value", 10, {});
  waits.mode = dix::coverage_kind::wait;
  waits.timeout_ms = 600001;
  waits.since = 1;
  CHECK_THAT(peer.ask(self, waits).value_or("none"), Catch::StartsWith("invalid_argument: query: wait"));
  CHECK(peer.ask(self, q("by-value", 10, {})).value_or("none") == "rows");  // bounded, within 3 s: admitted

  // Errors and exit messages (any reason but kill) leave the gate as it was: it still answers.
  caf::anon_send(peer.gate, caf::make_error(caf::sec::runtime_error));
  caf::anon_send_exit(peer.gate, caf::exit_reason::user_shutdown);
  caf::anon_send(peer.gate, std::string("not a protocol message"));
  CHECK_THAT(peer.ask(self, hello(0, 78)).value_or("none"), Catch::Contains("epoch 0"));

  // A session of the owner's epoch (a trusted but confused peer): it takes the session over; its
  // sequence gap, an oversized batch and a batch of another epoch are refused. The owner's next
  // message is refused too, it opens a new session and replays.
  auto digest = [&](std::uint64_t session, std::uint64_t view, dix::rb_digest_op op, std::uint64_t amount = 0,
                    std::size_t records = 0) {
    dix::rb_digest d{session, epoch, view, op, amount, std::vector<dix::record_entry>(records)};
    return peer.ask(self, d).value_or("none");
  };
  // Digest views (dix verify): only in the current session, at its epoch.
  CHECK_THAT(digest(12345, 5, dix::rb_digest_op::open), Catch::StartsWith("stopped: digest view: not this index node's current session"));
  CHECK(peer.ask(self, hello(epoch, 79)).value_or("none") == "welcome");
  CHECK_THAT(digest(79, 5, dix::rb_digest_op::read, 10), Catch::StartsWith("message_invalid: digest view 5 is not open"));
  CHECK(digest(79, 5, dix::rb_digest_op::open) == "digest 0");
  CHECK_THAT(digest(79, 5, dix::rb_digest_op::open), Catch::StartsWith("message_invalid: digest view 5 is open already"));
  CHECK(digest(79, 6, dix::rb_digest_op::open) == "digest 0");
  CHECK_THAT(digest(79, 7, dix::rb_digest_op::open), Catch::StartsWith("invalid_argument: digest view: at most 2"));
  CHECK_THAT(digest(79, 5, dix::rb_digest_op::skips, 0, 4097), Catch::StartsWith("invalid_argument: digest view: at most 4096 records"));
  CHECK(digest(79, 5, dix::rb_digest_op::skips, 0, 2) == "digest 0");  // two empty records: answered
  dix::rb_digest wrong_epoch{79, epoch + 1, 5, dix::rb_digest_op::read, 10, {}};
  CHECK_THAT(peer.ask(self, wrong_epoch).value_or("none"), Catch::StartsWith("stopped: digest view"));
  CHECK(digest(79, 5, dix::rb_digest_op::prepare, 1000) == "digest 0");
  // A read asks for more than a step may read: at most 4096 entries, and this index is smaller.
  CHECK_THAT(digest(79, 5, dix::rb_digest_op::read, 100000), Catch::EndsWith(" end"));
  self->send(peer.gate, dix::rb_digest{79, epoch, 5, dix::rb_digest_op::close, 0, {}});
  CHECK(digest(79, 7, dix::rb_digest_op::open) == "digest 0");  // 5 closed: room for another
  CHECK_THAT(peer.ask(self, dix::rb_deliver{79, epoch, 2, dix::batch_msg{b}}).value_or("none"),
             Catch::Contains("deliver: sequence 2 where the session expects 1"));
  auto big = std::make_shared<dix::batch>();
  big->epoch = epoch;
  big->bytes = (64ull << 20) + 1;
  CHECK_THAT(peer.ask(self, dix::rb_deliver{79, epoch, 1, dix::batch_msg{big}}).value_or("none"),
             Catch::Contains("more than the limit"));
  auto other = std::make_shared<dix::batch>();
  other->epoch = epoch + 1;
  CHECK_THAT(peer.ask(self, dix::rb_deliver{79, epoch, 1, dix::batch_msg{other}}).value_or("none"),
             Catch::Contains("the batch's epoch"));

  dix::commit_info last{};
  for (int i = 0; i < 5; ++i) last = write_some(*store, m, rng, 10);
  cover(*rt, last.time);
  REQUIRE(rt->stop().get());
  CHECK(host.reap(SIGTERM) == 0);
  check_index(dir / "host", m);
}

namespace {

// A throw-away PKI made with the openssl command: a CA and, per name, a key and a certificate it
// signed (EC P-256, valid two days).
struct pki {
  std::filesystem::path dir;
  pki(const std::filesystem::path& d, const std::string& ca_name) : dir(d) {
    std::filesystem::create_directories(dir);
    openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
             key("ca"), "-out", cert("ca"), "-days", "2", "-subj", "/CN=" + ca_name});
  }
  std::string key(const std::string& n) const { return (dir / (n + ".key")).string(); }
  std::string cert(const std::string& n) const { return (dir / (n + ".pem")).string(); }
  void issue(const std::string& n) const {
    auto csr = (dir / (n + ".csr")).string();
    openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key(n), "-out",
             csr, "-subj", "/CN=" + n});
    openssl({"x509", "-req", "-in", csr, "-CA", cert("ca"), "-CAkey", key("ca"), "-CAcreateserial", "-out", cert(n),
             "-days", "2"});
  }
  dix::remote_tls tls(const std::string& n) const {
    return dix::remote_tls{cert(n), key(n), cert("ca")};
  }
  void openssl(std::vector<std::string> args) const {
    args.insert(args.begin(), "/usr/bin/openssl");
    auto r = dix::test::run(args, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
};

// VmHWM of process `pid`, kB (0 when unreadable).
long peak_rss_kb(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

// Whether a peer with `tls` (none: plain TCP) reaches the gate at `port`.
bool peer_connects(std::uint16_t port, const std::optional<dix::remote_tls>& tls) {
  caf::actor_system_config cfg;
  dix::configure_dix(cfg);
  cfg.load<caf::io::middleman>();
  if (tls) {
    cfg.load<caf::openssl::manager>();
    cfg.openssl_certificate = tls->certificate.string();
    cfg.openssl_key = tls->key.string();
    cfg.openssl_cafile = tls->ca.string();
  }
  caf::actor_system sys{cfg};
  if (tls) return static_cast<bool>(caf::openssl::remote_actor(sys, "127.0.0.1", port));
  return static_cast<bool>(sys.middleman().remote_actor("127.0.0.1", port));
}

}  // namespace

TEST_CASE("remote backend: with mutual TLS the owner indexes through the host, and a plain client or one whose "
          "certificate another CA signed is refused",
          "[system][remote][tls]") {
  temp_dir dir;
  pki ours(dir / "pki", "dix-test-ca");
  ours.issue("host");
  ours.issue("owner");
  pki theirs(dir / "other-pki", "another-ca");
  theirs.issue("intruder");
  auto host = child_process::spawn({DIX_BINARY, "serve-backend", "--kind", "rocksdb", "--path", (dir / "host").string(),
                                    "--id", "by-value", "--tls-cert", ours.cert("host"), "--tls-key", ours.key("host"),
                                    "--tls-ca", ours.cert("ca")})
                  .value();
  auto line = host.wait_line("dix serve-backend: listening on 127.0.0.1:", in_30s());
  REQUIRE(line);
  auto port = static_cast<std::uint16_t>(std::stoul(line->substr(line->rfind(':') + 1)));

  auto store = dix::test::open_store(dir / "db");
  auto rt = dix::runtime::create({store}).value();
  dix::remote_backend_options o;
  o.id = "by-value";
  o.kind = "rocksdb_index";
  o.port = port;
  o.tls = ours.tls("owner");
  rt->register_index(dix::test::index_registration(dix::remote_backend::create(o).value())).value();
  REQUIRE(dix::test::wait_readiness(dir / "db", "by-value", dix::test::is_ready));
  std::mt19937_64 rng(5);
  model m;
  dix::commit_info last{};
  for (int i = 0; i < 10; ++i) last = write_some(*store, m, rng, 10);
  cover(*rt, last.time);

  // A raw socket: a BASP-like header claiming a 4 GiB payload, then garbage. Over TLS it never
  // reaches BASP (the handshake fails first), so the host allocates nothing for it.
  const auto host_peak_before = peak_rss_kb(host.pid());
  for (int attempt = 0; attempt < 3; ++attempt) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_port = htons(port);
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0);
    timeval bound{30, 0};  // a failure guard: the host closes long before
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
    std::string header(32, '\0');
    header[0] = 1;  // an operation byte, then a payload length of 0xFFFFFFF0, big-endian
    header[4] = header[5] = header[6] = '\xff';
    header[7] = '\xf0';
    std::string garbage = header + std::string(1 << 20, '\x5a');
    (void)::send(fd, garbage.data(), garbage.size(), MSG_NOSIGNAL);
    char sink[256];
    while (::recv(fd, sink, sizeof sink, 0) > 0) {  // the host closes the connection: end of input or a reset
    }
    ::close(fd);
  }
  const auto host_peak_after = peak_rss_kb(host.pid());
  INFO("host VmHWM " << host_peak_before << " kB -> " << host_peak_after << " kB");
  CHECK(host_peak_after < host_peak_before + 64 * 1024);  // far below the 4 GiB a plain port would try
  CHECK_FALSE(peer_connects(port, std::nullopt));            // plain TCP
  CHECK_FALSE(peer_connects(port, theirs.tls("intruder")));  // a certificate of another CA
  CHECK(peer_connects(port, ours.tls("owner")));             // the deployment's own still does

  REQUIRE(rt->stop().get());
  CHECK(host.reap(SIGTERM) == 0);
  check_index(dir / "host", m);
}

TEST_CASE("remote backend: the owner process SIGKILLed while its work is on the wire, a waiting standby process "
          "takes over (a higher epoch) through the same host, which fences the dead owner's work: nothing lost, "
          "nothing applied twice",
          "[system][remote][owner]") {
  temp_dir dir;
  auto [host, port] = start_host(dir / "host");
  model m;
  std::mt19937_64 rng(41);
  std::filesystem::create_directories(dir / "owner");
  auto put = [&](dix::test::owner_process& owner) {
    auto id = "r" + std::to_string(rng() % 40);
    if (rng() % 5 == 0) {
      m.erase(id);
      return owner.del(id);
    }
    auto payload = "key-" + std::to_string(rng() % 1000);
    m[id] = payload;
    return owner.put(id, payload);
  };
  dix::epoch_t epoch = 0;
  // Ready under a larger epoch than the last owner's: this owner has the index.
  auto ready_above = [&](const dix::test::owner_process& owner) {
    dix::epoch_t seen = 0;
    bool ok = dix::test::wait_readiness(owner.home(), "by-value", [&](const dix::readiness& r) {
      seen = r.owner_epoch;
      return dix::test::is_ready(r) && r.owner_epoch > epoch;
    });
    epoch = seen;
    return ok;
  };
  auto owner = std::make_unique<dix::test::owner_process>(dir / "owner", false, port);
  REQUIRE(ready_above(*owner));
  for (int round = 0; round < 5; ++round) {
    INFO("round " << round);
    // A standby process already waiting for the store when the owner dies.
    auto standby = std::make_unique<dix::test::owner_process>(dir / "owner", false, port, true);
    dix::commit_info last{};
    for (int i = 0; i < 20; ++i) last = put(*owner);
    REQUIRE(owner->cover(last.time));  // this owner's work is durable on the host
    // More work, some of it on the wire or queued on the host when the owner dies.
    for (int i = 0; i < 1 + static_cast<int>(rng() % 20); ++i) put(*owner);
    owner->kill();
    REQUIRE(standby->wait_started());
    owner = std::move(standby);
    REQUIRE(ready_above(*owner));  // it replays from the host's durable cursor what the dead one left
  }
  dix::commit_info last{};
  for (int i = 0; i < 5; ++i) last = put(*owner);
  REQUIRE(owner->cover(last.time));
  CHECK(owner->stop() == 0);
  ::kill(host.pid(), SIGTERM);
  auto stopped = host.wait_line("dix serve-backend: stopped", in_30s());
  REQUIRE(stopped);
  CHECK_THAT(*stopped, Catch::Contains("fenced batches dropped"));
  CHECK(host.reap(0) == 0);
  check_index(dir / "host", m);
}

TEST_CASE("remote backend: a frozen owner process (SIGSTOP) is a lost session at the host within twice the "
          "connection timeout, and after SIGCONT the owner reconnects, replays and the index is exact",
          "[system][remote][partition]") {
  temp_dir dir;
  auto [host, port] = start_host(dir / "host");  // heartbeat 1 s, connection timeout 5 s (the defaults)
  std::filesystem::create_directories(dir / "owner");
  dix::test::owner_process owner(dir / "owner", false, port);  // the same defaults
  REQUIRE(dix::test::wait_readiness(owner.home(), "by-value", dix::test::is_ready));
  model m;
  std::mt19937_64 rng(23);
  auto put = [&] {
    auto id = "r" + std::to_string(rng() % 40);
    auto payload = "key-" + std::to_string(rng() % 1000);
    m[id] = payload;
    return owner.put(id, payload);
  };
  dix::commit_info last{};
  for (int i = 0; i < 20; ++i) last = put();
  REQUIRE(owner.cover(last.time));
  for (int i = 0; i < 5; ++i) put();  // some of it on the wire when the owner freezes
  ::kill(owner.pid(), SIGSTOP);
  const auto frozen = std::chrono::steady_clock::now();
  auto lost = host.wait_line("dix serve-backend: lost the owner's session", in_30s());
  const auto noticed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - frozen);
  ::kill(owner.pid(), SIGCONT);
  REQUIRE(lost);
  INFO("noticed after " << noticed.count() << " ms");
  CHECK(noticed.count() >= 1000);   // not before the owner was silent for a while
  CHECK(noticed.count() < 10000);   // within twice the connection timeout
  for (int i = 0; i < 5; ++i) last = put();
  REQUIRE(owner.cover(last.time));  // reconnected, replayed, durable again
  CHECK(owner.stop() == 0);
  CHECK(host.reap(SIGTERM) == 0);
  check_index(dir / "host", m);
}

TEST_CASE("remote backend: a frozen host (SIGSTOP) is a lost connection by the heartbeat timeout, writes go on meanwhile, "
          "and after SIGCONT the owner reconnects and the index catches up exactly",
          "[system][remote][partition]") {
  temp_dir dir;
  auto [host, port] = start_host(dir / "host");
  auto owner = start_owner(dir, port);  // heartbeat 200 ms, connection timeout 2 s
  auto& store = owner.store;
  auto& rt = owner.rt;
  auto& remote = owner.remote;
  std::mt19937_64 rng(17);
  model m;
  cover(*rt, write_some(*store, m, rng, 10).time);
  const auto attempts = rebuild_attempts(*rt);
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    REQUIRE(remote->wait_connected(true, 30s));
    ::kill(host.pid(), SIGSTOP);
    const auto frozen = std::chrono::steady_clock::now();
    for (int i = 0; i < 5; ++i) write_some(*store, m, rng, 10);  // the owner's writers are not held up
    // The loss is noticed by the middleman's heartbeat (or a late acknowledgement), not by TCP.
    REQUIRE(remote->wait_connected(false, 30s));
    const auto noticed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - frozen);
    INFO("noticed after " << noticed.count() << " ms");
    CHECK(noticed.count() >= 1000);  // not before the peer was silent for a while
    CHECK(noticed.count() < 4000);   // within twice the connection timeout (measured: ~2.2 s)
    if (round == 0) {
      // Any process sees why: the owner's slot holds remote-host-unreachable until a session
      // opens, and the owner's published figures say the link is down.
      REQUIRE(dix::test::wait_lag(dir / "db", "by-value", [](const dix::lag_figures& l) { return l.link && !l.link->connected; }));
      auto status = dix::test::run({DIX_BINARY, "status", "--db", (dir / "db").string(), "--json"}, dir.path());
      CHECK_THAT(status.out, Catch::Contains("\"hold\":\"remote-host-unreachable\""));
      auto plain = dix::test::run({DIX_BINARY, "status", "--db", (dir / "db").string()}, dir.path());
      CHECK_THAT(plain.out, Catch::Contains("by-value: deliveries deferred (remote-host-unreachable)"));
    }
    ::kill(host.pid(), SIGCONT);
    dix::commit_info last{};
    for (int i = 0; i < 3; ++i) last = write_some(*store, m, rng, 10);
    cover(*rt, last.time);
  }
  REQUIRE(remote->wait_connected(true, 30s));
  REQUIRE(dix::test::wait_lag(dir / "db", "by-value", [](const dix::lag_figures& l) {
    return l.link && l.link->connected && l.link->durable_sequence > 0 && l.link->round_trip_us > 0;
  }));
  auto status = dix::test::run({DIX_BINARY, "status", "--db", (dir / "db").string(), "--json"}, dir.path());
  CHECK_THAT(status.out, Catch::Contains("\"hold\":\"none\""));
  CHECK_THAT(status.out, Catch::Contains("\"link\":{\"address\":\"127.0.0.1:" + std::to_string(port) + "\",\"connected\":"));
  auto plain = dix::test::run({DIX_BINARY, "status", "--db", (dir / "db").string()}, dir.path());
  CHECK_THAT(plain.out, Catch::Contains("link by-value: index node 127.0.0.1:" + std::to_string(port) + ", "));
  auto prometheus = dix::test::run({DIX_BINARY, "status", "--db", (dir / "db").string(), "--prometheus"}, dir.path());
  CHECK_THAT(prometheus.out, Catch::Contains("dix_remote_connected{index=\"by-value\",address=\"127.0.0.1:" + std::to_string(port) + "\"}"));
  CHECK_THAT(prometheus.out, Catch::Contains("dix_remote_durable_sequence{index=\"by-value\"}"));
  CHECK(remote->link_status().cursor_regressions == 0);
  CHECK(rebuild_attempts(*rt) == attempts);
  REQUIRE(rt->stop().get());
  CHECK(host.reap(SIGTERM) == 0);
  check_index(dir / "host", m);
}

namespace {

// A TCP relay of our own between the owner and the host, in a forked child that makes only
// system calls (poll, accept, connect, read, write, shutdown, close: async-signal-safe, so the
// fork of this threaded process is safe). The test steers it over a pipe, one command byte each,
// acknowledged on another pipe once carried out:
//   'f' cut every connection with FIN     'r' cut every connection with RST
//   's' stall: forward nothing, read nothing   'g' go on forwarding
//   'n' + 4 bytes N: cut with FIN after N more bytes forwarded (either direction)
class tcp_relay {
 public:
  explicit tcp_relay(std::uint16_t target) {
    listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(listen_ >= 0);
    sockaddr_in at = loopback(0);
    REQUIRE(::bind(listen_, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0);
    REQUIRE(::listen(listen_, 64) == 0);
    socklen_t len = sizeof at;
    REQUIRE(::getsockname(listen_, reinterpret_cast<sockaddr*>(&at), &len) == 0);
    port_ = ntohs(at.sin_port);
    int ctrl[2], ack[2];
    REQUIRE(::pipe2(ctrl, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(ack, O_CLOEXEC) == 0);
    std::fflush(nullptr);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::close(ctrl[1]);
      ::close(ack[0]);
      serve(listen_, ctrl[0], ack[1], target);
      ::_exit(0);
    }
    ::close(ctrl[0]);
    ::close(ack[1]);
    ctrl_ = ctrl[1];
    ack_ = ack[0];
  }
  ~tcp_relay() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    ::close(ctrl_);
    ::close(ack_);
    ::close(listen_);
  }
  std::uint16_t port() const { return port_; }
  void command(char c, std::uint32_t n = 0) {
    char msg[5] = {c, 0, 0, 0, 0};
    std::memcpy(msg + 1, &n, 4);
    REQUIRE(::write(ctrl_, msg, 5) == 5);
    char done = 0;
    REQUIRE(::read(ack_, &done, 1) == 1);
  }

 private:
  static sockaddr_in loopback(std::uint16_t port) {
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_port = htons(port);
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return at;
  }
  static void cut(int fd, bool reset) {
    if (reset) {
      linger l{1, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    } else {
      ::shutdown(fd, SHUT_RDWR);
    }
    ::close(fd);
  }
  // The child's loop (no allocation: fixed arrays, a stack buffer).
  static void serve(int listen_fd, int ctrl, int ack, std::uint16_t target) {
    constexpr int max_pairs = 32;
    int a[max_pairs], b[max_pairs];
    int pairs = 0;
    bool stalled = false;
    long long cut_after = -1;
    std::uint32_t delay_ms = 0;  // each chunk forwarded this late (the relay's own latency)
    static char buf[1 << 16];
    for (;;) {
      pollfd fds[2 + 2 * max_pairs];
      int n = 0;
      fds[n++] = {ctrl, POLLIN, 0};
      fds[n++] = {listen_fd, POLLIN, 0};
      for (int i = 0; i < pairs && !stalled; ++i) {
        fds[n++] = {a[i], POLLIN, 0};
        fds[n++] = {b[i], POLLIN, 0};
      }
      if (::poll(fds, static_cast<nfds_t>(n), -1) < 0) continue;
      if (fds[0].revents != 0) {
        char msg[5];
        if (::read(ctrl, msg, 5) != 5) return;
        std::uint32_t arg = 0;
        std::memcpy(&arg, msg + 1, 4);
        if (msg[0] == 'f' || msg[0] == 'r') {
          for (int i = 0; i < pairs; ++i) {
            cut(a[i], msg[0] == 'r');
            cut(b[i], msg[0] == 'r');
          }
          pairs = 0;
        } else if (msg[0] == 's') {
          stalled = true;
        } else if (msg[0] == 'g') {
          stalled = false;
        } else if (msg[0] == 'n') {
          cut_after = arg;
        } else if (msg[0] == 'd') {
          delay_ms = arg;
        }
        char done = 1;
        if (::write(ack, &done, 1) != 1) return;
        continue;
      }
      if (fds[1].revents != 0) {
        int client = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (client >= 0) {
          int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
          sockaddr_in at = loopback(target);
          if (pairs < max_pairs && server >= 0 && ::connect(server, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0) {
            a[pairs] = client;
            b[pairs] = server;
            ++pairs;
          } else {
            ::close(client);
            if (server >= 0) ::close(server);
          }
        }
      }
      for (int k = 2; k < n; ++k) {
        if (fds[k].revents == 0) continue;
        int i = (k - 2) / 2;
        if (i >= pairs) continue;
        int from = (k - 2) % 2 == 0 ? a[i] : b[i];
        int to = from == a[i] ? b[i] : a[i];
        auto got = ::read(from, buf, sizeof buf);
        bool ok = got > 0;
        if (ok && delay_ms > 0) {
          timespec pause{static_cast<time_t>(delay_ms / 1000), static_cast<long>(delay_ms % 1000) * 1000000L};
          ::nanosleep(&pause, nullptr);  // latency on the wire, not a wait for an outcome
        }
        for (ssize_t off = 0; ok && off < got;) {
          auto w = ::write(to, buf + off, static_cast<std::size_t>(got - off));
          if (w <= 0) ok = false;
          else off += w;
        }
        if (ok && cut_after >= 0) {
          cut_after -= got;
          if (cut_after <= 0) {
            for (int j = 0; j < pairs; ++j) {
              cut(a[j], false);
              cut(b[j], false);
            }
            pairs = 0;
            cut_after = -1;
            break;
          }
        }
        if (!ok) {
          ::close(a[i]);
          ::close(b[i]);
          a[i] = a[pairs - 1];
          b[i] = b[pairs - 1];
          --pairs;
          break;  // the poll set changed: poll again
        }
      }
    }
  }

  int listen_ = -1, ctrl_ = -1, ack_ = -1;
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

}  // namespace

TEST_CASE("remote backend: through a TCP relay that delays, cuts with FIN and RST, cuts after N bytes, stalls and "
          "storms reconnects, nothing is lost and nothing applied twice",
          "[system][remote][relay]") {
  temp_dir dir;
  auto [host, host_port] = start_host(dir / "host");
  tcp_relay relay(host_port);
  auto owner = start_owner(dir, relay.port());  // heartbeat 200 ms, connection timeout 2 s
  auto& store = owner.store;
  auto& rt = owner.rt;
  auto& remote = owner.remote;
  std::mt19937_64 rng(99);
  model m;
  cover(*rt, write_some(*store, m, rng, 10).time);
  const auto attempts = rebuild_attempts(*rt);
  auto writes = [&](int n) {
    dix::commit_info last{};
    for (int i = 0; i < n; ++i) last = write_some(*store, m, rng, 10);
    return last;
  };
  for (char cut : {'f', 'r'}) {
    INFO("cut " << cut);
    for (int round = 0; round < 3; ++round) {
      REQUIRE(remote->wait_connected(true, 30s));
      writes(1 + static_cast<int>(rng() % 5));
      relay.command(cut);
      cover(*rt, writes(3).time);
    }
  }
  {
    INFO("delay");
    REQUIRE(remote->wait_connected(true, 30s));
    relay.command('d', 30);  // 30 ms per chunk each way: acknowledgements late, nothing lost
    cover(*rt, writes(10).time);
    relay.command('d', 0);
  }
  for (std::uint32_t after : {1u, 100u, 5000u, 100000u}) {
    INFO("cut after " << after << " bytes");
    REQUIRE(remote->wait_connected(true, 30s));
    relay.command('n', after);
    writes(1 + static_cast<int>(rng() % 20));
    relay.command('n', 0xFFFFFFFFu);  // no cut pending (the count is far away)
    cover(*rt, writes(3).time);
  }
  {
    INFO("stall");
    REQUIRE(remote->wait_connected(true, 30s));
    relay.command('s');
    writes(5);
    REQUIRE(remote->wait_connected(false, 30s));  // the heartbeat timeout, through a silent relay
    relay.command('g');
    cover(*rt, writes(3).time);
  }
  {
    INFO("reconnect storm");
    for (int i = 0; i < 10; ++i) {
      REQUIRE(remote->wait_connected(true, 30s));
      writes(1);
      relay.command('r');
    }
    cover(*rt, writes(3).time);
  }
  CHECK(remote->link_status().cursor_regressions == 0);
  CHECK(rebuild_attempts(*rt) == attempts);
  REQUIRE(rt->stop().get());
  CHECK(host.reap(SIGTERM) == 0);
  check_index(dir / "host", m);
}

TEST_CASE("remote backend: a reader on the index node's side (dix query, another process) waits for a writer's "
          "commit time and sees the write, bounded admits by the forwarded coverage, strict and an uncovered wait "
          "are refused index_lagging",
          "[system][remote][query]") {
  temp_dir dir;
  auto [host, port] = start_host(dir / "host");
  auto owner = start_owner(dir, port);
  auto& store = owner.store;
  const auto at = "127.0.0.1:" + std::to_string(port);
  auto query = [&](std::vector<std::string> words) {
    std::vector<std::string> argv{DIX_BINARY, "query", "--backend-host", at, "--id", "by-value"};
    argv.insert(argv.end(), words.begin(), words.end());
    return dix::test::run(argv, dir.path());
  };
  for (int i = 0; i < 5; ++i) {
    INFO("write " << i);
    auto txn = store->begin();
    const auto id = "ryw-" + std::to_string(i);
    txn.put(1, id, "key-ryw-" + std::to_string(i));
    auto committed = txn.commit().value();
    // Read-your-writes across processes: the commit time is all the reader needs.
    auto r = query({"lookup", "key-ryw-" + std::to_string(i), "--wait-since", std::to_string(committed.time),
                    "--timeout", "30000"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("main/1/" + id + " version ") != std::string::npos);
    CHECK(r.out.find("1 row (coverage ") != std::string::npos);
  }
  {
    // Bounded: the owner's forwarded coverage is at most a few seconds old.
    auto r = query({"lookup", "key-ryw-0", "--tolerance", "60000", "--json"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("\"record_id\":\"ryw-0\"") != std::string::npos);
    CHECK(r.out.find("\"coverage\":\"bounded\"") != std::string::npos);
  }
  {
    auto r = query({"lookup", "key-ryw-0", "--strict"});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("index_lagging") != std::string::npos);
  }
  {
    // A commit time far ahead: never covered within the timeout.
    auto r = query({"lookup", "key-ryw-0", "--wait-since", "18000000000000000000", "--timeout", "200"});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("index_lagging") != std::string::npos);
  }
  {
    auto r = query({"search", "anything"});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("not_supported") != std::string::npos);
  }
  {
    auto r = query({"lookup", "x", "--id", "another"});
    CHECK(r.exit_code == 2);  // --id twice: refused as every repeated option is
  }
  REQUIRE(owner.rt->stop().get());
  auto summary = host.reap(SIGTERM);
  CHECK(summary == 0);
}

TEST_CASE("remote backend: a node started with --home-db admits its readers by the owner's readiness segment on "
          "this machine: a wait sees the write, strict is refused",
          "[system][remote][query]") {
  temp_dir dir;
  auto store = dix::test::open_store(dir / "db");  // the segment the node reads exists before it starts
  auto host = child_process::spawn({DIX_BINARY, "serve-backend", "--kind", "rocksdb", "--path", (dir / "host").string(),
                                    "--id", "by-value", "--home-db", (dir / "db").string()})
                  .value();
  auto line = host.wait_line("dix serve-backend: listening on 127.0.0.1:", in_30s());
  REQUIRE(line);
  const auto port = static_cast<std::uint16_t>(std::stoul(line->substr(line->rfind(':') + 1)));
  auto rt = dix::runtime::create({store}).value();
  rt->register_index(dix::test::index_registration(remote_to(port))).value();
  REQUIRE(dix::test::wait_readiness(dir / "db", "by-value", dix::test::is_ready));
  const auto at = "127.0.0.1:" + std::to_string(port);
  auto txn = store->begin();
  txn.put(1, "home-1", "key-home-1");
  auto committed = txn.commit().value();
  auto r = dix::test::run({DIX_BINARY, "query", "--backend-host", at, "--id", "by-value", "lookup", "key-home-1",
                           "--wait-since", std::to_string(committed.time)},
                          dir.path());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("main/1/home-1 version "));
  auto strict = dix::test::run({DIX_BINARY, "query", "--backend-host", at, "--id", "by-value", "lookup", "key-home-1", "--strict"},
                               dir.path());
  CHECK(strict.exit_code == 1);
  CHECK_THAT(strict.err, Catch::Contains("index_lagging"));
  REQUIRE(rt->stop().get());
  CHECK(host.reap(SIGTERM) == 0);
}

TEST_CASE("remote backend: dix serve-backend refuses a state directory whose epoch or epoch.tmp is someone else's "
          "file, and leaves both byte for byte",
          "[system][remote][foreign]") {
  temp_dir dir;
  const auto state = dir / "host";
  std::filesystem::create_directory(state);
  std::filesystem::permissions(state, std::filesystem::perms::owner_all);
  for (const std::string name : {"epoch.tmp", "epoch"}) {
    INFO(name);
    { std::ofstream(state / name) << "my notes, not an epoch\n"; }
    auto ran = dix::test::run({DIX_BINARY, "serve-backend", "--kind", "rocksdb", "--path", state.string()}, dir.path());
    CHECK(ran.exit_code == 1);
    CHECK_THAT(ran.err, Catch::Contains(name));
    std::ifstream in(state / name);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text == "my notes, not an epoch\n");
    std::filesystem::remove(state / name);
  }
}

TEST_CASE("remote backend: a batch over the protocol's size limit fails at the owner's side at once, rather than "
          "being refused by the host and replayed for ever",
          "[system][remote]") {
  auto remote = remote_to(1);  // nothing listens on port 1: the limit is checked before any session
  auto big = std::make_shared<dix::batch>();
  big->epoch = 1;
  big->bytes = (64ull << 20) + 1;
  CHECK(remote->deliver(big) == dix::delivery_result::failed);
  auto small = std::make_shared<dix::batch>();
  small->epoch = 1;
  small->bytes = 1000;
  CHECK(remote->deliver(small) == dix::delivery_result::deferred);  // no session yet: held by the runner
}

TEST_CASE("remote backend host: a non-loopback address names only what it lacks, the flag, mutual TLS or both (a new user's trial)",
          "[system][remote]") {
  dix::test::temp_dir dir;
  for (const char* name : {"node.pem", "node.key", "ca.pem"}) std::ofstream(dir / name) << "x";
  dix::remote_host_options o;
  o.listen_address = "0.0.0.0";
  o.state_dir = dir / "state";
  auto neither = dix::remote_backend_host::check(o);
  REQUIRE_FALSE(neither);
  CHECK(neither.error().message() ==
        "listening on 0.0.0.0 (not loopback) needs --allow-remote-interfaces and mutual TLS (certificate, key and CA files)");
  o.allow_remote_interfaces = true;
  auto no_tls = dix::remote_backend_host::check(o);
  REQUIRE_FALSE(no_tls);
  CHECK(no_tls.error().message() == "listening on 0.0.0.0 (not loopback) needs mutual TLS (certificate, key and CA files)");
  o.allow_remote_interfaces = false;
  o.tls = dix::remote_tls{dir / "node.pem", dir / "node.key", dir / "ca.pem"};
  auto no_flag = dix::remote_backend_host::check(o);
  REQUIRE_FALSE(no_flag);
  CHECK(no_flag.error().message() == "listening on 0.0.0.0 (not loopback) needs --allow-remote-interfaces");
  o.allow_remote_interfaces = true;
  CHECK(dix::remote_backend_host::check(o));
  CHECK_FALSE(std::filesystem::exists(dir / "state"));  // a check makes nothing
}
