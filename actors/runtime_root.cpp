// The composition root behind dix::runtime: one CAF actor system per runtime with one supervisor,
// which spawns per registered id a log tailer and a backend proxy (detached: they block on RocksDB
// and backend code) and a runner on the scheduler, and restarts them (actors.md §3). Store commit
// listeners wake the runners. Readiness lives in the shared segment of the home store
// (formats.md §4): attached at create, one slot claimed per registered id.
#include <dix/runtime.hpp>

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

#include <sys/vfs.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/backend_proxy_actor.hpp"
#include "actors/log_tailer_actor.hpp"
#include "actors/runner_actor.hpp"
#include "actors/supervisor_actor.hpp"
#include "adapters/process_lock_table.hpp"
#include "adapters/primary_store_impl.hpp"
#include "adapters/readiness_segment.hpp"
#include "adapters/rocksdb_log_source.hpp"
#include "adapters/rocksdb_store_reader.hpp"
#include "core/bytes.hpp"
#include "core/fingerprint.hpp"
#include "core/names.hpp"
#include "core/tailer_core.hpp"
#include "messages/type_ids.hpp"

namespace dix {
namespace {

constexpr long nfs_super_magic = 0x6969;  // <linux/magic.h> NFS_SUPER_MAGIC

class host_impl final : public backend_host {
 public:
  explicit host_impl(std::shared_ptr<readiness_slot> slot) : slot_(std::move(slot)) {}
  bool is_owner_epoch(epoch_t e) const noexcept override { return slot_->owner_epoch() == e; }
  dix::readiness readiness() const noexcept override { return slot_->read(); }
  void note_unindexable(std::string_view) noexcept override { unindexable.fetch_add(1, std::memory_order_relaxed); }
  void request_rebuild() noexcept override {}  // rebuild arrives with a later issue
  result<coverage> admit_query(const coverage_mode& mode, cancel_token) override {
    // Until coverage is built, queries are admitted from readiness alone (issue 3).
    auto r = slot_->read();
    switch (r.state) {
      case readiness_state::ready: return coverage{coverage_state::unknown, mode.tolerance, std::nullopt};
      case readiness_state::rebuilding: return error{errc::rebuilding, "the index is rebuilding"};
      default: return error{errc::unavailable, "the index is " + std::string(to_string(r.state))};
    }
  }
  std::atomic<std::uint64_t> unindexable{0};

 private:
  std::shared_ptr<readiness_slot> slot_;
};

// The home store's records of one id (formats.md §5), for the tailer's metadata commands.
void bind_meta(tailer_deps& deps, const std::shared_ptr<primary_store>& home, const std::string& id) {
  deps.persist_epoch = [home, key = "epoch/" + id](std::uint64_t epoch) -> result<void> {
    std::string value;
    put_le<std::uint64_t>(value, epoch);
    auto done = commit_system(*home, {meta_op{op_kind::put, key, std::move(value)}});
    if (!done) return done.error();
    return {};
  };
  deps.write_marker = [home, key = "condemned/" + id]() -> result<void> {
    auto done = commit_system(*home, {meta_op{op_kind::put, key, std::string(1, '\x01')}});
    if (!done) return done.error();
    return {};
  };
  deps.settle = [home, id](std::uint64_t fingerprint) -> result<void> {
    std::string value;
    put_le<std::uint64_t>(value, fingerprint);
    auto done = commit_system(*home, {meta_op{op_kind::put, "registration/" + id, std::move(value)},
                                      meta_op{op_kind::del, "condemned/" + id, {}}});
    if (!done) return done.error();
    return {};
  };
  deps.read_records = [home, id]() -> result<meta_records> {
    meta_records r;
    auto marker = read_meta(*home, "condemned/" + id);
    if (!marker) return marker.error();
    r.condemned = marker->has_value();
    auto fp = read_meta(*home, "registration/" + id);
    if (!fp) return fp.error();
    if (*fp) {
      if ((*fp)->size() != 8) return error{errc::record_corrupt, "registration/" + id + " is not 8 bytes"};
      r.fingerprint = get_le<std::uint64_t>(**fp, 0);
    }
    return r;
  };
}

class runtime_config final : public caf::actor_system_config {
 public:
  runtime_config(std::uint32_t threads, actor_scheduler policy) {
    configure_dix(*this);
    set("logger.file-verbosity", caf::atom("quiet"));
    set("logger.console-verbosity", caf::atom("quiet"));
    if (threads > 0) set("scheduler.max-threads", static_cast<std::size_t>(threads));
    if (policy == actor_scheduler::sharing) {
      set("scheduler.policy", caf::atom("sharing"));
    } else {
      set("scheduler.policy", caf::atom("stealing"));
    }
  }
};

std::atomic<std::uint64_t> next_requester{1};

}  // namespace

struct runtime::impl {
  struct entry {
    std::string id;
    registration reg;
    std::shared_ptr<segment_slot> slot;
    std::unique_ptr<host_impl> host;
    std::shared_ptr<snapshot_box> snapshot = std::make_shared<snapshot_box>();
    std::optional<shared_future<void>> unregistered;
  };

  // The id's current runner, replaced by the supervisor when it respawns one.
  struct runner_cell {
    std::mutex mutex;
    runner_actor runner;
    void set(const runner_actor& r) {
      std::lock_guard g(mutex);
      runner = r;
    }
    runner_actor get() {
      std::lock_guard g(mutex);
      return runner;
    }
  };

  std::vector<std::shared_ptr<primary_store>> stores;
  std::shared_ptr<readiness_segment> segment;  // of the home store; attached for our lifetime
  std::shared_ptr<process_lock_table> locks;   // the process's runner lock table of that home
  runtime_options options;
  std::unique_ptr<runtime_config> cfg;
  std::unique_ptr<caf::actor_system> sys;
  mutable std::mutex mutex;
  std::map<std::string, std::shared_ptr<entry>> entries;
  std::vector<std::uint64_t> listeners;  // one per store
  std::shared_ptr<supervisor_registry> registry = std::make_shared<supervisor_registry>();
  supervisor_actor supervisor;
  std::map<std::string, std::shared_ptr<runner_cell>> cells;  // guarded by mutex
  std::shared_ptr<const std::vector<std::shared_ptr<runner_cell>>> runners =
    std::make_shared<std::vector<std::shared_ptr<runner_cell>>>();
  bool stopping = false;
  std::optional<shared_future<void>> stop_future;
  // The watcher (protocol.md §9.1): wakes local runners for rebuild requests in the segment.
  std::thread watcher;
  std::atomic<bool> watcher_stop{false};

  void wake_id(const std::string& id, std::uint8_t flags) {  // caller holds mutex
    auto it = cells.find(id);
    if (it == cells.end()) return;
    if (auto r = it->second->get()) caf::anon_send(r, dix::wake{flags});
  }

  // Sleeps on the segment's change counter (futex; any process's change wakes it, so does
  // stop_watcher) with max_flush_age as the bound, and wakes the runner of every id whose slot
  // holds a rebuild request — again only when that slot changed since (a runner that leaves the
  // flag, being busy acquiring, publishes when done) or the wait timed out. Not while the runtime
  // stops or the id unregisters. Coverage demand joins it with coverage (§12.6).
  void watch() {
    std::map<std::string, std::uint64_t> woken;  // per id: the slot's change counter at the last wake
    auto seen = segment->segment_change_counter();
    bool timed_out = false;
    while (!watcher_stop.load(std::memory_order_acquire)) {
      {
        std::lock_guard g(mutex);
        for (const auto& [id, e] : entries) {
          if (stopping || e->unregistered || !e->slot->rebuild_requested()) continue;
          const auto counter = e->slot->change_counter();
          auto last = woken.find(id);
          if (!timed_out && last != woken.end() && last->second == counter) continue;
          woken[id] = counter;
          wake_id(id, wake_flag::rebuild);
        }
      }
      const auto now_seen = segment->wait_change(seen, options.runner.max_flush_age);
      timed_out = now_seen == seen;
      seen = now_seen;
    }
  }
  ~impl() { stop_watcher(); }  // a backstop: ~runtime stops it first
  void stop_watcher() {
    if (!watcher.joinable()) return;
    watcher_stop.store(true, std::memory_order_release);
    segment->notify();  // one header change: this watcher, and any other process's, looks once more
    watcher.join();
  }

  void publish_runners() {  // caller holds mutex
    auto list = std::make_shared<std::vector<std::shared_ptr<runner_cell>>>();
    for (auto& [id, c] : cells) list->push_back(c);
    std::atomic_store(&runners, std::shared_ptr<const std::vector<std::shared_ptr<runner_cell>>>(std::move(list)));
  }

  void wake_all(std::uint8_t flags) {
    auto list = std::atomic_load(&runners);
    for (const auto& c : *list) {
      if (auto r = c->get()) caf::anon_send(r, dix::wake{flags});
    }
  }

  // Releases one id through the supervisor, which then stops its actors. Blocking; never on a
  // scheduler thread.
  result<void> release(const std::shared_ptr<entry>& e) {
    result<void> outcome;
    caf::scoped_actor self{*sys};
    self->request(supervisor, caf::infinite, dix::unsupervise{e->id})
      .receive([&](dix::stopped& s) { if (s.error) outcome = to_dix_error(s.error); },
               [&](caf::error& err) { outcome = to_dix_error(err); });
    return outcome;
  }
};

runtime::runtime(std::shared_ptr<impl> p) : impl_(std::move(p)) {}

result<std::unique_ptr<runtime>> runtime::create(std::vector<std::shared_ptr<primary_store>> stores,
                                                 runtime_options options) {
  if (stores.empty() || stores.size() > 32) {
    return error{errc::invalid_argument, "runtime needs 1…32 stores, got " + std::to_string(stores.size())};
  }
  std::set<std::string> names;
  for (const auto& s : stores) {
    if (!s) return error{errc::invalid_argument, "runtime: a store is null"};
    if (!names.insert(s->log_name()).second) {
      return error{errc::invalid_argument, "runtime: two stores share the log name " + s->log_name()};
    }
  }
  if (auto ok = validate(options); !ok) return ok.error();
  const auto home = stores.front()->path();
  struct statfs fs {};
  if (::statfs(home.c_str(), &fs) == 0 && static_cast<long>(fs.f_type) == nfs_super_magic) {
    return error{errc::invalid_argument, "runtime: " + home.string() + " is on NFS; dix needs a local filesystem for its locks and readiness segment"};
  }
  auto segment = readiness_segment::attach(home);
  if (!segment) return segment.error();
  auto p = std::make_shared<impl>();
  p->segment = std::move(*segment);
  p->locks = process_lock_table::for_home(p->segment->directory());
  p->stores = std::move(stores);
  p->options = options;
  p->cfg = std::make_unique<runtime_config>(options.actor_threads, options.scheduler);
  p->sys = std::make_unique<caf::actor_system>(*p->cfg);
  p->supervisor = spawn_supervisor(*p->sys, p->registry);
  std::weak_ptr<impl> weak = p;
  for (auto& s : p->stores) {
    p->listeners.push_back(add_commit_listener(*s, [weak](const commit_event& e) {
      if (auto self = weak.lock()) {
        std::uint8_t flags = wake_flag::commit;
        if ((e.flags & header_flag::system) != 0) flags |= wake_flag::system;
        self->wake_all(flags);
      }
    }));
  }
  std::unique_ptr<runtime> rt(new runtime(p));
  try {
    p->watcher = std::thread([raw = p.get()] { raw->watch(); });  // joined by ~runtime (and ~impl)
  } catch (const std::system_error& e) {
    return error{errc::io_error, std::string("runtime: cannot start the watcher thread: ") + e.what()};
  }
  return rt;
}

runtime::~runtime() {
  auto done = stop();
  done.wait();
  impl_->stop_watcher();
  for (std::size_t i = 0; i < impl_->stores.size() && i < impl_->listeners.size(); ++i) {
    remove_commit_listener(*impl_->stores[i], impl_->listeners[i]);
  }
  {
    std::lock_guard g(impl_->mutex);
    caf::anon_send_exit(impl_->supervisor, caf::exit_reason::user_shutdown);  // and its children
    impl_->supervisor = nullptr;
    impl_->entries.clear();
    impl_->cells.clear();
    impl_->publish_runners();
  }
  impl_->sys.reset();  // waits for every actor
}

result<registration_handle> runtime::register_index(registration r) {
  auto& p = *impl_;
  std::unique_lock lock(p.mutex);
  if (p.stopping) return error{errc::stopped, "the runtime is stopped"};
  if (!r.backend) return error{errc::invalid_argument, "registration.backend is null"};
  auto id = r.backend->id();
  if (!is_valid_backend_id(id)) {
    return error{errc::invalid_argument, "backend id \"" + escape_bytes(id) + "\": must be 1…64 of [A-Za-z0-9._-], not starting with '.'"};
  }
  if (r.projections.empty()) return error{errc::invalid_argument, "registration of " + id + " has no projection"};
  std::vector<std::shared_ptr<primary_store>> logs;  // attach order, those holding a projected table
  for (const auto& s : p.stores) {
    bool used = false;
    for (const auto& [ref, fn] : r.projections) used = used || ref.log == s->log_name();
    if (used) logs.push_back(s);
  }
  for (const auto& [ref, fn] : r.projections) {
    auto store = std::find_if(p.stores.begin(), p.stores.end(), [&](const auto& s) { return s->log_name() == ref.log; });
    if (store == p.stores.end()) return error{errc::invalid_argument, "projection on log " + ref.log + ", which is not attached"};
    if (!(*store)->has_table(ref.table)) {
      return error{errc::invalid_argument, "projection on log " + ref.log + " table " + std::to_string(ref.table) + ", which does not exist"};
    }
    if (!fn) return error{errc::invalid_argument, "projection on log " + ref.log + " table " + std::to_string(ref.table) + " is empty"};
  }
  if (r.projection_version.size() > 256) {
    return error{errc::invalid_argument, "registration.projection_version has " + std::to_string(r.projection_version.size()) + " bytes: at most 256"};
  }
  auto runner_opts = r.options.value_or(p.options.runner);
  if (auto ok = validate(runner_opts); !ok) return ok.error();
  if (r.backend->kind() == "remote" && runner_opts.max_chunk_bytes > (32u << 20)) {
    return error{errc::invalid_argument, "runner_options.max_chunk_bytes = " + std::to_string(runner_opts.max_chunk_bytes) +
                                             ": must be at most 33554432 for a remote backend"};
  }
  if (p.entries.count(id) != 0) return error{errc::already_registered, "backend id " + id + " is registered in this runtime"};

  std::vector<projected_table> tables;
  for (const auto& [ref, fn] : r.projections) tables.push_back(projected_table{ref.log, ref.table});
  auto fingerprint = registration_fingerprint(r.backend->kind(), id, r.projection_version, std::move(tables));
  if (!fingerprint) return fingerprint.error();
  auto slot = p.segment->claim(id);  // formats.md §4.6 step 3; segment_full
  if (!slot) return slot.error();

  auto e = std::make_shared<impl::entry>();
  e->id = id;
  e->slot = std::move(*slot);
  // Epoch floor (formats.md §4.6 step 4): never below the persisted epoch/<id>.
  auto persisted = read_meta(*p.stores.front(), "epoch/" + id);
  if (!persisted) return error{persisted.error().value(), "reading epoch/" + id + ": " + persisted.error().message()};
  if (*persisted && (*persisted)->size() == 8) e->slot->raise_epoch_floor(get_le<std::uint64_t>(**persisted, 0));
  e->host = std::make_unique<host_impl>(e->slot);
  try {
    r.backend->attach(*e->host);
  } catch (const std::exception& ex) {
    return error{errc::backend_failed, "attach of " + id + " threw: " + ex.what()};
  }

  auto deps = std::make_shared<tailer_deps>();
  deps->id = id;
  bind_meta(*deps, p.stores.front(), id);
  deps->time = &system_clock();
  std::vector<tailer_log> ports;
  std::vector<std::string> log_names;
  for (const auto& s : logs) {
    auto source = std::make_shared<rocksdb_log_source>(s);
    auto reader = std::make_shared<rocksdb_store_reader>(s);
    ports.push_back(tailer_log{source.get(), reader.get()});
    deps->sources.push_back(source);
    deps->readers.push_back(reader);
    log_names.push_back(s->log_name());
  }
  std::vector<attached_log> attached;  // every store of the runtime: a cursor may name any (§3.1)
  for (const auto& s : p.stores) attached.push_back(attached_log{s->log_name(), s->identity()});
  deps->core = std::make_unique<tailer_core>(std::move(ports), r.projections, std::move(attached));
  runner_deps rd;
  rd.id = id;
  rd.config.options = runner_opts;
  rd.config.fingerprint = *fingerprint;
  rd.config.rebuildable = r.backend->supports_reset();
  std::uint64_t ttl_ms = 600000;
  for (const auto& s : logs) {
    auto ttl = primary_store_access::get(*s).options.wal_ttl_s;
    if (ttl != 0) ttl_ms = std::min<std::uint64_t>(ttl_ms, ttl * 1000 / 8);
  }
  rd.config.cursor_flush_age = std::chrono::milliseconds(std::max<std::uint64_t>(ttl_ms, 1));
  rd.slot = e->slot;
  rd.lock = p.locks.get();
  rd.requester = next_requester.fetch_add(1);
  rd.logs = log_names;
  rd.snapshot = e->snapshot;

  auto cell = std::make_shared<impl::runner_cell>();
  auto spec = std::make_shared<supervised_spec>();
  spec->id = id;
  spec->options = runner_opts;
  caf::actor_system* sys = p.sys.get();
  spec->spawn_tailer = [sys, deps] { return spawn_log_tailer(*sys, deps, true); };
  spec->spawn_proxy = [sys, b = r.backend] { return spawn_backend_proxy(*sys, b, true); };
  spec->spawn_runner = [sys, rd](log_tailer_actor t, backend_proxy_actor x, std::optional<readiness_reason> condemned) {
    auto d = rd;
    d.tailer = std::move(t);
    d.proxy = std::move(x);
    d.config.start_condemned = condemned;
    // Each incarnation its own generations: late replies to a dead runner never match.
    d.config.generation_base = next_requester.fetch_add(1) << 32;
    return spawn_runner(*sys, std::move(d));
  };
  spec->snapshot = e->snapshot;
  spec->slot = e->slot;
  spec->lock = rd.lock;
  spec->requester = rd.requester;
  spec->runner_changed = [cell](const runner_actor& runner) { cell->set(runner); };
  p.registry->put(std::move(spec));
  e->reg = std::move(r);
  p.entries[id] = e;
  p.cells[id] = cell;
  p.publish_runners();
  lock.unlock();
  // The supervisor spawns the actors and wakes the runner as by a non-system commit (§2.2).
  caf::anon_send(p.supervisor, dix::supervise{id});
  return registration_handle(impl_, id);
}

shared_future<void> registration_handle::unregister() {
  auto owner = std::static_pointer_cast<runtime::impl>(owner_.lock());
  if (!owner) {
    std::promise<result<void>> done;
    done.set_value(error{errc::stopped, "the runtime is gone"});
    return done.get_future().share();
  }
  std::shared_ptr<runtime::impl::entry> e;
  {
    std::lock_guard g(owner->mutex);
    auto it = owner->entries.find(id_);
    if (it == owner->entries.end()) {
      std::promise<result<void>> done;
      done.set_value(error{errc::not_registered, "backend id " + id_ + " is not registered"});
      return done.get_future().share();
    }
    e = it->second;
    if (e->unregistered) return *e->unregistered;
    // The task drops its captures when done: a future kept by a caller must not keep the
    // entry's actor handles (and so the actor system's shutdown) alive.
    e->unregistered = std::async(std::launch::async, [owner, e]() mutable {
                        auto outcome = owner->release(e);
                        {
                          std::lock_guard g2(owner->mutex);
                          if (outcome) {
                            owner->entries.erase(e->id);
                            owner->cells.erase(e->id);
                            owner->publish_runners();
                          }
                        }
                        e.reset();
                        owner.reset();
                        return outcome;
                      }).share();
    return *e->unregistered;
  }
}

void runtime::wake() { impl_->wake_all(wake_flag::commit); }

bool runtime::request_rebuild(std::string_view id) {
  runner_actor held;
  {
    std::lock_guard g(impl_->mutex);
    auto it = impl_->entries.find(std::string(id));
    if (it == impl_->entries.end()) return false;
    auto& e = *it->second;
    if (!impl_->stopping && !e.unregistered) {
      if (!e.reg.backend->supports_reset()) return false;
      e.slot->request_rebuild();  // stores the flag and notifies (the watchers see it)
      impl_->wake_id(it->first, wake_flag::rebuild);
      return true;
    }
    // §11.2 first row: a runner stopped or unregistered while its rejected shutdown keeps the
    // lock retries its release only; the runner answers whether it holds one.
    if (auto cell = impl_->cells.find(it->first); cell != impl_->cells.end()) held = cell->second->get();
  }
  if (!held) return false;
  bool retried = false;
  caf::scoped_actor self{*impl_->sys};
  self->request(held, std::chrono::seconds(10), dix::rebuild_request{dix::rebuild_source::local_call})
    .receive([&](bool r) { retried = r; }, [](caf::error&) {});
  return retried;
}

std::optional<runner_status> runtime::status(std::string_view id) const {
  std::lock_guard g(impl_->mutex);
  auto it = impl_->entries.find(std::string(id));
  if (it == impl_->entries.end()) return std::nullopt;
  auto s = it->second->snapshot->load();
  return runner_status{std::string(to_string(s.state)), s.reason, s.epoch, s.message};
}

result<dix::readiness> runtime::readiness(std::string_view id) const {
  std::lock_guard g(impl_->mutex);
  auto it = impl_->entries.find(std::string(id));
  if (it == impl_->entries.end()) return error{errc::not_registered, "backend id " + std::string(id) + " has no slot here"};
  return it->second->slot->read();
}

std::optional<runner_metrics> runtime::metrics(std::string_view id) const {
  std::lock_guard g(impl_->mutex);
  auto it = impl_->entries.find(std::string(id));
  if (it == impl_->entries.end()) return std::nullopt;
  const auto& e = *it->second;
  auto s = e.snapshot->load();
  runner_metrics m;
  m.readiness = e.slot->read();
  m.owner = s.owner;
  m.epoch = s.epoch;
  m.accepted_batches = s.accepted_batches;
  m.accepted_bytes = s.accepted_bytes;
  m.accepted_mutations = s.accepted_mutations;
  m.deferred_bytes = s.deferred_bytes;
  m.oldest_accepted_age_ms = s.oldest_accepted_age_ms;
  m.stalled_ms = s.stalled_ms;
  m.cursor_lag_ms = s.cursor_lag_ms;
  m.unread_age_ms = s.unread_age_ms;
  m.lag_ms = s.lag_ms;
  m.quiescence_age_ms = s.quiescence_age_ms;
  m.rebuild_attempts = m.readiness.rebuild_attempts;
  m.lag_gate = e.slot->lag_gate();
  m.coverage_time = e.slot->coverage_time();
  m.delivered_batches = s.delivered_batches;
  m.delivered_records = s.delivered_records;
  m.flushes = s.flushes;
  m.wal_syncs = s.wal_syncs;
  m.log_reopens = s.log_reopens;
  m.unindexable_records = s.unindexable_records + e.host->unindexable.load();
  m.transient_faults = s.transient_faults;
  m.last_fault = s.last_fault;
  for (const auto& l : s.logs) {
    log_metrics lm;
    lm.log = l.log;
    lm.read_sequence = l.read_sequence;
    lm.latest_sequence = l.latest_sequence;
    if (s.durable) {
      if (const auto* entry = s.durable->find(l.log)) lm.durable_sequence = entry->sequence;
    }
    lm.sequence_lag = lm.latest_sequence > lm.durable_sequence ? lm.latest_sequence - lm.durable_sequence : 0;
    m.logs.push_back(lm);
  }
  return m;
}

shared_future<void> runtime::stop() {
  auto p = impl_;
  std::lock_guard g(p->mutex);
  if (p->stop_future) return *p->stop_future;
  p->stopping = true;
  std::vector<std::shared_ptr<impl::entry>> all;
  for (auto& [id, e] : p->entries) all.push_back(e);
  p->stop_future = std::async(std::launch::async, [p, all]() mutable {
                     std::string failed;
                     for (const auto& e : all) {
                       auto outcome = e->unregistered ? e->unregistered->get() : p->release(e);
                       if (!outcome) failed += (failed.empty() ? "" : ", ") + e->id;
                     }
                     all.clear();  // see unregister(): release the captured handles
                     p.reset();
                     if (!failed.empty()) return result<void>{errc::backend_failed, "shutdown rejected by " + failed};
                     return result<void>{};
                   }).share();
  return *p->stop_future;
}

}  // namespace dix
