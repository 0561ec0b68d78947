// `dix bench rebuild`: the RocksDB secondary index built from nothing over an N-record store
// (200-byte payloads, 100 per transaction, as `dix bench catchup` writes them). The dix phase
// registers the index on an empty index directory and times until it is `ready` and its durable
// cursor covers the store; dix builds it as it builds any cursorless index (protocol.md §11: a
// reset, a boundary, a snapshot scan, then the log from the boundary).
// The baseline, in a child process (its memory and caches its own, `rebuild-baseline` below): a
// plain scan of the same table writing the same index entries into a fresh RocksDB opened with
// the index backend's own options (read back from the OPTIONS file of an index the backend
// created), keys in order, batches of max_chunk_records records, WAL on, no sync, one
// FlushWAL(true) at the end. Beside both, a writer committing at --writer-rate transactions/s
// into a table the index does not project: its p99 commit wait alone and during a second dix
// rebuild (a rebuild must not starve live writes).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <thread>

#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/options_util.h>
#include <rocksdb/write_batch.h>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/primary_store.hpp>
#include <dix/runtime.hpp>

#include "bench.hpp"
#include "store_gen.hpp"
#include "harness/child_process.hpp"
#include "paced_writer.hpp"
#include "report.hpp"
#include "tool/args.hpp"
#include "tool/executable.hpp"

namespace dix::bench {
namespace {

using clock_type = std::chrono::steady_clock;

using gen::table;                          // the projected table
constexpr std::uint32_t writer_table = 2;  // the live writer's, not projected
using gen::payload_bytes;
using gen::per_txn;
constexpr const char* log_name = "main";

using gen::payload_of;
using gen::record_id;
const auto write_store = gen::write_records;

projection_result project(std::string_view payload, const record_info&) {
  return encode_keys({std::string(payload.substr(0, 8))});
}

double p99_us(const std::vector<double>& waits) { return quantile(waits, 0.99); }

struct dix_run {
  double seconds = 0;
  std::uint64_t delivered_records = 0;
  std::vector<double> writer_waits_us;
};

// One runtime over `store` with the index `id` registered on the empty directory `index_dir`;
// the time from registration until it is ready and durable through `last`. With a writer rate,
// the writer runs from registration to that moment.
dix_run rebuild_once(const std::shared_ptr<primary_store>& store, const std::string& id,
                     const std::filesystem::path& index_dir, std::uint64_t last, std::uint64_t writer_rate,
                     std::uint64_t timeout_seconds) {
  rocksdb_index_options io;
  io.path = index_dir;
  auto index = rocksdb_index_backend::create(id, io).value();
  auto rt = runtime::create({store}, {}, system_options{}).value();
  registration r;
  r.backend = index;
  r.projections[table_ref{log_name, table}] = project;
  paced_writer writer(*store, {writer_rate, writer_table, id + "-", {}, {}});
  dix_run out;
  auto start = clock_type::now();
  if (writer_rate > 0) writer.start();
  rt->register_index(std::move(r)).value();
  auto deadline = start + std::chrono::seconds(timeout_seconds);
  for (;;) {
    auto m = rt->metrics(id);
    if (m && m->readiness.state == readiness_state::ready && !m->logs.empty() && m->logs[0].durable_sequence >= last) {
      out.delivered_records = m->delivered_records;
      break;
    }
    if (clock_type::now() > deadline) throw std::runtime_error("index " + id + " was not ready in time");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  out.seconds = seconds_since(start);
  out.writer_waits_us = writer.stop().waits_us;
  rt->stop().get().value();
  return out;
}

// The baseline, run as `dix-bench rebuild-baseline` in a child process: its report line.
double run_baseline_child(const std::filesystem::path& store_dir, const std::filesystem::path& index_dir,
                          std::uint64_t chunk_records, std::uint64_t timeout_seconds) {
  std::string problem;
  auto self = tool::sibling_executable("dix-bench", problem);
  if (!self) throw std::runtime_error(problem);
  auto child = cli::child_process::spawn({self->string(), "rebuild-baseline", "--store", store_dir.string(), "--index",
                                          index_dir.string(), "--chunk-records", std::to_string(chunk_records)})
                   .value();
  auto line = child.wait_line("baseline_records_per_s ", clock_type::now() + std::chrono::seconds(timeout_seconds));
  const int status = child.reap(0);
  if (!line || !WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("the baseline child failed");
  return std::stod(line->substr(line->find(' ') + 1));
}

void check(const rocksdb::Status& s, const std::string& what) {
  if (!s.ok()) throw std::runtime_error(what + ": " + s.ToString());
}

struct rocksdb_dir {
  std::unique_ptr<rocksdb::DB> db;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  std::vector<std::string> names;
  ~rocksdb_dir() {
    for (auto* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    if (db) db->Close().PermitUncheckedError();
  }
  rocksdb::ColumnFamilyHandle* family(const std::string& name) const {
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return handles[i];
    }
    throw std::runtime_error("no column family " + name);
  }
};

// Opens `path` with the options its latest OPTIONS file records (every family's).
void open_with_recorded_options(const std::filesystem::path& path, bool read_only, rocksdb_dir& out) {
  rocksdb::ConfigOptions config;
  rocksdb::DBOptions db_options;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  check(rocksdb::LoadLatestOptions(config, path.string(), &db_options, &families), "loading the options of " + path.string());
  rocksdb::DB* raw = nullptr;
  auto s = read_only ? rocksdb::DB::OpenForReadOnly(db_options, path.string(), families, &out.handles, &raw)
                     : rocksdb::DB::Open(db_options, path.string(), families, &out.handles, &raw);
  check(s, "opening " + path.string());
  out.db.reset(raw);
  for (const auto& f : families) {
    out.names.push_back(f.name);
    // Shows that the families' own options came back from the file (the backend sets these).
    const auto& o = f.options;
    const auto* table_options = o.table_factory->GetOptions<rocksdb::BlockBasedTableOptions>();
    std::cerr << path.filename().string() << "/" << f.name << ": insert hint "
              << (o.memtable_insert_with_hint_prefix_extractor ? o.memtable_insert_with_hint_prefix_extractor->Name() : "none")
              << ", memtable bloom " << o.memtable_prefix_bloom_size_ratio << ", filter "
              << (table_options && table_options->filter_policy ? table_options->filter_policy->Name() : "none") << "\n";
  }
}

// The backend's encodings (rocksdb_index_backend.cpp): record ref, escaped entry key.
std::string encode_ref(std::string_view id) {
  std::string out;
  out.push_back(static_cast<char>(std::string_view(log_name).size()));
  out.append(log_name);
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((table >> shift) & 0xFF));
  out.append(id);
  return out;
}

std::string entry_key(std::string_view key, std::string_view ref) {
  std::string out;
  for (char c : key) {
    out.push_back(c);
    if (c == '\0') out.push_back('\xFF');
  }
  out.push_back('\0');
  out.push_back('\x01');
  out.append(ref);
  return out;
}

}  // namespace

int run_rebuild_baseline(const std::vector<std::string>& argv) {
  int status = tool::exit_usage;
  auto a = tool::args::parse_command(argv, {{"store", "index", "chunk-records"}, {}}, "dix bench rebuild-baseline",
                                     "usage: dix-bench rebuild-baseline --store DIR --index DIR --chunk-records N\n"
                                     "         (run by `dix bench rebuild`: the baseline, in a process of its own)\n",
                                     status);
  if (!a) return status;
  std::string problem;
  auto chunk = a->number("chunk-records", runner_options{}.max_chunk_records, 1, 1u << 20, problem);
  if (!chunk || !a->has("store") || !a->has("index")) {
    return tool::refuse("dix bench rebuild-baseline", (problem.empty() ? "--store and --index are required" : problem));
  }
  try {
    rocksdb_dir store;
    open_with_recorded_options(a->get("store"), true, store);
    rocksdb_dir index;
    open_with_recorded_options(a->get("index"), false, index);
    auto* entries = index.family("entries");
    auto* reverse = index.family("reverse");
    auto start = clock_type::now();
    rocksdb::ReadOptions ro;
    ro.fill_cache = false;  // as the store reader's rebuild scan
    ro.readahead_size = 2 << 20;
    std::unique_ptr<rocksdb::Iterator> it(store.db->NewIterator(ro, store.family("table." + std::to_string(table))));
    std::vector<std::string> entry_keys;
    std::vector<std::pair<std::string, std::string>> reverse_puts;
    rocksdb::WriteBatch wb;
    std::uint64_t records = 0;
    auto write_chunk = [&] {
      std::sort(entry_keys.begin(), entry_keys.end());
      for (const auto& k : entry_keys) wb.Put(entries, k, rocksdb::Slice()).PermitUncheckedError();
      for (const auto& [ref, value] : reverse_puts) wb.Put(reverse, ref, value).PermitUncheckedError();  // ids ascend
      check(index.db->Write(rocksdb::WriteOptions{}, &wb), "writing a batch");
      wb.Clear();
      entry_keys.clear();
      reverse_puts.clear();
    };
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      auto value = it->value().ToStringView();
      if (value.size() < 8) continue;
      auto key = std::string(value.substr(8, 8));  // the projection: the payload's first 8 bytes
      auto ref = encode_ref(it->key().ToStringView());
      entry_keys.push_back(entry_key(key, ref));
      std::string reverse_value(value.substr(0, 8));  // the record's version
      reverse_value += encode_keys({key});
      reverse_puts.emplace_back(std::move(ref), std::move(reverse_value));
      if (++records % *chunk == 0) write_chunk();
    }
    check(it->status(), "scanning the store");
    if (!entry_keys.empty()) write_chunk();
    check(index.db->FlushWAL(true), "FlushWAL");
    auto rate = static_cast<double>(records) / seconds_since(start);
    std::cout << "records " << records << "\nbaseline_records_per_s " << rate << "\n" << std::flush;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dix bench rebuild-baseline: " << e.what() << "\n";
    return 1;
  }
}

int run_rebuild(const std::vector<std::string>& argv) {
  int status = tool::exit_usage;
  auto a = tool::args::parse_command(argv, {{"records", "dir", "json", "timeout", "writer-rate", "writer-ms"}, {}},
                                     "dix bench rebuild", usage("rebuild"), status);
  if (!a) return status;
  std::string problem;
  json_report report;
  auto records = a->number("records", 1'000'000, per_txn, 100'000'000, problem);
  auto timeout_s = records ? a->number("timeout", 1800, 1, 86400, problem) : std::nullopt;
  auto writer_rate = timeout_s ? a->number("writer-rate", 2000, 0, 100'000, problem) : std::nullopt;
  auto writer_ms = writer_rate ? a->number("writer-ms", 2000, 100, 600'000, problem) : std::nullopt;
  if (!records || !timeout_s || !writer_rate || !writer_ms || !check_scratch_base(*a, problem) || !report.open(*a, problem)) {
    return tool::refuse("dix bench rebuild", problem);
  }
  try {
    scratch_dir scratch(a->get("dir"));
    const auto store_dir = scratch.path() / "primary";
    store_options so;
    so.log_name = log_name;
    auto store = primary_store::open(store_dir, so).value();
    store->create_table(table).value();
    store->create_table(writer_table).value();
    auto generate_start = clock_type::now();
    auto last = write_store(*store, *records);
    auto generate_s = seconds_since(generate_start);
    std::cerr << "store: " << *records << " records in " << generate_s << " s\n";

    // The writer alone: no index registered.
    std::vector<double> idle_waits;
    if (*writer_rate > 0) {
      paced_writer idle(*store, {*writer_rate, writer_table, "idle-", {}, {}});
      idle.start();
      std::this_thread::sleep_for(std::chrono::milliseconds(*writer_ms));
      idle_waits = idle.stop().waits_us;
    }
    // The rebuild alone (the throughput figure), then again beside the writer.
    auto alone = rebuild_once(store, "rebuild", scratch.path() / "index", last, 0, *timeout_s);
    std::cerr << "dix: " << *records << " records in " << alone.seconds << " s\n";
    dix_run beside;
    if (*writer_rate > 0) beside = rebuild_once(store, "rebuild-beside-writer", scratch.path() / "index-2", last, *writer_rate, *timeout_s);
    const double peak_rss = peak_rss_mb();  // before the baseline, which runs in its own process anyway
    store->close().value();
    store.reset();

    // A fresh database as the backend creates it, so its OPTIONS file records the backend's own.
    const auto baseline_dir = scratch.path() / "baseline";
    {
      rocksdb_index_options io;
      io.path = baseline_dir;
      auto created = rocksdb_index_backend::create("baseline", io).value();
      created->open().value();
    }
    auto baseline = run_baseline_child(store_dir, baseline_dir, runner_options{}.max_chunk_records, *timeout_s);
    auto dix_rate = static_cast<double>(*records) / alone.seconds;
    std::ostringstream json;
    json << "{\"bench\":\"rebuild\"," << build_fields() << ",\"records\":" << *records
         << ",\"dix_seconds\":" << alone.seconds << ",\"dix_records_per_s\":" << dix_rate
         << ",\"baseline_records_per_s\":" << baseline << ",\"ratio\":" << dix_rate / baseline
         << ",\"delivered_records\":" << alone.delivered_records << ",\"generate_seconds\":" << generate_s
         << ",\"peak_rss_mb\":" << peak_rss << ",\"writer_rate\":" << *writer_rate
         << ",\"writer_commits_idle\":" << idle_waits.size() << ",\"writer_p99_us_idle\":" << p99_us(idle_waits)
         << ",\"writer_commits_during_rebuild\":" << beside.writer_waits_us.size()
         << ",\"writer_p99_us_during_rebuild\":" << p99_us(beside.writer_waits_us)
         << ",\"rebuild_seconds_beside_writer\":" << beside.seconds << "}\n";
    if (!report.write(json.str(), problem)) {
      std::cerr << "dix bench rebuild: " << problem << "\n";
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dix bench rebuild: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace dix::bench
