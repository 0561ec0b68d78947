// `dix bench verify` (issue 31): a verify of a RocksDB index over an N-record store (200-byte
// payloads, 100 per transaction, as `dix bench catchup` writes them) at full rate, beside a bare
// scan of the same table in the same process and sitting: runtime::verify reads the index's
// digest view and a snapshot scan of the store, projects each record and merges the two; the
// baseline only reads the table through primary_store::scan (an iterator over an implicit
// snapshot). Pairs alternate, so both see the same caches; the report gives each pair's rates,
// their medians and the median of the per-pair ratios (verify records/s over scan records/s).
#include <iostream>
#include <sstream>
#include <thread>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/primary_store.hpp>
#include <dix/runtime.hpp>

#include "bench.hpp"
#include "report.hpp"
#include "store_gen.hpp"
#include "tool/args.hpp"

namespace dix::bench {
namespace {

using clock_type = std::chrono::steady_clock;
using gen::table;
constexpr const char* log_name = "main";

projection_result project(std::string_view payload, const record_info&) {
  return encode_keys({std::string(payload.substr(0, 8))});
}

}  // namespace

int run_verify(const std::vector<std::string>& argv) {
  int status = tool::exit_usage;
  auto a = tool::args::parse_command(argv, {{"records", "dir", "json", "timeout", "pairs"}, {}}, "dix bench verify",
                                     usage("verify"), status);
  if (!a) return status;
  std::string problem;
  json_report report;
  auto records = a->number("records", 1'000'000, gen::per_txn, 100'000'000, problem);
  auto timeout_s = records ? a->number("timeout", 1800, 1, 86400, problem) : std::nullopt;
  auto pairs = timeout_s ? a->number("pairs", 3, 1, 100, problem) : std::nullopt;
  if (!records || !timeout_s || !pairs || !check_scratch_base(*a, problem) || !report.open(*a, problem)) {
    return tool::refuse("dix bench verify", problem);
  }
  try {
    scratch_dir scratch(a->get("dir"));
    store_options so;
    so.log_name = log_name;
    auto store = primary_store::open(scratch.path() / "primary", so).value();
    store->create_table(table).value();
    const auto last = gen::write_records(*store, *records);
    rocksdb_index_options io;
    io.path = scratch.path() / "index";
    auto rt = runtime::create({store}, {}, system_options{}).value();
    registration r;
    r.backend = rocksdb_index_backend::create("verified", io).value();
    r.projections[table_ref{log_name, table}] = project;
    rt->register_index(std::move(r)).value();
    const auto deadline = clock_type::now() + std::chrono::seconds(*timeout_s);
    for (;;) {
      auto m = rt->metrics("verified");
      if (m && m->readiness.state == readiness_state::ready && !m->logs.empty() && m->logs[0].durable_sequence >= last) break;
      if (clock_type::now() > deadline) throw std::runtime_error("the index was not ready in time");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::vector<double> verify_rates, scan_rates, ratios;
    std::uint64_t verified_records = 0;
    for (std::uint64_t i = 0; i < *pairs; ++i) {
      auto start = clock_type::now();
      verify_options full_rate;
      full_rate.entries_per_s = 0;  // as fast as it goes (the default paces at a quarter of that)
      auto proof = rt->verify("verified", full_rate);
      const double verify_s = seconds_since(start);
      if (!proof) throw std::runtime_error("verify: " + proof.error().to_string());
      if (!proof->equal) throw std::runtime_error("verify found " + std::to_string(proof->differences) + " differences");
      verified_records = proof->records;
      std::uint64_t scanned = 0;
      start = clock_type::now();
      store->scan(table, "", [&](std::string_view, const record&) {
         ++scanned;
         return true;
       }).value();
      const double scan_s = seconds_since(start);
      verify_rates.push_back(static_cast<double>(proof->records) / verify_s);
      scan_rates.push_back(static_cast<double>(scanned) / scan_s);
      ratios.push_back(verify_rates.back() / scan_rates.back());
      std::cerr << "pair " << i + 1 << ": verify " << verify_rates.back() << " records/s, scan " << scan_rates.back()
                << " records/s\n";
    }
    rt->stop().get().value();
    auto list = [](const std::vector<double>& v) {
      std::ostringstream out;
      for (std::size_t i = 0; i < v.size(); ++i) out << (i ? "," : "") << v[i];
      return "[" + out.str() + "]";
    };
    std::ostringstream json;
    json << "{\"bench\":\"verify\"," << build_fields() << ",\"records\":" << *records
         << ",\"verified_records\":" << verified_records << ",\"pairs\":" << *pairs
         << ",\"verify_records_per_s\":" << list(verify_rates) << ",\"scan_records_per_s\":" << list(scan_rates)
         << ",\"median_verify_records_per_s\":" << median(verify_rates)
         << ",\"median_scan_records_per_s\":" << median(scan_rates) << ",\"ratio\":" << median(ratios)
         << ",\"peak_rss_mb\":" << peak_rss_mb() << "}\n";
    if (!report.write(json.str(), problem)) {
      std::cerr << "dix bench verify: " << problem << "\n";
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dix bench verify: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace dix::bench
