// `dix verify --db PATH ID [--rate ENTRIES_PER_S] [--limit N] [--report-only] [--json]
// [--timeout SECONDS]` (issue 31, protocol.md §4.10, formats.md §8): asks the owner of backend ID,
// in whichever process holds its runner lock, to prove that the index equals the projection of
// the primary store at a sequence, and prints what it proved or the records that differ. It reads
// the readiness segment first (no owner attached: exit 3; a rebuild running or the index not
// ready: refused, exit 4), leaves a request for the owner's watcher (request_verify) and waits on
// the segment's change counter for the owner's report with its nonce; a request no owner took
// within 10 s (or --timeout, if shorter) is withdrawn: exit 3. It never opens the store.
//
// Exit: 0 equal; 1 different (condemned unless --report-only); 2 bad arguments; 3 no owner
// attached; 4 not verified (refused, failed, interrupted or SECONDS passed: nothing is known).
#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include <dix/activity.hpp>
#include <dix/free_functions.hpp>
#include <dix/names.hpp>
#include <dix/segment.hpp>
#include <dix/verify.hpp>

#include "commands.hpp"
#include "paths.hpp"
#include "usage.hpp"
#include "wording.hpp"
#include "tool/args.hpp"
#include "tool/json.hpp"

namespace dix::cli {
namespace {

// "61440/200000 entries (30%), ETA 2.1 s": both sides' entries read of those expected (the percent
// capped at 99 until the report: the expected count is an estimate), the time left once known.
std::string verify_progress_text(const lag_figures& l) {
  std::string text = std::to_string(l.verify_read_entries) + "/" + std::to_string(l.verify_expected_entries) + " entries";
  if (l.verify_expected_entries > 0) {
    const auto percent = std::min<std::uint64_t>(99, l.verify_read_entries * 100 / l.verify_expected_entries);
    text += " (" + std::to_string(percent) + "%)";
  }
  if (l.verify_eta_ms >= 0) text += ", ETA " + duration_text(static_cast<std::uint64_t>(l.verify_eta_ms));
  return text;
}

}  // namespace
namespace {

using clock_type = std::chrono::steady_clock;
constexpr int exit_different = 1;
constexpr int exit_no_owner = 3;
constexpr int exit_not_verified = 4;
// How long an owner's watcher may take to take a request (it does at the poke, in milliseconds).
constexpr std::chrono::seconds owner_take_s{10};
// How long a report may still come after the owner's epoch moved or its runtime detached.
constexpr std::chrono::seconds owner_gone_grace{5};

// An outcome without a proof (exit 3 or 4): one line on stderr and, with --json, the object
// operations.md promises on stdout ({"id","verified":false,"code","message"}), so a script reads
// every outcome past the arguments from stdout.
struct unproven {
  std::string id;
  bool json = false;
  // On stderr: the code's name, then `message`.
  int fail(int exit, errc code, const std::string& message) const {
    std::cerr << "dix verify: " << to_string(code) << ": " << message << "\n";
    if (json) {
      std::cout << "{\"id\":" << tool::json_string(id) << ",\"verified\":false,\"code\":"
                << tool::json_string(std::string(to_string(code))) << ",\"message\":" << tool::json_string(message) << "}"
                << std::endl;
    }
    return exit;
  }
  int not_verified(errc code, const std::string& message) const { return fail(exit_not_verified, code, message); }
  int not_verified(const error& e) const { return fail(exit_not_verified, e.value(), e.message()); }
  int no_owner(const std::string& message) const { return fail(exit_no_owner, errc::unavailable, message); }
};

std::string hex(const std::string& bytes) {
  static const char* const digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// A record id as typed when it is printable ASCII, else its bytes in hex after "0x" (--json also
// gives record_id_hex, which is never ambiguous).
std::string printable(const std::string& bytes) {
  const bool plain = std::all_of(bytes.begin(), bytes.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
  return plain ? bytes : "0x" + hex(bytes);
}

// "main:42" per log, as `through` names the fence.
std::string sequences(const verify_result& r) {
  if (!r.through) return "?";
  std::string out;
  for (const auto& l : r.through->logs()) out += (out.empty() ? "" : ",") + l.log + ":" + std::to_string(l.sequence);
  return out;
}

std::string json_of(const std::string& id, const verify_report& report) {
  std::ostringstream out;
  out << "{\"id\":" << tool::json_string(id);
  if (!report.result) {
    out << ",\"verified\":false,\"code\":" << tool::json_string(std::string(to_string(report.code)))
        << ",\"message\":" << tool::json_string(report.message) << "}";
    return out.str();
  }
  const auto& r = *report.result;
  out << ",\"verified\":true,\"equal\":" << (r.equal ? "true" : "false") << ",\"through\":{";
  if (r.through) {
    bool first = true;
    for (const auto& l : r.through->logs()) {
      out << (first ? "" : ",") << tool::json_string(l.log) << ":" << l.sequence;
      first = false;
    }
  }
  out << "},\"records\":" << r.records << ",\"differences\":" << r.differences
      << ",\"condemned\":" << (r.condemned ? "true" : "false") << ",\"drifts\":[";
  for (std::size_t i = 0; i < r.drifts.size(); ++i) {
    const auto& d = r.drifts[i];
    out << (i ? "," : "") << "{\"kind\":" << tool::json_string(std::string(to_string(d.kind)))
        << ",\"log\":" << tool::json_string(d.log) << ",\"table\":" << d.table
        << ",\"record_id\":" << tool::json_string(printable(d.record_id)) << ",\"record_id_hex\":\"" << hex(d.record_id) << "\",\"index_version\":" << d.index_version
        << ",\"primary_version\":" << d.primary_version << "}";
  }
  out << "]}";
  return out.str();
}

void print_plain(const std::string& id, const verify_result& r) {
  if (r.equal) {
    std::cout << "verified " << id << " through " << sequences(r) << ": " << r.records << " records\n";
    return;
  }
  std::cout << id << " differs from its projection at " << sequences(r) << ": " << r.differences << " record"
            << (r.differences == 1 ? "" : "s") << " (" << r.records << " index entries read)\n";
  for (const auto& d : r.drifts) {
    std::cout << "  " << to_string(d.kind) << " " << d.log << "/" << d.table << "/" << printable(d.record_id);
    if (d.kind == drift_kind::stale) std::cout << " (index version " << d.index_version << ", primary " << d.primary_version << ")";
    std::cout << "\n";
  }
  if (r.differences > r.drifts.size()) std::cout << "  … and " << r.differences - r.drifts.size() << " more\n";
  std::cout << (r.condemned ? id + " is condemned (needs-rebuild, verify-failed): its owner rebuilds it\n"
                            : std::string("--report-only: nothing was condemned\n"));
}

}  // namespace

int run_verify(const std::vector<std::string>& argv) {
  int status = exit_usage;
  auto a = tool::args::parse_command(argv, {{"db", "rate", "limit", "timeout"}, {"report-only", "json"}, 1, 1, "backend id"},
                                     "dix verify", command_usage("verify"), status);
  if (!a) return status;
  std::string problem;
  if (!a->has("db")) problem = "--db PATH is required";
  verify_options options;
  options.report_only = a->has("report-only");
  // Default: a quarter of the rate the owner's scan measures; `max`: as fast as it goes.
  if (problem.empty() && a->has("rate") && a->get("rate") == "max") {
    options.entries_per_s = 0;
  } else if (problem.empty() && a->has("rate")) {
    options.entries_per_s = a->number("rate", 0, 1, 1000000000000ull, problem).value_or(0);
    if (!problem.empty()) problem += ", or max";
  }
  if (problem.empty()) options.limit = static_cast<std::uint32_t>(a->number("limit", 100, 0, 1000000, problem).value_or(100));
  std::uint64_t timeout_s = 0;
  if (problem.empty()) timeout_s = a->number("timeout", 3600, 1, 86400 * 365, problem).value_or(3600);
  if (!problem.empty()) return tool::refuse("dix verify", problem);
  if (auto wrong = existing_directory_problem(a->get("db"))) return tool::refuse("dix verify", "--db " + a->get("db") + ": " + *wrong);
  const auto& id = a->positional().front();
  if (!is_valid_backend_id(id)) return tool::refuse("dix verify", "\"" + id + "\" is not a valid backend id");
  const auto db = store_dir(a->get("db")).path;
  const unproven out{id, a->has("json")};

  // Is there an owner to ask? The segment says whether a runtime is attached and how the index
  // stands (only a ready index can be verified).
  auto reader = segment_reader::open(db);
  if (!reader) return out.not_verified(reader.error());
  if (!*reader) return out.no_owner(db.string() + " has no readiness segment: no owner of " + id + " is attached");
  auto table = (*reader)->read();
  if (!table) return out.not_verified(table.error());
  auto entry = std::find_if(table->entries.begin(), table->entries.end(), [&](const readiness_entry& e) { return e.id == id; });
  if (entry == table->entries.end()) {
    return out.not_verified(errc::not_registered, "backend id \"" + id + "\" has no slot in " + db.string() + ids_with_slots(*table));
  }
  if (!table->attached) {
    return out.no_owner("no runtime is attached to " + db.string() + ": no owner of " + id + " to ask (start it, e.g. dix serve)");
  }
  const auto state = entry->readiness.state;
  if (state == readiness_state::rebuilding) {
    return out.not_verified(errc::rebuilding, id + " is being rebuilt: verify it once it is ready");
  }
  if (state != readiness_state::ready) {
    return out.not_verified(errc::unavailable, id + " is " + std::string(to_string(state)) + " (" +
                                                   std::string(to_string(entry->readiness.reason)) +
                                                   "): only a ready index can be verified");
  }

  auto nonce = request_verify(db, id, options);
  if (!nonce) return out.not_verified(nonce.error());
  if (!a->has("json")) std::cout << "verifying " << id << " (its owner makes it durable at a fence, then scans)" << std::endl;
  auto finish = [&](const verify_report& r) {
    if (a->has("json")) std::cout << json_of(id, r) << "\n";
    if (!r.result) {
      std::cerr << "dix verify: " << id << " was not verified: " << to_string(r.code) << ": " << r.message << "\n";
      return exit_not_verified;  // the report's own object is printed above
    }
    if (!a->has("json")) print_plain(id, *r.result);
    return r.result->equal ? exit_ok : exit_different;
  };
  const auto start = clock_type::now();
  const auto deadline = start + std::chrono::seconds(timeout_s);
  // The owner's watcher takes a request at once; one nobody took soon means no owner runs (a
  // runtime attached may own nothing: stopped, or a standby).
  const auto take_by = start + std::min<std::chrono::seconds>(owner_take_s, std::chrono::seconds(timeout_s));
  bool taken = false;
  std::optional<clock_type::time_point> owner_changed_at;
  std::uint64_t shown_read = 0;  // the scan's progress last printed
  for (;;) {
    const auto seen = (*reader)->change_counter();  // before the report: a later one wakes the wait
    auto report = take_verify_report(db, id, *nonce);
    if (!report) return out.not_verified(report.error());
    if (*report) return finish(**report);
    if (!taken) {
      auto waiting = verify_request_waiting(db, id, *nonce);
      if (!waiting) return out.not_verified(waiting.error());
      taken = !*waiting;
    }
    const auto now = clock_type::now();
    if (!taken && now >= take_by) {
      auto withdrawn = withdraw_verify_request(db, id, *nonce);
      if (!withdrawn) return out.not_verified(withdrawn.error());
      if (*withdrawn) {
        return out.no_owner("no owner of " + id + " took the request within " +
                            std::to_string(std::chrono::duration_cast<std::chrono::seconds>(take_by - start).count()) +
                            " s: no runtime owns it now (stopped, or only standbys attached)");
      }
      taken = true;  // taken just now
    }
    if (now >= deadline) {
      return out.not_verified(errc::timeout, "no report from " + id + "'s owner within " + std::to_string(timeout_s) + " s");
    }
    // An owner that died or handed over meanwhile will not report: no runtime attached any more,
    // or the slot's epoch moved. (A verify that condemned its index is followed by a rebuild under
    // a new epoch, and its report may land just after the mint: a grace of owner_gone_grace.)
    if (taken && !owner_changed_at) {
      auto now_table = (*reader)->read();
      if (!now_table) return out.not_verified(now_table.error());
      auto now_entry = std::find_if(now_table->entries.begin(), now_table->entries.end(),
                                    [&](const readiness_entry& e) { return e.id == id; });
      if (!now_table->attached || now_entry == now_table->entries.end() ||
          now_entry->readiness.owner_epoch != entry->readiness.owner_epoch) {
        owner_changed_at = now;
      } else if (!a->has("json") && now_entry->lag && now_entry->lag->epoch == entry->readiness.owner_epoch) {
        // The owner's scan as it publishes it (the metrics segment's verify part), like dix
        // rebuild --wait: "progress by-brand: 61440/200000 entries (30%), ETA 2.1 s".
        const auto l = *now_entry->lag;
        if (l.verifying && l.verify_read_entries > shown_read) {
          shown_read = l.verify_read_entries;
          std::cout << "progress " << id << ": " << verify_progress_text(l) << std::endl;
        }
      }
    }
    if (owner_changed_at && now >= *owner_changed_at + owner_gone_grace) {
      return out.not_verified(errc::cancelled, "the owner of " + id + " stopped or changed during the verify: nothing was proven");
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    (*reader)->wait_change(seen, std::min<std::chrono::milliseconds>(left, std::chrono::milliseconds(taken && !owner_changed_at ? 1000 : 100)));
  }
}

}  // namespace dix::cli
