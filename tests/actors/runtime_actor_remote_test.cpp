// [adapter] The runtime actor over the CAF middleman on 127.0.0.1: published by one actor system,
// reached from another over a real TCP connection (BASP), it answers the serializable requests of
// <dix/caf/messages.hpp> — what an operator's tool in another process would ask. Real threads and
// real time; every wait is a request with a generous deadline.
#include <catch2/catch.hpp>

#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

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

}  // namespace

TEST_CASE("runtime actor: published over the middleman on 127.0.0.1 it answers status, metrics, readiness and stop from another actor system", "[adapter][runtime][remote]") {
  temp_dir dir;
  auto store = test::open_store(dir / "db");
  networked_config server_cfg;
  caf::actor_system server{server_cfg};
  auto rt = dix::spawn_runtime(server, {store});
  REQUIRE(rt);
  {
    caf::scoped_actor self{server};
    registration r;
    r.backend = std::make_shared<test::sim_backend>("idx");
    r.projections[table_ref{"main", 1}] = [](std::string_view p, const record_info&) -> projection_result { return std::string(p); };
    bool registered = false;
    self->request(*rt, 30s, register_index{std::move(r)}).receive([&](index_registered&) { registered = true; }, [](caf::error&) {});
    REQUIRE(registered);
  }
  test::put_records(*store, "k", 3);
  REQUIRE(test::wait_readiness(dir / "db", "idx", test::is_ready));  // the runner has read the log
  auto port = server.middleman().publish(*rt, 0, "127.0.0.1");
  REQUIRE(port);

  networked_config client_cfg;
  caf::actor_system client{client_cfg};
  // The client names the same typed interface: the middleman compares the two sides' signatures.
  auto remote = client.middleman().remote_actor<runtime_actor>("127.0.0.1", *port);
  INFO((remote ? std::string() : client.render(remote.error())));
  REQUIRE(remote);
  caf::scoped_actor self{client};
  std::optional<readiness_report> readiness;
  self->request(*remote, 30s, query_readiness{"idx"}).receive([&](readiness_report& r) { readiness = r; }, [](caf::error&) {});
  REQUIRE(readiness);
  CHECK(readiness->id == "idx");
  CHECK(readiness->value.state == readiness_state::ready);
  CHECK(readiness->value.owner_epoch >= 1);
  std::optional<status_report> status;
  self->request(*remote, 30s, query_status{"idx"}).receive([&](status_report& s) { status = s; }, [](caf::error&) {});
  REQUIRE(status);
  REQUIRE(status->status);
  std::optional<metrics_report> metrics;
  self->request(*remote, 30s, query_metrics{"idx"}).receive([&](metrics_report& m) { metrics = m; }, [](caf::error&) {});
  REQUIRE(metrics);
  REQUIRE(metrics->metrics);
  CHECK(metrics->metrics->logs.size() == 1);
  caf::error missing;
  self->request(*remote, 30s, query_readiness{"nobody"}).receive([](readiness_report&) {}, [&](caf::error& e) { missing = e; });
  CHECK(to_errc(missing) == errc::not_registered);  // the dix error category crosses the wire
  bool stopped = false;
  self->request(*remote, 30s, stop_runtime{}).receive([&](runtime_stopped&) { stopped = true; }, [](caf::error&) {});
  CHECK(stopped);
  caf::anon_send_exit(*rt, caf::exit_reason::user_shutdown);
}
