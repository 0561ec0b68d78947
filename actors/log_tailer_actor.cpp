#include "actors/log_tailer_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/registration_record.hpp"
#include "core/tailer_core.hpp"

namespace dix {
namespace {

struct tailer_state {
  std::shared_ptr<tailer_deps> deps;
  static inline const char* name = "dix.log_tailer";
};

runner_actor sender_of(log_tailer_actor::stateful_pointer<tailer_state> self) {
  return caf::actor_cast<runner_actor>(self->current_sender());
}

log_fault to_message(std::uint64_t gen, const tailer_fault& f) { return log_fault{gen, f.transient, f.reason, f.text}; }

dix::positions anchor_positions(const tailer_deps& d, const std::vector<std::uint64_t>& ends) {
  dix::positions out;
  const auto& logs = d.settings->logs;
  for (std::size_t i = 0; i < ends.size() && i < logs.size(); ++i) out[logs[i].source->log_name()] = ends[i];
  return out;
}

log_tailer_actor::behavior_type tailer(log_tailer_actor::stateful_pointer<tailer_state> self,
                                       std::shared_ptr<tailer_deps> deps) {
  self->state.deps = std::move(deps);
  return {
    [self](log_open& m) {
      auto& d = *self->state.deps;
      auto out = m.from ? d.core->install(*m.from) : d.core->install_from_start();
      auto to = sender_of(self);
      if (out.fault) self->send(to, to_message(m.gen, *out.fault));
      else self->send(to, log_opened{m.gen, anchor_positions(d, out.anchor_ends), out.installed});
    },
    [self](log_pull& m) {
      auto& d = *self->state.deps;
      auto out = d.core->pull(m.budgets, m.epoch, *d.settings->time, m.capture);
      auto to = sender_of(self);
      if (out.fault) {
        self->send(to, to_message(m.gen, *out.fault));
        return;
      }
      self->send(to, log_chunk{m.gen, std::move(out.chunk)});
    },
    [self](boundary_capture& m) {
      auto& d = *self->state.deps;
      auto out = d.core->capture_boundary(d.settings->id, m.epoch, m.scan_bytes_per_s, *d.settings->time);
      auto to = sender_of(self);
      if (out.fault) {
        self->send(to, to_message(m.gen, *out.fault));
        return;
      }
      self->send(to, boundary_captured{m.gen, std::move(out.found)});
    },
    [self](scan_pull& m) {
      auto& d = *self->state.deps;
      auto out = d.core->scan(m.budgets, m.epoch, *d.settings->time);
      auto to = sender_of(self);
      if (out.fault) {
        self->send(to, to_message(m.gen, *out.fault));
        return;
      }
      self->send(to, scan_chunk{m.gen, std::move(out.step)});
    },
    [self](meta_write& m) {
      auto& d = *self->state.deps;
      meta_written reply{m.gen, m.kind, m.value, caf::error{}};
      result<void> done = error{errc::not_supported, "no metadata store"};
      if (d.settings->meta) {
        switch (m.kind) {
          case meta_kind::epoch: done = d.settings->meta->persist_epoch(m.value); break;
          case meta_kind::condemn: done = d.settings->meta->write_marker(); break;
          case meta_kind::settle: done = d.settings->meta->settle(m.value); break;
        }
      }
      if (!done) reply.error = make_error(done.error().value(), done.error().message());
      self->send(sender_of(self), reply);  // the runner, or the supervisor standing in for a dead one
    },
    [self](log_fence& m) {
      auto taken = self->state.deps->core->fence();
      fence_taken reply{m.gen, caf::error{}};
      if (!taken) reply.error = make_error(taken.error().value(), taken.error().message());
      self->send(sender_of(self), reply);
    },
    [self](log_lift& m) {
      // Lifts whatever fence is up: a later fence is only taken after this message (one sender).
      auto snapshots = self->state.deps->core->lift_fence();
      if (!m.scan) return;
      auto handed = std::make_shared<std::vector<std::unique_ptr<store_snapshot>>>(std::move(snapshots));
      self->send(sender_of(self), fence_lifted{m.gen, std::move(handed)});
    },
    [self](meta_read& m) {
      auto& d = *self->state.deps;
      meta_state reply{m.gen, false, std::nullopt, caf::error{}};
      auto r = d.settings->meta ? d.settings->meta->read_records() : result<meta_records>{meta_records{}};
      if (!r) reply.error = make_error(r.error().value(), r.error().message());
      else {
        reply.condemned = r->condemned;
        reply.fingerprint = r->fingerprint;
      }
      self->send(sender_of(self), reply);
    },
  };
}

}  // namespace

log_tailer_actor spawn_log_tailer(caf::actor_system& sys, std::shared_ptr<tailer_deps> deps, bool detached) {
  if (detached) return sys.spawn<caf::detached>(tailer, std::move(deps));
  return sys.spawn(tailer, std::move(deps));
}

}  // namespace dix
