// `dix bench remote`: catch-up through a remote RocksDB index against the same backend in
// process, in the same run (issue 28). A backlog of N records (200-byte payloads, 100 per
// transaction) is written with no index registered; then
//   1. remote: a `dix serve-backend --kind rocksdb` child on 127.0.0.1 (with --tls, mutual TLS
//      over a throw-away PKI the `openssl` command makes) serves the index; this process
//      registers a remote_backend and is timed until the durable cursor reaches the end of the
//      log; the link's round-trip times are sampled meanwhile (one ping a second);
//   2. in process: a fresh rocksdb_index_backend with the same projection, timed the same way.
// The remote phase runs first, so this process's peak RSS after it is the owner's; the host's is
// read from /proc before it stops.
#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <thread>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/primary_store.hpp>
#include <dix/remote.hpp>
#include <dix/runtime.hpp>

#include "bench.hpp"
#include "store_gen.hpp"
#include "harness/child_process.hpp"
#include "report.hpp"
#include "tool/args.hpp"
#include "tool/executable.hpp"

namespace dix::bench {
namespace {

using gen::per_txn;
using gen::table;

// VmHWM of process `pid`, MiB (0 when unreadable).
double peak_rss_mb_of(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

void run_or_throw(const std::vector<std::string>& argv) {
  auto child = cli::child_process::spawn(argv);
  if (!child) throw std::runtime_error(child.error().to_string());
  int status = child->reap(0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("failed: " + argv[0] + " " + argv[1]);
}

// A CA and two certificates it signed (host, owner), EC P-256, made with the openssl command.
void make_pki(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const std::string openssl = "/usr/bin/openssl";
  auto p = [&](const std::string& name) { return (dir / name).string(); };
  run_or_throw({openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", p("ca.key"), "-out", p("ca.pem"), "-days", "2", "-subj", "/CN=dix-bench-ca"});
  for (const std::string n : {"host", "owner"}) {
    run_or_throw({openssl, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                  p(n + ".key"), "-out", p(n + ".csr"), "-subj", "/CN=" + n});
    run_or_throw({openssl, "x509", "-req", "-in", p(n + ".csr"), "-CA", p("ca.pem"), "-CAkey", p("ca.key"),
                  "-CAcreateserial", "-out", p(n + ".pem"), "-days", "2"});
  }
}

registration catchup_registration(std::shared_ptr<backend> b) {
  registration r;
  r.backend = std::move(b);
  r.projections[table_ref{"main", table}] = [](std::string_view payload, const record_info&) -> projection_result {
    return encode_keys({std::string(payload.substr(0, 8))});
  };
  return r;
}

// Registers `b` and waits (a 5 ms look, the catchup bench's) until its durable cursor reaches
// `last`; the seconds it took. `sample` runs at each look.
double time_catchup(runtime& rt, std::shared_ptr<backend> b, std::uint64_t last, std::uint64_t timeout_s,
                    const std::function<void()>& sample) {
  const auto id = b->id();
  auto start = std::chrono::steady_clock::now();
  rt.register_index(catchup_registration(std::move(b))).value();
  auto deadline = start + std::chrono::seconds(timeout_s);
  for (;;) {
    auto m = rt.metrics(id);
    if (m && !m->logs.empty() && m->logs[0].durable_sequence >= last) break;
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("the index " + id + " did not catch up in time");
    sample();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return seconds_since(start);
}

}  // namespace

int run_remote(const std::vector<std::string>& argv) {
  int status = tool::exit_usage;
  auto a = tool::args::parse_command(argv, {{"records", "dir", "json", "timeout"}, {"tls"}}, "dix bench remote",
                                     usage("remote"), status);
  if (!a) return status;
  std::string problem;
  json_report report;
  auto records = a->number("records", 1'000'000, per_txn, 100'000'000, problem);
  auto timeout_s = records ? a->number("timeout", 1800, 1, 86400, problem) : std::nullopt;
  if (!records || !timeout_s || !check_scratch_base(*a, problem) || !report.open(*a, problem)) {
    return tool::refuse("dix bench remote", problem);
  }
  const bool tls = a->has("tls");
  try {
    std::string error;
    auto dix_binary = tool::sibling_executable("dix", error);
    if (!dix_binary) throw std::runtime_error(error);
    scratch_dir scratch(a->get("dir"));
    store_options so;
    so.log_name = "main";
    auto store = primary_store::open(scratch.path() / "primary", so).value();
    store->create_table(table).value();
    auto backlog_start = std::chrono::steady_clock::now();
    auto last = gen::write_records(*store, *records);
    auto backlog_s = seconds_since(backlog_start);
    std::cerr << "backlog: " << *records << " records in " << backlog_s << " s\n";

    // 1. Remote.
    std::vector<std::string> host_argv{dix_binary->string(), "serve-backend", "--kind", "rocksdb", "--id", "remote",
                                       "--path", (scratch.path() / "host").string()};
    remote_tls owner_tls;
    if (tls) {
      make_pki(scratch.path() / "pki");
      auto p = [&](const std::string& name) { return (scratch.path() / "pki" / name).string(); };
      host_argv.insert(host_argv.end(), {"--tls-cert", p("host.pem"), "--tls-key", p("host.key"), "--tls-ca", p("ca.pem")});
      owner_tls = remote_tls{p("owner.pem"), p("owner.key"), p("ca.pem")};
    }
    auto host = cli::child_process::spawn(host_argv).value();
    auto line = host.wait_line("dix serve-backend: listening on ", std::chrono::steady_clock::now() + std::chrono::seconds(60));
    if (!line) throw std::runtime_error("dix serve-backend did not start");
    remote_backend_options ro;
    ro.id = "remote";
    ro.kind = "rocksdb_index";
    ro.port = static_cast<std::uint16_t>(std::stoul(line->substr(line->rfind(':') + 1)));
    ro.tls = owner_tls;
    auto remote = remote_backend::create(ro).value();
    std::vector<double> rtt_us;
    std::optional<std::chrono::microseconds> last_rtt;
    auto sample = [&] {
      auto s = remote->link_status();
      if (s.round_trip && s.round_trip != last_rtt) {
        last_rtt = s.round_trip;
        rtt_us.push_back(static_cast<double>(s.round_trip->count()));
      }
    };
    double remote_s = 0;
    {
      auto rt = runtime::create({store}).value();
      remote_s = time_catchup(*rt, remote, last, *timeout_s, sample);
      sample();
      rt->stop().get().value();
    }
    const auto host_peak_mb = peak_rss_mb_of(host.pid());
    const auto owner_peak_mb = peak_rss_mb();
    remote.reset();
    ::kill(host.pid(), SIGTERM);
    host.reap(0);

    // 2. In process.
    rocksdb_index_options io;
    io.path = scratch.path() / "index";
    double local_s = 0;
    {
      auto rt = runtime::create({store}).value();
      local_s = time_catchup(*rt, rocksdb_index_backend::create("local", io).value(), last, *timeout_s, [] {});
      rt->stop().get().value();
    }
    store->close().value();

    const double in_process_rps = static_cast<double>(*records) / local_s;
    const double remote_rps = static_cast<double>(*records) / remote_s;
    std::ostringstream json;
    json << "{\"bench\":\"remote\"," << build_fields() << ",\"records\":" << *records << ",\"tls\":" << (tls ? "true" : "false")
         << ",\"in_process_rps\":" << in_process_rps << ",\"remote_rps\":" << remote_rps
         << ",\"ratio\":" << remote_rps / in_process_rps << ",\"in_process_seconds\":" << local_s
         << ",\"remote_seconds\":" << remote_s << ",\"rtt_samples\":" << rtt_us.size()
         << ",\"rtt_p50_us\":" << (rtt_us.empty() ? 0.0 : quantile(rtt_us, 0.5))
         << ",\"rtt_p99_us\":" << (rtt_us.empty() ? 0.0 : quantile(rtt_us, 0.99))
         << ",\"host_peak_rss_mb\":" << host_peak_mb << ",\"owner_peak_rss_mb\":" << owner_peak_mb
         << ",\"backlog_seconds\":" << backlog_s << "}\n";
    if (!report.write(json.str(), problem)) {
      std::cerr << "dix bench remote: " << problem << "\n";
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dix bench remote: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace dix::bench
