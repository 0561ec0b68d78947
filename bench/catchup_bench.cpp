// `dix bench catchup`: a backlog of N records (200-byte payloads, 100 per transaction) written
// with no index registered; then the RocksDB index is registered and timed until its durable
// cursor reaches the end of the log. Beside it, in the same run, the baseline: raw RocksDB ingest
// of the same index entries (entries and reverse records) into a fresh database, WriteBatch of
// 1000, WAL on, no sync. Peak RSS shows whether memory follows the batch caps, not the backlog.
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/primary_store.hpp>
#include <dix/runtime.hpp>

#include "bench.hpp"
#include "report.hpp"
#include "tool/args.hpp"

namespace dix::bench {
namespace {

constexpr std::uint32_t table = 1;
constexpr std::size_t payload_bytes = 200;
constexpr std::size_t per_txn = 100;

std::string record_id(std::size_t i) {
  char key[32];
  std::snprintf(key, sizeof key, "r%015zu", i);
  return key;
}

// The index key is the payload's first 8 bytes: 1000 distinct keys over the backlog.
std::string payload_of(std::size_t i) {
  char head[16];
  std::snprintf(head, sizeof head, "key%05zu", i % 1000);
  std::string p(head);
  p.resize(payload_bytes, 'x');
  return p;
}

std::uint64_t write_backlog(primary_store& store, std::size_t records) {
  std::uint64_t last = 0;
  for (std::size_t i = 0; i < records; i += per_txn) {
    auto txn = store.begin();
    for (std::size_t j = i; j < std::min(i + per_txn, records); ++j) txn.put(table, record_id(j), payload_of(j));
    last = txn.commit().value().sequence;
  }
  return last;
}

double baseline_ingest(const std::filesystem::path& dir, std::size_t records) {
  rocksdb::Options o;
  o.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  if (auto s = rocksdb::DB::Open(o, dir.string(), &raw); !s.ok()) throw std::runtime_error(s.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  rocksdb::WriteOptions wo;
  auto start = std::chrono::steady_clock::now();
  rocksdb::WriteBatch batch;
  std::size_t in_batch = 0;
  for (std::size_t i = 0; i < records; ++i) {
    auto key = payload_of(i).substr(0, 8);
    auto ref = std::string("\x04main\x00\x00\x00\x01", 9) + record_id(i);
    // The same two records the index writes: the entry and the reverse mapping.
    batch.Put(key + std::string("\x00\x01", 2) + ref, rocksdb::Slice()).PermitUncheckedError();
    batch.Put("r" + ref, std::string(8, '\x01') + key).PermitUncheckedError();
    in_batch += 2;
    if (in_batch >= 1000) {
      if (auto s = db->Write(wo, &batch); !s.ok()) throw std::runtime_error(s.ToString());
      batch.Clear();
      in_batch = 0;
    }
  }
  if (in_batch > 0) db->Write(wo, &batch).PermitUncheckedError();
  auto rate = static_cast<double>(records) / seconds_since(start);
  db->Close().PermitUncheckedError();
  return rate;
}

}  // namespace

int run_catchup(const std::vector<std::string>& argv) {
  int status = tool::exit_usage;
  auto a = tool::args::parse_command(
      argv, {{"records", "dir", "json", "timeout", "turn-ms", "chunk-records", "actor-threads", "scheduler"}, {}},
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
  if (!records || !timeout_s || !turn_ms || !chunk_records || !actor_threads || !scheduler ||
      !report.open(*a, problem)) {
    std::cerr << "dix bench catchup: " << problem << "\n";
    return 2;
  }
  const std::uint64_t timeout_seconds = *timeout_s;
  try {
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
    for (;;) {
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

    auto baseline = baseline_ingest(scratch.path() / "baseline", *records);
    auto dix_rate = static_cast<double>(*records) / dix_s;
    std::ostringstream json;
    json << "{\"bench\":\"catchup\"," << build_fields() << ",\"records\":" << *records
         << ",\"dix_seconds\":" << dix_s << ",\"dix_records_per_s\":" << dix_rate
         << ",\"baseline_records_per_s\":" << baseline << ",\"ratio\":" << dix_rate / baseline
         << ",\"delivered_batches\":" << (m ? m->delivered_batches : 0) << ",\"backlog_seconds\":" << backlog_s
         << ",\"peak_rss_mb\":" << peak_rss_mb() << ",\"turn_ms\":" << *turn_ms
         << ",\"chunk_records\":" << *chunk_records
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

}  // namespace dix::bench
