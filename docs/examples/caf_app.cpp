// dix inside a CAF application: the application's own actor system hosts the runtime actor
// (<dix/caf.hpp>); an application actor registers a secondary index of fruit by colour,
// subscribes to its readiness and runner state, writes, and at once asks (a wait_coverage
// request) to be told when the index covers the write — the new index is first built by a scan,
// and the wait waits through that build — printing every event it receives meanwhile; then it
// queries the index and stops the runtime.
//
//   caf_app DIR   creates DIR/primary (the store) and DIR/by-colour (the index database)
//
// Nothing here blocks: the write is a commit_transaction request and the query a query_index
// request, both answered by the runtime from threads of its own (a committer per store, a worker
// per query), so the application actor is an ordinary scheduled actor.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>

#include <caf/all.hpp>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/caf.hpp>
#include <dix/primary_store.hpp>

namespace {

constexpr std::uint32_t fruit_table = 1;
constexpr const char* index_id = "by-colour";
std::atomic<int> exit_code{1};

struct app_state {
  dix::runtime_actor runtime;
  dix::index_time_t written = 0;  // our transaction's time (0: not yet written)
  bool done = false;
  static inline const char* name = "caf_app";
};

using app_actor = caf::stateful_actor<app_state>;

void finish(app_actor* self, int code) {
  if (self->state.done) return;
  self->state.done = true;
  exit_code = code;
  // stop_runtime releases the index (flush, shutdown); then the runtime actor may end.
  self->request(self->state.runtime, caf::infinite, dix::stop_runtime{})
    .then(
      [self](dix::runtime_stopped) {
        std::cout << "runtime stopped\n";
        self->send_exit(self->state.runtime, caf::exit_reason::user_shutdown);
        self->quit();
      },
      [self](caf::error& err) {
        std::cerr << "caf_app: stop: " << self->system().render(err) << "\n";
        exit_code = 1;
        self->send_exit(self->state.runtime, caf::exit_reason::user_shutdown);
        self->quit();
      });
}

void fail(app_actor* self, const std::string& what, const caf::error& err) {
  std::cerr << "caf_app: " << what << ": " << self->system().render(err) << "\n";
  finish(self, 1);
}

// The index covers our writes: ask it, as a reader would. In `wait` mode for our commit, the
// query is answered at once (the coverage is already there) and says it read our writes.
void query(app_actor* self) {
  dix::index_query red;
  red.id = index_id;
  red.kind = dix::query_kind::lookup;
  red.text = "red";
  red.mode.kind = dix::coverage_kind::wait;
  red.mode.since = self->state.written;
  red.mode.timeout = std::chrono::seconds(5);
  self->request(self->state.runtime, caf::infinite, dix::to_query_index(red))
    .then(
      [self](dix::index_rows& rows) {
        std::cout << "red:";
        for (const auto& row : rows.rows) std::cout << " " << row.record_id;
        std::cout << "\n";
        finish(self, rows.rows.size() == 2 ? 0 : 1);
      },
      [self](caf::error& err) { fail(self, "query", err); });
}

// Read-your-writes: the runtime answers once the index covers our commit (its time is a valid
// `since`); meanwhile this actor goes on printing the events it receives. The wait waits through
// the new index's first build (needs-rebuild, rebuilding) up to its timeout; at the timeout it
// fails `rebuilding` if the index is still being built, `index_lagging` otherwise (both: retry).
void wait_for_write(app_actor* self) {
  self->request(self->state.runtime, caf::infinite, dix::wait_coverage{index_id, self->state.written, 30000})
    .then(
      [self](dix::coverage_reached&) {
        std::cout << "covered: the index includes the write\n";
        query(self);
      },
      [self](caf::error& err) { fail(self, "wait_coverage", err); });
}

void write(app_actor* self) {
  dix::commit_transaction txn;
  txn.put(fruit_table, "apple", "red");
  txn.put(fruit_table, "banana", "yellow");
  txn.put(fruit_table, "cherry", "red");
  self->request(self->state.runtime, caf::infinite, std::move(txn))
    .then(
      [self](dix::transaction_committed& committed) {
        self->state.written = committed.time;
        std::cout << "wrote 3 records, sequence " << committed.sequence << "\n";
        wait_for_write(self);
      },
      [self](caf::error& err) { fail(self, "commit", err); });
}

caf::behavior app(app_actor* self, std::shared_ptr<dix::rocksdb_index_backend> index, dix::runtime_actor runtime) {
  self->state.runtime = runtime;
  dix::registration r;
  r.backend = std::move(index);
  r.projection_version = "colour-v1";
  r.projections[dix::table_ref{"main", fruit_table}] = [](std::string_view payload,
                                                          const dix::record_info&) -> dix::projection_result {
    return dix::encode_keys({std::string(payload)});
  };
  self->request(runtime, caf::infinite, dix::register_index{std::move(r)})
    .then(
      [self](dix::index_registered& ok) {
        std::cout << "registered " << ok.id << "\n";
        self->request(self->state.runtime, caf::infinite, dix::subscribe{index_id})
          .then(
            [self](dix::subscribed& s) {
              std::cout << "subscribed: readiness " << dix::to_string(s.readiness.state) << "\n";
              write(self);
            },
            [self](caf::error& err) { fail(self, "subscribe", err); });
      },
      [self](caf::error& err) { fail(self, "register", err); });
  // A bound on the whole run: an example must not hang a test.
  self->delayed_send(self, std::chrono::seconds(60), caf::atom("timeout"));
  return {
    [self](dix::readiness_changed& e) {
      std::cout << "readiness " << e.id << ": " << dix::to_string(e.readiness.state) << " ("
                << dix::to_string(e.readiness.reason) << "), epoch " << e.readiness.owner_epoch << "\n";
    },
    [self](dix::runner_state_changed& e) {
      std::cout << "runner " << e.id << ": " << dix::to_string(e.status.state) << ", epoch " << e.status.epoch << "\n";
    },
    [self](caf::atom_value) {
      std::cerr << "caf_app: no answer within 60 s\n";
      finish(self, 1);
    },
  };
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: caf_app DIR\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::cerr << "caf_app: cannot create " << dir.string() << ": " << ec.message() << "\n";
    return 1;
  }
  dix::store_options store_options;
  store_options.log_name = "main";
  auto store = dix::primary_store::open(dir / "primary", store_options);
  if (!store) {
    std::cerr << "caf_app: opening the store: " << store.error().to_string() << "\n";
    return 1;
  }
  if (auto ok = (*store)->create_table(fruit_table); !ok) {
    std::cerr << "caf_app: creating the table: " << ok.error().to_string() << "\n";
    return 1;
  }
  dix::rocksdb_index_options index_options;
  index_options.path = dir / index_id;
  auto index = dix::rocksdb_index_backend::create(index_id, index_options);
  if (!index) {
    std::cerr << "caf_app: creating the index: " << index.error().to_string() << "\n";
    return 1;
  }
  {
    caf::actor_system_config cfg;
    dix::configure(cfg);
    caf::actor_system sys{cfg};
    auto runtime = dix::spawn_runtime(sys, {*store});
    if (!runtime) {
      std::cerr << "caf_app: spawning the runtime: " << sys.render(runtime.error()) << "\n";
      return 1;
    }
    sys.spawn(app, *index, *runtime);
  }  // ~actor_system waits for the application actor and the runtime to end
  return exit_code.load();
}
