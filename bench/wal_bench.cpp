// `dix bench wal`: (a) commit throughput of primary_store beside raw RocksDB WriteBatch writes
// of the same records (200-byte payloads, 100 per transaction, WAL on, no sync), and of the same
// transactions sent as commit_transaction messages to a runtime actor (`async_ratio`: async over
// blocking, issue 29), and (b) WAL
// tailing throughput of the tailer's log source (through wal_reader) beside a bare
// GetUpdatesSince loop over the same WAL. Both tails read the store through read-only RocksDB
// instances opened once, before any timing. Rounds alternate dix and baseline so machine noise
// hits both; medians are reported.
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include <rocksdb/db.h>
#include <rocksdb/transaction_log.h>
#include <rocksdb/write_batch.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <dix/caf.hpp>
#include <dix/primary_store.hpp>
#include <dix/wal.hpp>

#include "bench.hpp"
#include "report.hpp"
#include "tool/args.hpp"

namespace dix::bench {
namespace {

constexpr std::uint32_t table = 1;
constexpr std::size_t payload_bytes = 200;
constexpr std::size_t per_txn = 100;

struct workload {
  std::vector<std::string> keys;
  std::vector<std::string> payloads;
};

workload make_workload(std::size_t records) {
  workload w;
  std::mt19937_64 rng(42);
  w.keys.reserve(records);
  w.payloads.reserve(records);
  for (std::size_t i = 0; i < records; ++i) {
    char key[32];
    std::snprintf(key, sizeof key, "k%015zu", i);
    w.keys.emplace_back(key);
    std::string p(payload_bytes, '\0');
    for (auto& c : p) c = static_cast<char>('a' + rng() % 26);
    w.payloads.push_back(std::move(p));
  }
  return w;
}

store_options bench_store_options() {
  store_options o;
  o.log_name = "main";
  return o;
}

// Records per second committed through primary_store; leaves the store closed at `dir`.
double dix_commit(const workload& w, const std::filesystem::path& dir) {
  auto store = primary_store::open(dir, bench_store_options()).value();
  store->create_table(table).value();
  auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < w.keys.size(); i += per_txn) {
    auto txn = store->begin();
    for (std::size_t j = i; j < std::min(i + per_txn, w.keys.size()); ++j) txn.put(table, w.keys[j], w.payloads[j]);
    txn.commit().value();
  }
  auto rate = static_cast<double>(w.keys.size()) / seconds_since(start);
  store->close().value();
  return rate;
}

// Records per second committed as commit_transaction messages (issue 29): the same transactions,
// sent by one actor with up to `window` of them unanswered, to a runtime actor over the store
// (`direct` false: it routes each to the store's committer) or to the store's writer itself
// (spawn_store_writer, one hop less). Building each message is timed, as building each
// transaction is in dix_commit.
double async_commit(const workload& w, const std::filesystem::path& dir, bool direct) {
  constexpr std::size_t window = 16;
  auto store = primary_store::open(dir, bench_store_options()).value();
  store->create_table(table).value();
  double rate = 0;
  {
    caf::actor_system_config cfg;
    dix::configure(cfg);
    cfg.set("logger.console-verbosity", caf::atom("quiet"));
    caf::actor_system sys{cfg};
    auto rt = dix::spawn_runtime(sys, {store}).value();
    auto writer = dix::spawn_store_writer(sys, store);
    caf::scoped_actor self{sys};
    const std::size_t transactions = (w.keys.size() + per_txn - 1) / per_txn;
    std::size_t sent = 0, answered = 0;
    auto send_one = [&] {
      commit_transaction m;
      m.log = "main";
      const auto from = sent * per_txn;
      for (std::size_t j = from; j < std::min(from + per_txn, w.keys.size()); ++j) {
        m.put(table, w.keys[j], w.payloads[j]);
      }
      if (direct) self->send(writer, std::move(m));
      else self->send(rt, std::move(m));
      ++sent;
    };
    auto start = std::chrono::steady_clock::now();
    while (sent < transactions && sent < window) send_one();
    std::string failure;
    while (answered < transactions && failure.empty()) {
      self->receive([&](transaction_committed&) { ++answered; }, [&](caf::error& e) { failure = sys.render(e); });
      if (sent < transactions) send_one();
    }
    if (!failure.empty()) throw std::runtime_error("commit_transaction: " + failure);
    rate = static_cast<double>(w.keys.size()) / seconds_since(start);
    self->request(rt, caf::infinite, stop_runtime{}).receive([](runtime_stopped&) {}, [](caf::error&) {});
    self->send_exit(rt, caf::exit_reason::user_shutdown);
    self->send_exit(writer, caf::exit_reason::user_shutdown);
  }
  store->close().value();
  return rate;
}

// The baseline: the same records as plain WriteBatches into a column family, same DB options.
double raw_commit(const workload& w, const std::filesystem::path& dir) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.WAL_ttl_seconds = 259200;
  options.WAL_size_limit_MB = 16384;
  rocksdb::DB* raw = nullptr;
  if (auto s = rocksdb::DB::Open(options, dir.string(), &raw); !s.ok()) throw std::runtime_error(s.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  rocksdb::ColumnFamilyHandle* cf = nullptr;
  if (auto s = db->CreateColumnFamily({}, "table.1", &cf); !s.ok()) throw std::runtime_error(s.ToString());
  rocksdb::WriteOptions wo;
  auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < w.keys.size(); i += per_txn) {
    rocksdb::WriteBatch batch;
    for (std::size_t j = i; j < std::min(i + per_txn, w.keys.size()); ++j) batch.Put(cf, w.keys[j], w.payloads[j]);
    if (auto s = db->Write(wo, &batch); !s.ok()) throw std::runtime_error(s.ToString());
  }
  auto rate = static_cast<double>(w.keys.size()) / seconds_since(start);
  db->DestroyColumnFamilyHandle(cf).PermitUncheckedError();
  db->Close().PermitUncheckedError();
  return rate;
}

struct tail_rate {
  double transactions_per_s = 0;
  std::uint64_t transactions = 0;
};

tail_rate dix_tail(wal_reader& source) {
  auto start = std::chrono::steady_clock::now();
  auto first = source.seek(1, 0);
  if (!first) throw std::runtime_error(first.error().to_string());
  std::uint64_t n = 1, ops = first->ops.size();
  for (;;) {
    auto next = source.next();
    if (!next) throw std::runtime_error(next.error().to_string());
    if (!*next) break;
    ops += (*next)->ops.size();
    ++n;
  }
  return {static_cast<double>(n) / seconds_since(start), n};
}

// The same store opened read-only by RocksDB itself (its default family is enough for the WAL).
std::unique_ptr<rocksdb::DB> open_bare(const std::filesystem::path& dir) {
  rocksdb::DB* raw = nullptr;
  if (auto s = rocksdb::DB::OpenForReadOnly(rocksdb::Options(), dir.string(), &raw); !s.ok()) {
    throw std::runtime_error(s.ToString());
  }
  return std::unique_ptr<rocksdb::DB>(raw);
}

tail_rate bare_tail(rocksdb::DB& db) {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<rocksdb::TransactionLogIterator> it;
  if (auto s = db.GetUpdatesSince(1, &it); !s.ok()) throw std::runtime_error(s.ToString());
  std::uint64_t n = 0, ops = 0;
  for (; it->Valid(); it->Next()) {
    auto batch = it->GetBatch();
    ops += batch.writeBatchPtr->Count();
    ++n;
  }
  return {static_cast<double>(n) / seconds_since(start), n};
}

}  // namespace

int run_wal(const std::vector<std::string>& argv) {
  int status = tool::exit_usage;
  auto a = tool::args::parse_command(argv, {{"records", "rounds", "dir", "json"}, {}}, "dix bench wal", usage("wal"),
                                     status);
  if (!a) return status;
  std::string problem;
  json_report report;
  auto records = a->number("records", 200000, per_txn, 100'000'000, problem);
  auto rounds = records ? a->number("rounds", 5, 1, 100, problem) : std::nullopt;
  if (!records || !rounds || !check_scratch_base(*a, problem) || !report.open(*a, problem)) {
    return tool::refuse("dix bench wal", problem);
  }
  try {
    scratch_dir scratch(a->get("dir"));
    auto w = make_workload(*records);
    std::vector<double> dix_rates, raw_rates, async_rates, writer_rates;
    for (std::uint64_t r = 0; r < *rounds; ++r) {
      auto dix_dir = scratch.path() / ("dix-" + std::to_string(r));
      auto raw_dir = scratch.path() / ("raw-" + std::to_string(r));
      auto async_dir = scratch.path() / ("async-" + std::to_string(r));
      auto writer_dir = scratch.path() / ("writer-" + std::to_string(r));
      // Rotate which side goes first, so warm-up and drift do not favour one.
      for (std::uint64_t k = 0; k < 4; ++k) {
        switch ((r + k) % 4) {
          case 0: dix_rates.push_back(dix_commit(w, dix_dir)); break;
          case 1: raw_rates.push_back(raw_commit(w, raw_dir)); break;
          case 2: async_rates.push_back(async_commit(w, async_dir, false)); break;
          default: writer_rates.push_back(async_commit(w, writer_dir, true)); break;
        }
      }
      std::filesystem::remove_all(async_dir);
      std::filesystem::remove_all(writer_dir);
      if (r + 1 < *rounds) {
        std::filesystem::remove_all(raw_dir);
        std::filesystem::remove_all(dix_dir);
      }
    }
    auto tailed = scratch.path() / ("dix-" + std::to_string(*rounds - 1));
    auto reader = wal_reader::open(tailed, bench_store_options().log_name).value();
    auto bare = open_bare(tailed);
    std::vector<double> tail_dix, tail_bare;
    std::uint64_t transactions = 0;
    for (std::uint64_t r = 0; r < *rounds; ++r) {
      auto d = r % 2 == 0 ? dix_tail(*reader) : tail_rate{};
      auto b = bare_tail(*bare);
      if (r % 2 == 1) d = dix_tail(*reader);
      tail_dix.push_back(d.transactions_per_s);
      tail_bare.push_back(b.transactions_per_s);
      transactions = b.transactions;
    }
    bare->Close().PermitUncheckedError();

    auto commit_dix = median(dix_rates), commit_raw = median(raw_rates), commit_async = median(async_rates);
    auto commit_writer = median(writer_rates);
    auto tail_d = median(tail_dix), tail_b = median(tail_bare);
    std::ostringstream json;
    json << "{\"bench\":\"wal\"," << build_fields() << ",\"records\":" << *records << ",\"rounds\":" << *rounds
         << ",\"payload_bytes\":" << payload_bytes << ",\"records_per_transaction\":" << per_txn
         << ",\"commit_phase\":{\"dix_records_per_s\":" << commit_dix << ",\"baseline_records_per_s\":" << commit_raw
         << ",\"ratio\":" << commit_dix / commit_raw << ",\"async_records_per_s\":" << commit_async
         << ",\"async_ratio\":" << commit_async / commit_dix << ",\"writer_records_per_s\":" << commit_writer
         << ",\"writer_ratio\":" << commit_writer / commit_dix << "}"
         << ",\"tail\":{\"transactions\":" << transactions << ",\"dix_transactions_per_s\":" << tail_d
         << ",\"baseline_transactions_per_s\":" << tail_b << ",\"dix_records_per_s\":" << tail_d * per_txn
         << ",\"ratio\":" << tail_d / tail_b << "}"
         << ",\"peak_rss_mb\":" << peak_rss_mb() << "}\n";
    if (!report.write(json.str(), problem)) {
      std::cerr << "dix bench wal: " << problem << "\n";
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dix bench wal: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace dix::bench
