// Remote backends with real processes on loopback (issue 28, decision 0043): this process is the
// owner (store, runtime, remote_backend); `dix serve-backend` children are index nodes. Waits are
// the runtime's coverage futures and pipe reads of the children's output, each bounded; nothing
// sleeps. The index is checked at the end by opening the host's index directory here, after the
// host stopped: every live record exactly once, at its current key, nothing else.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <map>
#include <random>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/remote.hpp>
#include <dix/runtime.hpp>

#include "adapters/test_support.hpp"
#include "harness/child_process.hpp"
#include "messages/type_ids.hpp"
#include "support/fake_host.hpp"
#include "support/index_registration.hpp"

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
  auto store = dix::test::open_store(dir / "db");
  auto rt = dix::runtime::create({store}).value();
  auto remote = remote_to(port);
  rt->register_index(dix::test::index_registration(remote)).value();
  REQUIRE(dix::test::wait_readiness(dir / "db", "by-value", dix::test::is_ready));  // built from a scan first
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

TEST_CASE("remote backend: the host SIGKILLed 30 times at random points and restarted on its port loses nothing "
          "and applies nothing twice",
          "[system][remote]") {
  temp_dir dir;
  auto started = start_host(dir / "host");
  auto host = std::move(started.first);
  const auto port = started.second;
  auto store = dix::test::open_store(dir / "db");
  auto rt = dix::runtime::create({store}).value();
  auto remote = remote_to(port);
  rt->register_index(dix::test::index_registration(remote)).value();
  REQUIRE(dix::test::wait_readiness(dir / "db", "by-value", dix::test::is_ready));
  std::mt19937_64 rng(28);
  model m;
  dix::commit_info last{};
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
  REQUIRE(rt->stop().get());
  CHECK(host.reap(SIGTERM) == 0);
  check_index(dir / "host", m);
}

TEST_CASE("remote backend: a peer's exit_msg(kill) to the gate ends it, the host publishes a new gate on the same "
          "port and the owner goes on indexing",
          "[system][remote]") {
  temp_dir dir;
  auto [host, port] = start_host(dir / "host");
  auto store = dix::test::open_store(dir / "db");
  auto rt = dix::runtime::create({store}).value();
  auto remote = remote_to(port);
  rt->register_index(dix::test::index_registration(remote)).value();
  REQUIRE(dix::test::wait_readiness(dir / "db", "by-value", dix::test::is_ready));
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
