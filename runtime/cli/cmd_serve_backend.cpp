// `dix serve-backend --kind rocksdb|xapian|hnsw --path DIR [--id ID] [--listen HOST:PORT]
// [--tls-cert F --tls-key F --tls-ca F] [--allow-remote-interfaces]`: an index node (issue 28,
// decision 0043). It serves one of the demo's backends (catalogue.hpp) through a
// remote_backend_host (<dix/remote.hpp>) until SIGINT or SIGTERM, then stops cleanly (exit 0).
// Its first line on stdout is exactly `dix serve-backend: listening on ADDRESS:PORT`, with the
// port the system chose when 0 was asked, so a parent process (the tests, `dix demo --remote`)
// can read it.
#include <pthread.h>

#include <csignal>
#include <iostream>

#include <dix/remote.hpp>

#include "catalogue.hpp"
#include "commands.hpp"
#include "metrics_server.hpp"
#include "paths.hpp"
#include "stop_signals.hpp"
#include "usage.hpp"
#include "tool/args.hpp"

namespace dix::cli {

namespace {

constexpr const char* name = "dix serve-backend";

const char* default_id(const std::string& kind) {
  if (kind == "xapian") return fulltext_id;
  if (kind == "hnsw") return similar_id;
  return "by-category";
}

// SIGINT and SIGTERM blocked in this thread before any other starts (threads inherit the mask),
// so only wait_for_stop_signal's sigsuspend takes them: a signal between its check and its wait
// is not lost, and none goes to a thread of RocksDB or CAF.
sigset_t block_stop_signals() {
  sigset_t blocked, previous;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGINT);
  sigaddset(&blocked, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &blocked, &previous);
  return previous;
}

void wait_for_stop_signal(const sigset_t& previous) {
  sigset_t waiting = previous;
  sigdelset(&waiting, SIGINT);
  sigdelset(&waiting, SIGTERM);
  while (stop_signal() == 0) ::sigsuspend(&waiting);
}

}  // namespace

int run_serve_backend(const std::vector<std::string>& argv) {
  int status = exit_usage;
  auto a = tool::args::parse_command(argv,
                                     {{"kind", "path", "id", "listen", "tls-cert", "tls-key", "tls-ca", "home-db"},
                                      {"allow-remote-interfaces"}},
                                     name, command_usage("serve-backend"), status);
  if (!a) return status;
  if (!a->has("kind")) return tool::refuse(name, "--kind rocksdb|xapian|hnsw is required");
  if (!a->has("path")) return tool::refuse(name, "--path DIR is required");
  std::string problem;
  auto kind_index = a->choice("kind", {"rocksdb", "xapian", "hnsw"}, 0, problem);
  if (!kind_index) return tool::refuse(name, problem);
  const std::string kind = a->get("kind");
  remote_host_options o;
  if (a->has("listen")) {
    auto at = parse_listen_address(a->get("listen"));
    if (!at) return tool::refuse(name, "--listen: " + at.error().message());
    o.listen_address = at->host;
    o.port = at->port;
  }
  o.allow_remote_interfaces = a->has("allow-remote-interfaces");
  o.tls.certificate = a->get("tls-cert");
  o.tls.key = a->get("tls-key");
  o.tls.ca = a->get("tls-ca");
  const std::filesystem::path dir = a->get("path");
  if (auto wrong = new_directory_problem(dir.string())) return tool::refuse(name, "--path " + dir.string() + ": " + *wrong);
  o.state_dir = dir;
  if (a->has("home-db")) {
    if (auto wrong = existing_directory_problem(a->get("home-db"))) {
      return tool::refuse(name, "--home-db " + a->get("home-db") + ": " + *wrong);
    }
    o.home_db = store_dir(a->get("home-db")).path;  // a demo or serve --dir names DIR/primary
  }

  if (auto refused = remote_backend_host::check(o); !refused) return tool::refuse(name, refused.error().message());
  install_stop_handlers();
  const sigset_t unblocked = block_stop_signals();
  // The state directory first (0700, or one of yours already private): the index lives inside
  // it, so a directory the host would refuse gets nothing made in it.
  auto backend = [&]() -> result<std::shared_ptr<dix::backend>> {
    if (auto d = remote_backend_host::make_state_dir(dir); !d) return d.error();
    return make_catalogue_backend(kind, a->get("id", default_id(kind)), dir / "index");
  }();
  if (!backend) {
    std::cerr << name << ": " << backend.error().to_string() << "\n";
    return exit_error;
  }
  o.query = make_catalogue_query_handler(*backend);
  o.on_session_lost = [](epoch_t epoch) {
    std::cout << name << ": lost the owner's session (epoch " << epoch << "): its connection went down" << std::endl;
  };
  auto host = remote_backend_host::start(*backend, o);
  if (!host) {
    if (host.error().value() == errc::invalid_argument) return tool::refuse(name, host.error().message());
    std::cerr << name << ": " << host.error().to_string() << "\n";
    return exit_error;
  }
  std::cout << name << ": listening on " << (*host)->address() << ":" << (*host)->port() << std::endl;
  wait_for_stop_signal(unblocked);
  auto stats = (*host)->stats();
  (*host)->stop();
  std::cout << name << ": stopped (epoch " << stats.epoch << ", " << stats.sessions << " sessions, "
            << stats.batches_applied << " batches applied, " << stats.fenced_batches_dropped
            << " fenced batches dropped, " << stats.refused << " messages refused)" << std::endl;
  return exit_ok;
}

}  // namespace dix::cli
