// `dix write`: creates or extends a primary store with a deterministic, realistic workload — a
// product catalogue (table 1) with inserts, updates and deletes — so `dix wal` has something
// real to read on a fresh machine.
#include <iostream>
#include <random>

#include "adapters/primary_store_impl.hpp"
#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "core/names.hpp"

namespace dix::cli {
namespace {

constexpr std::uint32_t products_table = 1;
constexpr const char* categories[] = {"books", "garden", "kitchen", "music", "outdoor", "toys", "tools", "video"};
constexpr const char* brands[] = {"acme", "borealis", "cobalt", "dunmore", "everest", "fjord", "granite", "helix"};
constexpr const char* words[] = {"compact", "durable", "classic", "wireless", "organic", "premium", "foldable",
                                 "portable", "vintage", "smart", "quiet", "bright"};

std::string product_payload(std::mt19937_64& rng, std::uint64_t n) {
  auto pick = [&](auto& list) { return list[rng() % (sizeof list / sizeof list[0])]; };
  std::string text = pick(words);
  text += ' ';
  text += pick(words);
  return std::string("{\"name\":\"item ") + std::to_string(n) + "\",\"category\":\"" + pick(categories) +
         "\",\"brand\":\"" + pick(brands) + "\",\"price_cents\":" + std::to_string(99 + rng() % 100000) +
         ",\"text\":\"" + text + "\"}";
}

std::string product_id(std::uint64_t n) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "p%08llu", static_cast<unsigned long long>(n));
  return buf;
}

}  // namespace

int run_write(const std::vector<std::string>& argv) {
  std::string problem;
  auto a = args::parse(argv, {"db", "log", "records", "per-txn", "seed"}, {"sync"}, problem);
  if (!a) {
    std::cerr << "dix write: " << problem << "\n";
    return exit_usage;
  }
  if (!a->has("db")) {
    std::cerr << "dix write: --db PATH is required\n";
    return exit_usage;
  }
  auto records = a->number("records", 10000, 1, 1'000'000'000, problem);
  auto per_txn = records ? a->number("per-txn", 10, 1, 100000, problem) : std::nullopt;
  auto seed = per_txn ? a->number("seed", 1, 0, UINT64_MAX, problem) : std::nullopt;
  if (!records || !per_txn || !seed) {
    std::cerr << "dix write: " << problem << "\n";
    return exit_usage;
  }
  store_options options;
  options.log_name = a->get("log", "main");
  options.sync_commits = a->has("sync");
  auto store = primary_store::open(a->get("db"), options);
  if (!store) {
    std::cerr << "dix write: " << store.error().to_string() << "\n";
    return store.error().value() == errc::invalid_argument ? exit_usage : exit_error;
  }
  auto& s = **store;
  if (auto ok = s.create_table(products_table); !ok) {
    std::cerr << "dix write: " << ok.error().to_string() << "\n";
    return exit_error;
  }
  // Continue numbering after what the store already holds, so repeated runs extend it.
  std::uint64_t next_id = 1;
  auto scanned = s.scan(products_table, "", [&](std::string_view, const record&) {
    ++next_id;
    return true;
  });
  if (!scanned) {
    std::cerr << "dix write: " << scanned.error().to_string() << "\n";
    return exit_error;
  }
  std::mt19937_64 rng(*seed);
  std::uint64_t written = 0, puts = 0, updates = 0, deletes = 0, transactions = 0;
  commit_info last{};
  while (written < *records) {
    auto txn = s.begin();
    for (std::uint64_t i = 0; i < *per_txn && written < *records; ++i, ++written) {
      auto roll = rng() % 10;
      if (roll < 7 || next_id < 10) {
        txn.put(products_table, product_id(next_id), product_payload(rng, next_id));
        ++next_id;
        ++puts;
      } else if (roll < 9) {
        auto n = 1 + rng() % (next_id - 1);
        txn.put(products_table, product_id(n), product_payload(rng, n));
        ++updates;
      } else {
        txn.del(products_table, product_id(1 + rng() % (next_id - 1)));
        ++deletes;
      }
    }
    auto done = txn.commit();
    if (!done) {
      std::cerr << "dix write: " << done.error().to_string() << "\n";
      return exit_error;
    }
    last = *done;
    ++transactions;
  }
  if (auto ok = s.close(); !ok) {
    std::cerr << "dix write: " << ok.error().to_string() << "\n";
    return exit_error;
  }
  std::cout << "wrote " << transactions << " transactions (" << puts << " inserts, " << updates << " updates, "
            << deletes << " deletes) to " << a->get("db") << "; last sequence " << last.sequence << "\n";
  return exit_ok;
}

}  // namespace dix::cli
