// The checks of the backend conformance kit (<dix/testing/backend_conformance.hpp>, decision
// 0024). Each builds its backends with the subject's factory over temporary directories, drives
// them with batches of a fixed scenario and compares what the backend reports (durable_cursor,
// completions, state changes, host notes) and stores (the subject's listing) with a model of the
// scenario. Waits are bounded condition waits on completions and host calls, never sleeps.
#include <catch2/catch.hpp>

#include <signal.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <utility>

#include <dix/testing/backend_conformance.hpp>

namespace dix::testing {

// ---------------------------------------------------------------------------------------------
// conformance_host

bool conformance_host::is_owner_epoch(epoch_t e) const noexcept {
  std::unique_lock lock(mutex_);
  ++checks_;
  cv_.notify_all();
  cv_.wait(lock, [&] { return !held_ || std::this_thread::get_id() == holder_; });
  if (supersede_) {
    owner_ = *supersede_;
    supersede_.reset();
  }
  return owner_ == e;
}

dix::readiness conformance_host::readiness() const noexcept {
  std::lock_guard lock(mutex_);
  return {readiness_state::ready, readiness_reason::none, 0, owner_};
}

void conformance_host::note_unindexable(std::string_view reason) noexcept {
  std::lock_guard lock(mutex_);
  unindexable_.emplace_back(reason);
}

void conformance_host::request_rebuild() noexcept {
  std::lock_guard lock(mutex_);
  ++rebuilds_;
}

result<coverage> conformance_host::admit_query(const coverage_mode& mode, cancel_token) {
  return coverage{coverage_state::current, mode.tolerance, milliseconds{0}};
}

void conformance_host::note_hold(epoch_t, backend_hold) noexcept {}

void conformance_host::set_owner_epoch(epoch_t e) {
  std::lock_guard lock(mutex_);
  owner_ = e;
}

epoch_t conformance_host::owner_epoch() const {
  std::lock_guard lock(mutex_);
  return owner_;
}

void conformance_host::supersede_at_next_check(epoch_t next) {
  std::lock_guard lock(mutex_);
  supersede_ = next;
}

void conformance_host::hold_epoch_checks() {
  std::lock_guard lock(mutex_);
  held_ = true;
  holder_ = std::this_thread::get_id();
}

void conformance_host::release_epoch_checks() {
  std::lock_guard lock(mutex_);
  held_ = false;
  cv_.notify_all();
}

std::size_t conformance_host::epoch_checks() const {
  std::lock_guard lock(mutex_);
  return checks_;
}

bool conformance_host::wait_epoch_checks(std::size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, timeout, [&] { return checks_ >= n; });
}

std::vector<std::string> conformance_host::unindexable_codes() const {
  std::lock_guard lock(mutex_);
  return unindexable_;
}

std::size_t conformance_host::rebuild_requests() const {
  std::lock_guard lock(mutex_);
  return rebuilds_;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Plumbing: directories, waits, processes.

class temp_dir {
 public:
  temp_dir() {
    auto pattern = (std::filesystem::temp_directory_path() / "dix-conformance-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

// A completion and a bounded wait for its outcome.
class waiter {
 public:
  completion make() {
    return completion([this](result<void> r) {
      std::lock_guard lock(mutex_);
      outcome_ = std::move(r);
      cv_.notify_all();
    });
  }
  result<void> wait(std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_for(lock, limit, [&] { return outcome_.has_value(); })) {
      return error{errc::timeout, "completion not called within the kit's wait limit"};
    }
    return *outcome_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::optional<result<void>> outcome_;
};

// The state changes a backend emitted, in order, with marks: mark() returns a position, and
// wait_after(kind, position) waits for such a change emitted after it.
class change_log {
 public:
  explicit change_log(std::chrono::milliseconds limit) : limit_(limit) {}
  std::function<void(state_change)> callback() {
    return [this](state_change c) {
      std::lock_guard lock(mutex_);
      kinds_.push_back(c.kind);
      cv_.notify_all();
    };
  }
  std::size_t mark() {
    std::lock_guard lock(mutex_);
    return kinds_.size();
  }
  bool wait_after(state_change_kind kind, std::size_t position) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, limit_, [&] {
      return std::find(kinds_.begin() + static_cast<std::ptrdiff_t>(std::min(position, kinds_.size())), kinds_.end(),
                       kind) != kinds_.end();
    });
  }
  std::size_t count(state_change_kind kind) {
    std::lock_guard lock(mutex_);
    return static_cast<std::size_t>(std::count(kinds_.begin(), kinds_.end(), kind));
  }

 private:
  std::chrono::milliseconds limit_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<state_change_kind> kinds_;
};

// Runs `body` in a forked child that _exit()s with its result (2 if it threw): it never returns
// into Catch. The child uses no REQUIRE.
pid_t fork_child(const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int code = 3;
    try {
      code = body();
    } catch (...) {
      code = 2;
    }
    ::_exit(code);
  }
  return pid;
}

// The exit status of `pid`, or 128 + the signal that ended it.
int wait_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

constexpr int killed = 128 + SIGKILL;

// What a child's exit code means (the child's own failures, before the kill).
std::string child_outcome(int code) {
  switch (code) {
    case killed: return "killed as planned";
    case 2: return "the child threw";
    case 10: return "make(dir) returned no backend in the child";
    case 11: return "a delivery was not accepted in the child";
    case 12: return "a barrier failed in the child";
    case 13: return "the backend did not call host.is_owner_epoch for each batch it took (its barrier completed over more batches than it asked about, or the child's wait for those calls ran out); it must ask before applying each one: docs/backends.md §0, installed as share/doc/dix/backends.md";
    case 14: return "the child reached its end without being killed (a kill point was never reached)";
    case 16: return "reset failed in the child";
    default: return "exit code " + std::to_string(code);
  }
}

[[noreturn]] void die() {
  ::raise(SIGKILL);
  ::_exit(99);
}

// ---------------------------------------------------------------------------------------------
// The scenario: batch n (n ≥ 1) puts record r<n> and the record "hot" at projection(n), version
// n, deletes r<n-2>, and completes cursor n of log "main".

constexpr const char* scenario_log = "main";
constexpr std::uint32_t scenario_table = 7;

cursor cursor_at(std::uint64_t n) {
  return cursor::make({log_position{scenario_log, "conformance-identity", n, 1000 + n}}).value();
}

std::string describe(const std::optional<cursor>& c) { return c ? c->to_json() : std::string("no cursor"); }

record_entry put(std::string id, std::uint64_t n, std::string projection) {
  record_entry e;
  e.log = scenario_log;
  e.table = scenario_table;
  e.record_id = std::move(id);
  e.log_version = 1000 + n;  // the header time (cursor_at(n)'s), never the version: a backend must store state.version
  e.state.kind = state_kind::record;
  e.state.version = n;
  e.state.projection = std::move(projection);
  return e;
}

record_entry absent(std::string id, std::uint64_t n) {
  record_entry e;
  e.log = scenario_log;
  e.table = scenario_table;
  e.record_id = std::move(id);
  e.log_version = 1000 + n;  // the header time (cursor_at(n)'s), never the version: a backend must store state.version
  e.state.kind = state_kind::absent;
  return e;
}

std::string record_name(std::uint64_t n) { return "r" + std::to_string(n); }

std::vector<record_entry> scenario_records(const backend_subject& s, std::uint64_t n) {
  std::vector<record_entry> records;
  records.push_back(put(record_name(n), n, s.projection(n)));
  records.push_back(put("hot", n, s.projection(n)));
  if (n > 2) records.push_back(absent(record_name(n - 2), n));
  return records;
}

std::shared_ptr<const batch> make_batch(epoch_t epoch, std::vector<record_entry> records, std::optional<cursor> through,
                                        std::uint64_t bytes = 100) {
  auto b = std::make_shared<batch>();
  b->epoch = epoch;
  b->records = std::move(records);
  b->through = std::move(through);
  b->bytes = bytes;
  if (b->through) {
    log_transaction t;
    t.log = scenario_log;
    t.sequence = b->through->logs().front().sequence;
    t.time = b->through->logs().front().time;
    for (std::uint32_t i = 0; i < b->records.size(); ++i) t.mutations.push_back(mutation{i, b->records[i].log_version});
    b->transactions.push_back(std::move(t));
  } else {
    b->rebuild = true;  // a scan chunk
  }
  return b;
}

std::shared_ptr<const batch> scenario_batch(const backend_subject& s, std::uint64_t n, epoch_t epoch = 1,
                                            std::uint64_t bytes = 100) {
  return make_batch(epoch, scenario_records(s, n), cursor_at(n), bytes);
}

// The model: what an index holds after the records, in order (unindexable projections and
// unindexable states remove, as absent does).
void model_apply(const backend_subject& s, stored_records& model, const std::vector<record_entry>& records) {
  const auto bad = s.unindexable();
  for (const auto& r : records) {
    stored_key key{r.log, r.table, r.record_id};
    if (r.state.kind == state_kind::record && r.state.projection != bad) model[key] = r.state.version;
    else model.erase(key);
  }
}

stored_records expected(const backend_subject& s, std::uint64_t k) {
  stored_records model;
  for (std::uint64_t n = 1; n <= k; ++n) model_apply(s, model, scenario_records(s, n));
  return model;
}

std::string render(const stored_records& rows) {
  std::ostringstream out;
  out << rows.size() << " record(s):";
  for (const auto& [key, version] : rows) out << " " << key.log << "/" << key.table << "/" << key.record_id << "@" << version;
  return out.str();
}

std::string render(const std::set<stored_key>& keys) {
  std::ostringstream out;
  out << keys.size() << " record(s):";
  for (const auto& key : keys) out << " " << key.log << "/" << key.table << "/" << key.record_id;
  return out.str();
}

// Which offered cursor `c` is: 0 for none, n for cursor n (1 ≤ n ≤ last), nothing for another.
std::optional<std::uint64_t> offered_prefix(const std::optional<cursor>& c, std::uint64_t last) {
  if (!c) return 0;
  for (std::uint64_t n = 1; n <= last; ++n) {
    if (*c == cursor_at(n)) return n;
  }
  return std::nullopt;
}

void require_subject(const backend_subject& s) {
  INFO("backend_subject " << s.name);
  REQUIRE(static_cast<bool>(s.make));
  REQUIRE(static_cast<bool>(s.projection));
  REQUIRE(static_cast<bool>(s.unindexable));
  REQUIRE(static_cast<bool>(s.stored));
  REQUIRE(s.unindexable() != s.projection(1));
}

// One backend instance over a directory, attached to a host of its own, its changes logged.
struct session {
  const backend_subject& subject;
  conformance_host host;
  change_log changes;
  std::shared_ptr<backend> b;
  subscription sub;
  std::chrono::milliseconds limit{0};  // for one completion: the subject's wait limit and a barrier spacing

  session(const backend_subject& s, const std::filesystem::path& dir, epoch_t epoch = 1)
      : subject(s), host(epoch), changes(s.wait_limit) {
    require_subject(s);
    b = s.make(dir);
    REQUIRE(b);
    limit = s.wait_limit + b->min_barrier_interval();
    b->attach(host);
    sub = b->on_state_change(changes.callback());
  }
  ~session() {
    host.release_epoch_checks();  // a check that failed while holding them must not hang here
    sub.reset();  // before the backend it points into
    b.reset();
  }
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  result<void> barrier() {
    waiter w;
    b->flush(flush_reason::age, w.make());
    return w.wait(limit);
  }
  result<void> shutdown(epoch_t epoch) {
    waiter w;
    b->shutdown(epoch, w.make());
    return w.wait(limit);
  }
  result<void> reset(epoch_t epoch) {
    waiter w;
    b->reset(epoch, w.make());
    return w.wait(limit);
  }
  std::optional<cursor> durable() {
    auto d = b->durable_cursor();
    INFO("durable_cursor(): " << (d ? std::string("ok") : d.error().message()));
    REQUIRE(d);
    return *d;
  }
  stored_records stored() { return subject.stored(*b); }
  void deliver(std::shared_ptr<const batch> batch_) {
    INFO("delivering the batch through " << describe(batch_->through));
    REQUIRE(b->deliver(std::move(batch_)) == delivery_result::accepted);
    ++accepted;
  }
  std::uint64_t accepted = 0;  // batches deliver() handed over and the backend accepted
  void deliver_scenario(std::uint64_t from, std::uint64_t to, epoch_t epoch = 1) {
    for (auto n = from; n <= to; ++n) deliver(scenario_batch(subject, n, epoch));
  }
  // Delivers scenario batches from..to, a barrier, and checks the state after batch `to`.
  void advance(std::uint64_t from, std::uint64_t to, epoch_t epoch = 1);
  // Waits until the applier asked is_owner_epoch `n` times in all (before applying each batch),
  // the message scoped to this wait alone.
  void require_epoch_checks(std::size_t n) {
    INFO("waiting for the applier's is_owner_epoch call(s) (docs/backends.md §0, installed as share/doc/dix/backends.md: "
         "before applying each batch); so far "
         << host.epoch_checks() << " of " << n);
    REQUIRE(host.wait_epoch_checks(n, limit));
  }
  // durable_cursor() is cursor `n` and the index holds the scenario's first n batches.
  void require_at(std::uint64_t n) {
    INFO("expected the state after batch " << n);
    CHECK(describe(durable()) == describe(n == 0 ? std::optional<cursor>{} : cursor_at(n)));
    const auto rows = stored();
    const auto model = expected(subject, n);
    INFO("stored: " << render(rows));
    INFO("model:  " << render(model));
    CHECK(rows == model);
    require_finds(model, n);
    require_digest(model, n);
  }
  // For a backend that keeps a digest (backend::open_digest, formats.md §7): the view's cursor is
  // cursor n, its digest the model's, and its entries exactly the model's records in next()'s
  // order (each log together, tables ascending, ids ascending), each with its version and entry
  // hash. A backend without one answers not_supported.
  void require_digest(const stored_records& model, std::uint64_t n) {
    auto opened = b->open_digest();
    if (!opened && opened.error().value() == errc::not_supported) return;
    INFO("open_digest(): " << (opened ? std::string("ok") : opened.error().message()));
    REQUIRE(opened);
    const auto view = std::move(*opened);
    CHECK(describe(view->through()) == describe(n == 0 ? std::optional<cursor>{} : cursor_at(n)));
    index_digest want;
    std::map<stored_key, std::pair<std::uint64_t, hash128>> want_entries;
    for (const auto& [key, version] : model) {
      const auto h = entry_hash(key.log, key.table, key.record_id, version, subject.projection(version));
      want.add(h);
      want_entries[key] = {version, h};
    }
    INFO("digest: " << to_hex(view->digest().sum) << " over " << view->digest().records << " record(s); the model's "
                    << to_hex(want.sum) << " over " << want.records);
    CHECK(view->digest() == want);
    std::map<stored_key, std::pair<std::uint64_t, hash128>> got;
    std::set<std::string> logs_done;
    std::optional<stored_key> last;
    std::string order_error;
    auto scanned = view->for_each_entry([&](const digest_entry& e) {
      stored_key key{e.log, e.table, e.record_id};
      if (last && last->log != e.log) logs_done.insert(last->log);
      if (order_error.empty() && logs_done.count(e.log) > 0) {
        order_error = "the entries of log " + e.log + " are not together";
      }
      if (order_error.empty() && last && last->log == e.log &&
          (e.table < last->table || (e.table == last->table && !(last->record_id < e.record_id)))) {
        order_error = "not ascending by table, then record id: " + render(std::set<stored_key>{*last}) + " then " +
                      render(std::set<stored_key>{key});
      }
      if (order_error.empty() && !got.emplace(key, std::make_pair(e.version, e.hash)).second) {
        order_error = "an entry listed twice: " + e.record_id;
      }
      last = key;
      return true;
    });
    INFO("for_each_entry(): " << (scanned ? std::string("ok") : scanned.error().message()));
    REQUIRE(scanned);
    INFO(order_error);
    CHECK(order_error.empty());
    CHECK(got == want_entries);
  }
  // With the subject's `finds`: for each n ≤ last, a query for projection(n) answers exactly the
  // records the model holds at version n (records the kit writes carry projection(n) at version n).
  void require_finds(const stored_records& model, std::uint64_t last) {
    if (!subject.finds) return;
    for (std::uint64_t n = 1; n <= last; ++n) {
      std::set<stored_key> want;
      for (const auto& [key, version] : model) {
        if (version == n) want.insert(key);
      }
      const auto found = subject.finds(*b, n);
      const std::set<stored_key> got(found.begin(), found.end());
      INFO("finds(" << n << "), a query for projection(" << n << "): " << render(got) << "; the model holds "
                    << render(want) << " at version " << n << " (an entry an update or delete left behind?)");
      CHECK(got == want);
      CHECK(found.size() == got.size());  // each record once
    }
  }
};

// Reports the outcome's error in the failure message.
#define DIX_REQUIRE_OK(expr)                                                        \
  do {                                                                               \
    auto dix_outcome_ = (expr);                                                      \
    INFO(#expr << ": " << (dix_outcome_ ? std::string("ok") : dix_outcome_.error().message())); \
    REQUIRE(dix_outcome_);                                                           \
  } while (false)

void session::advance(std::uint64_t from, std::uint64_t to, epoch_t epoch) {
  deliver_scenario(from, to, epoch);
  DIX_REQUIRE_OK(barrier());
  // The barrier made every accepted batch durable, so each was applied, and each asked
  // is_owner_epoch first: the verdict of the epoch-fencing cases is known here, at once, rather
  // than after their waits for checks that never come run out.
  INFO("the barrier completed over " << accepted << " accepted batch(es) after " << host.epoch_checks()
       << " host.is_owner_epoch call(s): a backend must ask before applying each batch and before "
          "publishing each barrier's cursor (docs/backends.md §0, installed as share/doc/dix/backends.md)");
  REQUIRE(host.epoch_checks() >= accepted);
  require_at(to);
}

// A fresh instance over `dir` finds the state after batch n, and shuts down.
void reopen_at(const backend_subject& s, const std::filesystem::path& dir, std::uint64_t n, epoch_t epoch) {
  session reopened(s, dir, epoch);
  reopened.require_at(n);
  DIX_REQUIRE_OK(reopened.shutdown(epoch));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The checks

void check_barrier_publishes_offered_cursor(const backend_subject& s) {
  temp_dir dir;
  {
    session x(s, dir.path());
    CHECK_FALSE(x.durable());  // a fresh directory has no cursor
    CHECK(x.stored().empty());
    x.deliver_scenario(1, 3);
    const auto before = x.changes.mark();
    DIX_REQUIRE_OK(x.barrier());
    x.require_at(3);
    CHECK(x.changes.wait_after(state_change_kind::changed, before));  // a barrier emits changed
    DIX_REQUIRE_OK(x.barrier());  // nothing new: the cursor stays
    x.require_at(3);
    // A scan chunk carries no `through`: its barrier writes no cursor.
    x.deliver(make_batch(1, scenario_records(s, 4), std::nullopt));
    DIX_REQUIRE_OK(x.barrier());
    CHECK(describe(x.durable()) == describe(cursor_at(3)));
    x.advance(5, 5);
    DIX_REQUIRE_OK(x.shutdown(1));
  }
  reopen_at(s, dir.path(), 5, 1);
}

void check_nothing_durable_before_barrier(const backend_subject& s) {
  temp_dir dir;
  session x(s, dir.path());
  x.advance(1, 2);
  const auto checks = x.host.epoch_checks();
  x.deliver_scenario(3, 5);
  // The applier asks about each batch before applying it: all three were taken.
  x.require_epoch_checks(checks + 3);
  for (int i = 0; i < 3; ++i) CHECK(describe(x.durable()) == describe(cursor_at(2)));
  DIX_REQUIRE_OK(x.barrier());
  x.require_at(5);
  DIX_REQUIRE_OK(x.shutdown(1));
}

void check_kill_between_apply_and_barrier(const backend_subject& s) {
  require_subject(s);
  // Seeded, so every run tries the same scenarios; which prefix survives may differ per run, and
  // every one is checked for exactness. Then one scenario per kill point the subject names inside
  // a barrier.
  enum class kill_at { delivered, taken, barrier_requested, after_barrier, barrier_step };
  struct scenario {
    kill_at mode;
    std::uint64_t synced, unsynced;
    std::size_t step = 0;
  };
  std::mt19937_64 rng(0x13'0024);
  auto uniform = [&](std::uint64_t lo, std::uint64_t hi) { return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng); };
  std::vector<scenario> scenarios;
  const kill_at modes[] = {kill_at::delivered, kill_at::taken, kill_at::barrier_requested, kill_at::after_barrier};
  for (std::size_t i = 0; i < 8; ++i) {
    const auto mode = modes[i % 4];
    const auto synced = uniform(1, 4);
    scenarios.push_back({mode, synced, mode == kill_at::after_barrier ? 0 : uniform(1, 5)});
  }
  if (s.arm_barrier_kill) {
    for (std::size_t k = 0; k < s.barrier_kill_points; ++k) scenarios.push_back({kill_at::barrier_step, 2, 3, k});
  }
  for (const auto& [mode, synced, unsynced, step] : scenarios) {
    const auto total = synced + unsynced;
    INFO(synced << " batch(es) and a barrier, then " << unsynced << " more, killed "
                << (mode == kill_at::delivered           ? std::string("once delivered")
                    : mode == kill_at::taken             ? std::string("once the applier took them")
                    : mode == kill_at::barrier_requested ? std::string("after requesting a barrier")
                    : mode == kill_at::after_barrier     ? std::string("right after the barrier")
                                                         : "at step " + std::to_string(step) + " of the next barrier"));
    temp_dir dir;
    const pid_t child = fork_child([&, mode = mode, synced = synced, unsynced = unsynced, step = step] {
      conformance_host host;
      auto b = s.make(dir.path());
      if (!b) return 10;
      b->attach(host);
      const auto limit = s.wait_limit + b->min_barrier_interval();
      for (std::uint64_t n = 1; n <= synced; ++n) {
        if (b->deliver(scenario_batch(s, n)) != delivery_result::accepted) return 11;
      }
      waiter w;
      b->flush(flush_reason::age, w.make());
      if (!w.wait(limit)) return 12;
      if (host.epoch_checks() < synced) return 13;  // applied without asking: known now, no wait
      const auto checks = host.epoch_checks();
      for (auto n = synced + 1; n <= total; ++n) {
        if (b->deliver(scenario_batch(s, n)) != delivery_result::accepted) return 11;
      }
      if (mode == kill_at::taken && !host.wait_epoch_checks(checks + unsynced, s.wait_limit)) return 13;
      if (mode == kill_at::barrier_requested) b->flush(flush_reason::age, completion([](result<void>) {}));
      if (mode == kill_at::barrier_step) {
        s.arm_barrier_kill(*b, step, [] { die(); });
        waiter last;
        b->flush(flush_reason::age, last.make());
        (void)last.wait(limit);
        return 14;
      }
      die();
    });
    const int code = wait_exit(child);
    INFO("child: " << child_outcome(code));
    REQUIRE(code == killed);

    session y(s, dir.path());
    const auto durable = y.durable();
    const auto prefix = offered_prefix(durable, total);
    INFO("reopened with " << describe(durable));
    REQUIRE(prefix);  // an offered cursor, or none
    CHECK(*prefix >= synced);  // a reported barrier's work survives
    if (mode == kill_at::after_barrier) CHECK(*prefix == synced);
    y.require_at(*prefix);
    // Replay from the cursor, as the runtime resumes, reaches the full contents.
    y.advance(*prefix + 1, total + 2);
    DIX_REQUIRE_OK(y.shutdown(1));
  }
}

void check_superseded_batch_never_applied(const backend_subject& s) {
  temp_dir dir;
  {
    session x(s, dir.path(), 2);
    auto stale = [&](std::uint64_t n) {
      return make_batch(1, {put("stale-" + std::to_string(n), n, s.projection(n))}, cursor_at(100 + n));
    };
    CHECK(x.b->deliver(stale(1)) != delivery_result::failed);
    x.deliver(scenario_batch(s, 1, 2));
    CHECK(x.b->deliver(stale(2)) != delivery_result::failed);
    x.deliver(scenario_batch(s, 2, 2));
    DIX_REQUIRE_OK(x.barrier());
    x.require_at(2);  // no stale record, cursor 2
    CHECK(x.b->deliver(stale(3)) != delivery_result::failed);  // last in the queue: its cursor must not win
    DIX_REQUIRE_OK(x.barrier());
    x.require_at(2);
    CHECK(x.changes.count(state_change_kind::failed) == 0);
    DIX_REQUIRE_OK(x.shutdown(2));
  }
  reopen_at(s, dir.path(), 2, 2);
}

void check_superseded_barrier_never_publishes(const backend_subject& s) {
  temp_dir dir;
  {
    session x(s, dir.path());
    x.advance(1, 1);
    const auto checks = x.host.epoch_checks();
    x.deliver(scenario_batch(s, 2));
    x.require_epoch_checks(checks + 1);  // batch 2 was taken
    // A takeover lands now: the next check (the barrier's, before it publishes) sees epoch 2.
    x.host.supersede_at_next_check(2);
    waiter w;
    x.b->flush(flush_reason::age, w.make());
    (void)w.wait(x.limit);  // either outcome; what matters is the cursor
    {
      INFO("the barrier did not ask is_owner_epoch before publishing its cursor (docs/backends.md §0)");
      CHECK(x.host.owner_epoch() == 2);  // the backend did ask
    }
    CHECK(describe(x.durable()) == describe(cursor_at(1)));
    // The new owner resumes from the durable cursor.
    x.advance(2, 3, 2);
    DIX_REQUIRE_OK(x.shutdown(2));
  }
  reopen_at(s, dir.path(), 3, 2);
}

namespace {

// Delivers scenario batches from `first` on with `bytes` each until one is deferred (at most
// s.defer_max_deliveries); returns its number and the change-log position just before it.
std::pair<std::uint64_t, std::size_t> deliver_until_deferred(session& x, std::uint64_t first, std::uint64_t bytes) {
  for (std::uint64_t n = first; n < first + x.subject.defer_max_deliveries; ++n) {
    // The position before the call: a `changed` may come from another thread while it runs
    // (docs/backends.md §0.5), and must count.
    const auto before = x.changes.mark();
    const auto r = x.b->deliver(scenario_batch(x.subject, n, 1, bytes));
    if (r == delivery_result::deferred) return {n, before};
    INFO("delivery " << n);
    REQUIRE(r == delivery_result::accepted);
  }
  FAIL("no delivery was deferred in " << x.subject.defer_max_deliveries << " deliveries of " << bytes << " bytes");
  return {0, 0};
}

// After a deferral of batch n: `changed` follows, the batch is then accepted (each further
// deferral followed by another `changed`), and a barrier makes everything durable.
void redeliver_after_changed(session& x, std::uint64_t n, std::size_t after, std::uint64_t bytes) {
  REQUIRE(x.changes.wait_after(state_change_kind::changed, after));
  CHECK(x.changes.count(state_change_kind::failed) == 0);
  for (int attempt = 0;; ++attempt) {
    REQUIRE(attempt < 8);
    const auto deferred_at = x.changes.mark();  // before the call, as above
    const auto r = x.b->deliver(scenario_batch(x.subject, n, 1, bytes));
    if (r == delivery_result::accepted) break;
    REQUIRE(r == delivery_result::deferred);
    REQUIRE(x.changes.wait_after(state_change_kind::changed, deferred_at));
  }
  DIX_REQUIRE_OK(x.barrier());
  x.require_at(n);
}

}  // namespace

void check_deferral_by_queue_then_changed(const backend_subject& s) {
  temp_dir dir;
  session x(s, dir.path());
  const auto bytes = s.defer_batch_bytes;
  x.host.hold_epoch_checks();  // the applier stops at its first check
  x.deliver(scenario_batch(s, 1, 1, bytes == 0 ? 100 : bytes));  // an empty queue accepts any single batch
  x.require_epoch_checks(1);
  if (bytes == 0) {
    // The subject claims no queue cap: nothing is deferred, nothing lost.
    for (std::uint64_t n = 2; n <= s.defer_max_deliveries; ++n) x.deliver(scenario_batch(s, n));
    x.host.release_epoch_checks();
    DIX_REQUIRE_OK(x.barrier());
    x.require_at(s.defer_max_deliveries);
    return;
  }
  auto [n, after] = deliver_until_deferred(x, 2, bytes);
  x.host.release_epoch_checks();
  redeliver_after_changed(x, n, after, bytes);
  DIX_REQUIRE_OK(x.shutdown(1));
}

void check_deferral_by_busy_resource_then_changed(const backend_subject& s) {
  INFO("backend_subject::occupy is required for this check");
  REQUIRE(static_cast<bool>(s.occupy));
  temp_dir dir;
  session x(s, dir.path());
  auto held = s.occupy(dir.path());
  REQUIRE(held);
  auto [n, after] = deliver_until_deferred(x, 1, 100);
  held.reset();  // the resource frees
  redeliver_after_changed(x, n, after, 100);
  DIX_REQUIRE_OK(x.shutdown(1));
}

void check_shutdown_releases_and_later_epoch_works(const backend_subject& s) {
  temp_dir dir;
  session x(s, dir.path());
  x.deliver_scenario(1, 2);
  DIX_REQUIRE_OK(x.barrier());
  x.host.hold_epoch_checks();  // batch 3 in flight (held at its check), batch 4 queued
  x.deliver_scenario(3, 4);
  if (s.reject_next_shutdown) {
    s.reject_next_shutdown(*x.b);
    waiter rejected;
    x.b->shutdown(1, rejected.make());
    x.host.release_epoch_checks();
    CHECK_FALSE(rejected.wait(x.limit));
    x.host.hold_epoch_checks();
  }
  waiter shut;
  x.b->shutdown(1, shut.make());  // the retry, when the first was rejected
  x.host.release_epoch_checks();
  DIX_REQUIRE_OK(shut.wait(x.limit));

  // Released: the resource the backend needs can be taken (backend_subject::occupy, when set),
  // and a second instance over the same directory opens it and writes there, in this very
  // process: a writer lock taken at the first write is contested too, not only the open.
  if (s.occupy) {
    INFO("backend_subject::occupy could not take the resource after shutdown: it was not released");
    std::shared_ptr<void> held;
    CHECK_NOTHROW(held = s.occupy(dir.path()));
    CHECK(held);
  }
  std::uint64_t at = 0;
  {
    session other(s, dir.path());
    const auto durable = other.durable();
    const auto prefix = offered_prefix(durable, 4);
    INFO("the second instance found " << describe(durable));
    REQUIRE(prefix);
    CHECK(*prefix >= 2);
    other.require_at(*prefix);
    other.advance(*prefix + 1, *prefix + 1);  // one batch and a barrier of its own
    at = *prefix + 1;
    DIX_REQUIRE_OK(other.shutdown(1));
  }
  // The same object takes a later epoch's work, reopening what it needs: it finds what the
  // second instance made durable.
  x.host.set_owner_epoch(2);
  CHECK(describe(x.durable()) == describe(cursor_at(at)));
  x.advance(at + 1, 6, 2);
  DIX_REQUIRE_OK(x.shutdown(2));
}

namespace {

// A backend without reset reports not_supported and keeps its state.
void check_reset_unsupported(session& x, std::uint64_t at) {
  INFO("supports_reset() is false");
  auto outcome = x.reset(2);
  REQUIRE_FALSE(outcome);
  CHECK(outcome.error().value() == errc::not_supported);
  x.require_at(at);
}

// After a reset: a new owner's reset completes over whatever is there, and the index works.
void reset_again_and_resume(session& y, epoch_t epoch) {
  y.host.set_owner_epoch(epoch);
  DIX_REQUIRE_OK(y.reset(epoch));
  y.require_at(0);
  y.advance(1, 2, epoch);
  DIX_REQUIRE_OK(y.shutdown(epoch));
}

}  // namespace

void check_reset_removes_cursor_then_state(const backend_subject& s) {
  temp_dir dir;
  {
    session x(s, dir.path());
    x.deliver_scenario(1, 3);
    DIX_REQUIRE_OK(x.barrier());
    if (!x.b->supports_reset()) return check_reset_unsupported(x, 3);
    x.host.set_owner_epoch(2);
    DIX_REQUIRE_OK(x.reset(2));
    x.require_at(0);
    DIX_REQUIRE_OK(x.shutdown(2));
  }
  session reopened(s, dir.path(), 2);
  reopened.require_at(0);  // durably: no cursor, no state
  reset_again_and_resume(reopened, 3);
}

void check_kill_inside_reset(const backend_subject& s) {
  require_subject(s);
  {
    temp_dir dir;
    session probe(s, dir.path());
    if (!probe.b->supports_reset()) {
      probe.deliver_scenario(1, 3);
      DIX_REQUIRE_OK(probe.barrier());
      return check_reset_unsupported(probe, 3);
    }
    DIX_REQUIRE_OK(probe.shutdown(1));
  }
  // Kill points: each of the subject's named steps, then (for any backend) right after the reset
  // call (the applier anywhere inside it; three tries) and right after reset completed.
  struct kill_point {
    std::optional<std::size_t> step;
    bool after_done = false;
  };
  std::vector<kill_point> points;
  if (s.arm_reset_kill) {
    for (std::size_t k = 0; k < s.reset_kill_points; ++k) points.push_back({k, false});
  }
  for (int i = 0; i < 3; ++i) points.push_back({std::nullopt, false});
  points.push_back({std::nullopt, true});
  const auto full = expected(s, 3);
  for (const auto& point : points) {
    INFO("killed " << (point.step ? "at reset step " + std::to_string(*point.step)
                                  : point.after_done ? std::string("after reset completed")
                                                     : std::string("right after calling reset")));
    temp_dir dir;
    const pid_t child = fork_child([&] {
      conformance_host host;
      auto b = s.make(dir.path());
      if (!b) return 10;
      b->attach(host);
      for (std::uint64_t n = 1; n <= 3; ++n) {
        if (b->deliver(scenario_batch(s, n)) != delivery_result::accepted) return 11;
      }
      waiter barrier;
      b->flush(flush_reason::age, barrier.make());
      if (!barrier.wait(s.wait_limit + b->min_barrier_interval())) return 12;
      if (point.step) s.arm_reset_kill(*b, *point.step, [] { die(); });
      host.set_owner_epoch(2);
      waiter reset;
      b->reset(2, reset.make());
      if (!point.step && !point.after_done) die();
      if (!reset.wait(s.wait_limit + b->min_barrier_interval())) return 16;
      if (point.after_done) die();
      return 14;
    });
    const int code = wait_exit(child);
    INFO("child: " << child_outcome(code));
    REQUIRE(code == killed);

    session y(s, dir.path());
    const auto durable = y.durable();
    const auto rows = y.stored();
    INFO("reopened with " << describe(durable) << ", stored " << render(rows));
    // The crash contract: a cursor only over exactly the state stored with it; state destroyed
    // only once the cursor is durably gone.
    if (durable) {
      CHECK(describe(durable) == describe(cursor_at(3)));
      CHECK(rows == full);
    }
    if (rows != full) CHECK_FALSE(durable);
    if (point.after_done) {
      CHECK_FALSE(durable);
      CHECK(rows.empty());
    }
    reset_again_and_resume(y, 3);
  }
}

void check_unindexable_removed_and_counted(const backend_subject& s) {
  temp_dir dir;
  session x(s, dir.path());
  x.advance(1, 2);
  // r1 becomes unindexable, "never" arrives unindexable, r2 arrives in the runtime's unindexable
  // state (the runtime counted it: protocol.md §4.4; the backend counts only its own skips).
  std::vector<record_entry> records{put(record_name(1), 3, s.unindexable()), put("never", 3, s.unindexable()),
                                    absent(record_name(2), 3)};
  records.back().state.kind = state_kind::unindexable;
  records.back().state.reason = "too_large";
  x.deliver(make_batch(1, records, cursor_at(3)));
  DIX_REQUIRE_OK(x.barrier());
  auto model = expected(s, 2);
  model_apply(s, model, records);
  CHECK(describe(x.durable()) == describe(cursor_at(3)));  // the cursor advances over them
  {
    const auto rows = x.stored();
    INFO("stored: " << render(rows));
    CHECK(rows == model);
    x.require_finds(model, 3);
  }
  // A backend with a digest names the records apply() skips (backend::skips), and only those,
  // with the codes apply() noted: dix verify leaves them out of the primary's side.
  const bool keeps_digest = static_cast<bool>(x.b->open_digest());
  const auto codes = x.host.unindexable_codes();
  if (keeps_digest) {
    std::vector<std::string> skipped;
    for (const auto& r : records) {
      INFO("skips(" << r.record_id << ")");
      const auto code = x.b->skips(r);
      CHECK(code.has_value() == (r.state.kind == state_kind::record && r.state.projection == s.unindexable()));
      if (code) skipped.push_back(*code);
    }
    CHECK(skipped == codes);
  }
  CHECK(codes.size() == 2);
  for (const auto& code : codes) {
    INFO("code \"" << code << "\": 1…48 of [A-Za-z0-9_.:-] (docs/protocol.md §4.4, installed as share/doc/dix/protocol.md)");
    CHECK(!code.empty());
    CHECK(code.size() <= 48);
    CHECK(std::all_of(code.begin(), code.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
             c == ':' || c == '-';
    }));
  }
  // Never a failure, nor a rebuild: the next batches apply as usual.
  CHECK(x.changes.count(state_change_kind::failed) == 0);
  CHECK(x.host.rebuild_requests() == 0);
  auto next = scenario_records(s, 4);
  if (keeps_digest) {
    for (const auto& r : next) {
      INFO("skips(" << r.record_id << ")");
      CHECK_FALSE(x.b->skips(r).has_value());
    }
  }
  x.deliver(make_batch(1, next, cursor_at(4)));
  DIX_REQUIRE_OK(x.barrier());
  model_apply(s, model, next);
  CHECK(describe(x.durable()) == describe(cursor_at(4)));
  CHECK(x.stored() == model);
  x.require_finds(model, 4);
  DIX_REQUIRE_OK(x.shutdown(1));
}

}  // namespace dix::testing
