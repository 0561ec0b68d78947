// `dix demo`: the main job. A writer thread fills a product catalogue in a primary store while
// the runtime indexes it into two RocksDB secondary indexes (by category, by brand), a Xapian
// full-text index and an hnsw vector index over a hashing embedding of the text; a live
// progress line shows committed, indexed, lag and readiness. Once half the writes are in, the
// demo asks for a rebuild of by-brand (as `dix rebuild` would from another process) and prints
// lines while the owner resets it and rebuilds it from a snapshot scan — records, percent, rate,
// ETA — then replays the log from the scan's boundary; sample queries and searches run in the
// wait mode of a last write (read-your-writes); finally every index is verified against the
// projection of the primary store. Run it again: the data is reused and each index resumes from
// its durable cursor.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <chrono>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include <cstdio>
#include <functional>

#include <dix/backends/hnsw_backend.hpp>
#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/backends/xapian_backend.hpp>
#include <dix/primary_store.hpp>
#include <dix/runtime.hpp>
#include <dix/segment.hpp>

#include "catalogue.hpp"
#include "commands.hpp"
#include "demo_nodes.hpp"
#include "paths.hpp"
#include "stop_signals.hpp"
#include "usage.hpp"
#include "wording.hpp"
#include "tool/args.hpp"

namespace dix::cli {
namespace {

using clock_type = std::chrono::steady_clock;

// Read-your-writes (protocol.md §12.6): the demo's last write is one product of its own
// category, then a lookup in `wait` mode for that commit — answered once the index covers it
// (the runner's coverage flush), well before the flush age. The commit's time is returned: the
// `since` under which every later query of the demo reads, and whether the lookup found the
// product (if not, the demo's verification fails).
struct written_and_read {
  index_time_t time = 0;
  bool found = false;
};
// The demo's queries of by-category (lookup), fulltext (search) and similar (knn): on the index
// in this process, or through a remote_query_client on its index node (`--remote`).
struct demo_queries {
  std::function<result<remote_rows>(const std::string& key, std::size_t limit, const coverage_mode& mode)> lookup;
  std::function<result<remote_rows>(const std::string& text, std::size_t limit, const coverage_mode& mode)> search;
  std::function<result<remote_rows>(const std::vector<float>& v, std::size_t k, const coverage_mode& mode)> knn;
};

result<written_and_read> read_your_write(primary_store& store, const demo_queries& queries, const char* where) {
  auto extent = extent_of(store);
  if (!extent) return extent.error();
  const auto id = catalogue::id(extent->highest_id + 1);
  auto txn = store.begin();
  txn.put(products_table, id, "{\"name\":\"item " + std::to_string(extent->highest_id + 1) +
                                  "\",\"category\":\"new-arrivals\",\"brand\":\"acme\",\"price_cents\":1999}");
  auto committed = txn.commit();
  if (!committed) return committed.error();
  coverage_mode mode;
  mode.kind = coverage_kind::wait;
  mode.since = committed->time;
  mode.timeout = std::chrono::seconds(30);
  const auto asked = clock_type::now();
  auto rows = queries.lookup("new-arrivals", 1'000'000, mode);
  const auto waited = std::chrono::duration<double, std::milli>(clock_type::now() - asked).count();
  if (!rows) return rows.error();
  bool found = false;
  for (const auto& r : rows->rows) found = found || r.ref.record_id == id;
  char figure[32];
  std::snprintf(figure, sizeof figure, "%.1f", waited);
  std::cout << "read-your-writes: wrote " << id << " (category new-arrivals); a lookup " << where
            << " waiting until the index covered that write " << (found ? "found it" : "did NOT find it") << " after "
            << figure << " ms\n";
  return written_and_read{committed->time, found};
}

// The search indexes' sample queries, in the wait mode of the demo's last write: the first of
// each waits until that index covers it (and says how long that took), the others find it so.
void sample_searches(const demo_queries& queries, const coverage_mode& covered) {
  auto timed = [](auto&& query) {
    const auto asked = clock_type::now();
    auto rows = query();
    return std::make_pair(std::move(rows), std::chrono::duration<double, std::milli>(clock_type::now() - asked).count());
  };
  auto print = [](const std::string& what, const auto& rows, double waited, const char* score) {
    char figure[32];
    std::snprintf(figure, sizeof figure, "%.1f", waited);
    if (!rows) {
      std::cout << what << ": refused after " << figure << " ms: " << rows.error().to_string() << "\n";
      return;
    }
    std::cout << what << " (" << figure << " ms):";
    for (const auto& r : rows->rows) {
      char sc[32];
      std::snprintf(sc, sizeof sc, "%.3f", r.score);
      std::cout << " " << r.ref.record_id << " (" << score << " " << sc << ")";
    }
    std::cout << "\n";
  };
  for (const char* q : {"portable", "category:books wireless"}) {
    auto [rows, waited] = timed([&] { return queries.search(q, 5, covered); });
    print(std::string("search fulltext \"") + q + "\", limit 5", rows, waited, "weight");
  }
  const std::string text = "wireless portable";
  const auto v = embed(text);
  auto [rows, waited] = timed([&] { return queries.knn(v, 5, covered); });
  print("search similar knn(embed(\"" + text + "\"), k 5)", rows, waited, "distance");
}

// The rebuild the demo asks for midway: of the last index, once half the writes are in (or the
// writer is done) and the index is ready. It is over when the index is ready again under a newer
// epoch: the attempt minted one.
class demo_rebuild {
 public:
  demo_rebuild(runtime& rt, const catalogue_index& index) : rt_(rt), index_(index) {}

  bool over() const { return done_; }
  bool running() const { return requested_ && !done_; }

  // Asks once `due`; then prints a line whenever the rebuild's state or scan figures change.
  // `line` prints one line above the live progress line.
  template <class Print>
  void step(bool due, Print&& line) {
    if (done_) return;
    auto m = rt_.metrics(index_.id);
    if (!m) return;
    if (!requested_) {
      // Once the index is ready (a fresh one is first built by a scan of its own, which would
      // absorb the request): this rebuild resets an index that holds entries.
      if (!due || m->readiness.state != readiness_state::ready) return;
      epoch_before_ = m->epoch;
      // Said before asking: a run killed in between leaves no request the output does not show.
      line("dix demo: asking for a rebuild of " + index_.id +
           " midway: the owner resets it and rebuilds it from a scan of the catalogue");
      requested_ = rt_.request_rebuild(index_.id);
      if (!requested_) line("dix demo: the rebuild of " + index_.id + " was refused: it cannot be rebuilt");
      done_ = !requested_;
      return;
    }
    const bool ready = m->readiness.state == readiness_state::ready && m->epoch > epoch_before_;
    std::string text;
    if (m->epoch > epoch_before_ && m->rebuilt_records + m->estimated_records > 0) {
      // The scan's figures, as another process reads them from the metrics segment.
      const rebuild_progress p{m->epoch, m->rebuilt_records, m->estimated_records, m->scan_records_per_s,
                               m->rebuild_eta_ms, false};
      text = "rebuild " + index_.id + ": " + progress_text(p);
    } else {
      text = "rebuild " + index_.id + ": " + std::string(to_string(m->readiness.state)) + " (" +
             std::string(to_string(m->readiness.reason)) + "), epoch " + std::to_string(m->epoch);
    }
    if (!ready && text != last_) line(text);
    last_ = text;
    if (!ready) return;
    done_ = true;
    line("dix demo: " + index_.id + " rebuilt by a scan: " + std::to_string(m->rebuilt_records) + " records at " +
         std::to_string(m->scan_records_per_s) + " records/s (epoch " + std::to_string(epoch_before_) + " -> " +
         std::to_string(m->epoch) + "); it follows the log again");
  }

 private:
  runtime& rt_;
  const catalogue_index& index_;
  bool requested_ = false, done_ = false;
  epoch_t epoch_before_ = 0;
  std::string last_;
};

}  // namespace

int run_demo(const std::vector<std::string>& argv) {
  int status = exit_usage;
  auto a = tool::args::parse_command(argv, {{"dir", "records", "rate", "seed", "timeout", "indexes"}, {"remote", "tls"}}, "dix demo",
                                     command_usage("demo"), status);
  if (!a) return status;
  std::string problem;
  auto records = a->number("records", 20000, 1, 100'000'000, problem);
  auto rate = records ? a->number("rate", 10000, 0, 10'000'000, problem) : std::nullopt;
  auto seed = rate ? a->number("seed", 1, 0, UINT64_MAX, problem) : std::nullopt;
  auto timeout_s = seed ? a->number("timeout", 120, 1, 86400, problem) : std::nullopt;
  // Which indexes the run registers and follows: all four, or the two secondary ones alone (a
  // quicker run; the full-text and vector registrations of an earlier run stay dormant).
  auto which = timeout_s ? a->choice("indexes", {"all", "secondary"}, 0, problem) : std::nullopt;
  const bool remote = a->has("remote");
  if (which && a->has("tls") && !remote) problem = "--tls needs --remote";
  if (remote && a->get("indexes", "all") != "all") problem = "--remote needs --indexes all (its nodes serve by-category, fulltext and similar)";
  if (!records || !rate || !seed || !timeout_s || !which || !problem.empty()) {
    return tool::refuse("dix demo", problem);
  }
  const std::uint64_t timeout_seconds = *timeout_s;
  std::filesystem::path dir = a->get("dir", "dix-demo");
  const bool tty = ::isatty(STDOUT_FILENO) != 0;

  // A typo must not grow a tree: only DIR itself may be new (decision 0035); the store is made
  // in DIR/primary, the indexes beside it.
  if (auto wrong = new_directory_problem(dir)) return tool::refuse("dix demo", "--dir " + dir.string() + ": " + *wrong);
  if (auto wrong = layout_directory_problem(dir)) return tool::refuse("dix demo", "--dir " + dir.string() + " " + *wrong);
  if (auto made = make_directory(dir); !made) {
    std::cerr << "dix demo: " << made.error().to_string() << "\n";
    return exit_error;
  }
  store_options so;
  so.log_name = "main";
  // What the runtime's attach would refuse is refused before the store is opened read-write
  // (issue 34): a refusal then leaves the store as it was.
  if (auto ok = check_attachable(dir / "primary"); !ok) {
    std::cerr << "dix demo: " << ok.error().to_string() << "\n";
    return exit_error;
  }
  auto store = primary_store::open(dir / "primary", so);
  if (!store) {
    std::cerr << "dix demo: " << store.error().to_string() << "\n";
    return exit_error;
  }
  if (auto ok = (*store)->create_table(products_table); !ok) {
    std::cerr << "dix demo: " << ok.error().to_string() << "\n";
    return exit_error;
  }
  auto extent = extent_of(**store);
  if (!extent) {
    std::cerr << "dix demo: " << extent.error().to_string() << "\n";
    return exit_error;
  }
  // The writer numbers new products after the highest id; the line counts the products held.
  const std::uint64_t existing = extent->highest_id;
  std::cout << "dix demo: primary store " << (dir / "primary").string() << " (" << extent->products
            << " products so far), writing " << *records << " more at " << (*rate == 0 ? std::string("full speed") : std::to_string(*rate) + "/s") << "\n";

  auto rt = runtime::create({*store});
  if (!rt) {
    std::cerr << "dix demo: " << rt.error().to_string() << "\n";
    return exit_error;
  }
  // --remote (issue 28): by-category, fulltext and similar live on index nodes, `dix serve-backend`
  // children on ephemeral loopback ports (with --tls over mutual TLS); by-brand stays here.
  std::vector<demo_node> nodes;
  std::set<std::string> remote_ids;
  std::map<std::string, std::shared_ptr<remote_backend>> remotes;
  std::map<std::string, std::unique_ptr<remote_query_client>> readers;
  remote_tls owner_tls, node_tls;
  if (remote) {
    if (a->has("tls")) {
      if (auto made = make_demo_pki(dir / "pki"); !made) {
        std::cerr << "dix demo: " << made.error().to_string() << "\n";
        return exit_error;
      }
      owner_tls = demo_tls(dir / "pki", "owner");
      node_tls = demo_tls(dir / "pki", "node");
    }
    if (auto made = make_directory(dir / "nodes"); !made) {
      std::cerr << "dix demo: " << made.error().to_string() << "\n";
      return exit_error;
    }
    for (const std::string id : {"by-category", fulltext_id, similar_id}) {
      const auto kind = node_kind_of(id)->node;
      auto node = demo_node::start(kind, id, dir / "nodes" / id, 0, node_tls);
      if (!node) {
        std::cerr << "dix demo: " << node.error().to_string() << "\n";
        return exit_error;
      }
      std::cout << "dix demo: index node of " << id << ": dix serve-backend --kind " << kind << " on 127.0.0.1:"
                << node->port() << " (pid " << node->pid() << (node_tls.complete() ? ", mutual TLS" : "") << ")\n";
      remote_backend_options o;
      o.id = id;
      o.kind = node_kind_of(id)->backend;
      o.port = node->port();
      o.tls = owner_tls;
      auto link = remote_backend::create(o);
      if (!link) {
        std::cerr << "dix demo: " << id << ": " << link.error().to_string() << "\n";
        return exit_error;
      }
      remotes.emplace(id, *link);
      remote_ids.insert(id);
      nodes.push_back(std::move(*node));
    }
  }
  auto registered = make_catalogue_indexes(dir, remote_ids);
  if (registered) {
    if (auto ok = register_catalogue_indexes(**rt, *registered); !ok) registered = ok.error();
  }
  if (!registered) {
    std::cerr << "dix demo: " << registered.error().to_string() << "\n";
    return exit_error;
  }
  auto& indexes = *registered;
  std::optional<catalogue_search> search;
  if (*which == 0) {
    auto registered_search = register_catalogue_search(**rt, dir, {}, remote_ids);
    if (!registered_search) {
      std::cerr << "dix demo: " << registered_search.error().to_string() << "\n";
      return exit_error;
    }
    search = std::move(*registered_search);
  }
  for (const auto& [id, link] : remotes) {
    if (auto ok = register_catalogue_remote(**rt, id, link); !ok) {
      std::cerr << "dix demo: " << ok.error().to_string() << "\n";
      return exit_error;
    }
  }
  // Every index the demo follows: the secondary ones, then the full-text and the vector index.
  std::vector<std::string> ids{"by-category", "by-brand"};
  if (search) {
    ids.push_back(fulltext_id);
    ids.push_back(similar_id);
  }
  auto local_index = [&](const std::string& id) -> std::shared_ptr<rocksdb_index_backend> {
    for (auto& ix : indexes) {
      if (ix.id == id) return ix.backend;
    }
    return nullptr;
  };
  // SIGKILLs by-category's index node once half the writes are in, and starts it again on its port.
  bool node_killed = false;

  // The writer: transactions of 10 operations, paced to the requested rate.
  std::atomic<bool> writer_done{false};
  std::atomic<bool> stop_writer{false};
  writer_progress wp;
  auto& written = wp.written;
  auto& last_commit = wp.last_commit;  // first sequence of the writer's last transaction
  std::string writer_error;
  std::thread writer([&] {
    auto done = write_catalogue(**store, *seed, existing, *records, *rate, stop_writer, wp);
    if (!done) writer_error = done.error().to_string();
    writer_done = true;
  });

  // Sequences on one scale: a transaction is named by its first sequence, as a durable cursor's
  // anchor names the last transaction an index holds. So the committed figure is the writer's
  // last transaction (not the store's latest sequence, which is that transaction's last one) and
  // "behind" is the difference of the two figures shown. An index's anchor may pass the writer's
  // (the runtime's own system transactions come later): that is "caught up". Before this run's
  // first commit the writer's last transaction is not known, and neither is how far behind an
  // index is.
  auto progress = [&](bool final_line) {
    const auto committed = last_commit.load();
    std::string line = "committed " + std::to_string(written.load()) + " ops (" +
                       (committed == 0 ? "store at seq " + std::to_string(latest_sequence(**store))
                                       : "last transaction at seq " + std::to_string(committed)) +
                       ")";
    for (const auto& id : ids) {
      auto m = (*rt)->metrics(id);
      std::uint64_t durable = m && !m->logs.empty() ? m->logs[0].durable_sequence : 0;
      line += " | " + id + ": indexed through seq " + std::to_string(durable);
      if (committed != 0) line += committed > durable ? ", behind " + std::to_string(committed - durable) : ", caught up";
      line += ", " + std::string(to_string(m ? m->readiness.state : readiness_state::unknown));
      // A transient fault changes no readiness (protocol.md §10.5): without this an index that
      // cannot be opened would read `unknown` and say nothing until it is condemned.
      if (m && m->transient_faults > 0) {
        auto s = (*rt)->status(id);
        line += " (transient fault " + std::to_string(m->transient_faults) + " in a row: " + (s ? s->message : "") + ")";
      }
    }
    // Flushed every time: a pipe (a log collector, a test) sees each line as it happens.
    if (tty && !final_line) std::cout << "\r" << line << "\x1b[K" << std::flush;
    else std::cout << line << std::endl;
  };

  // A line of its own above the live progress line (which the next redraw puts back).
  auto note = [&](const std::string& text) { std::cout << (tty ? "\r\x1b[K" : "") << text << std::endl; };
  demo_rebuild rebuild(**rt, indexes.back());

  auto deadline = clock_type::now() + std::chrono::seconds(timeout_seconds);
  auto last_plain = clock_type::now();
  bool caught_up = false;
  install_stop_handlers();
  while (clock_type::now() < deadline) {
    if (const int sig = stop_signal()) {
      // SIGINT or SIGTERM (issue 34: the demo ended without a word): the writer stops, the
      // runtime stops cleanly, and the next run resumes from the indexes' durable cursors.
      stop_writer = true;
      writer.join();
      if (tty) std::cout << "\n";
      std::cerr << "dix demo: interrupted by " << (sig == SIGINT ? "SIGINT" : "SIGTERM") << " after " << written.load()
                << " operations; stopping the indexes cleanly (run it again to resume from their durable cursors)\n";
      (void)(*rt)->stop().get();
      return exit_error;
    }
    rebuild.step(writer_done.load() || written.load() * 2 >= *records, note);
    if (!nodes.empty() && !node_killed && (writer_done.load() || written.load() * 2 >= *records)) {
      node_killed = true;
      auto& node = nodes.front();
      const auto was = node.pid();
      if (auto again = node.kill_and_restart(); !again) {
        stop_writer = true;
        writer.join();
        std::cerr << "\ndix demo: restarting the index node of " << node.id() << ": " << again.error().to_string() << "\n";
        (void)(*rt)->stop().get();
        return exit_error;
      }
      note("index node of " + node.id() + ": SIGKILLed (pid " + std::to_string(was) + ") midway, restarted on 127.0.0.1:" +
           std::to_string(node.port()) + " (pid " + std::to_string(node.pid()) + "); the owner reconnects and replays");
    }
    if (tty) progress(false);
    else if (clock_type::now() - last_plain >= std::chrono::seconds(1)) {
      progress(false);
      last_plain = clock_type::now();
    }
    if (writer_done.load()) {
      // A refused commit (a full disk: a retryable io_error, decision 0013) ends the run now;
      // writer_error was set before writer_done.
      if (!writer_error.empty()) break;
      // Caught up: each index's durable anchor is the writer's last transaction (or later).
      auto latest = last_commit.load();
      caught_up = true;
      for (const auto& id : ids) {
        auto m = (*rt)->metrics(id);
        auto s = (*rt)->status(id);
        if (!m || m->logs.empty() || m->logs[0].durable_sequence < latest || m->readiness.state != readiness_state::ready) caught_up = false;
        // needs-rebuild passes: the owner rebuilds after its backoff (the midway request condemns
        // first, too). Only a spent attempt budget ends the demo.
        if (s && s->state == runner_state::unavailable) {
          std::cerr << "\ndix demo: index " << id << " is unavailable (" << to_string(s->reason) << "): " << s->message << "\n";
          writer.join();
          return exit_error;
        }
      }
      if (caught_up && rebuild.over()) break;
    }
    // Looks closer while the rebuild runs: its lines show its steps, not only its end.
    std::this_thread::sleep_for(std::chrono::milliseconds(rebuild.running() ? 20 : 100));
  }
  writer.join();
  if (tty) std::cout << "\n";
  progress(true);
  if (!writer_error.empty()) {
    std::cerr << "dix demo: the writer failed: " << writer_error << "\n";
    return exit_error;
  }
  if (!caught_up) {
    // Which index, in which state, and why (issue 34): each one that is not ready at the writer's
    // last transaction, with its reason and its runner's last fault.
    const auto latest = last_commit.load();
    std::string behind;
    for (const auto& id : ids) {
      auto m = (*rt)->metrics(id);
      auto s = (*rt)->status(id);
      const std::uint64_t durable = m && !m->logs.empty() ? m->logs[0].durable_sequence : 0;
      const auto state = m ? m->readiness.state : readiness_state::unknown;
      if (state == readiness_state::ready && durable >= latest) continue;
      behind += behind.empty() ? ": " : "; ";
      behind += id + " is " + std::string(to_string(state));
      if (m && m->readiness.reason != readiness_reason::none) behind += " (" + std::string(to_string(m->readiness.reason)) + ")";
      behind += ", indexed through seq " + std::to_string(durable) + " of " + std::to_string(latest);
      if (s && !s->message.empty()) behind += ", runner " + std::string(to_string(s->state)) + ": " + s->message;
    }
    std::cerr << "dix demo: the indexes did not catch up within " << timeout_seconds << " s" << behind << "\n";
    return exit_error;
  }

  // The queries: here, or on the index node through a reader's client (--remote).
  demo_queries queries;
  for (const auto& node : nodes) {
    remote_query_options o;
    o.port = node.port();
    o.tls = owner_tls;
    auto client = remote_query_client::connect(o);
    if (!client) {
      std::cerr << "dix demo: a reader of " << node.id() << ": " << client.error().to_string() << "\n";
      return exit_error;
    }
    readers.emplace(node.id(), std::move(*client));
  }
  // One query of `kind` on the node of `id`; the node caps a query at 10 000 rows.
  auto on_node = [&](const std::string& id, remote_query_kind kind, std::size_t limit, const coverage_mode& mode,
                     std::string text, std::vector<float> vector = {}) -> result<remote_rows> {
    remote_query q;
    q.id = id;
    q.kind = kind;
    q.text = std::move(text);
    q.vector = std::move(vector);
    q.limit = std::min<std::size_t>(limit, 10000);
    q.mode = mode;
    return readers.at(id)->query(q);
  };
  if (remote) {
    queries.lookup = [&](const std::string& key, std::size_t limit, const coverage_mode& mode) {
      return on_node("by-category", remote_query_kind::lookup, limit, mode, key);
    };
    queries.search = [&](const std::string& text, std::size_t limit, const coverage_mode& mode) {
      return on_node(fulltext_id, remote_query_kind::search, limit, mode, text);
    };
    queries.knn = [&](const std::vector<float>& v, std::size_t k, const coverage_mode& mode) {
      return on_node(similar_id, remote_query_kind::knn, k, mode, {}, v);
    };
  } else {
    queries.lookup = [&](const std::string& key, std::size_t limit, const coverage_mode& mode) -> result<remote_rows> {
      auto rows = local_index("by-category")->lookup(key, limit, mode);
      if (!rows) return rows.error();
      remote_rows out;
      out.coverage = rows->coverage;
      for (auto& r : rows->rows) out.rows.push_back(scored_ref{std::move(r), 0});
      return out;
    };
    if (search) {
      queries.search = [&](const std::string& text, std::size_t limit, const coverage_mode& mode) {
        return search->fulltext->search(text, 0, limit, mode);
      };
      queries.knn = [&](const std::vector<float>& v, std::size_t k, const coverage_mode& mode) {
        return search->similar->knn(v.data(), v.size(), k, mode);
      };
    }
  }

  // Read-your-writes, then every query waits for (in fact: finds at once) coverage of that write.
  auto last_write = read_your_write(**store, queries, remote ? "on its index node (another process)" : "in this process");
  if (!last_write) {
    std::cerr << "dix demo: " << last_write.error().to_string() << "\n";
    return exit_error;
  }
  coverage_mode covered;
  covered.kind = coverage_kind::wait;
  covered.since = last_write->time;
  covered.timeout = std::chrono::seconds(30);

  // Sample queries.
  for (const auto& key : {"books", "toys"}) {
    auto rows = queries.lookup(key, 5, covered);
    if (rows) {
      std::cout << "query by-category lookup(\"" << key << "\", limit 5)" << (remote ? " on its node" : "") << ":";
      for (auto& r : rows->rows) std::cout << " " << r.ref.record_id;
      std::cout << "\n";
    }
  }
  if (auto rows = local_index("by-brand")->range("a", "c", 1'000'000, covered)) {
    std::cout << "query by-brand range(\"a\", \"c\"): " << rows->rows.size() << " records\n";
  }
  if (search) sample_searches(queries, covered);

  // Verify: the owner's proof of each index (dix verify, protocol.md §4.10) — the index, the nodes'
  // ones through their sessions included, equals the projection of the primary store at one
  // sequence: every entry, version and projected byte. The demo reports; it does not condemn.
  std::uint64_t present = 0;  // the products the store holds, beside each index's record count
  auto scanned = (*store)->scan(products_table, "", [&](std::string_view, const record&) {
    ++present;
    return true;
  });
  if (!scanned) {
    std::cerr << "dix demo: scanning the primary store: " << scanned.error().to_string() << "\n";
    return exit_error;
  }
  bool verified = last_write->found;
  for (const auto& id : ids) {
    verify_options report_only;
    report_only.report_only = true;
    report_only.entries_per_s = 0;  // as fast as it goes: nothing else waits for the store here
    auto proof = (*rt)->verify(id, report_only);
    const auto m = (*rt)->metrics(id);
    std::cout << "verify " << id << (remote_ids.count(id) != 0 ? " (on its index node)" : "") << ": ";
    if (!proof) {
      std::cout << "NOT VERIFIED: " << proof.error().to_string() << "\n";
      verified = false;
      continue;
    }
    std::string through;
    if (proof->through) {
      for (const auto& l : proof->through->logs()) through += (through.empty() ? "" : ",") + l.log + ":" + std::to_string(l.sequence);
    }
    if (proof->equal) {
      std::cout << "OK (dix verify: equal to the projection through " << through << ", " << proof->records << " records for "
                << present << " products";
    } else {
      std::cout << "MISMATCH (dix verify at " << through << ": " << proof->differences << " records differ";
      for (std::size_t i = 0; i < proof->drifts.size() && i < 5; ++i) {
        std::cout << (i ? ", " : ": ") << to_string(proof->drifts[i].kind) << " " << proof->drifts[i].record_id;
      }
      std::cout << "; the index holds " << proof->records << " records for " << present << " products";
      verified = false;
    }
    std::cout << "; this run delivered " << (m ? m->delivered_batches : 0) << " batches, " << (m ? m->delivered_records : 0)
              << " records, " << (m ? m->unindexable_records : 0) << " of them unindexable)\n";
  }
  auto stopped = (*rt)->stop().get();
  if (!stopped) {
    std::cerr << "dix demo: stop: " << stopped.error().to_string() << "\n";
    return exit_error;
  }
  if (remote) {
    readers.clear();
    for (auto& node : nodes) {
      const int exited = node.stop(SIGTERM);
      if (exited != 0) {
        std::cout << "index node of " << node.id() << ": exit status " << exited << " at SIGTERM (expected 0)\n";
        verified = false;
      }
    }
  }
  rt->reset();
  for (auto& ix : indexes) ix.backend.reset();
  search.reset();
  remotes.clear();
  if (auto ok = (*store)->close(); !ok) std::cerr << "dix demo: closing the store: " << ok.error().to_string() << "\n";
  std::cout << (verified ? "dix demo: verified: every index equals the projection of the primary store\n"
                         : "dix demo: verification FAILED\n");
  return verified ? exit_ok : exit_error;
}

}  // namespace dix::cli
