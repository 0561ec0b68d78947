// `dix wal`: inspect a primary store's WAL the way the tailer reads it (protocol.md §3), without
// writing to the store: <dix/wal.hpp> opens RocksDB read-only.
#include <ctime>
#include <iostream>
#include <sstream>

#include <dix/names.hpp>
#include <dix/wal.hpp>

#include "commands.hpp"
#include "paths.hpp"
#include "usage.hpp"
#include "tool/args.hpp"
#include "tool/json.hpp"

namespace dix::cli {
namespace {

using tool::json_string;

std::string iso_time(index_time_t ns) {
  auto seconds = static_cast<std::time_t>(ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[16];
  std::snprintf(frac, sizeof frac, ".%09lluZ", static_cast<unsigned long long>(ns % 1'000'000'000));
  return std::string(buf) + frac;
}

std::string reason_code(errc e) {
  switch (e) {
    case errc::log_retention: return "log-retention";
    case errc::log_corrupt: return "log-corrupt";
    case errc::log_missing: return "log-missing";
    default: return std::string(to_string(e));
  }
}

bool is_log_fault(errc e) {
  return e == errc::log_retention || e == errc::log_corrupt || e == errc::log_missing;
}

class printer {
 public:
  explicit printer(bool json) : json_(json) {}

  void store(const wal_reader& s, std::uint64_t latest, const wal_retention& r) {
    if (json_) {
      out_ << "{\"log\":" << json_string(s.log_name()) << ",\"identity\":" << json_string(s.identity())
           << ",\"latest_sequence\":" << latest << ",\"retention\":{\"wal_retained_bytes\":"
           << r.wal_retained_bytes << ",\"wal_oldest_sequence\":" << r.wal_oldest_sequence
           << ",\"wal_files\":" << r.wal_files << ",\"archived_bytes\":" << r.archived_bytes
           << ",\"retention_headroom_ms\":" << r.retention_headroom_ms
           << ",\"retention_headroom_bytes\":" << r.retention_headroom_bytes << "},\"transactions\":[";
    } else {
      out_ << "log " << s.log_name() << "\nidentity " << s.identity() << "\nlatest_sequence " << latest
           << "\nwal_retained_bytes " << r.wal_retained_bytes << "\nwal_oldest_sequence "
           << r.wal_oldest_sequence << "\nwal_files " << r.wal_files << "\nretention_headroom_ms "
           << r.retention_headroom_ms << "\nretention_headroom_bytes " << r.retention_headroom_bytes << "\n";
    }
  }

  void transaction(const wal_transaction& t) {
    if (json_) {
      out_ << (count_ == 0 ? "" : ",") << "{\"sequence\":" << t.sequence << ",\"time\":" << t.time
           << ",\"flags\":" << json_string(flags_to_string(t.flags)) << ",\"ops\":[";
      for (std::size_t i = 0; i < t.ops.size(); ++i) {
        const auto& op = t.ops[i];
        out_ << (i == 0 ? "" : ",") << "{\"op\":\"" << to_string(op.kind) << "\",";
        if (op.meta) out_ << "\"family\":\"dix.meta\",";
        else out_ << "\"table\":" << op.table << ",";
        out_ << "\"id\":" << json_string(op.key);
        if (op.kind == op_kind::put) out_ << ",\"bytes\":" << op.value.size();
        if (op.kind == op_kind::delete_range) out_ << ",\"end\":" << json_string(op.value);
        out_ << "}";
      }
      out_ << "]}";
    } else {
      out_ << "\nsequence " << t.sequence << "  time " << t.time << " (" << iso_time(t.time) << ")  flags "
           << flags_to_string(t.flags) << "  ops " << t.count << "\n";
      for (const auto& op : t.ops) {
        out_ << "  " << to_string(op.kind) << ' ' << (op.meta ? std::string("dix.meta") : "table " + std::to_string(op.table))
             << " \"" << escape_bytes(op.key) << '"';
        if (op.kind == op_kind::put) out_ << "  " << op.value.size() << " bytes";
        if (op.kind == op_kind::delete_range) out_ << " .. \"" << escape_bytes(op.value) << '"';
        out_ << '\n';
      }
    }
    ++count_;
    if (out_.tellp() > (1 << 20)) flush();
  }

  void finish(std::optional<std::pair<std::string, std::string>> fault) {
    if (json_) {
      out_ << "],\"printed\":" << count_;
      if (fault) out_ << ",\"error\":{\"reason\":" << json_string(fault->first) << ",\"message\":" << json_string(fault->second) << "}";
      out_ << "}\n";
    } else {
      out_ << "\nprinted " << count_ << " transaction" << (count_ == 1 ? "" : "s") << "\n";
    }
    flush();
  }

 private:
  void flush() {
    std::cout << out_.str();
    out_.str({});
  }
  bool json_;
  std::ostringstream out_;
  std::uint64_t count_ = 0;
};

}  // namespace

int run_wal(const std::vector<std::string>& argv) {
  int status = exit_usage;
  auto a = tool::args::parse_command(argv, {{"db", "log", "from", "time", "identity", "limit"}, {"json"}}, "dix wal",
                                     command_usage("wal"), status);
  if (!a) return status;
  std::string problem;
  if (!a->has("db")) return tool::refuse("dix wal", "--db PATH is required");
  // The header time belongs to an anchor, a sequence with its time: alone it verifies nothing.
  if (a->has("time") && !a->has("from")) return tool::refuse("dix wal", "--time needs --from");
  auto from = a->number("from", 1, 1, UINT64_MAX, problem);
  auto time = from ? a->number("time", 0, 0, UINT64_MAX, problem) : std::nullopt;
  auto limit = time ? a->number("limit", UINT64_MAX, 1, UINT64_MAX, problem) : std::nullopt;
  if (!from || !time || !limit) {
    return tool::refuse("dix wal", problem);
  }
  auto log = a->get("log", "main");
  if (!is_valid_log_name(log)) {
    return tool::refuse("dix wal", "--log \"" + escape_bytes(log) + "\": must match [a-z0-9][a-z0-9._-]{0,63}");
  }

  // A path that names no directory is the same bad argument as for dix status and rebuild.
  if (auto wrong = existing_directory_problem(a->get("db"))) return tool::refuse("dix wal", "--db " + a->get("db") + ": " + *wrong);
  // A demo or serve --dir names its store DIR/primary (issue 34).
  auto opened = wal_reader::open(store_dir(a->get("db")).path, log);
  if (!opened) {
    // A WAL damaged before valid records cannot be opened at all (decision 0034): the log
    // cannot serve the request, rather than a shorter log shown without a word.
    const auto& e = opened.error();
    if (is_log_fault(e.value())) {
      std::cerr << "dix wal: " << reason_code(e.value()) << ": " << e.message() << "\n";
      return exit_log;
    }
    std::cerr << "dix wal: " << e.to_string() << "\n";
    return exit_error;
  }
  auto& source = **opened;
  auto latest = source.latest_sequence();
  auto retention = source.retention(*from);
  if (!latest || !retention) {
    std::cerr << "dix wal: " << (!latest ? latest.error() : retention.error()).to_string() << "\n";
    return exit_error;
  }
  printer out(a->has("json"));
  out.store(source, *latest, *retention);

  auto fail = [&](const error& e) {
    auto reason = reason_code(e.value());
    std::cerr << "dix wal: " << reason << ": cannot read the transaction at sequence " << *from
              << " (oldest retained sequence " << retention->wal_oldest_sequence << ", latest " << *latest
              << "): " << e.message() << "\n";
    out.finish(std::make_pair(reason, e.message()));
    return is_log_fault(e.value()) ? exit_log : exit_error;
  };
  if (a->has("identity") && a->get("identity") != source.identity()) {
    return fail(error{errc::log_missing, "the store's identity is " + source.identity() + ", not " +
                                             a->get("identity")});
  }
  // Beyond the latest sequence the log holds nothing yet: an empty range, as `--from` the
  // latest plus one is when polling for new transactions. With --time the request is an anchor
  // to verify, and an anchor beyond the log's end fails as the tailer would fail it (§3.2).
  if (*from > *latest) {
    if (!a->has("time")) {
      out.finish(std::nullopt);
      return exit_ok;
    }
    return fail(error{errc::log_retention, "sequence " + std::to_string(*from) + " is beyond the latest sequence " +
                                               std::to_string(*latest) + ": no transaction has it yet"});
  }
  auto first = source.seek(*from, *time);
  // A sequence the retained WAL should hold but that a damaged record made RocksDB skip comes
  // back log_corrupt from the reader itself; a purged one log_retention. A sequence inside a
  // transaction is neither: RocksDB returns the transaction holding it, nothing was lost, and
  // the argument names no transaction start, so it is refused as a bad argument naming both
  // starts to use instead.
  if (!first && first.error().value() == errc::log_retention) {
    if (auto holding = source.seek_at_or_before(*from);
        holding && holding->sequence < *from && *from < holding->sequence + holding->count) {
      return tool::refuse("dix wal", "--from " + std::to_string(*from) +
                                         ": not the start of a transaction (the transaction at sequence " +
                                         std::to_string(holding->sequence) + " holds sequences " +
                                         std::to_string(holding->sequence) + " to " +
                                         std::to_string(holding->sequence + holding->count - 1) + "; the next starts at " +
                                         std::to_string(holding->sequence + holding->count) + ")");
    }
  }
  if (!first) return fail(first.error());
  out.transaction(*first);
  for (std::uint64_t printed = 1; printed < *limit; ++printed) {
    auto next = source.next();
    if (!next) {
      auto e = next.error();
      std::cerr << "dix wal: " << reason_code(e.value()) << " after " << printed << " transactions: " << e.message() << "\n";
      out.finish(std::make_pair(reason_code(e.value()), e.message()));
      return is_log_fault(e.value()) ? exit_log : exit_error;
    }
    if (!*next) break;
    out.transaction(**next);
  }
  out.finish(std::nullopt);
  return exit_ok;
}

}  // namespace dix::cli
