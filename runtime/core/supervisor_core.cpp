#include "core/supervisor_core.hpp"

namespace dix {

supervisor_core::supervisor_core(config c) : config_(std::move(c)) {}

void supervisor_core::to(phase next) noexcept {
  using p = phase;
  const auto from = phase_;
  bool legal = false;
  switch (next) {
    case p::supervising: legal = from == p::quiescing || from == p::marking || from == p::stopping; break;
    case p::quiescing: legal = from == p::supervising || from == p::stopping; break;
    case p::marking: legal = from == p::supervising || from == p::stopping || from == p::quiescing; break;
    case p::held: legal = from == p::quiescing; break;
    case p::stopping: legal = from == p::supervising; break;
    case p::gone: legal = from != p::gone && from != p::held; break;
  }
  check_transition(legal, "supervisor", static_cast<int>(from), static_cast<int>(next));
  phase_ = next;
}

supervision_effects supervisor_core::start() {
  supervision_effects out;
  up_[index(child_kind::tailer)] = up_[index(child_kind::proxy)] = true;
  out.push_back(sfx::spawn{child_kind::tailer, std::nullopt});
  out.push_back(sfx::spawn{child_kind::proxy, std::nullopt});
  spawn_runner(out);
  return out;
}

void supervisor_core::spawn_runner(supervision_effects& out) {
  up_[index(child_kind::runner)] = true;
  out.push_back(sfx::spawn{child_kind::runner, start_condemned_});
  // A child still being respawned is down for the new runner too.
  for (auto kind : {child_kind::tailer, child_kind::proxy}) {
    if (!up(kind)) out.push_back(sfx::tell_down{kind, false});
  }
  // As if by a non-system commit (protocol.md §2.2): the runner evaluates the index at once — a
  // condemned one acquires and rebuilds it (a backend that cannot reset stays parked).
  out.push_back(sfx::wake_runner{});
}

supervision_effects supervisor_core::on_down(child_kind kind, const ownership_record& record, steady_time now) {
  supervision_effects out;
  if (phase_ == phase::gone || !up(kind)) return out;
  up_[index(kind)] = false;
  const auto d = decide_restart(kind, history_[index(kind)], now, config_.options);
  if (kind == child_kind::runner) {
    recover(record, d, out);
    return out;
  }
  if (kind == child_kind::tailer && phase_ == phase::marking) {
    finish(out);  // the marker write died with it: as a failed write (§10.3)
    if (phase_ == phase::gone) return out;
  }
  if (up(child_kind::runner)) out.push_back(sfx::tell_down{kind, d.escalate});
  if (kind == child_kind::proxy && phase_ == phase::quiescing) {
    // The replacement quiesces the backend; with none to come, nobody can (the next owner's larger
    // epoch fences the backend's late work).
    carry(d.escalate || escalated_ ? release_.abandon() : release_.on_proxy_down(), out);
  }
  if (d.escalate) {
    escalated_ = true;
    return out;
  }
  out.push_back(sfx::respawn_after{kind, d.delay});
  return out;
}

// actors.md §3, runner down: the supervisor holds the lock entry and performs the release steps.
void supervisor_core::recover(const ownership_record& record, const restart_decision& d, supervision_effects& out) {
  if (phase_ == phase::stopping) waiting_ = true;  // its stop is answered by the recovery
  owned_ = record.owner;
  recovery_ = d;
  if (!owned_ || record.epoch == 0) {
    // Nothing of this ownership reached the backend (not the owner, or no epoch minted yet).
    after_quiescence(out);
    return;
  }
  to(phase::quiescing);
  release_ = release_sequence{};
  const bool proxy_coming = up(child_kind::proxy) || !escalated_;
  const bool quiesced = record.quiesced == record.epoch;  // the runner's release got that far
  carry(proxy_coming ? release_.begin(record.epoch, up(child_kind::proxy), quiesced) : release_.abandon(), out);
}

// The release sequence's steps as this supervisor's effects. Its unlock means "quiesced": the
// marker and the publication come before the supervisor lets the entry go (actors.md §3).
void supervisor_core::carry(release_sequence::step step, supervision_effects& out) {
  switch (step) {
    case release_sequence::step::none: return;
    case release_sequence::step::flush: out.push_back(sfx::flush{++round_}); return;
    case release_sequence::step::shutdown: out.push_back(sfx::shutdown{round_, release_.epoch()}); return;
    case release_sequence::step::publish_rejected:
      // The backend cannot prove quiescence: keep the lock, never hand it on (protocol.md §9.7).
      to(phase::held);
      out.push_back(sfx::publish{readiness_state::unavailable, readiness_reason::shutdown_failed});
      if (waiting_) {
        waiting_ = false;
        out.push_back(sfx::answer{
          error{errc::backend_failed, "shutdown of " + config_.id + " rejected after its runner failed"}});
      }
      return;
    case release_sequence::step::unlock: after_quiescence(out); return;
  }
}

void supervisor_core::after_quiescence(supervision_effects& out) {
  if (owned_ && up(child_kind::tailer)) {
    to(phase::marking);
    out.push_back(sfx::write_marker{});
    return;
  }
  // No tailer to write the marker: published without it, as after a failed marker write (§10.3).
  finish(out);
}

void supervisor_core::finish(supervision_effects& out) {
  if (phase_ != phase::supervising && phase_ != phase::stopping) to(phase::supervising);
  if (owned_) {
    out.push_back(sfx::publish{recovery_.escalate ? readiness_state::unavailable : readiness_state::needs_rebuild,
                               readiness_reason::runner_failed});
  }
  out.push_back(sfx::unlock{});  // behind the publication: the shell waits for `published`
  if (waiting_ || phase_ == phase::stopping) {  // unregistered meanwhile: released, nothing restarted
    waiting_ = false;
    out.push_back(sfx::answer{result<void>{}});
    out.push_back(sfx::forget{});
    to(phase::gone);
    return;
  }
  if (recovery_.escalate) {
    escalated_ = true;
    return;
  }
  if (owned_) start_condemned_ = readiness_reason::runner_failed;
  out.push_back(sfx::respawn_after{child_kind::runner, recovery_.delay});
}

supervision_effects supervisor_core::on_respawn(child_kind kind) {
  supervision_effects out;
  if (phase_ == phase::gone || escalated_ || up(kind)) return out;
  if (kind == child_kind::runner) {
    if (phase_ != phase::supervising) return out;  // not over a release under way or a held lock
    spawn_runner(out);
    return out;
  }
  up_[index(kind)] = true;
  out.push_back(sfx::spawn{kind, std::nullopt});
  if (up(child_kind::runner)) out.push_back(sfx::tell_up{kind});
  if (kind == child_kind::proxy && phase_ == phase::quiescing) carry(release_.on_proxy_up(), out);
  return out;
}

supervision_effects supervisor_core::on_rebuild_request() {
  supervision_effects out;
  if (!escalated_ || phase_ != phase::supervising) return out;
  escalated_ = false;
  history_ = {};
  for (auto kind : {child_kind::tailer, child_kind::proxy}) {
    if (up(kind)) continue;
    up_[index(kind)] = true;
    out.push_back(sfx::spawn{kind, std::nullopt});
    if (up(child_kind::runner)) out.push_back(sfx::tell_up{kind});
  }
  if (!up(child_kind::runner)) spawn_runner(out);
  return out;
}

supervision_effects supervisor_core::on_flush_done(std::uint64_t round, const result<void>& outcome) {
  supervision_effects out;
  // An error of flush(shutdown) is only logged; the shutdown decides (protocol.md §9.6).
  if (phase_ != phase::quiescing || round != round_) return out;
  carry(release_.on_flush_done(outcome), out);
  return out;
}

supervision_effects supervisor_core::on_shutdown_done(std::uint64_t round, const result<void>& outcome) {
  supervision_effects out;
  if (phase_ != phase::quiescing || round != round_) return out;
  carry(release_.on_shutdown_done(release_.epoch(), outcome), out);
  return out;
}

supervision_effects supervisor_core::on_marker_written(const result<void>& outcome) {
  supervision_effects out;
  (void)outcome;  // written or not: published and unlocked (§10.3)
  if (phase_ != phase::marking) return out;
  finish(out);
  return out;
}

supervision_effects supervisor_core::on_unsupervise() {
  supervision_effects out;
  switch (phase_) {
    case phase::held:
      out.push_back(sfx::answer{error{errc::backend_failed, "shutdown of " + config_.id + " was rejected; its lock stays held"}});
      return out;
    case phase::quiescing:
    case phase::marking:
      waiting_ = true;
      return out;
    case phase::stopping:
      return out;  // answered with the first
    case phase::gone:
      out.push_back(sfx::answer{result<void>{}});
      return out;
    case phase::supervising: break;
  }
  if (!up(child_kind::runner)) {  // escalated, or between a crash and the respawn: released already
    out.push_back(sfx::answer{result<void>{}});
    out.push_back(sfx::forget{});
    to(phase::gone);
    return out;
  }
  to(phase::stopping);
  out.push_back(sfx::stop_runner{});
  return out;
}

supervision_effects supervisor_core::on_runner_stopped(const result<void>& outcome) {
  supervision_effects out;
  if (phase_ != phase::stopping) return out;
  out.push_back(sfx::answer{outcome});
  if (outcome) {
    out.push_back(sfx::forget{});
    to(phase::gone);
  } else {
    to(phase::supervising);  // the runner keeps its rejected release's lock (§9.7)
  }
  return out;
}

}  // namespace dix
