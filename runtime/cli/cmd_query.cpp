// `dix query --backend-host HOST:PORT [--id ID] lookup KEY | range BEGIN END | search TEXT |
// knn TEXT`: a reader's query on an index node (issue 28 item 5, <dix/remote.hpp>), admitted
// there by the coverage its owner forwards. `--wait-since T` is read-your-writes across
// machines: the node answers once its index covers index time T (a writer's commit time). knn
// embeds TEXT with the demo catalogue's embedding (catalogue.hpp), the one its vectors use.
#include <iostream>
#include <sstream>

#include <dix/remote.hpp>

#include "catalogue.hpp"
#include "commands.hpp"
#include "metrics_server.hpp"
#include "usage.hpp"
#include "tool/args.hpp"
#include "tool/json.hpp"

namespace dix::cli {

namespace {

constexpr const char* name = "dix query";

const char* coverage_word(coverage_state s) {
  switch (s) {
    case coverage_state::current: return "current";
    case coverage_state::bounded: return "bounded";
    case coverage_state::unknown: break;
  }
  return "unknown";
}

// `scored`: a search or knn, whose rows have a score (lookup and range rows print none as text;
// --json always carries the field).
void print_rows(const remote_rows& r, bool json, bool scored) {
  if (json) {
    std::cout << "{\"rows\":[";
    for (std::size_t i = 0; i < r.rows.size(); ++i) {
      const auto& row = r.rows[i];
      std::cout << (i == 0 ? "" : ",") << "{\"log\":" << tool::json_string(row.ref.log) << ",\"table\":" << row.ref.table
                << ",\"record_id\":" << tool::json_string(row.ref.record_id) << ",\"version\":" << row.ref.version
                << ",\"score\":" << row.score << "}";
    }
    std::cout << "],\"coverage\":\"" << coverage_word(r.coverage.state) << "\"";
    if (r.coverage.lag_upper_bound) std::cout << ",\"lag_ms\":" << r.coverage.lag_upper_bound->count();
    std::cout << "}" << std::endl;
    return;
  }
  for (const auto& row : r.rows) {
    std::cout << row.ref.log << "/" << row.ref.table << "/" << row.ref.record_id << " version " << row.ref.version;
    if (scored) std::cout << " score " << row.score;
    std::cout << "\n";
  }
  std::cout << r.rows.size() << (r.rows.size() == 1 ? " row" : " rows") << " (coverage "
            << coverage_word(r.coverage.state);
  if (r.coverage.lag_upper_bound) std::cout << ", lag ≤ " << r.coverage.lag_upper_bound->count() << " ms";
  std::cout << ")" << std::endl;
}

}  // namespace

int run_query(const std::vector<std::string>& argv) {
  int status = exit_usage;
  auto a = tool::args::parse_command(
      argv,
      {{"backend-host", "id", "limit", "wait-since", "timeout", "tolerance", "tls-cert", "tls-key", "tls-ca"},
       {"strict", "json"},
       2,
       3,
       "query word"},
      name, command_usage("query"), status);
  if (!a) return status;
  std::string problem;
  const auto& words = a->positional();
  const std::string& what = words[0];
  remote_query q;
  if (what == "lookup" || what == "search" || what == "knn") {
    if (words.size() != 2) problem = what + " takes one argument";
  } else if (what == "range") {
    if (words.size() != 3) problem = "range takes BEGIN and END";
  } else {
    problem = "expected lookup KEY, range BEGIN END, search TEXT or knn TEXT, not " + what;
  }
  if (problem.empty() && !a->has("backend-host")) problem = "--backend-host HOST:PORT is required";
  if (problem.empty() && a->has("strict") && (a->has("wait-since") || a->has("tolerance"))) {
    problem = "--strict excludes --wait-since and --tolerance";
  }
  if (problem.empty() && a->has("wait-since") && a->has("tolerance")) problem = "--wait-since excludes --tolerance";
  if (problem.empty() && a->has("timeout") && !a->has("wait-since")) problem = "--timeout needs --wait-since";
  std::uint64_t limit = 10, since = 0, timeout_ms = 30000, tolerance_ms = 3000;
  if (problem.empty()) limit = a->number("limit", 10, 1, 10000, problem).value_or(0);
  if (problem.empty() && a->has("wait-since")) since = a->number("wait-since", 0, 1, UINT64_MAX, problem).value_or(0);
  if (problem.empty()) timeout_ms = a->number("timeout", 30000, 0, 600000, problem).value_or(0);
  if (problem.empty()) tolerance_ms = a->number("tolerance", 3000, 1, 86400000, problem).value_or(0);
  std::optional<listen_address> at;
  if (problem.empty()) {
    auto parsed = parse_listen_address(a->get("backend-host"));
    if (!parsed) {
      problem = "--backend-host: " + parsed.error().message();
    } else if (parsed->port == 0) {
      problem = "--backend-host " + a->get("backend-host") + ": the node's port is needed";
    } else {
      at = *parsed;
    }
  }
  if (!problem.empty()) return tool::refuse(name, problem);

  q.id = a->get("id", "by-category");
  q.limit = static_cast<std::size_t>(limit);
  if (what == "lookup") {
    q.kind = remote_query_kind::lookup;
    q.text = words[1];
  } else if (what == "range") {
    q.kind = remote_query_kind::range;
    q.text = words[1];
    q.end = words[2];
  } else if (what == "search") {
    q.kind = remote_query_kind::search;
    q.text = words[1];
  } else {
    q.kind = remote_query_kind::knn;
    q.vector = embed(words[1]);
  }
  if (a->has("strict")) {
    q.mode.kind = coverage_kind::strict;
  } else if (a->has("wait-since")) {
    q.mode.kind = coverage_kind::wait;
    q.mode.since = since;
    q.mode.timeout = std::chrono::milliseconds(timeout_ms);
  } else {
    q.mode.kind = coverage_kind::bounded;
    q.mode.tolerance = std::chrono::milliseconds(tolerance_ms);
  }
  remote_query_options o;
  o.host = at->host;
  o.port = at->port;
  o.tls.certificate = a->get("tls-cert");
  o.tls.key = a->get("tls-key");
  o.tls.ca = a->get("tls-ca");
  auto client = remote_query_client::connect(o);
  if (!client) {
    if (client.error().value() == errc::invalid_argument) return tool::refuse(name, client.error().message());
    std::cerr << name << ": " << client.error().to_string() << "\n";
    return exit_error;
  }
  auto rows = (*client)->query(q);
  if (!rows) {
    // The node refuses a query for another index; without --id the query named the default.
    const bool defaulted = rows.error().value() == errc::message_invalid && !a->has("id") &&
                           rows.error().message().find("this node serves") != std::string::npos;
    std::cerr << name << ": " << rows.error().to_string()
              << (defaulted ? "; without --id dix query asks for by-category" : "") << "\n";
    return exit_error;
  }
  print_rows(*rows, a->has("json"), what == "search" || what == "knn");
  return exit_ok;
}

}  // namespace dix::cli
