// `dix bench catchup`: a backlog of N records (200-byte payloads, 100 per transaction) written
// with no index registered; then the RocksDB index is registered and timed until its durable
// cursor reaches the end of the log. Beside it, in the same run, two baselines, each in a child
// process of its own (`dix-bench catchup-baseline`), so that this process's peak RSS is dix's
// alone (the backlog's primary store, the runtime, the index) and each baseline's is its own:
//   * plain: raw RocksDB ingest of the same index entries (entries and reverse records) into a
//     fresh database with RocksDB's default options, WriteBatch of 1000 puts, WAL on, no sync;
//   * tuned: the same entries written with the index backend's own options
//     (rocksdb_index_open_options: its families, filters, insert hints and this process's memory
//     budget), in batches of as many records as dix delivered on average, each batch's keys in
//     order per family and a cursor record per batch as the backend writes, WAL on, no sync —
//     the best a hand-written loop can do.
// Peak RSS shows whether memory follows the budget and the batch caps, not the backlog.
#include <sys/wait.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/memory.hpp>
#include <dix/primary_store.hpp>
#include <dix/runtime.hpp>

#include "bench.hpp"
#include "store_gen.hpp"
#include "harness/child_process.hpp"
#include "report.hpp"
#include "tool/args.hpp"
#include "tool/executable.hpp"

namespace dix::bench {
namespace {

using gen::payload_bytes;
using gen::per_txn;
using gen::table;

using gen::payload_of;
using gen::record_id;
const auto write_backlog = gen::write_records;

// The index key of record i (the payload's first 8 bytes) and its record ref as the backend
// encodes it: u8 log length, log, u32 big-endian table, record id.
std::string index_key_of(std::size_t i) { return payload_of(i).substr(0, 8); }
std::string ref_of(std::size_t i) { return std::string("\x04main\x00\x00\x00\x01", 9) + record_id(i); }
// The backend's entry key: the (unescaped: no 0x00 in it) index key, 0x00 0x01, the ref.
std::string entry_of(const std::string& key, const std::string& ref) { return key + std::string("\x00\x01", 2) + ref; }

std::unique_ptr<rocksdb::DB> open_or_throw(const rocksdb::Options& o, const std::filesystem::path& dir) {
  rocksdb::DB* raw = nullptr;
  if (auto s = rocksdb::DB::Open(o, dir.string(), &raw); !s.ok()) throw std::runtime_error(s.ToString());
  return std::unique_ptr<rocksdb::DB>(raw);
}

void write_or_throw(rocksdb::DB& db, rocksdb::WriteBatch& batch) {
  if (auto s = db.Write(rocksdb::WriteOptions{}, &batch); !s.ok()) throw std::runtime_error(s.ToString());
  batch.Clear();
}

// RocksDB's default options, one family, WriteBatch of 1000 puts (500 records).
double plain_ingest(const std::filesystem::path& dir, std::size_t records) {
  rocksdb::Options o;
  o.create_if_missing = true;
  auto db = open_or_throw(o, dir);
  auto start = std::chrono::steady_clock::now();
  rocksdb::WriteBatch batch;
  for (std::size_t i = 0; i < records; ++i) {
    auto key = index_key_of(i);
    auto ref = ref_of(i);
    // The same two records the index writes: the entry and the reverse mapping.
    batch.Put(entry_of(key, ref), rocksdb::Slice()).PermitUncheckedError();
    batch.Put("r" + ref, std::string(8, '\x01') + key).PermitUncheckedError();
    if (batch.Count() >= 1000) write_or_throw(*db, batch);
  }
  if (batch.Count() > 0) write_or_throw(*db, batch);
  auto rate = static_cast<double>(records) / seconds_since(start);
  db->Close().PermitUncheckedError();
  return rate;
}

// The backend's own database options and families; per batch of `batch_records` records the
// entries in key order, then the reverse records in key order (value: version + the
// projection's encoding, as the backend stores it), then a cursor record, as apply() writes them.
double tuned_ingest(const std::filesystem::path& dir, std::size_t records, std::size_t batch_records) {
  rocksdb::DBOptions o;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  rocksdb_index_open_options(o, families);
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  if (auto s = rocksdb::DB::Open(o, dir.string(), families, &handles, &raw); !s.ok()) throw std::runtime_error(s.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  auto* entries = handles[1];
  auto* reverse = handles[2];
  auto* meta = handles[3];
  const std::string version(8, '\x01');
  const std::string cursor(40, '\x02');  // a cursor's size: log, sequence, time, checksum
  auto start = std::chrono::steady_clock::now();
  rocksdb::WriteBatch batch;
  std::vector<std::string> entry_keys;
  std::vector<std::pair<std::string, std::string>> reverse_records;
  for (std::size_t first = 0; first < records; first += batch_records) {
    entry_keys.clear();
    reverse_records.clear();
    for (std::size_t i = first; i < std::min(first + batch_records, records); ++i) {
      auto key = index_key_of(i);
      auto ref = ref_of(i);
      entry_keys.push_back(entry_of(key, ref));
      reverse_records.emplace_back(std::move(ref), version + encode_keys({key}));
    }
    std::sort(entry_keys.begin(), entry_keys.end());
    std::sort(reverse_records.begin(), reverse_records.end());
    for (const auto& k : entry_keys) batch.Put(entries, k, rocksdb::Slice()).PermitUncheckedError();
    for (const auto& [k, v] : reverse_records) batch.Put(reverse, k, v).PermitUncheckedError();
    batch.Put(meta, "cursor", cursor).PermitUncheckedError();
    write_or_throw(*db, batch);
  }
  auto rate = static_cast<double>(records) / seconds_since(start);
  for (auto* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  db->Close().PermitUncheckedError();
  return rate;
}

struct baseline_result {
  double records_per_s = 0;
  double peak_rss_mb = 0;
};

// Runs one baseline in a child `dix-bench catchup-baseline` and reads its one-line report.
baseline_result run_baseline_child(const std::string& kind, const std::filesystem::path& dir, std::size_t records,
                                   std::size_t batch_records, std::uint64_t memory_mb, std::uint64_t timeout_s) {
  std::string problem;
  auto self = tool::sibling_executable("dix-bench", problem);
  if (!self) throw std::runtime_error(problem);
  auto child = cli::child_process::spawn({self->string(), "catchup-baseline", "--kind", kind, "--dir", dir.string(),
                                          "--records", std::to_string(records), "--batch-records",
                                          std::to_string(batch_records), "--memory-mb", std::to_string(memory_mb)});
  if (!child) throw std::runtime_error(child.error().to_string());
  auto line = child->wait_line("\"records_per_s\":", std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s));
  auto status = child->reap(0);
  if (!line || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("the " + kind + " baseline failed (wait status " + std::to_string(status) + ")");
  }
  auto number = [&](const std::string& name) { return std::stod(line->substr(line->find("\"" + name + "\":") + name.size() + 3)); };
  return {number("records_per_s"), number("peak_rss_mb")};
}

}  // namespace

int run_catchup(const std::vector<std::string>& argv) {
  int status = tool::exit_usage;
  auto a = tool::args::parse_command(
      argv,
      {{"records", "dir", "json", "timeout", "turn-ms", "chunk-records", "actor-threads", "scheduler", "memory-mb"}, {"no-digest"}},
      "dix bench catchup", usage("catchup"), status);
  if (!a) return status;
  std::string problem;
  json_report report;
  auto records = a->number("records", 1'000'000, per_txn, 100'000'000, problem);
  auto timeout_s = records ? a->number("timeout", 1800, 1, 86400, problem) : std::nullopt;
  // Runner options for profiles: under callgrind a 5 ms turn resolves only a few keys, so a
  // profile that should show realistic chunks passes a longer turn (e.g. --turn-ms 300).
  const runner_options defaults;
  auto turn_ms = timeout_s ? a->number("turn-ms", static_cast<std::uint64_t>(defaults.max_milliseconds_per_turn.count()),
                                       1, 1000, problem)
                           : std::nullopt;
  auto chunk_records = turn_ms ? a->number("chunk-records", defaults.max_chunk_records, 1, 1u << 20, problem) : std::nullopt;
  auto actor_threads = chunk_records ? a->number("actor-threads", 0, 0, 256, problem) : std::nullopt;
  auto scheduler = actor_threads ? a->choice("scheduler", {"sharing", "stealing"}, 0, problem) : std::nullopt;
  auto memory_mb = scheduler ? a->number("memory-mb", memory_options{}.budget_bytes >> 20, 16, 1u << 20, problem)
                             : std::nullopt;
  if (!records || !timeout_s || !turn_ms || !chunk_records || !actor_threads || !scheduler || !memory_mb ||
      !check_scratch_base(*a, problem) || !report.open(*a, problem)) {
    return tool::refuse("dix bench catchup", problem);
  }
  const std::uint64_t timeout_seconds = *timeout_s;
  try {
    set_memory_budget({*memory_mb << 20}).value();
    scratch_dir scratch(a->get("dir"));
    store_options so;
    so.log_name = "main";
    auto store = primary_store::open(scratch.path() / "primary", so).value();
    store->create_table(table).value();
    auto backlog_start = std::chrono::steady_clock::now();
    auto last = write_backlog(*store, *records);
    auto backlog_s = seconds_since(backlog_start);
    std::cerr << "backlog: " << *records << " records in " << backlog_s << " s\n";

    rocksdb_index_options io;
    io.path = scratch.path() / "index";
    io.digest = !a->has("no-digest");
    auto index = rocksdb_index_backend::create("catchup", io).value();
    system_options sys;
    sys.actor_threads = static_cast<std::uint32_t>(*actor_threads);
    sys.scheduler = static_cast<actor_scheduler>(*scheduler);
    auto rt = runtime::create({store}, {}, sys).value();
    registration r;
    r.backend = index;
    runner_options ro;
    ro.max_milliseconds_per_turn = std::chrono::milliseconds(*turn_ms);
    ro.max_chunk_records = static_cast<std::uint32_t>(*chunk_records);
    r.options = ro;
    r.projections[table_ref{"main", table}] = [](std::string_view payload, const record_info&) -> projection_result {
      return encode_keys({std::string(payload.substr(0, 8))});
    };
    auto start = std::chrono::steady_clock::now();
    rt->register_index(std::move(r)).value();
    auto deadline = start + std::chrono::seconds(timeout_seconds);
    memory_usage budget_peak;  // the most the budget held at any look, and the most memtables
    for (;;) {
      auto used = memory_in_use();
      budget_peak.used_bytes = std::max(budget_peak.used_bytes, used.used_bytes);
      budget_peak.memtable_bytes = std::max(budget_peak.memtable_bytes, used.memtable_bytes);
      auto m = rt->metrics("catchup");
      if (m && !m->logs.empty() && m->logs[0].durable_sequence >= last) break;
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("the index did not catch up in time");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    auto dix_s = seconds_since(start);
    auto m = rt->metrics("catchup");
    rt->stop().get().value();
    rt.reset();
    index.reset();
    store->close().value();
    // This process did nothing but dix's work so far: its peak is the dix phase's.
    const auto dix_peak_mb = peak_rss_mb();

    // Records per delivered batch, on average: the batch size of the tuned baseline.
    const std::uint64_t batches = m ? m->delivered_batches : 0;
    const std::size_t batch_records =
        batches == 0 ? *records : static_cast<std::size_t>(std::max<std::uint64_t>(m->delivered_records / batches, 1));
    auto plain = run_baseline_child("plain", scratch.path() / "baseline", *records, batch_records, *memory_mb, timeout_seconds);
    auto tuned = run_baseline_child("tuned", scratch.path() / "tuned", *records, batch_records, *memory_mb, timeout_seconds);
    auto dix_rate = static_cast<double>(*records) / dix_s;
    std::ostringstream json;
    json << "{\"bench\":\"catchup\"," << build_fields() << ",\"records\":" << *records
         << ",\"dix_seconds\":" << dix_s << ",\"dix_records_per_s\":" << dix_rate
         << ",\"baseline_records_per_s\":" << plain.records_per_s << ",\"ratio\":" << dix_rate / plain.records_per_s
         << ",\"tuned_baseline_records_per_s\":" << tuned.records_per_s
         << ",\"tuned_ratio\":" << dix_rate / tuned.records_per_s << ",\"tuned_batch_records\":" << batch_records
         << ",\"delivered_batches\":" << batches << ",\"backlog_seconds\":" << backlog_s
         << ",\"peak_rss_mb\":" << dix_peak_mb << ",\"memory_budget_mb\":" << *memory_mb
         << ",\"budget_peak_used_mb\":" << static_cast<double>(budget_peak.used_bytes) / (1 << 20)
         << ",\"budget_peak_memtable_mb\":" << static_cast<double>(budget_peak.memtable_bytes) / (1 << 20)
         << ",\"baseline_peak_rss_mb\":" << plain.peak_rss_mb << ",\"tuned_baseline_peak_rss_mb\":" << tuned.peak_rss_mb
         << ",\"turn_ms\":" << *turn_ms
         << ",\"chunk_records\":" << *chunk_records << ",\"digest\":" << (io.digest ? "true" : "false")
         << ",\"scheduler\":\"" << (*scheduler == 0 ? "sharing" : "stealing") << "\"}\n";
    if (!report.write(json.str(), problem)) {
      std::cerr << "dix bench catchup: " << problem << "\n";
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dix bench catchup: " << e.what() << "\n";
    return 1;
  }
}

int run_catchup_baseline(const std::vector<std::string>& argv) {
  int status = tool::exit_usage;
  auto a = tool::args::parse_command(argv, {{"kind", "dir", "records", "batch-records", "memory-mb"}, {}},
                                     "dix-bench catchup-baseline", usage("catchup-baseline"), status);
  if (!a) return status;
  std::string problem;
  auto kind = a->choice("kind", {"plain", "tuned"}, 0, problem);
  auto records = kind ? a->number("records", 1'000'000, 1, 100'000'000, problem) : std::nullopt;
  auto batch_records = records ? a->number("batch-records", 1000, 1, 100'000'000, problem) : std::nullopt;
  auto memory_mb = batch_records ? a->number("memory-mb", memory_options{}.budget_bytes >> 20, 16, 1u << 20, problem)
                                 : std::nullopt;
  if (!kind || !records || !batch_records || !memory_mb || !a->has("dir")) {
    return tool::refuse("dix-bench catchup-baseline", (problem.empty() ? "--dir DIR is required" : problem));
  }
  try {
    set_memory_budget({*memory_mb << 20}).value();
    auto rate = *kind == 0 ? plain_ingest(a->get("dir"), *records) : tuned_ingest(a->get("dir"), *records, *batch_records);
    std::cout << "{\"records_per_s\":" << rate << ",\"peak_rss_mb\":" << peak_rss_mb() << "}" << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dix-bench catchup-baseline: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace dix::bench
