// `dix bench vector`: N records carrying deterministic pseudo-random D-dimensional float32
// vectors (the projection is the payload itself, encode_vector's bytes), 100 per transaction,
// written with no index registered; then an hnsw_backend (l2, M 16, ef_construction 200) is
// registered and timed until its durable cursor reaches the end of the log. Beside it, in the
// same run, hnswlib alone inserting the same vectors in the same order with the same M and
// ef_construction (capacity N up front, as a program that knows N would). Then recall@10 of both
// against brute force over Q query vectors (searched with --ef, default 64): with the same insertion order and hnswlib's
// fixed level seed both graphs are the same, so the two recalls must be equal.
#include <cmath>
#include <cstring>
#include <iostream>
#include <queue>
#include <sstream>
#include <thread>

#include <hnswlib/hnswlib.h>

#include <dix/backends/hnsw_backend.hpp>
#include <dix/primary_store.hpp>
#include <dix/runtime.hpp>

#include "bench.hpp"
#include "report.hpp"
#include "tool/args.hpp"

namespace dix::bench {
namespace {

constexpr std::uint32_t table = 1;
constexpr std::size_t per_txn = 100;
constexpr std::size_t k = 10;

// splitmix64: the vector of `seed` is D values uniform in [-1, 1).
std::vector<float> vector_of(std::uint64_t seed, std::size_t dimension) {
  std::vector<float> v(dimension);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& c : v) {
    x += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    c = static_cast<float>(static_cast<double>(z >> 11) / static_cast<double>(1ull << 53) * 2.0 - 1.0);
  }
  return v;
}

std::string record_id(std::size_t i) {
  char id[32];
  std::snprintf(id, sizeof id, "v%012zu", i);
  return id;
}

float squared_distance(const float* a, const float* b, std::size_t d) {
  float s = 0;
  for (std::size_t i = 0; i < d; ++i) {
    const float t = a[i] - b[i];
    s += t * t;
  }
  return s;
}

// The exact k nearest record numbers of each query.
std::vector<std::vector<std::size_t>> brute_force(const std::vector<float>& data, const std::vector<std::vector<float>>& queries,
                                                  std::size_t dimension) {
  const auto n = data.size() / dimension;
  std::vector<std::vector<std::size_t>> out;
  for (const auto& q : queries) {
    std::priority_queue<std::pair<float, std::size_t>> top;
    for (std::size_t i = 0; i < n; ++i) {
      top.emplace(squared_distance(q.data(), &data[i * dimension], dimension), i);
      if (top.size() > k) top.pop();
    }
    std::vector<std::size_t> ids;
    while (!top.empty()) {
      ids.push_back(top.top().second);
      top.pop();
    }
    out.push_back(std::move(ids));
  }
  return out;
}

double recall(const std::vector<std::vector<std::size_t>>& truth, const std::vector<std::vector<std::size_t>>& found) {
  std::size_t hits = 0, total = 0;
  for (std::size_t q = 0; q < truth.size(); ++q) {
    for (auto id : found[q]) hits += std::count(truth[q].begin(), truth[q].end(), id) > 0 ? 1 : 0;
    total += truth[q].size();
  }
  return total == 0 ? 0 : static_cast<double>(hits) / static_cast<double>(total);
}

}  // namespace

int run_vector(const std::vector<std::string>& argv) {
  int status = tool::exit_usage;
  auto a = tool::args::parse_command(argv, {{"records", "dimension", "queries", "ef", "dir", "json", "timeout"}, {}},
                                     "dix bench vector", usage("vector"), status);
  if (!a) return status;
  std::string problem;
  json_report report;
  auto records = a->number("records", 100'000, k, 10'000'000, problem);
  auto dimension = records ? a->number("dimension", 128, 1, 4096, problem) : std::nullopt;
  auto queries = dimension ? a->number("queries", 200, 1, 100'000, problem) : std::nullopt;
  auto ef = queries ? a->number("ef", 64, 1, 100'000, problem) : std::nullopt;
  auto timeout_s = ef ? a->number("timeout", 3600, 1, 86400, problem) : std::nullopt;
  if (!records || !dimension || !queries || !ef || !timeout_s || !check_scratch_base(*a, problem) || !report.open(*a, problem)) {
    return tool::refuse("dix bench vector", problem);
  }
  const std::size_t n = *records;
  const std::size_t d = *dimension;
  const std::size_t ef_search = *ef;
  try {
    std::vector<float> data(n * d);
    for (std::size_t i = 0; i < n; ++i) {
      auto v = vector_of(i, d);
      std::copy(v.begin(), v.end(), data.begin() + static_cast<std::ptrdiff_t>(i * d));
    }
    std::vector<std::vector<float>> query_vectors;
    for (std::size_t q = 0; q < *queries; ++q) query_vectors.push_back(vector_of(n + 1'000'000 + q, d));

    scratch_dir scratch(a->get("dir"));
    store_options so;
    so.log_name = "main";
    auto store = primary_store::open(scratch.path() / "primary", so).value();
    store->create_table(table).value();
    const auto backlog_start = std::chrono::steady_clock::now();
    commit_info last;
    for (std::size_t i = 0; i < n; i += per_txn) {
      auto txn = store->begin();
      for (std::size_t j = i; j < std::min(i + per_txn, n); ++j) txn.put(table, record_id(j), encode_vector(&data[j * d], d));
      last = txn.commit().value();
    }
    const auto backlog_s = seconds_since(backlog_start);
    std::cerr << "backlog: " << n << " vectors of " << d << " in " << backlog_s << " s\n";

    hnsw_options ho;
    ho.state_dir = scratch.path() / "vectors";
    ho.dimension = d;
    auto index = hnsw_backend::create("vectors", ho).value();
    auto rt = runtime::create({store}).value();
    registration r;
    r.backend = index;
    r.projections[table_ref{"main", table}] = [](std::string_view payload, const record_info&) -> projection_result {
      return std::string(payload);
    };
    const auto start = std::chrono::steady_clock::now();
    rt->register_index(std::move(r)).value();
    const auto deadline = start + std::chrono::seconds(*timeout_s);
    for (;;) {
      // Caught up: durable at the end of the log and ready (a fresh index is built by a rebuild,
      // whose end the runtime publishes after the cursor is durable).
      auto m = rt->metrics("vectors");
      auto ready = rt->readiness("vectors");
      if (m && !m->logs.empty() && m->logs[0].durable_sequence >= last.sequence && ready && ready->state == readiness_state::ready) break;
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("the index did not catch up in time");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const auto dix_s = seconds_since(start);
    std::cerr << "dix: caught up in " << dix_s << " s\n";
    auto truth = brute_force(data, query_vectors, d);
    // The queries wait for coverage of the last commit: a `bounded` admission can refuse while the
    // owner's proof of `current` is not published yet and the last commit is older than 3 s.
    coverage_mode covered;
    covered.kind = coverage_kind::wait;
    covered.since = last.time;
    covered.timeout = std::chrono::milliseconds(30000);
    std::vector<std::vector<std::size_t>> dix_found;
    for (const auto& q : query_vectors) {
      auto rows = index->knn(q.data(), d, k, covered, ef_search).value().rows;
      std::vector<std::size_t> ids;
      for (const auto& row : rows) ids.push_back(std::stoull(row.ref.record_id.substr(1)));
      dix_found.push_back(std::move(ids));
    }
    rt->stop().get().value();
    rt.reset();
    index.reset();
    store->close().value();
    const auto dix_peak_mb = peak_rss_mb();

    hnswlib::L2Space space(d);
    hnswlib::HierarchicalNSW<float> alone(&space, n, ho.m, ho.ef_construction);
    const auto baseline_start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < n; ++i) alone.addPoint(&data[i * d], i);
    const auto baseline_s = seconds_since(baseline_start);
    alone.setEf(ef_search);
    std::vector<std::vector<std::size_t>> alone_found;
    for (const auto& q : query_vectors) {
      auto top = alone.searchKnn(q.data(), k);
      std::vector<std::size_t> ids;
      while (!top.empty()) {
        ids.push_back(top.top().second);
        top.pop();
      }
      alone_found.push_back(std::move(ids));
    }
    const auto dix_recall = recall(truth, dix_found);
    const auto alone_recall = recall(truth, alone_found);
    const auto dix_rate = static_cast<double>(n) / dix_s;
    const auto baseline_rate = static_cast<double>(n) / baseline_s;
    std::ostringstream json;
    json << "{\"bench\":\"vector\"," << build_fields() << ",\"records\":" << n << ",\"dimension\":" << d
         << ",\"m\":" << ho.m << ",\"ef_construction\":" << ho.ef_construction << ",\"ef_search\":" << ef_search
         << ",\"dix_seconds\":" << dix_s << ",\"dix_records_per_s\":" << dix_rate << ",\"baseline_seconds\":" << baseline_s
         << ",\"baseline_records_per_s\":" << baseline_rate << ",\"ratio\":" << dix_rate / baseline_rate
         << ",\"queries\":" << *queries << ",\"dix_recall_at_10\":" << dix_recall
         << ",\"baseline_recall_at_10\":" << alone_recall << ",\"recall_equal\":" << (dix_recall == alone_recall ? "true" : "false")
         << ",\"backlog_seconds\":" << backlog_s << ",\"dix_peak_rss_mb\":" << dix_peak_mb << "}\n";
    if (!report.write(json.str(), problem)) {
      std::cerr << "dix bench vector: " << problem << "\n";
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dix bench vector: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace dix::bench
