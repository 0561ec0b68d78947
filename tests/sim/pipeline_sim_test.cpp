// [sim] The whole pipeline under one seed (style.md §17, actors.md §6): random commits (synced or
// not), time passing, barriers, deferrals, lost accepted work, runner restarts through a release
// (a new registration of the id over the live backend), OS crashes that lose the primary's
// unsynced WAL tail and the backend's non-durable work, and the rebuild's faults: WAL purges
// under the cursor, rebuild requests, reload transactions, failed resets, an OS crash inside a
// reset (the cursor gone, the entries still there). After every step (actors.md §6):
//   1. the durable index holds, for every key, the projection of a state the primary held at or
//      after the durable cursor — never an older one, never one the primary lost in a crash;
//   2. the durable anchor sequence never decreases, except to absent by a reset;
//   3. no work of an older epoch lands after a newer epoch's work;
//   5. after a condemnation `ready` is not published again before a rebuild boundary is
//      durable, and never without a durable cursor;
//   6. coverage_time never exceeds the header time of the oldest transaction on a projected
//      table that is not durable (beyond the durable anchor): every transaction with header
//      time ≤ coverage_time is durable or touches no projected table;
//   7. the shells' order (decision 0052; the runner actor's own interpreter runs here): no unlock,
//      mint, gate store or stop answer while a publication is on its way to the slot (the
//      pipeline's violation), and no commit that rang the bell is left without a wake on its way
//      (sim_pipeline::lost_wake) — with publications slow to land, commits ringing a bell, and
//      commits racing a pull, as a second random stream of the seed picks;
// and at the end, drained, the index equals the projection of the primary exactly.
// ctest runs a fixed list of seeds; DIX_SIM_SEED=n runs one, DIX_SIM_SEEDS=n runs seeds 1…n.
//
// A runner *crash* is the supervisor's (supervisor_core, as supervisor_actor runs it): it
// condemns an owned index, and the respawned runner acquires and rebuilds it. The second test
// crashes the runner once per seed, at a step the seed picks, checks the supervisor's release,
// and runs the rest of the seed on the respawned runner.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <sstream>

#include "support/sim_pipeline.hpp"

using namespace dix;
using dix::test::sim_pipeline;
using dix::test::sim_table;

namespace {

using std::chrono::milliseconds;
constexpr int key_space = 12;

// Every state (absent = nullopt) key `id` had from cursor sequence `at` onwards (purged or not).
std::vector<std::optional<test::index_entry>> allowed_states(const test::fake_store& store, const std::string& id,
                                                             std::uint64_t at) {
  std::optional<test::index_entry> state;
  std::vector<std::optional<test::index_entry>> later;
  for (const auto& t : store.history()) {
    for (const auto& o : t.ops) {
      if (o.meta || o.table != sim_table || o.key != id) continue;
      std::optional<test::index_entry> next;
      if (o.kind == op_kind::put) {
        auto v = decode_value(o.value);
        next = test::index_entry{v->version, std::string(v->payload)};
      }
      if (t.sequence <= at) state = next;
      else later.push_back(next);
    }
  }
  later.push_back(state);
  return later;
}

struct checker {
  std::uint64_t last_durable_sequence = 0;
  std::string failure;

  std::size_t publications_seen = 0;

  bool check(const sim_pipeline& p) {
    const auto& index = p.backend.durable_index();
    const auto& durable = p.backend.durable();
    if (!p.violation.empty()) return fail(p.violation);
    if (!p.backend.violation.empty()) return fail(p.backend.violation);
    if (auto lost = p.lost_wake(); !lost.empty()) return fail(lost);
    // 5: a `ready` after a condemnation only once a rebuild boundary is durable (the pipeline
    // checks each publication as it is made: violation above); and never without a cursor.
    if (!durable) {
      if (p.slot_coverage_time != 0) return fail("coverage_time is published over an index without a durable cursor");
      // A rebuild's scan makes entries durable without a cursor; only `ready` would trust them.
      if (p.slot_readiness.state == readiness_state::ready && !index.empty()) {
        return fail("ready is published over an index without a durable cursor");
      }
      last_durable_sequence = 0;  // 2: absent by a reset
      return true;
    }
    auto at = durable->logs()[0].sequence;
    if (at < last_durable_sequence) {
      return fail("the durable anchor moved back from " + std::to_string(last_durable_sequence) + " to " +
                  std::to_string(at));
    }
    last_durable_sequence = at;
    std::set<std::string> ids;
    for (int k = 0; k < key_space; ++k) ids.insert("k" + std::to_string(k));
    for (const auto& id : ids) {
      auto key = test::index_key("main", sim_table, id);
      auto it = index.find(key);
      std::optional<test::index_entry> held;
      if (it != index.end()) held = it->second;
      bool ok = false;
      for (const auto& s : allowed_states(p.store, id, at)) ok = ok || s == held;
      if (!ok) {
        return fail("key " + id + " holds " + (held ? held->projection + "@" + std::to_string(held->version) : "nothing") +
                    ", which the primary never held at or after sequence " + std::to_string(at));
      }
    }
    // 6: the oldest relevant transaction beyond the durable anchor bounds coverage_time.
    for (const auto& t : p.store.history()) {
      if (t.sequence <= at) continue;
      const bool relevant = std::any_of(t.ops.begin(), t.ops.end(), [](const wal_op& o) { return !o.meta && o.table == sim_table; });
      if (relevant && t.time <= p.slot_coverage_time) {
        return fail("coverage_time " + std::to_string(p.slot_coverage_time) + " passes transaction " +
                    std::to_string(t.sequence) + " (time " + std::to_string(t.time) + "), which is not durable");
      }
    }
    const auto& epochs = p.backend.applied_epochs;
    for (std::size_t i = 1; i < epochs.size(); ++i) {
      if (epochs[i] < epochs[i - 1]) return fail("work of epoch " + std::to_string(epochs[i]) + " landed after epoch " +
                                                 std::to_string(epochs[i - 1]));
    }
    return true;
  }
  bool fail(std::string why) {
    failure = std::move(why);
    return false;
  }
};

// What a supervised runner crash at `step` must leave: the marker written and needs-rebuild/
// runner-failed published (in that order: the sim's marker write answers before the publication
// is made), the entry released, the new runner parked — or, when the dead runner owned nothing,
// a new runner that evaluates the index as usual. The quiescence of the dead epoch shows in the
// checker's third invariant (no work of an older epoch after a newer one's).
// What a supervised runner crash at `step` must leave: the marker written and needs-rebuild/
// runner-failed published by the supervisor (the publications from `first` on), and a respawned
// runner that acquired again and rebuilds — or, when the dead runner owned nothing, a new runner
// that evaluates the index as usual. The quiescence of the dead epoch shows in the checker's
// third invariant (no work of an older epoch after a newer one's).
std::string check_crash(sim_pipeline& p, bool owned, std::size_t step, std::size_t first) {
  auto at = [step](const std::string& why) { return "crash at step " + std::to_string(step) + ": " + why; };
  if (!p.runner) return at("no runner was respawned");
  if (!owned) return {};
  bool condemned = false, rebuilding = false;
  for (std::size_t i = first; i < p.publications.size(); ++i) {
    const auto& x = p.publications[i];
    if (x.state == readiness_state::needs_rebuild && x.reason == readiness_reason::runner_failed) condemned = true;
    if (condemned && x.state == readiness_state::rebuilding) rebuilding = true;
  }
  if (!condemned) return at("needs-rebuild/runner-failed was not published");
  // Attempts already spent (the crash came during a rebuild): the next one waits for its backoff,
  // holding the lock.
  if (!rebuilding && !(p.lock_held && p.runner->state() == runner_state::needs_rebuild)) {
    return at("the respawned runner did not start a rebuild (it is " + std::string(to_string(p.runner->state())) + ")");
  }
  return {};
}

// "" when the drained index equals the projection of the primary exactly; else what differs.
std::string differs_from_primary(sim_pipeline& p) {
  test::index_map expected;
  for (const auto& [id, stored] : p.store.table(sim_table)) {
    if (!stored) continue;
    auto v = decode_value(*stored);
    expected[test::index_key("main", sim_table, id)] = test::index_entry{v->version, std::string(v->payload)};
  }
  if (p.backend.durable_index() == expected) return {};
  std::string diff;
  for (const auto& [k, v] : expected) {
    auto it = p.backend.durable_index().find(k);
    if (it == p.backend.durable_index().end()) diff += " missing " + k;
    else if (!(it->second == v)) diff += " " + k + " has " + it->second.projection + "@" + std::to_string(it->second.version) +
                                      " not " + v.projection + "@" + std::to_string(v.version);
  }
  for (const auto& [k, v] : p.backend.durable_index()) {
    if (expected.count(k) == 0) diff += " extra " + k;
  }
  if (p.backend.durable()) diff += " durable " + std::to_string(p.backend.durable()->logs()[0].sequence);
  diff += " latest " + std::to_string(p.store.latest());
  return diff + "; drained index differs from the primary (" + std::to_string(p.backend.durable_index().size()) + " vs " +
         std::to_string(expected.size()) + " entries; runner " + std::string(to_string(p.runner->state())) + ")";
}

// A peer: another registration's tailer over the same store, sharing its reads with the runner's
// (decision 0061), its index a map applied in step with its `through` as a backend would. It
// joins at the log's last transaction with the table as it is (a rebuild's result), pulls turns
// of its own budgets, and leaves (or is dropped by a fault of its own: a purge, a failed read).
// After each turn it must hold invariant 1 at its through, and at the end the primary exactly.
struct peer {
  std::unique_ptr<log_source> source;  // through the store's tail when it has one
  std::unique_ptr<test::fake_store::reader> reader;
  std::unique_ptr<tailer_core> core;
  std::map<std::string, test::index_entry> index;  // by record id
  std::uint64_t through = 0;
};

std::unique_ptr<peer> join_peer(sim_pipeline& p) {
  if (p.store.transactions().empty()) return nullptr;
  auto r = std::make_unique<peer>();
  r->source = p.store.tail_source();
  r->reader = std::make_unique<test::fake_store::reader>(p.store);
  std::map<table_ref, projection> projections{{table_ref{"main", sim_table}, test::identity_projection()}};
  r->core = std::make_unique<tailer_core>(std::vector<tailer_log>{{r->source.get(), r->reader.get()}}, projections,
                                          std::vector<attached_log>{{"main", "id-main"}});
  const auto& last = p.store.transactions().back();
  if (r->core->install(cursor::make({log_position{"main", "id-main", last.sequence, last.time}}).value()).fault) return nullptr;
  r->through = last.sequence;
  for (const auto& [id, stored] : p.store.table(sim_table)) {
    if (!stored) continue;
    auto v = decode_value(*stored);
    r->index[id] = test::index_entry{v->version, std::string(v->payload)};
  }
  return r;
}

// One turn of `r`; "" when it holds invariant 1 at its through, else why not. `dropped`: a fault
// ended it (it leaves, as a runner whose tailer faults reinstalls or rebuilds).
std::string pull_peer(sim_pipeline& p, peer& r, const turn_budgets& budgets, bool& dropped, bool& caught_up) {
  auto out = r.core->pull(budgets, 1, p.time);
  dropped = out.fault.has_value();
  caught_up = !dropped && out.chunk.end_of_log;
  if (dropped) return {};
  if (const auto& b = out.chunk.delivery) {
    for (const auto& e : b->records) {
      if (e.log != "main" || e.table != sim_table) return "a peer's batch holds a record of another table";
      if (e.state.kind == state_kind::record) r.index[e.record_id] = test::index_entry{e.state.version, e.state.projection};
      else r.index.erase(e.record_id);
    }
    if (b->through) {
      if (b->through->logs()[0].sequence < r.through) return "a peer's through moved back";
      r.through = b->through->logs()[0].sequence;
    }
  }
  for (int k = 0; k < key_space; ++k) {
    const auto id = "k" + std::to_string(k);
    std::optional<test::index_entry> held;
    if (auto it = r.index.find(id); it != r.index.end()) held = it->second;
    bool ok = false;
    for (const auto& s : allowed_states(p.store, id, r.through)) ok = ok || s == held;
    if (!ok) {
      return "a peer's key " + id + " holds " + (held ? held->projection + "@" + std::to_string(held->version) : "nothing") +
             ", which the primary never held at or after sequence " + std::to_string(r.through);
    }
  }
  return {};
}

// `shared`: the store's reads are shared (sim_shell::shared_read_bytes), and in three seeds of four
// its commits go to a commit tail (sim_shell::tail_transactions), read through by the runner's
// tailer and up to three peers joining, pulling and leaving at steps a stream of their own picks;
// the shared reads are lost and the tail reset now and then (the reader's crash: only an
// optimization is lost), a commit now and then misses the tail (a write that failed after its WAL
// record), the peers gone with the process at every OS crash.
std::string run_seed(std::uint64_t seed, std::size_t steps, std::optional<std::size_t> crash_at = std::nullopt,
                     bool shared = false) {
  std::mt19937_64 rng(seed);
  auto pick = [&](std::uint64_t n) { return rng() % n; };
  runner_options o;
  o.max_chunk_records = static_cast<std::uint32_t>(1 + pick(8));
  o.max_transactions_per_turn = static_cast<std::uint32_t>(1 + pick(10));
  o.flush_after_mutations = static_cast<std::uint32_t>(1 + pick(20));
  o.max_accepted_batches_ahead = static_cast<std::uint32_t>(1 + pick(4));
  o.max_flush_age = milliseconds(100 + static_cast<long>(pick(900)));
  o.rebuild_backoff = milliseconds(10);
  o.max_rebuild_attempts = 1000;  // transient faults here are injected, never permanent
  // The shells (invariant 7) from a stream of their own, so the seed's scenario stays what it was.
  std::mt19937_64 shells(seed ^ 0xbe11);
  test::sim_shell shell;
  shell.bell = shells() % 4 != 0;
  shell.publish_hops = std::array<int, 4>{0, 1, 4, 20}[shells() % 4];
  shell.pull_hops = static_cast<int>(shells() % 3);
  std::mt19937_64 peering(seed ^ 0x5ead);
  if (shared) {
    shell.shared_read_bytes = std::array<std::size_t, 3>{1500, 4000, 1u << 20}[peering() % 3];
    shell.tail_transactions = std::array<std::size_t, 4>{0, 2, 5, 64}[peering() % 4];
    shell.tail_bytes = std::array<std::uint64_t, 2>{400, 1u << 20}[peering() % 2];
  }
  auto peer_budgets = [&] {
    turn_budgets b;
    b.max_transactions_per_turn = static_cast<std::uint32_t>(1 + peering() % 10);
    b.max_chunk_records = static_cast<std::uint32_t>(1 + peering() % 8);
    return b;
  };
  if (std::getenv("DIX_SIM_VERBOSE") != nullptr) {
    std::fprintf(stderr, "shell bell=%d publish_hops=%d pull_hops=%d\n", shell.bell, shell.publish_hops, shell.pull_hops);
  }
  sim_pipeline p(o, shell);
  std::vector<std::unique_ptr<peer>> peers;  // after p: their tailers follow p's store
  // A writer racing the tailer: a commit while a pull is on its way, its wake (or its ring) behind
  // the pull's answer or, with pull_hops, before it (the bell then held through the pull). It
  // found a runner_core order that published `ready` before the current settle's answer (§10.4:
  // a settle dropped by a discard of progress, then a reinstall's log opening published `ready`;
  // seeds 107, 371 and 874 of the first 3000), fixed in runner_core::on_log_opened.
  p.after_pull = [&] {
    if (shells() % 6 != 0) return;
    p.commit({test::put(sim_table, "k" + std::to_string(shells() % key_space), "racing")}, false, false);
  };
  // A writer committing while a turn reads the log (decision 0063): the turn reads up to the
  // log's end as it began, so such a commit is left to a later turn, which its ring (or wake)
  // must bring. From a stream of its own, so the seed's scenario stays what it was; bounded.
  std::mt19937_64 during(seed ^ 0xd0e5);
  std::size_t committed_during = 0;
  p.store.before_log_next = [&] {
    if (committed_during >= 40 || during() % 8 != 0) return;
    ++committed_during;
    p.commit({test::put(sim_table, "k" + std::to_string(during() % key_space), "during-read")}, false, false);
  };
  p.backend.auto_barrier = pick(2) == 0;
  // Answers overtaking each other, as mailboxes of other actors in between make them do.
  p.slow_log_open = pick(2) == 0;
  p.slow_flush_done = pick(2) == 0;
  p.slow_settle = pick(2) == 0;
  p.slow_meta = pick(2) == 0;
  checker check;
  std::ostringstream trace;
  for (std::size_t step = 0; step < steps; ++step) {
    if (crash_at && step == *crash_at) {
      const bool owned = p.record.owner;
      const auto first = p.publications.size();
      p.supervisor_restart_runner();
      trace << "R";
      if (auto failure = check_crash(p, owned, step, first); !failure.empty()) {
        return "seed " + std::to_string(seed) + ": " + failure + "\n  trace " + trace.str();
      }
    }
    auto action = pick(100);
    if (action < 45) {
      std::vector<test::fake_op> ops;
      auto n = 1 + pick(4);
      for (std::uint64_t i = 0; i < n; ++i) {
        auto id = "k" + std::to_string(pick(key_space));
        if (pick(5) == 0) ops.push_back(test::del(sim_table, id));
        else ops.push_back(test::put(sim_table, id, "v" + std::to_string(pick(1000))));
      }
      if (pick(6) == 0) ops.push_back(test::put(2, "unrelated", "x"));
      const auto committed = p.commit(std::move(ops), pick(3) == 0);
      trace << "c";
      if (pick(4) == 0) {
        p.demand_coverage(committed.second);  // a waiter for it: drain, flush(coverage)
        trace << "w";
      }
    } else if (action < 65) {
      p.advance(milliseconds(static_cast<long>(pick(1200))));
      trace << "t";
    } else if (action < 75) {
      p.backend.barrier();
      p.run();
      trace << "b";
    } else if (action < 80) {
      p.backend.cap = pick(2) == 0 ? 1 : 1000;
      p.backend.apply_queue();
      p.run();
      trace << "d";
    } else if (action < 83) {
      p.backend.lose_accepted(p.runner->epoch());
      p.run();
      trace << "l";
    } else if (action < 87) {
      // Publications on their way when the stop comes (invariant 7): a peer's rebuild request just
      // before it, from the shells' stream.
      if (shells() % 2 == 0) p.store_rebuild_request(true, false);
      p.restart_at_release();  // a new registration of the id; the process, store and backend live on
      p.wake();
      trace << "r";
    } else if (action < 91) {
      p.store.crash();  // an OS crash: the primary loses its unsynced WAL tail …
      p.backend.crash();  // … the backend what no barrier covered, and the runtime restarts
      p.reset_segment();
      p.restart_runner();
      p.wake();
      trace << "X";
    } else if (action < 93) {
      p.store.fail_reads = true;  // a transient fault, cleared on the next step
      p.wake();
      p.store.fail_reads = false;
      trace << "f";
    } else if (action < 94) {
      p.store_rebuild_request();  // a peer's request: one reset, absorbed while a rebuild runs
      trace << "q";
    } else if (action < 95) {
      // The WAL purged up to the latest sequence: a cursor below it cannot resume (log-retention).
      p.store.purge_before(p.store.latest());
      p.wake();
      trace << "p";
    } else if (action < 96) {
      // A reload of the projected table: condemns; the rebuild's scan covers it.
      p.store.commit({test::put(sim_table, "k" + std::to_string(pick(key_space)), "reloaded")}, header_flag::reload, true);
      p.wake();
      trace << "L";
    } else if (action < 97) {
      // An OS crash inside a reset: the cursor is gone, the entries stay (the next owner resets).
      p.backend.stop_inside_reset = true;
      p.store_rebuild_request();
      p.backend.stop_inside_reset = false;
      p.store.crash();
      p.backend.crash();
      p.reset_segment();
      p.restart_runner();
      p.wake();
      trace << "Z";
    } else if (action < 98) {
      p.backend.fail_reset = pick(2) == 0;  // a failed attempt: backoff, then another
      p.store_rebuild_request();
      p.backend.fail_reset = false;
      trace << "F";
    } else if (action < 99) {
      // A slow reset, and the registration ends while it runs (a stop or an unregister): the
      // release waits for the reset (§9.6), the next registration rebuilds and catches up.
      p.backend.hold_reset = true;
      p.store_rebuild_request();
      p.backend.hold_reset = false;
      for (auto more = pick(3); more > 0; --more) {
        p.store.commit({test::put(sim_table, "k" + std::to_string(pick(key_space)), "during-reset")}, 0, pick(2) == 0);
        p.advance(milliseconds(static_cast<long>(pick(300))));
      }
      p.restart_at_release();
      p.wake();
      trace << "H";
    } else {
      p.wake(wake_flag::commit | wake_flag::system);
      trace << "s";
    }
    if (shared && trace.str().back() != 'X' && trace.str().back() != 'Z') {
      const auto move = peering() % 12;
      if (move == 0 && peers.size() < 3) {
        if (auto r = join_peer(p)) peers.push_back(std::move(r));
        trace << "+";
      } else if (move == 1 && !peers.empty()) {
        peers.erase(peers.begin() + static_cast<std::ptrdiff_t>(peering() % peers.size()));
        trace << "-";
      } else if (move == 2 && p.store.shares() != nullptr) {
        p.store.shares()->forget();
        if (p.store.tail()) p.store.tail()->reset();
        trace << "~";
      } else if (move == 8 && p.store.tail()) {
        p.store.skip_tail_once = true;
        p.store.commit({test::put(sim_table, "k" + std::to_string(peering() % key_space), "untailed")});
        trace << "u";
      } else if (move < 8 && !peers.empty()) {
        const auto i = peering() % peers.size();
        for (auto turns = 1 + peering() % 3; turns > 0; --turns) {
          bool dropped = false, caught_up = false;
          auto failure = pull_peer(p, *peers[i], peer_budgets(), dropped, caught_up);
          if (!failure.empty()) {
            return "seed " + std::to_string(seed) + " step " + std::to_string(step) + ": " + failure + "\n  trace " + trace.str();
          }
          if (dropped) {
            peers.erase(peers.begin() + static_cast<std::ptrdiff_t>(i));
            break;
          }
        }
        trace << "p";
      }
    } else if (shared) {
      peers.clear();  // an OS crash: the peers' tailers die with the process
    }
    if (std::getenv("DIX_SIM_VERBOSE") != nullptr) {
      std::fprintf(stderr, "step %zu %c durable=%llu state=%s epoch=%llu delivered=%zu queued=%zu\n", step,
                   trace.str().back(),
                   static_cast<unsigned long long>(p.backend.durable() ? p.backend.durable()->logs()[0].sequence : 0),
                   std::string(to_string(p.runner->state())).c_str(), static_cast<unsigned long long>(p.runner->epoch()),
                   p.delivered.size(), p.backend.queued());
    }
    if (!check.check(p)) {
      return "seed " + std::to_string(seed) + " step " + std::to_string(step) + ": " + check.failure + "\n  trace " + trace.str();
    }
  }
  // Drain: no more faults or racing writers, room in the backend, barriers, time for every timer.
  p.after_pull = nullptr;
  p.store.before_log_next = nullptr;
  p.backend.cap = 1u << 30;
  p.backend.auto_barrier = true;
  p.store.fail_reads = false;
  p.wake();
  for (int i = 0; i < 50; ++i) {
    p.backend.apply_queue();
    p.advance(milliseconds(2000));
    if (std::getenv("DIX_SIM_VERBOSE") != nullptr && i < 5) {
      auto snap = p.runner->snapshot();
      std::fprintf(stderr, "drain %d durable=%llu state=%s delivered=%zu queued=%zu accepted_batches=%llu timers=%zu read=%llu\n", i,
                   static_cast<unsigned long long>(p.backend.durable() ? p.backend.durable()->logs()[0].sequence : 0),
                   std::string(to_string(p.runner->state())).c_str(), p.delivered.size(), p.backend.queued(),
                   static_cast<unsigned long long>(snap.accepted_batches), p.timers_armed(),
                   static_cast<unsigned long long>(snap.logs.empty() ? 0 : snap.logs[0].read_sequence));
    }
  }
  if (!check.check(p)) return "seed " + std::to_string(seed) + " drained: " + check.failure + "\n  trace " + trace.str();
  if (p.publications.empty() || p.publications.back().state != readiness_state::ready) {
    return "seed " + std::to_string(seed) + ": drained, the index is not ready (runner " +
           std::string(to_string(p.runner->state())) + ")\n  trace " + trace.str();
  }
  if (auto diff = differs_from_primary(p); !diff.empty()) {
    return "seed " + std::to_string(seed) + ":" + diff + "\n  trace " + trace.str();
  }
  if (!p.backend.durable() || p.backend.durable()->logs()[0].sequence == 0) return "seed " + std::to_string(seed) + ": no durable cursor after draining";
  // The peers drain too, and then hold exactly the primary's projection.
  for (auto& r : peers) {
    bool dropped = false, caught_up = false;
    for (int turn = 0; turn < 10000 && !caught_up && !dropped; ++turn) {
      if (auto failure = pull_peer(p, *r, peer_budgets(), dropped, caught_up); !failure.empty()) {
        return "seed " + std::to_string(seed) + " peer drained: " + failure + "\n  trace " + trace.str();
      }
    }
    if (dropped) continue;  // a fault of its own at the end (none is injected now): nothing to compare
    if (!caught_up) return "seed " + std::to_string(seed) + ": a peer did not catch up\n  trace " + trace.str();
    std::map<std::string, test::index_entry> expected;
    for (const auto& [id, stored] : p.store.table(sim_table)) {
      if (!stored) continue;
      auto v = decode_value(*stored);
      expected[id] = test::index_entry{v->version, std::string(v->payload)};
    }
    if (r->index != expected) return "seed " + std::to_string(seed) + ": a drained peer differs from the primary\n  trace " + trace.str();
  }
  return {};
}

// DIX_SIM_SEED=n: that one; DIX_SIM_SEEDS=n: 1…n; else 1…40.
std::vector<std::uint64_t> seeds_to_run() {
  std::vector<std::uint64_t> seeds;
  if (const char* one = std::getenv("DIX_SIM_SEED")) {
    seeds.push_back(std::strtoull(one, nullptr, 10));
    return seeds;
  }
  std::uint64_t n = 40;
  if (const char* many = std::getenv("DIX_SIM_SEEDS")) n = std::strtoull(many, nullptr, 10);
  for (std::uint64_t s = 1; s <= n; ++s) seeds.push_back(s);
  return seeds;
}

}  // namespace

TEST_CASE("sim: the pipeline keeps every index equal to the primary's projection under faults", "[sim]") {
  for (auto seed : seeds_to_run()) {
    auto failure = run_seed(seed, 300);
    INFO("reproduce with DIX_SIM_SEED=" << seed);
    CHECK(failure.empty());
    if (!failure.empty()) FAIL_CHECK(failure);
  }
}

TEST_CASE("sim: tailers sharing their reads of one store keep every index equal to the primary's projection", "[sim]") {
  // The runner's tailer and peers joining, pulling and leaving share the store's reads (decision
  // 0061); every invariant of the first test holds for the runner, invariant 1 for every peer.
  for (auto seed : seeds_to_run()) {
    auto failure = run_seed(seed, 300, std::nullopt, true);
    INFO("reproduce with DIX_SIM_SEED=" << seed);
    CHECK(failure.empty());
    if (!failure.empty()) FAIL_CHECK(failure);
  }
}

TEST_CASE("sim: a runner crash is released by the supervisor core and the seed runs on over its respawned runner", "[sim]") {
  for (auto seed : seeds_to_run()) {
    const auto crash_at = static_cast<std::size_t>(std::mt19937_64(seed ^ 0x5eed)() % 200);
    auto failure = run_seed(seed, 300, crash_at);
    INFO("reproduce with DIX_SIM_SEED=" << seed);
    CHECK(failure.empty());
    if (!failure.empty()) FAIL_CHECK(failure);
  }
}

// issue 33 item 2 (protocol.md §9.6, §11.4 step 3): a stop (or an unregister: the same release)
// at every event of a rebuild, its reset slow or not. The order must be shutdown(old) → reset →
// its end → flush(shutdown) → shutdown(new) → unlock: no call reaches the backend while it
// resets (sim_backend's violation), the lock is not handed on and the stop does not settle
// before the reset ended (sim_pipeline's), and a successor then rebuilds to an index equal to
// the primary.
TEST_CASE("sim: a stop at every step of a rebuild waits for an in-flight reset, then releases, and the successor ends ready and equal", "[sim]") {
  for (const bool slow_reset : {true, false}) {
    for (const bool fail_reset : {false, true}) {
      bool passed_the_rebuild = false;
      int stops_in_reset = 0;
      for (std::size_t at = 0; !passed_the_rebuild && at < 200; ++at) {
        runner_options o;
        o.rebuild_backoff = milliseconds(10);
        o.max_rebuild_attempts = 1000;
        sim_pipeline p(o);
        for (int i = 0; i < 6; ++i) p.commit({test::put(sim_table, "k" + std::to_string(i % 4), "v" + std::to_string(i))});
        p.advance(milliseconds(2000));
        REQUIRE(p.slot_readiness.state == readiness_state::ready);
        const auto resets_before = p.backend.resets;
        p.backend.hold_reset = slow_reset;
        p.backend.fail_reset = fail_reset;
        p.store_rebuild_request(true, false);
        for (std::size_t i = 0; i < at; ++i) {
          if (!p.step()) break;
          if (i == 0) p.store.commit({test::put(sim_table, "k9", "while-rebuilding")});  // one more on the way
          if (p.backend.resets > resets_before && !p.backend.resetting()) p.backend.fail_reset = false;  // one failed attempt
        }
        p.backend.hold_reset = false;
        const bool reset_running = p.backend.resetting();
        const bool rebuilt = p.backend.resets > resets_before && !reset_running && p.runner->state() == runner_state::idle;
        INFO("slow reset " << slow_reset << ", failing " << fail_reset << ", stop after event " << at);
        p.stop(at % 2 == 0);
        if (reset_running) {
          CHECK_FALSE(p.stopped);  // the stop waits for the reset …
          CHECK(p.lock_held);      // … and so does the lock
          CHECK(p.backend.violation.empty());
          p.backend.fail_reset = fail_reset;
          p.backend.finish_reset();
          p.run();
        }
        p.backend.fail_reset = false;
        if (!p.stopped) {
          p.backend.barrier();
          p.run();
        }
        REQUIRE(p.stopped);
        CHECK(*p.stopped);
        CHECK_FALSE(p.lock_held);
        CHECK(p.violation.empty());
        CHECK(p.backend.violation.empty());
        // The successor: a new registration over the same backend and store.
        p.restart_at_release();  // the stopped runner answers nothing more; a new one starts
        p.wake();
        for (int i = 0; i < 20; ++i) {
          p.backend.apply_queue();
          p.advance(milliseconds(2000));
        }
        CHECK(p.slot_readiness.state == readiness_state::ready);
        CHECK(differs_from_primary(p).empty());
        CHECK(p.violation.empty());
        CHECK(p.backend.violation.empty());
        // A slow reset holds the rebuild at its reset: a few stops there are enough; otherwise
        // the stops go on until one comes after the rebuilt index is idle.
        passed_the_rebuild = slow_reset ? reset_running && ++stops_in_reset == 3 : rebuilt;
      }
      CHECK(passed_the_rebuild);  // the stops covered every event up to it
    }
  }
}

// Decision 0052: the runner actor's interpreter runs here, with the publisher slow to store. A
// stop's release publishes and then unlocks; at every event until the unlock, a publication on
// its way to the slot means the lock is still held — an unlock that overtook a publication fails
// here and in the pipeline's own check (the violation), and so would a gate store, a mint or the
// stop's answer.
TEST_CASE("sim: with the publisher slow to store, a release unlocks only once its publications are in the slot", "[sim]") {
  for (const int hops : {20, 50}) {
    test::sim_shell shell;
    shell.publish_hops = hops;
    shell.bell = true;
    sim_pipeline p(runner_options{}, shell);
    for (int i = 0; i < 4; ++i) p.commit({test::put(sim_table, "k" + std::to_string(i), "v")});
    p.advance(milliseconds(2000));
    REQUIRE(p.slot_readiness.state == readiness_state::ready);
    REQUIRE(p.lock_held);
    // A commit and a rebuild request keep publications coming while the stop runs.
    p.commit({test::put(sim_table, "k9", "late")}, false, false);
    p.store_rebuild_request(true, false);
    p.post_stop(true);
    bool held_for_a_publication = false;
    for (int i = 0; i < 10000 && p.step(); ++i) {
      INFO("hops " << hops << ", event " << i);
      if (p.publications_on_their_way() > 0) {
        CHECK(p.lock_held);
        // The core released already: the unlock waits in the fence.
        held_for_a_publication = held_for_a_publication || !p.runner->owner();
      }
      REQUIRE(p.violation.empty());
      if (p.stopped) break;
    }
    if (!p.stopped) {
      p.backend.barrier();
      p.run();
    }
    REQUIRE(p.stopped);
    CHECK_FALSE(p.lock_held);
    CHECK(p.publications_on_their_way() == 0);
    CHECK(p.violation.empty());
    CHECK(held_for_a_publication);  // the unlock was due while a publication was on its way
  }
}

// Decision 0052, core/commit_bell.hpp: commits rung while a pull is on its way send one wake
// message; the runner, pulling, holds the bell and takes it just before the pull's answer, so the
// transactions the pull missed are read by the next turn and no ring is left without a wake.
TEST_CASE("sim: commits rung during a pull send one wake, the bell is held to the pull's answer and every commit is read", "[sim]") {
  test::sim_shell shell;
  shell.bell = true;
  shell.pull_hops = 2;  // the tailer's answer comes behind the bell's wake
  sim_pipeline p(runner_options{}, shell);
  p.backend.auto_barrier = true;
  p.commit({test::put(sim_table, "k0", "v")});
  p.advance(milliseconds(2000));
  REQUIRE(p.slot_readiness.state == readiness_state::ready);
  int racing = 0;
  p.after_pull = [&] {
    if (racing > 0) return;
    for (racing = 1; racing <= 3; ++racing) p.commit({test::put(sim_table, "r" + std::to_string(racing), "racing")}, false, false);
  };
  const auto wakes_before = p.wake_messages;
  p.commit({test::put(sim_table, "k1", "v")}, false, false);
  bool held = false;
  while (p.step()) {
    held = held || p.interpreter->test_bell_held();
    CHECK(p.lost_wake().empty());
    if (p.quiet()) break;
  }
  CHECK(held);
  CHECK(p.wake_messages - wakes_before == 2);  // the first commit's, and one for the three rung during its pull
  p.advance(milliseconds(2000));
  CHECK(p.lost_wake().empty());
  CHECK_FALSE(p.bell->rung());
  CHECK(differs_from_primary(p).empty());
  CHECK(p.slot_readiness.state == readiness_state::ready);
}
