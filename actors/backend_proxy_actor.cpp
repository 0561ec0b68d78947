#include "actors/backend_proxy_actor.hpp"

#include <functional>
#include <map>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "core/projection_digest.hpp"
#include "core/verify_scan.hpp"

namespace dix {
namespace {

struct proxy_state {
  std::shared_ptr<backend> b;
  runner_actor runner;  // the sender of the last command: where state changes go
  std::uint64_t next_token = 1;
  std::map<std::uint64_t, std::pair<std::uint64_t, caf::typed_response_promise<flush_done>>> flushes;
  std::map<epoch_t, caf::typed_response_promise<quiescence>> shutdowns;
  std::map<std::uint64_t, std::pair<std::uint64_t, caf::typed_response_promise<reset_done>>> resets;  // token → gen, promise
  // flush and shutdown calls that came while a reset ran, in arrival order: started once no reset
  // is outstanding (a backend is never told to flush or shut down while it destroys its index).
  // The runner's core waits for its reset itself; this keeps a supervisor releasing for a dead
  // runner, whose reset is still running, from doing otherwise (protocol.md §9.6, §11.4).
  std::vector<std::function<void()>> after_reset;
  // The verify (messages/verify.hpp): the digest view opened for the runner's generation `gen`,
  // then the job and the paced scan over both. Declared after `b`, and destroyed before every
  // reset and shutdown: a view pins the backend's state (the RocksDB index's holds its lock).
  struct verify_state {
    std::uint64_t gen = 0;
    std::uint64_t serial = 0;  // this proxy's count of views opened: a tick of an earlier one is ignored
    std::unique_ptr<digest_view> view;
    std::shared_ptr<verify_job> job;
    std::unique_ptr<view_entries> index;
    std::optional<caf::actor_clock::time_point> progress_sent;  // the last verify_progressed
    std::unique_ptr<verify_scan> scan;  // last: destroyed first, before what it reads
  };
  std::optional<verify_state> verify;
  std::uint64_t verify_serial = 0;
  static inline const char* name = "dix.backend_proxy";
};

// Entries a verify tick reads at most: a bounded stall of the backend's other calls.
constexpr std::uint64_t verify_tick_entries = 4096;

using proxy_pointer = backend_proxy_actor::stateful_pointer<proxy_state>;

caf::error to_caf(const result<void>& r) {
  return r ? caf::error{} : make_error(r.error().value(), r.error().message());
}

// Posts `msg` to the proxy if it still exists. Backends keep callbacks and completions for as
// long as they like; a weak reference keeps them from keeping the proxy alive.
template <class Message>
void post_to(const caf::weak_actor_ptr& weak, Message msg) {
  if (auto strong = weak.lock()) caf::anon_send(caf::actor_cast<backend_proxy_actor>(strong), std::move(msg));
}

// Runs `call` (a flush or a shutdown of the backend) now, or — a reset outstanding — once none
// is, in arrival order.
void after_any_reset(proxy_pointer self, std::function<void()> call) {
  if (self->state.resets.empty()) call();
  else self->state.after_reset.push_back(std::move(call));
}

template <class Done>
void deliver_pending(std::map<epoch_t, caf::typed_response_promise<Done>>& pending, epoch_t epoch, Done& m) {
  auto it = pending.find(epoch);
  if (it == pending.end()) return;
  auto promise = it->second;
  pending.erase(it);
  promise.deliver(m);
}

// Only the runner delivers and asks for the durable cursor; flush and shutdown also come
// from the supervisor standing in for a dead runner, whose address must not receive state changes.
void remember_runner(proxy_pointer self) {
  if (auto r = caf::actor_cast<runner_actor>(self->current_sender())) self->state.runner = r;
}

void end_verify(proxy_pointer self, caf::error err, std::shared_ptr<const drift_report> report = nullptr) {
  auto& v = *self->state.verify;
  if (self->state.runner) self->send(self->state.runner, verify_scanned{v.gen, std::move(report), std::move(err)});
  self->state.verify.reset();
}

// The scan over the view kept since digest_open and the job's snapshots: the primary's side of
// each log projects its snapshot as the tailer does, leaving out what the backend skips.
void start_scan(proxy_pointer self, std::shared_ptr<verify_job> job) {
  auto& v = *self->state.verify;
  v.job = std::move(job);
  v.index = std::make_unique<view_entries>(*v.view);
  std::vector<std::string> names;
  for (const auto& l : v.job->logs) names.push_back(l.name);
  auto* j = v.job.get();
  auto backend_of = self->state.b;
  auto* view = v.view.get();
  primary_source_of primary = [j, backend_of, view](const std::string& name) -> result<std::unique_ptr<entry_source>> {
    for (auto& l : j->logs) {
      if (l.name != name || !l.snapshot) continue;
      if (view->answers_skips()) {
        // The backend that decides is elsewhere (a remote node's): asked, in batches, only about
        // the records the index lacks (decision 0059).
        auto questions = [view](const std::vector<record_entry>& records) { return view->skips(records); };
        return std::unique_ptr<entry_source>(
            std::make_unique<projection_entries>(*l.snapshot, l.name, l.tables, projection_entries::skip_filter{}, questions));
      }
      auto skipped = [backend_of](const record_entry& r) { return backend_of->skips(r).has_value(); };
      return std::unique_ptr<entry_source>(std::make_unique<projection_entries>(*l.snapshot, l.name, l.tables, skipped));
    }
    return error{errc::log_missing, "the verify has no snapshot of log " + name};
  };
  const auto expected = v.view->digest().records * 2 + v.view->preparation_rows();
  v.scan = std::make_unique<verify_scan>(*v.index, std::move(names), std::move(primary), j->request.limit, expected,
                                         j->request.entries_per_s, self->clock().now());
}

void tick(proxy_pointer self) {
  auto& v = *self->state.verify;
  const auto now = self->clock().now();
  result<verify_step> step = error{errc::backend_failed, "the verify's scan threw"};
  try {
    step = v.scan->step(now, verify_tick_entries);
  } catch (const std::exception& e) {
    step = error{errc::backend_failed, std::string("the verify's scan threw: ") + e.what()};
  } catch (...) {
  }
  if (!step) {
    end_verify(self, make_error(step.error().value(), step.error().message()));
    return;
  }
  if (step->done) {
    auto report = std::make_shared<drift_report>(v.scan->report());
    report->stored = v.view->digest();
    end_verify(self, caf::error{}, std::move(report));
    return;
  }
  // The progress at most every 100 ms: a scan at full speed ticks far more often.
  if (self->state.runner && (!v.progress_sent || now - *v.progress_sent >= std::chrono::milliseconds(100))) {
    v.progress_sent = now;
    const auto p = v.scan->progress(now);
    self->send(self->state.runner, verify_progressed{v.gen, p.read, p.expected, p.eta ? p.eta->count() : -1});
  }
  if (step->resume_at && *step->resume_at > now) {
    self->delayed_send(self, *step->resume_at - now, verify_tick{v.serial});
  } else {
    self->send(self, verify_tick{v.serial});
  }
}

backend_proxy_actor::behavior_type proxy(proxy_pointer self, std::shared_ptr<backend> b) {
  self->state.b = std::move(b);
  caf::weak_actor_ptr me = self->ctrl();
  // A one-way message the receiver could not handle comes back as an error: drop it rather than
  // let the default handler end the proxy (and with it the backend's calls).
  self->set_error_handler([](caf::error&) {});
  return {
    [self](deliver& m) -> delivery_result_msg {
      remember_runner(self);
      try {
        return {m.gen, self->state.b->deliver(m.batch.value), {}};
      } catch (const std::exception& e) {
        return {m.gen, delivery_result::failed, std::string("deliver threw: ") + e.what()};
      } catch (...) {
        return {m.gen, delivery_result::failed, "deliver threw"};
      }
    },
    [self](durable_query& m) -> durable {
      remember_runner(self);
      try {
        auto d = self->state.b->durable_cursor();
        if (!d) return {m.gen, std::nullopt, make_error(d.error().value(), d.error().message())};
        return {m.gen, *d, caf::error{}};
      } catch (const std::exception& e) {
        return {m.gen, std::nullopt, make_error(errc::backend_failed, std::string("durable_cursor threw: ") + e.what())};
      } catch (...) {
        return {m.gen, std::nullopt, make_error(errc::backend_failed, "durable_cursor threw")};
      }
    },
    [self, me](flush_request& m) -> caf::result<flush_done> {
      auto promise = self->make_response_promise<flush_done>();
      auto token = self->state.next_token++;
      self->state.flushes.emplace(token, std::make_pair(m.gen, promise));
      after_any_reset(self, [self, me, token, reason = m.reason] {
        try {
          self->state.b->flush(reason, completion([me, token](result<void> r) {
            post_to(me, flush_done{token, to_caf(r)});
          }));
        } catch (...) {
          post_to(me, flush_done{token, make_error(errc::backend_failed, "flush threw")});
        }
      });
      return promise;
    },
    [self](digest_open& m) -> digest_opened {
      remember_runner(self);
      self->state.verify.reset();
      try {
        auto view = self->state.b->open_digest();
        if (!view) return {m.gen, std::nullopt, make_error(view.error().value(), view.error().message())};
        auto through = (*view)->through();
        self->state.verify.emplace();
        self->state.verify->gen = m.gen;
        self->state.verify->serial = ++self->state.verify_serial;
        self->state.verify->view = std::move(*view);
        return {m.gen, std::move(through), caf::error{}};
      } catch (const std::exception& e) {
        return {m.gen, std::nullopt, make_error(errc::backend_failed, std::string("open_digest threw: ") + e.what())};
      } catch (...) {
        return {m.gen, std::nullopt, make_error(errc::backend_failed, "open_digest threw")};
      }
    },
    [self](verify_run& m) {
      remember_runner(self);
      auto& v = self->state.verify;
      if (!v || v->gen != m.gen || !v->view) {
        if (self->state.runner) {
          self->send(self->state.runner, verify_scanned{m.gen, nullptr, make_error(errc::io_error, "the proxy keeps no digest view for this verify")});
        }
        return;
      }
      start_scan(self, std::move(m.job));
      self->send(self, verify_tick{v->serial});
    },
    [self](verify_tick& m) {
      if (self->state.verify && self->state.verify->serial == m.gen && self->state.verify->scan) tick(self);
    },
    [self](verify_drop&) { self->state.verify.reset(); },
    [self, me](shutdown_request& m) -> caf::result<quiescence> {
      self->state.verify.reset();  // the view pins the backend's state: gone before it shuts down
      auto promise = self->make_response_promise<quiescence>();
      self->state.shutdowns[m.epoch] = promise;
      after_any_reset(self, [self, me, epoch = m.epoch] {
        try {
          self->state.b->shutdown(epoch, completion([me, epoch](result<void> r) { post_to(me, quiescence{epoch, to_caf(r)}); }));
        } catch (...) {
          post_to(me, quiescence{epoch, make_error(errc::backend_failed, "shutdown threw")});
        }
      });
      return promise;
    },
    [self](coverage_publish& m) {
      // Informational (api.md §5): noexcept by contract, its outcome never read.
      self->state.b->publish_coverage(m.positions, m.coverage_time, m.epoch);
    },
    [self, me](reset_request& m) -> caf::result<reset_done> {
      remember_runner(self);
      self->state.verify.reset();  // as before a shutdown: no view while the index is destroyed
      auto promise = self->make_response_promise<reset_done>();
      auto token = self->state.next_token++;
      self->state.resets.emplace(token, std::make_pair(m.gen, promise));
      try {
        self->state.b->reset(m.epoch, completion([me, token, epoch = m.epoch](result<void> r) {
          post_to(me, reset_done{token, epoch, to_caf(r)});
        }));
      } catch (...) {
        post_to(me, reset_done{token, m.epoch, make_error(errc::backend_failed, "reset threw")});
      }
      return promise;
    },
    // -- the proxy's own mailbox: completions and state changes, forwarded in order --
    [self](state_change_msg& m) {
      if (self->state.runner) self->send(self->state.runner, m);
    },
    [self](flush_done& m) {
      auto it = self->state.flushes.find(m.gen);  // internally gen is the completion's token
      if (it == self->state.flushes.end()) return;
      auto [gen, promise] = it->second;
      self->state.flushes.erase(it);
      promise.deliver(flush_done{gen, m.error});
    },
    [self](quiescence& m) { deliver_pending(self->state.shutdowns, m.epoch, m); },
    [self](reset_done& m) {
      auto it = self->state.resets.find(m.gen);  // internally gen is the completion's token
      if (it == self->state.resets.end()) return;
      auto [gen, promise] = it->second;
      self->state.resets.erase(it);
      promise.deliver(reset_done{gen, m.epoch, m.error});
      if (!self->state.resets.empty()) return;
      auto waiting = std::move(self->state.after_reset);
      self->state.after_reset.clear();
      for (auto& call : waiting) call();
    },
  };
}

}  // namespace

backend_proxy_actor spawn_backend_proxy(caf::actor_system& sys, std::shared_ptr<backend> b, bool detached) {
  if (detached) return sys.spawn<caf::detached>(proxy, std::move(b));
  return sys.spawn(proxy, std::move(b));
}

}  // namespace dix
