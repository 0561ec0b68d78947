// `dix write`: creates or extends a primary store with a deterministic, realistic workload — a
// product catalogue (table 1) with inserts, updates and deletes — so `dix wal` has something
// real to read on a fresh machine.
#include <iostream>
#include <random>

#include <dix/primary_store.hpp>

#include "catalogue.hpp"
#include "commands.hpp"
#include "paths.hpp"
#include "usage.hpp"
#include "tool/args.hpp"

namespace dix::cli {
int run_write(const std::vector<std::string>& argv) {
  int status = exit_usage;
  auto a = tool::args::parse_command(argv, {{"db", "log", "records", "per-txn", "seed"}, {"sync"}}, "dix write",
                                     command_usage("write"), status);
  if (!a) return status;
  std::string problem;
  if (!a->has("db")) return tool::refuse("dix write", "--db PATH is required");
  auto records = a->number("records", 10000, 1, 1'000'000'000, problem);
  auto per_txn = records ? a->number("per-txn", 10, 1, 100000, problem) : std::nullopt;
  auto seed = per_txn ? a->number("seed", 1, 0, UINT64_MAX, problem) : std::nullopt;
  if (!records || !per_txn || !seed) {
    return tool::refuse("dix write", problem);
  }
  store_options options;
  options.log_name = a->get("log", "main");
  options.sync_commits = a->has("sync");
  // A typo must not grow a tree: only the last component of --db is created (decision 0035).
  if (auto wrong = new_directory_problem(a->get("db"))) return tool::refuse("dix write", "--db " + a->get("db") + ": " + *wrong);
  // A demo or serve --dir names its store DIR/primary, as for wal, status, rebuild and verify.
  const auto db = store_dir(a->get("db")).path;
  auto store = primary_store::open(db, options);
  if (!store) {
    if (store.error().value() == errc::invalid_argument) return tool::refuse("dix write", store.error().to_string());
    std::cerr << "dix write: " << store.error().to_string() << "\n";
    return exit_error;
  }
  auto& s = **store;
  if (auto ok = s.create_table(products_table); !ok) {
    std::cerr << "dix write: " << ok.error().to_string() << "\n";
    return exit_error;
  }
  // Continue numbering after what the store already holds, so repeated runs extend it.
  auto highest = highest_id(s);
  if (!highest) {
    std::cerr << "dix write: " << highest.error().to_string() << "\n";
    return exit_error;
  }
  catalogue workload(*seed, *highest);
  catalogue::counts counts;
  std::uint64_t written = 0, transactions = 0;
  commit_info last{};
  while (written < *records) {
    auto txn = s.begin();
    auto n = std::min<std::uint64_t>(*per_txn, *records - written);
    workload.fill(txn, n, counts);
    written += n;
    auto done = txn.commit();
    if (!done) {
      // The refused transaction wrote nothing; those before it are committed (issue 34).
      std::cerr << "dix write: " << done.error().to_string() << "; this run committed " << transactions
                << (transactions == 0 ? std::string(" transactions") : " transactions before it, the last starting at sequence " +
                                                                      std::to_string(last.sequence))
                << "\n";
      return exit_error;
    }
    last = *done;
    ++transactions;
  }
  if (auto ok = s.close(); !ok) {
    std::cerr << "dix write: " << ok.error().to_string() << "\n";
    return exit_error;
  }
  std::cout << "wrote " << transactions << (transactions == 1 ? " transaction (" : " transactions (") << counts.inserts
            << " inserts, " << counts.updates << " updates, " << counts.deletes << " deletes) to " << db.string()
            << "; the last transaction starts at sequence " << last.sequence << "\n";
  return exit_ok;
}

}  // namespace dix::cli
