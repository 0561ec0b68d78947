// `dix rebuild --db PATH ID [--wait [--timeout SECONDS]]`: asks the owner of backend ID for a
// rebuild through the database's shared readiness segment (request_rebuild, api.md §7), from a
// process that has no runtime. It maps the segment read-write, sets the slot's rebuild_request
// and wakes the watchers; it never opens the store. The owner resets the index and rebuilds it
// from a snapshot scan (protocol.md §11).
//
// --wait then follows the rebuild it asked for until it is over, from the readiness segment and
// the owner's progress in the metrics segment (segment_reader, read-only): it sleeps on the
// segment's change-counter futex, with a tick of redraw_ms to redraw the progress the owner
// rewrites without moving that counter. The rebuild it asked for is over when the owner epoch has
// grown past the one seen before the request (an attempt mints a new epoch), an attempt is known
// to have run (the slot read `rebuilding`, or the metrics segment holds the end of a scan under
// the new epoch) and the slot reads `ready`; a rebuild already running when the request was made
// absorbs it (§11.2), so then `ready` under that rebuild's epoch ends the wait too.
// `unavailable`, or `needs-rebuild` with a reason other than `rebuild-requested` (the owner's
// condemnation that precedes the attempt), after an attempt started (`rebuilding` seen, the
// epoch or the attempt count moved) is a failure.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <string>

#include <dix/free_functions.hpp>
#include <dix/names.hpp>
#include <dix/segment.hpp>

#include "commands.hpp"
#include "paths.hpp"
#include "usage.hpp"
#include "wording.hpp"
#include "tool/args.hpp"

namespace dix::cli {
namespace {

using clock_type = std::chrono::steady_clock;

// How often the progress is redrawn on a terminal, and the futex wait's timeout.
constexpr std::chrono::milliseconds redraw_ms{250};
// How often a plain progress line is printed while the figures move (stdout not a terminal).
constexpr std::chrono::milliseconds plain_line_ms{1000};
constexpr std::size_t bar_cells = 24;

int fail(const std::string& text) {
  std::cerr << "dix rebuild: " << text << "\n";
  return exit_error;
}

// The entry of `id` in `table`, or nullptr.
const readiness_entry* entry_of(const readiness_table& table, const std::string& id) {
  auto it = std::find_if(table.entries.begin(), table.entries.end(), [&](const readiness_entry& e) { return e.id == id; });
  return it == table.entries.end() ? nullptr : &*it;
}

std::string state_text(const std::string& id, const readiness& r) {
  std::string text = id + ": " + std::string(to_string(r.state));
  if (r.reason != readiness_reason::none) text += " (" + std::string(to_string(r.reason)) + ")";
  if (r.rebuild_attempts > 0) text += ", attempt " + std::to_string(r.rebuild_attempts);
  return text + ", epoch " + std::to_string(r.owner_epoch);
}

// What the wait shows: on a terminal one line redrawn in place, otherwise a line per state change
// and a progress line at most every plain_line_ms while the figures move.
class display {
 public:
  explicit display(bool tty) : tty_(tty) {}

  void show(const std::string& id, const readiness_entry& e) {
    const auto state = state_text(id, e.readiness);
    const auto* p = e.readiness.state == readiness_state::rebuilding && e.progress ? &*e.progress : nullptr;
    if (tty_) {
      std::string line = state;
      if (p) line = id + " rebuilding " + progress_bar(*p, bar_cells) + " " + progress_text(*p);
      std::cout << "\r" << line << "\x1b[K" << std::flush;
      drawn_ = true;
      return;
    }
    if (state != last_state_) {
      std::cout << state << std::endl;
      last_state_ = state;
    }
    if (!p) return;
    const auto text = id + ": rebuilding: " + progress_text(*p);
    const auto now = clock_type::now();
    const bool ended_now = p->scan_ended && !scan_end_shown_;
    if (text != last_progress_ && (ended_now || !last_line_ || now - *last_line_ >= plain_line_ms)) {
      std::cout << text << std::endl;
      last_progress_ = text;
      last_line_ = now;
      scan_end_shown_ = scan_end_shown_ || p->scan_ended;
    }
  }

  // The last line: ends the redrawn one first; a plain line already shown is not repeated.
  void finish(const std::string& line) {
    if (tty_ && drawn_) std::cout << "\r\x1b[K";
    if (tty_ || line != last_state_) std::cout << line << std::endl;
  }

 private:
  bool tty_;
  bool drawn_ = false;
  std::string last_state_, last_progress_;
  std::optional<clock_type::time_point> last_line_;
  bool scan_end_shown_ = false;
};

// `ready` after the requested rebuild: what it took, when the owner reported its scan.
std::string ready_line(const std::string& id, const readiness_entry& e) {
  std::string line = id + ": ready, epoch " + std::to_string(e.readiness.owner_epoch);
  if (e.progress && e.progress->scan_ended) {
    line += ": rebuilt " + std::to_string(e.progress->rebuilt_records) + " records by a scan at " +
            std::to_string(e.progress->scan_records_per_s) + " records/s";
  }
  return line;
}

// `timeout_s` 0: no limit.
int wait_for_rebuild(const std::string& db, const std::string& id, std::uint64_t timeout_s) {
  auto reader = segment_reader::open(db);
  if (!reader) return fail(reader.error().to_string());
  if (!*reader) {
    // A runtime holding the attach lock without the file: it was removed under it (issue 34).
    if (auto held = segment_reader::runtime_attached(db); held && *held) {
      return fail(db + "'s readiness segment is missing while a runtime is attached (attach.lock is held): it was removed "
                       "under the running runtime; no rebuild can be asked until that runtime stops and another attaches");
    }
    return fail(db + " has no readiness segment: no runtime has attached, so nothing would rebuild " + id);
  }
  auto table = (*reader)->read();
  if (!table) return fail(table.error().to_string());
  const auto* found = entry_of(*table, id);
  if (!found) {
    return fail("not_registered: backend id \"" + id + "\" has no slot in the readiness segment of " + db +
                ids_with_slots(*table));
  }
  if (!table->attached) {
    return fail("no runtime is attached to " + db + ", so nothing would rebuild " + id +
                " now: start its owner (e.g. dix serve), or leave out --wait to leave the request for it");
  }
  const readiness before = found->readiness;
  // A rebuild already running absorbs the request and ends under the epoch it runs with.
  const bool absorbed = before.state == readiness_state::rebuilding;
  if (auto stored = request_rebuild(db, id); !stored) return fail(stored.error().to_string());
  std::cout << "rebuild requested for " << id << " (owner epoch " << before.owner_epoch
            << "); waiting until it is rebuilt" << std::endl;

  display out(::isatty(STDOUT_FILENO) != 0);
  // A plain time point, not an optional: GCC 12 at -O3 warns that the optional may be uninitialized.
  const auto deadline = timeout_s == 0 ? clock_type::time_point::max()
                                       : clock_type::now() + std::chrono::seconds(timeout_s);
  // Seen since the request: the slot `rebuilding` (an attempt ran), and any sign of an attempt
  // (that, or the epoch or the attempt count moved).
  bool rebuilding_seen = absorbed, attempt_seen = absorbed;
  for (;;) {
    // The counter before the table: a change made after this load ends the wait below at once.
    const auto seen = (*reader)->change_counter();
    table = (*reader)->read();
    if (!table) return fail(table.error().to_string());
    const auto* found_now = entry_of(*table, id);
    if (!table->attached || found_now == nullptr) {
      out.finish(id + ": unknown");
      return fail("the runtime detached before " + id + " was rebuilt");
    }
    // The scan figures of the epoch held before the request are an earlier build's (the owner
    // says `rebuilding` before it mints the attempt's epoch): not this rebuild's, not shown.
    readiness_entry entry = *found_now;
    if (entry.progress && !absorbed && entry.progress->epoch <= before.owner_epoch) entry.progress.reset();
    const auto* e = &entry;
    const auto& r = e->readiness;
    rebuilding_seen = rebuilding_seen || r.state == readiness_state::rebuilding;
    attempt_seen = attempt_seen || rebuilding_seen || r.owner_epoch > before.owner_epoch ||
                   r.rebuild_attempts != before.rebuild_attempts;
    // `ready` under a grown epoch ends it once an attempt is known to have run under it: seen
    // rebuilding, or its scan's end in the metrics segment (segment_reader shows only the slot's
    // epoch's figures). A bare new epoch is not enough: a successor's acquisition mints one before
    // it takes the request.
    const bool grown = r.owner_epoch > before.owner_epoch || (absorbed && r.owner_epoch == before.owner_epoch);
    const bool scanned = e->progress && e->progress->scan_ended;
    if (r.state == readiness_state::ready && grown && (rebuilding_seen || scanned)) {
      out.finish(ready_line(id, *e));
      return exit_ok;
    }
    // `needs-rebuild` for the request itself is the owner's condemnation before its attempt.
    const bool failed = (r.state == readiness_state::needs_rebuild && r.reason != readiness_reason::rebuild_requested) ||
                        r.state == readiness_state::unavailable;
    if (attempt_seen && failed) {
      out.finish(state_text(id, r));
      return fail("the rebuild of " + id + " failed: " + std::string(to_string(r.state)) + " (" +
                  std::string(to_string(r.reason)) + ")" +
                  (r.state == readiness_state::needs_rebuild ? "; the owner retries after its backoff" : ""));
    }
    // Until the owner takes the request the slot reads as before: nothing new to show.
    const bool as_before = r.state == before.state && r.reason == before.reason && r.owner_epoch == before.owner_epoch;
    if (attempt_seen || !as_before) out.show(id, *e);
    const auto now = clock_type::now();
    if (now >= deadline) {
      out.finish(state_text(id, r));
      return fail(id + " was not rebuilt within " + std::to_string(timeout_s) + " s");
    }
    const auto left = deadline - now;
    (*reader)->wait_change(seen, left < redraw_ms ? std::chrono::ceil<std::chrono::milliseconds>(left) : redraw_ms);
  }
}

}  // namespace

int run_rebuild(const std::vector<std::string>& argv) {
  int status = exit_usage;
  auto a = tool::args::parse_command(argv, {{"db", "timeout"}, {"wait"}, 1, 1, "backend id"}, "dix rebuild",
                                     command_usage("rebuild"), status);
  if (!a) return status;
  std::string problem;
  if (!a->has("db")) problem = "--db PATH is required";
  else if (a->has("timeout") && !a->has("wait")) problem = "--timeout needs --wait";
  std::uint64_t seconds = 0;
  if (problem.empty() && a->has("timeout")) seconds = a->number("timeout", 0, 1, 86400 * 365, problem).value_or(0);
  if (!problem.empty()) {
    return tool::refuse("dix rebuild", problem);
  }
  // A path that names no directory is the same bad argument as for dix status.
  if (auto wrong = existing_directory_problem(a->get("db"))) {
    return tool::refuse("dix rebuild", "--db " + a->get("db") + ": " + *wrong);
  }
  const auto& id = a->positional().front();
  // A demo or serve --dir names its store DIR/primary (issue 34).
  const auto db = store_dir(a->get("db")).path;
  // An id outside the name rules is refused by request_rebuild before it looks at anything.
  if (a->has("wait") && is_valid_backend_id(id)) {
    return wait_for_rebuild(db.string(), id, seconds);
  }
  auto stored = request_rebuild(db, id);
  if (!stored) {
    if (stored.error().value() == errc::invalid_argument) return tool::refuse("dix rebuild", stored.error().to_string());
    std::string ids;
    if (stored.error().value() == errc::not_registered) {
      if (auto reader = segment_reader::open(db); reader && *reader) {
        if (auto table = (*reader)->read()) ids = ids_with_slots(*table);
      }
    }
    std::cerr << "dix rebuild: " << stored.error().to_string() << ids << "\n";
    return exit_error;
  }
  std::cout << "rebuild requested for " << id << "\n";
  return exit_ok;
}

}  // namespace dix::cli
