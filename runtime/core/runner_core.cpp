#include "core/runner_core.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

#include "core/assert.hpp"
#include "core/runner_lifecycle.hpp"

namespace dix {

// The forecast a verify names when its deadline passes is capped here (a day): the cap itself
// means the reader made no progress while its log held more (backlog_forecast::drain_ms).
constexpr std::uint64_t verify_backlog_cap_ms = 86'400'000;

namespace {

std::string epoch_went_back(epoch_t minted, epoch_t held) {
  return "the minted epoch " + std::to_string(minted) + " is not above the runner's epoch " + std::to_string(held) +
         " (the readiness segment's epoch counter went back)";
}

std::uint64_t mutations_of(const batch& b) {
  std::uint64_t n = 0;
  for (const auto& t : b.transactions) n += t.mutations.size();
  return n;
}

bool is_cursor_only(const batch& b) { return b.transactions.empty() && b.records.empty(); }

std::uint64_t ms_between(steady_time from, steady_time to) {
  if (to <= from) return 0;
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count());
}

}  // namespace

runner_core::runner_core(config c)
    : config_(std::move(c)), gen_(config_.generation_base), cover_(config_.gate, config_.options.max_flush_age) {
  if (config_.start_condemned) {
    // A backend that can reset is rebuilt by the next acquisition (it finds the slot condemned);
    // one that cannot stays parked.
    parked_ = !config_.rebuildable;
    state_ = runner_state::needs_rebuild;  // the initial state, not a step
    published_ = readiness_state::needs_rebuild;
    reason_ = last_fault_ = *config_.start_condemned;
  }
}

// ---- machines -----------------------------------------------------------------------------------

// The one way runner_state changes (core/runner_lifecycle.hpp): a legal step, into a state whose
// ownership this runner has, and stopped or releasing only after stop().
void runner_core::set_state(runner_state next) noexcept {
  check_runner_step(state_, next, owner_now(), stopping_);
  state_ = next;
}

void runner_core::to(marker next) noexcept {
  using m = marker;
  const auto from = marker_;
  const bool legal = next == m::unknown || (from == m::unknown && next == m::writing) || (from != m::present && next == m::present);
  check_transition(legal, "runner marker", static_cast<int>(from), static_cast<int>(next));
  marker_ = next;
}

void runner_core::to(settle next) noexcept {
  using t = settle;
  const auto from = settle_;
  const bool writing = from == t::writing || from == t::writing_then_ready;
  const bool legal = next == t::done || (from == t::done && next == t::writing) ||
                     (from == t::wanted && next == t::writing_then_ready) ||
                     (from == t::writing && next == t::writing_then_ready) || (writing && next == t::wanted) ||
                     (from == t::wanted && next == t::wanted) || (from == t::done && next == t::wanted);
  check_transition(legal, "runner settle", static_cast<int>(from), static_cast<int>(next));
  settle_ = next;
}

// ---- helpers ------------------------------------------------------------------------------------

void runner_core::publish(readiness_state s, readiness_reason r, effects& out) {
  if (s == readiness_state::ready) rebuild_.attempts = 0;  // only a consumed request or `ready` resets it (§11.3)
  if (s == readiness_state::ready && published_ != readiness_state::ready) {
    // §12.1: capture at once, so the slot's coverage_time is certified within a turn of `ready`
    // instead of at the next max_flush_age/4 capture (a bounded query right after ready would
    // read `unknown` until then, decision 0019 item 10).
    cover_.refresh_due = true;
    drain_.more = true;
  }
  published_ = s;
  reason_ = r;
  // §13.4: every state but ready forces the gate open — a rebuild's start (until `ready`),
  // unavailable, needs-rebuild, a rejected shutdown; sampling resumes only once ready again.
  std::optional<std::uint32_t> gate;
  if (s != readiness_state::ready) gate = cover_.gate.force_open();
  if (s != readiness_state::ready) cover_.tracker.cleared();  // the slot stores coverage_time = 0 first (§1.5)
  out.push_back(fx::publish{s, r, rebuild_.attempts, gate});
}

void runner_core::force_gate_open(effects& out) {
  if (auto g = cover_.gate.force_open()) out.push_back(fx::store_gate{*g});
}

void runner_core::gate_sample(effects& out, steady_time now) {
  if (!owner_now() || acq_.current() != acq::acquired || published_ != readiness_state::ready || stopping_ ||
      parked_ || release_.holding() || attempt_running() || state_ == runner_state::unavailable) {
    return;
  }
  const gate_input in{lag_ms(now), cover_.backlog.drain_ms(config_.gate.budget_ms()), cover_.backlog.last(),
                      cover_.backlog.rate().value_or(0), now, cover_.backlog.busy_rate().value_or(0),
                      cover_.backlog.busy_drain_ms(config_.gate.budget_ms())};
  if (auto g = cover_.gate.sample(in)) out.push_back(fx::store_gate{*g});
  // Rule 2 keeps an exceeded gate until a durable advance. When all that is not durable is
  // cursor-only progress (such as the system transactions the owner's own acquisition and settle
  // write), its flush waits for the cursor-only timer (up to 10 min) while every gated write is
  // refused and so cannot bring one. Ask for the barrier now, once per durable advance.
  if (gate_refuses(cover_.gate.stored()) && !cover_.gate_asked() && drain_.offered.size() > 1) {
    cover_.gate_asks();
    request_flush(flush_reason::age, out, now);
  }
}

effects runner_core::sample_gate(steady_time now) {
  effects out;
  gate_sample(out, now);
  return out;
}

std::uint64_t runner_core::cursor_lag_ms() const {
  std::uint64_t lag = 0;
  if (drain_.offered.empty()) return lag;
  for (const auto& p : drain_.offered[drain_.effective_entry()].through.logs()) {
    auto it = cover_.read_time.find(p.log);
    if (it != cover_.read_time.end() && it->second > p.time) lag = std::max<std::uint64_t>(lag, (it->second - p.time) / 1'000'000);
  }
  return lag;
}

std::uint64_t runner_core::lag_ms(steady_time now) const {
  if (!owner_now()) return 0;
  auto age = [now](const std::optional<steady_time>& since) -> std::uint64_t { return since ? ms_between(*since, now) : 0; };
  return std::max({cursor_lag_ms(), age(drain_.stalled_since), age(cover_.unread.since()), age(drain_.oldest_accepted_at())});
}

void runner_core::publish_coverage(effects& out, steady_time now) {
  if (!owner_now() || stopping_ || parked_ || release_.holding() || drain_.offered.empty()) return;
  if (published_ != readiness_state::ready || attempt_running()) return;  // ready settled first (§12.3)
  // The durable entry certifies; any offered one does when nothing accepted but not durable
  // carries a mutation — so an unrelated commit never certifies past a queued relevant write.
  bool mutation_pending = drain_.unanchored_mutations != 0;
  for (std::size_t i = 1; i < drain_.offered.size(); ++i) {
    mutation_pending = mutation_pending || drain_.offered[i].mutations != 0 || drain_.offered[i].completes_cut;
  }
  const auto& ends = mutation_pending ? drain_.offered.front().ends : drain_.offered.back().ends;
  if (auto time = cover_.tracker.publish(ends)) {
    out.push_back(fx::publish{readiness_state::ready, readiness_reason::none, rebuild_.attempts, std::nullopt, *time, epoch_});
  }
  if (auto hook = cover_.tracker.hook_due(drain_.offered.front().ends, now)) {
    out.push_back(fx::publish_coverage{epoch_, hook->time, std::move(hook->positions)});
  } else if (!cover_.hook_asked() && drain_.offered.size() > 1 && !non_durable_work() &&
             cover_.tracker.hook_waits_for_barrier(drain_.offered.front().ends)) {
    // A durable write's coverage is owed to the hook (an index node admits its readers by it),
    // and the capture that certifies it waits only for cursor-only progress to be durable —
    // system transactions read after that write, whose barrier would otherwise wait for the
    // cursor-only timer (minutes). One barrier, asked again only after the next durable advance
    // (decision 0051, as an exceeded gate asks in 0025).
    cover_.hook_asks();
    request_flush(flush_reason::coverage, out, now);
  }
}

// §12.4: a demand whose commits were read and accepted waits only for a barrier — ask for it now
// instead of at the age timer; one such request until the next durable advance. A reader waiting
// at a new index's first build (issue 29) needs no request of its own: the boundary's acceptance
// asks for the barrier that ends the rebuild (on_delivery, decision 0062).
void runner_core::demand_flush(effects& out, steady_time now) {
  if (cover_.coverage_asked() || !cover_.tracker.demand_open() || !non_durable_work() || drain_.offered.empty()) return;
  if (!cover_.tracker.demand_delivered(drain_.offered.back().ends)) return;
  cover_.coverage_asks();
  request_flush(flush_reason::coverage, out, now);
}

// The refresh timer runs while this generation owns the drain: one pending event at most. It
// fires max_flush_age after the last turn began; an idle owner then runs a refresh turn.
void runner_core::arm_refresh(effects& out, steady_time now) {
  if (cover_.refresh_armed_gen == gen_) return;
  cover_.refresh_armed_gen = gen_;
  auto delay = config_.options.max_flush_age;
  if (cover_.last_turn_at && *cover_.last_turn_at + delay > now) {
    delay = std::chrono::duration_cast<std::chrono::milliseconds>(*cover_.last_turn_at + delay - now);
  }
  out.push_back(fx::arm_timer{timer_kind::coverage_refresh, std::max(delay, std::chrono::milliseconds(1)), gen_});
}

bool runner_core::non_durable_work() const noexcept {
  // The boundary entry holds the scan, durable or not.
  return drain_.non_durable_work() || rebuild_.boundary_pending();
}

void runner_core::discard_progress(effects& out) {
  interrupt_verify(out);
  ++gen_;
  // Replies to metadata writes of the old generation are dropped: a settle is retried at the
  // next durable advance (it stays wanted), a pending condemnation publishes now.
  if (settle_ == settle::writing || settle_ == settle::writing_then_ready) {
    to(settle::wanted);
    // The tailer still carries the settle out and deletes the marker with it: no longer known
    // present, so a condemnation from here writes it again (queued behind the settle, §10.4).
    if (marker_ == marker::present) to(marker::unknown);
  }
  drain_.offered.clear();
  drain_.discard();
  cover_.tracker.discard();
  cover_.barrier_passed();
  cover_.refresh_due = false;
}

// Starts the flush-age timer if it is not running (restart: from now in any case). Timers
// cannot be cancelled, so one pending timer event at most is armed; when it fires early (the
// deadline moved), it re-arms for the rest.
void runner_core::arm_age_timer(effects& out, steady_time now, bool restart) {
  if (!drain_.age_deadline || restart) drain_.age_deadline = now + config_.options.max_flush_age;
  if (drain_.age_timer_armed) return;
  drain_.age_timer_armed = true;
  out.push_back(fx::arm_timer{timer_kind::flush_age,
                              std::chrono::duration_cast<std::chrono::milliseconds>(*drain_.age_deadline - now), gen_});
}

void runner_core::request_flush(flush_reason reason, effects& out, steady_time now) {
  ++flushes_[static_cast<std::size_t>(reason)];
  drain_.unflushed_bytes = drain_.unflushed_mutations = 0;
  out.push_back(fx::flush{gen_, reason});
  // The age timer restarts after each request while non-durable work remains (§6.2).
  if (non_durable_work()) arm_age_timer(out, now, true);
  else drain_.age_deadline.reset();
}

void runner_core::query_durable(effects& out) {
  drain_.to(dq::asked);
  out.push_back(fx::query_durable{gen_});
}

void runner_core::reconcile(effects& out) {
  if (rebuild_.current() == rebuild::scanning) return;  // nothing offered yet: scan chunks carry no cursor
  if (drain_.query() != dq::none) {
    drain_.to(dq::asked_again);
    return;
  }
  query_durable(out);
}

void runner_core::next_turn(effects& out, steady_time now) {
  if (!owner_now() || drain_.current() != drain::open || stopping_ || parked_) return;
  if (drain_.held) return;
  if (verify_.holds_pulls()) return;  // brought to the verify's fence: no turn until it is lifted
  if (state_ == runner_state::deferred || state_ == runner_state::waiting_durable) return;
  if (!drain_.more) return;
  drain_.more = false;
  drain_.to(drain::pulling);
  if (state_ == runner_state::idle) set_state(working_state());
  if (rebuild_.current() == rebuild::scanning) {
    out.push_back(fx::scan{gen_, epoch_});
    return;
  }
  // §12.1: a capture when a demand is open, every max_flush_age/4 otherwise, at every refresh;
  // none while nothing can be certified.
  const bool capture =
    published_ == readiness_state::ready && !attempt_running() && (cover_.refresh_due || cover_.tracker.wants_capture(now));
  if (capture) cover_.tracker.requested(now);
  cover_.refresh_due = false;
  cover_.last_turn_at = now;
  out.push_back(fx::pull{gen_, epoch_, capture});
}

void runner_core::deliver_held(effects& out, steady_time now) {
  (void)now;
  auto b = std::move(drain_.held);
  drain_.held.reset();
  drain_.issue(std::move(b), drain_.in_flight_ends);  // the ends it had when it was deferred
  set_state(working_state());
  out.push_back(fx::deliver{gen_, drain_.in_flight});
}

void runner_core::begin_release(effects& out) {
  // §9.6, §11.4 step 3: a reset on its way is waited for. The backend is never told to flush or
  // shut down while it destroys its index, and the lock is not handed on before the reset ended
  // (on_reset_done begins the release then, whatever the reset's outcome).
  if (rebuild_.reset_in_flight) {
    rebuild_.release_after_reset = true;
    return;
  }
  if (rebuild_.quiesce_in_flight) {
    rebuild_.release_after_quiesce = true;
    return;
  }
  // A successful shutdown ends with the unlock, a rejected one is retried through retry_release().
  // An epoch already shut down (a rebuild's step 1 quiesced it and the attempt failed before a new
  // epoch was minted) is flushed and unlocked without a second shutdown (§9.6: at most one
  // successful shutdown per epoch), exactly as the supervisor releases it from the record.
  carry_release(release_.begin(epoch_, proxy_up_, epoch_quiesced()), out, steady_time{});  // a proxy down: on_child_up starts it
}

// What a step of the release sequence is in this runner's effects. Unlocking ends the ownership.
void runner_core::carry_release(release_sequence::step step, effects& out, steady_time now) {
  switch (step) {
    case release_sequence::step::none: return;
    case release_sequence::step::flush:
      out.push_back(fx::flush{gen_, flush_reason::shutdown});
      ++flushes_[static_cast<std::size_t>(flush_reason::shutdown)];
      return;
    case release_sequence::step::shutdown:
      quiescence_since_ = now;
      out.push_back(fx::shutdown{release_.epoch()});
      return;
    case release_sequence::step::publish_rejected:
      // The backend cannot prove quiescence: keep the lock, never hand it on (§9.7).
      set_state(runner_state::unavailable);
      publish(readiness_state::unavailable, readiness_reason::shutdown_failed, out);
      return;
    case release_sequence::step::unlock:
      acq_.to(acq::unowned);
      out.push_back(fx::release_lock{stopping_});
      return;
  }
}

void runner_core::condemn(readiness_reason reason, std::string message, effects& out, steady_time now) {
  if (attempt_running() && owner_now() && !stopping_) {
    fail_attempt(reason, std::move(message), out, now);
    return;
  }
  last_fault_ = reason;
  message_ = std::move(message);
  discard_progress(out);
  parked_ = true;
  set_state(runner_state::needs_rebuild);
  condemn_reason_ = reason;
  if (owner_now() && !release_.holding() && config_.fingerprint && marker_ != marker::present) {
    if (tailer_up_) {
      // The durable marker first, then the publication (§10.4): shared readiness does not
      // survive the last process, the marker does.
      to(marker::writing);
      out.push_back(fx::write_marker{gen_});
      force_gate_open(out);  // §13.4: the condemnation's publication waits for the marker
      return;
    }
    parked_ = false;  // no tailer to write it: as a failed write, retried at the next acquisition
  }
  publish(readiness_state::needs_rebuild, reason, out);
  if (owner_now() && !release_.holding()) {
    if (config_.rebuildable && !stopping_ && (marker_ == marker::present || !config_.fingerprint)) schedule_rebuild(out, now);
    else begin_release(out);  // cannot reset (or no marker to rebuild under): released, parked
  }
}

effects runner_core::on_marker_written(std::uint64_t gen, const result<void>& outcome, steady_time now) {
  effects out;
  if (gen != gen_ || !owner_now() || marker_ != marker::writing) return out;
  if (outcome) {
    to(marker::present);
  } else {
    // Published before the marker on purpose (§10.3): it only withholds `ready`. Not parked: the
    // next wake acquires again, finds the slot needs-rebuild and writes the marker then.
    to(marker::unknown);
    message_ += "; writing the condemnation marker failed: " + outcome.error().message();
    parked_ = false;
  }
  publish(readiness_state::needs_rebuild, condemn_reason_, out);
  if (release_.holding()) return out;
  // Marker first, then reset (§10.4): without it the rebuild waits for the next acquisition.
  if (config_.rebuildable && !stopping_ && (marker_ == marker::present || !config_.fingerprint)) schedule_rebuild(out, now);
  else begin_release(out);
  return out;
}

effects runner_core::on_settled(std::uint64_t gen, const result<void>& outcome, steady_time now) {
  effects out;
  if (gen != gen_ || !owner_now() || (settle_ != settle::writing && settle_ != settle::writing_then_ready)) return out;
  const bool ready_after = settle_ == settle::writing_then_ready;
  // A failed commit is logged; `ready` is published anyway and the commit is retried at the next
  // durable advance (a stale marker only causes a needless rebuild, §10.4).
  if (outcome) {
    to(settle::done);
    if (marker_ == marker::present) to(marker::unknown);  // deleted with the record
    records_.fingerprint = config_.fingerprint;
    records_.condemned = false;
  } else {
    to(settle::wanted);
    message_ = "writing the registration record failed: " + outcome.error().message();
  }
  if (ready_after && published_ != readiness_state::ready) {
    publish(readiness_state::ready, readiness_reason::none, out);
    publish_coverage(out, now);
    next_turn(out, now);  // the capture publish() asked for
  }
  return out;
}

effects runner_core::on_meta_state(std::uint64_t gen, const result<meta_records>& records, const readiness& slot,
                                   steady_time now, bool rebuild_requested) {
  effects out;
  if (!current(gen) || release_.holding() || acq_.current() != acq::reading_meta) return out;
  if (!records) {
    transient_fault(false, "reading the condemnation marker: " + records.error().message(), out, now);
    return out;
  }
  acq_.to(acq::verifying);
  records_ = *records;
  if (records_.condemned) to(marker::present);
  // The attempt count lives in the slot: a later owner continues it (§11.3); a consumed request
  // resets it (§11.2).
  rebuild_.attempts = rebuild_requested && config_.rebuildable ? 0 : slot.rebuild_attempts;
  // Step 4: a consumed request on a rebuildable backend starts a rebuild (§11.4).
  if (rebuild_requested && config_.rebuildable) {
    condemn(readiness_reason::rebuild_requested, "a rebuild was requested", out, now);
    return out;
  }
  // Step 5: an inherited `unavailable` is latched; the index is released and left alone.
  if (slot.state == readiness_state::unavailable) {
    message_ = "the slot says unavailable (" + std::string(to_string(slot.reason)) + ")";
    last_fault_ = slot.reason;
    discard_progress(out);
    parked_ = true;
    set_state(runner_state::unavailable);
    published_ = readiness_state::unavailable;
    reason_ = slot.reason;
    force_gate_open(out);
    begin_release(out);
    return out;
  }
  // Step 6: a condemned generation, or a rebuild another owner did not finish.
  if (slot.state == readiness_state::needs_rebuild || slot.state == readiness_state::rebuilding) {
    condemn(slot.reason == readiness_reason::none ? readiness_reason::condemned : slot.reason,
            "the slot says " + std::string(to_string(slot.state)), out, now);
    return out;
  }
  // Step 7: the marker survives every process; a condemned cursor is never trusted.
  if (records_.condemned) {
    condemn(readiness_reason::condemned, "the condemnation marker is present", out, now);
    return out;
  }
  query_durable(out);
  return out;
}

void runner_core::transient_fault(bool from_durable, std::string message, effects& out, steady_time now) {
  if (attempt_running()) {
    fail_attempt(readiness_reason::rebuild_failed, std::move(message), out, now);  // §10.5, last sentence
    return;
  }
  ++transient_faults_;
  message_ = std::move(message);
  if (transient_faults_ >= config_.options.max_rebuild_attempts) {
    condemn(from_durable ? readiness_reason::backend_failed : readiness_reason::runner_failed,
            "too many consecutive transient faults; last: " + message_, out, now);
    return;
  }
  // The backend still holds the work it accepted (same epoch): keep the offered list and resume
  // after its newest entry, so nothing accepted is delivered again and the durable cursor the
  // backend reports later is still one of ours. Only what the tailer carried is dropped.
  auto accepted = std::move(drain_.offered);
  discard_progress(out);
  drain_.offered = std::move(accepted);
  set_state(runner_state::running);
  auto delay = backoff_delay(transient_faults_, config_.options.rebuild_backoff, config_.options.max_rebuild_backoff);
  out.push_back(fx::arm_timer{timer_kind::transient_retry, delay, gen_});
}

// After a backoff: acquire again, or repeat the acquisition step that failed, or reinstall the
// durable cursor (§5.7, §10.5). A child being respawned holds the retry until it is up.
void runner_core::retry(effects& out) {
  if (!owner_now()) {
    set_state(runner_state::waiting_lock);
    out.push_back(fx::request_lock{gen_});
    return;
  }
  if (!tailer_up_ || !proxy_up_) {
    pending_retry_ = true;
    return;
  }
  pending_retry_ = false;
  if (acq_.current() == acq::minting) {
    out.push_back(fx::persist_epoch{epoch_, gen_});
  } else if (acq_.current() == acq::reading_meta) {
    out.push_back(fx::read_meta{gen_});
  } else if (!drain_.offered.empty()) {
    out.push_back(fx::open_log{gen_, drain_.offered.back().through});
  } else {
    query_durable(out);
  }
}

// ---- rebuild ------------------------------------------------------------------------------------

// §11.3: the next attempt at once when none was spent, else after the doubling backoff; the lock
// is kept meanwhile. A spent budget ends in `unavailable` at once (§10.3).
void runner_core::schedule_rebuild(effects& out, steady_time now) {
  parked_ = false;
  rebuild_.trigger = condemn_reason_;
  if (acq_.current() == acq::verifying) acq_.to(acq::acquired);  // condemned at acquisition
  if (rebuild_.attempts >= config_.options.max_rebuild_attempts) {
    exhaust(out);
    return;
  }
  if (rebuild_.attempts == 0) {
    start_attempt(out, now);
    return;
  }
  rebuild_.to(rebuild::backoff);
  out.push_back(fx::arm_timer{timer_kind::rebuild_backoff,
                              backoff_delay(rebuild_.attempts, config_.options.rebuild_backoff, config_.options.max_rebuild_backoff),
                              gen_});
}

// §11.4: local status rebuilding, progress discarded, attempts + 1, `rebuilding` published; then
// step 1, the shutdown of the current epoch unless one already succeeded.
void runner_core::start_attempt(effects& out, steady_time now) {
  if (!tailer_up_ || !proxy_up_) {
    rebuild_.to(rebuild::held);  // a child is being respawned: on_child_up starts the attempt
    return;
  }
  if (rebuild_.reset_in_flight) {
    rebuild_.to(rebuild::held);  // a failed attempt's reset still runs: its answer starts this one
    return;
  }
  discard_progress(out);
  rebuild_.drop_boundary();
  ++rebuild_.attempts;
  set_state(runner_state::rebuilding);
  publish(readiness_state::rebuilding, rebuild_.trigger, out);
  rebuild_.rebuilt_records = rebuild_.estimated_records = rebuild_.scanned_bytes = 0;
  rebuild_.scan_started_at.reset();
  rebuild_.scan_ended_at.reset();
  if (epoch_quiesced()) {  // an earlier attempt's step 1 shut this epoch down
    rebuild_.to(rebuild::minting);
    out.push_back(fx::mint_epoch{});
    return;
  }
  rebuild_.to(rebuild::quiescing);
  quiescence_since_ = now;
  rebuild_.quiesce_in_flight = epoch_;
  out.push_back(fx::shutdown{epoch_});
}

// The reset on its way ended (answered, or its proxy died): what waited for it goes on — a
// release (then the reset's own outcome no longer matters but for the message) or an attempt
// held behind a failed attempt's reset. true: the answer is spent.
bool runner_core::reset_ended(const result<void>& outcome, effects& out, steady_time now) {
  if (rebuild_.release_after_reset) {
    rebuild_.release_after_reset = false;
    if (!outcome) message_ += (message_.empty() ? "" : "; ") + std::string("its reset failed: ") + outcome.error().message();
    if (rebuild_.current() == rebuild::resetting) rebuild_.to(rebuild::none);
    begin_release(out);
    return true;
  }
  if (rebuild_.current() == rebuild::held && tailer_up_ && proxy_up_ && owner_now() && !stopping_ && !release_.holding()) {
    start_attempt(out, now);
    return true;
  }
  return false;
}

// §11.8, §10.3 "attempt failed": progress discarded; needs-rebuild with the failure's reason and a
// backoff, or — the budget spent — unavailable/rebuild-exhausted and released.
void runner_core::fail_attempt(readiness_reason reason, std::string message, effects& out, steady_time now) {
  (void)now;
  last_fault_ = reason;
  message_ = "rebuild attempt " + std::to_string(rebuild_.attempts) + " failed: " + message;
  discard_progress(out);
  rebuild_.to(rebuild::none);
  if (rebuild_.attempts >= config_.options.max_rebuild_attempts) {
    exhaust(out);
    return;
  }
  set_state(runner_state::needs_rebuild);
  condemn_reason_ = reason;
  publish(readiness_state::needs_rebuild, reason, out);
  rebuild_.trigger = reason;
  rebuild_.to(rebuild::backoff);
  out.push_back(fx::arm_timer{timer_kind::rebuild_backoff,
                              backoff_delay(rebuild_.attempts, config_.options.rebuild_backoff, config_.options.max_rebuild_backoff),
                              gen_});
}

void runner_core::exhaust(effects& out) {
  rebuild_.to(rebuild::none);
  parked_ = true;
  set_state(runner_state::unavailable);
  if (last_fault_ == readiness_reason::none) last_fault_ = rebuild_.trigger;
  publish(readiness_state::unavailable, readiness_reason::rebuild_exhausted, out);
  if (owner_now() && !release_.holding()) begin_release(out);
}

effects runner_core::on_reset_done(std::uint64_t gen, const result<void>& outcome, steady_time now) {
  effects out;
  if (rebuild_.reset_in_flight == gen) {
    rebuild_.reset_in_flight.reset();
    if (reset_ended(outcome, out, now)) return out;
  }
  if (!current(gen) || release_.holding() || rebuild_.current() != rebuild::resetting) return out;
  if (!outcome) {
    fail_attempt(readiness_reason::backend_failed, "reset: " + outcome.error().message(), out, now);
    return out;
  }
  rebuild_.to(rebuild::checking);
  query_durable(out);  // step 4: the cursor must be absent now
  return out;
}

effects runner_core::on_boundary(std::uint64_t gen, const boundary_outcome& outcome, steady_time now) {
  effects out;
  if (!current(gen) || release_.holding() || rebuild_.current() != rebuild::capturing) return out;
  wal_syncs_ += outcome.found.wal_syncs;
  if (outcome.fault || !outcome.found.boundary) {
    const auto reason = !outcome.fault || outcome.fault->transient ? readiness_reason::rebuild_failed : outcome.fault->reason;
    fail_attempt(reason, outcome.fault ? outcome.fault->text : "no boundary", out, now);
    return out;
  }
  rebuild_.estimated_records = outcome.found.estimated_records;
  rebuild_.to(rebuild::scanning);
  rebuild_.scan_started_at = now;
  drain_.to(drain::open);
  drain_.more = true;
  next_turn(out, now);
  return out;
}

effects runner_core::on_scan_chunk(std::uint64_t gen, const scan_outcome& outcome, steady_time now) {
  effects out;
  if (!current(gen) || release_.holding() || drain_.current() != drain::pulling || rebuild_.current() != rebuild::scanning) return out;
  drain_.to(drain::open);
  if (outcome.fault) {
    fail_attempt(outcome.fault->transient ? readiness_reason::rebuild_failed : outcome.fault->reason, outcome.fault->text,
                 out, now);
    return out;
  }
  unindexable_ += outcome.step.unindexable;
  drain_.more = true;  // the scan goes on until its boundary chunk
  if (!outcome.step.delivery) {
    next_turn(out, now);  // the turn's time ran out before a record: yield, then go on
    return out;
  }
  drain_.issue(outcome.step.delivery, {});  // the boundary entry gets its anchor ends when the logs open there
  out.push_back(fx::deliver{gen_, drain_.in_flight});
  return out;
}

// ---- events -------------------------------------------------------------------------------------

effects runner_core::on_wake(std::uint8_t flags, steady_time now) {
  effects out;
  (void)now;
  if ((flags & wake_flag::rebuild) != 0 && parked_terminal()) {
    parked_ = false;
    set_state(runner_state::waiting_lock);
    out.push_back(fx::request_lock{gen_});
    return out;
  }
  if (stopping_ || parked_ || state_ == runner_state::stopped || state_ == runner_state::unavailable) return out;
  const bool commit = (flags & wake_flag::commit) != 0;
  const bool system_only = commit && (flags & wake_flag::system) != 0;
  if (!owner_now()) {
    // Waiting for the lock already; a respawned runner of a condemned index acquires to rebuild.
    if (state_ != runner_state::dormant && state_ != runner_state::needs_rebuild) return out;
    // Dormant: system commits, backend and timer wakes do not start an acquisition (§8.3); a
    // rebuild wake does (the actor passes one only while no runner of the process owns the id).
    const bool starts = (commit && !system_only) || (flags & (wake_flag::coverage | wake_flag::rebuild)) != 0;
    if (!starts) return out;
    set_state(runner_state::waiting_lock);
    out.push_back(fx::request_lock{gen_});
    return out;
  }
  if (commit && !system_only) {
    if (drain_.end_of_log) cover_.unread.commit_seen(now);  // §8.2: lag must not hide a reader behind
    drain_.more = true;
    if (state_ == runner_state::idle || state_ == runner_state::running || state_ == runner_state::rebuilding) next_turn(out, now);
  } else if (system_only && state_ != runner_state::idle) {
    drain_.more = true;  // progress only, but it moves the cursor when read
    // Running with nothing in flight (waiting for a barrier, say): no chunk will come to start
    // the next turn, so this one does — else drain_.more would stand and the idle pass never come.
    if (state_ == runner_state::running || state_ == runner_state::rebuilding) next_turn(out, now);
  }
  if ((flags & wake_flag::coverage) != 0 && cover_.tracker.demand_open()) {
    // §12.4: drain to the end (the turn captures, the demand being open), then flush(coverage)
    // once the demanded commits are accepted; deferred or waiting-durable runs no turn but may
    // ask for the barrier now.
    drain_.more = true;
    if (state_ == runner_state::idle || state_ == runner_state::running) next_turn(out, now);
    demand_flush(out, now);
  }
  return out;
}

bool runner_core::takes_rebuild_request() const noexcept {
  if (revivable()) return true;
  return !stopping_ && !parked_ && !release_.holding() && acq_.current() == acq::acquired && config_.rebuildable;
}

bool runner_core::revivable() const noexcept {
  return config_.rebuildable && !stopping_ && owner_now() && state_ == runner_state::unavailable &&
         reason_ == readiness_reason::shutdown_failed;
}

runner_core::rebuild_wake runner_core::on_rebuild_wake(bool owned_in_process) const noexcept {
  if (takes_rebuild_request()) return rebuild_wake::consume;
  if (owned_in_process) return rebuild_wake::ignore;
  // Dormant, or respawned condemned (on_wake acquires for either).
  const bool unowned = state_ == runner_state::dormant || state_ == runner_state::needs_rebuild;
  if (!owner_now() && unowned && !parked_ && !stopping_) return rebuild_wake::acquire;
  if (parked_terminal()) return rebuild_wake::acquire;
  return rebuild_wake::ignore;
}

bool runner_core::parked_terminal() const noexcept {
  // Released and parked (rebuild-exhausted, a latched unavailable, a local condemnation): §8.3
  // lets a rebuild wake through, and the acquisition consumes the request (§11.2, behaviour 19).
  return parked_ && config_.rebuildable && !stopping_ && !owner_now() && !release_.holding() &&
         (state_ == runner_state::unavailable || state_ == runner_state::needs_rebuild);
}

bool runner_core::awaits_meta(std::uint64_t gen) const noexcept {
  return current(gen) && !release_.holding() && acq_.current() == acq::reading_meta;
}

effects runner_core::retry_release(steady_time now) {
  effects out;
  if (!holds_rejected_release() || !owner_now()) return out;
  carry_release(release_.retry(proxy_up_), out, now);
  return out;
}

effects runner_core::on_rebuild_requested(steady_time now) {
  effects out;
  if (!takes_rebuild_request()) return out;
  if (revivable()) {
    // §9.7: the epoch whose shutdown was rejected is shut down again by the attempt, then the
    // index is rebuilt under a new one.
    release_ = release_sequence{};
    parked_ = false;
    rebuild_.attempts = 0;
    condemn(readiness_reason::rebuild_requested, "a rebuild was requested: the held epoch is shut down again", out, now);
    return out;
  }
  // Consuming resets the attempts and cancels a pending backoff; a running attempt absorbs it.
  if (attempt_running()) return out;
  rebuild_.attempts = 0;
  if (rebuild_.current() == rebuild::backoff || rebuild_.current() == rebuild::held) {
    rebuild_.trigger = readiness_reason::rebuild_requested;
    start_attempt(out, now);
    return out;
  }
  condemn(readiness_reason::rebuild_requested, "a rebuild was requested", out, now);
  return out;
}

effects runner_core::on_lock_acquired(std::uint64_t gen, steady_time now, std::uint32_t inherited_gate) {
  effects out;
  (void)now;
  if (gen != gen_) return out;  // a withdrawn request's grant: the entry went with the withdrawal
  if (state_ != runner_state::waiting_lock) {
    if (!owner_now()) out.push_back(fx::release_lock{});  // stale grant: hand it back
    return out;
  }
  if (stopping_) {
    out.push_back(fx::release_lock{});
    return out;
  }
  ++gen_;
  acq_.to(acq::minting);
  release_ = release_sequence{};  // this ownership's
  to(marker::unknown);
  to(settle::done);
  rebuild_.to(rebuild::none);
  set_state(runner_state::running);
  cover_.unread.reset();  // an earlier ownership's; this one's first chunk tells (§13.1)
  cover_.backlog.reset();
  // §13.3: the inherited gate stays (without a policy the owner stores 0); the lag tick samples
  // it every min(1000, max(1, B/4)) ms while this ownership lasts.
  if (auto g = cover_.gate.on_acquired(inherited_gate)) out.push_back(fx::store_gate{*g});
  if (config_.gate.on()) {
    cover_.lag_tick_id = gen_;
    out.push_back(fx::arm_timer{timer_kind::lag_tick, std::chrono::milliseconds(config_.gate.lag_tick_ms()), cover_.lag_tick_id});
  }
  // Scheduled verification (runner_options::verify_every): a chain of this ownership.
  if (config_.options.verify_every.count() > 0) {
    verify_schedule_id_ = gen_;
    out.push_back(fx::arm_timer{timer_kind::verify_schedule, config_.options.verify_every, verify_schedule_id_});
  }
  out.push_back(fx::mint_epoch{});
  return out;
}

effects runner_core::on_lock_failed(std::uint64_t gen, const error& e, bool contended, steady_time now) {
  effects out;
  (void)now;
  if (gen != gen_ || state_ != runner_state::waiting_lock || owner_now()) return out;
  message_ = e.message();
  if (stopping_) {
    set_state(runner_state::stopped);
    out.push_back(fx::stopped{result<void>{}});
    return out;
  }
  auto delay = config_.options.rebuild_backoff;
  if (!contended) {
    // A lock file that cannot be used does not pass by itself, unlike a flock another process
    // holds: counted, so that it is seen and, left alone, ends in a condemnation (§10.5).
    ++transient_faults_;
    if (transient_faults_ >= config_.options.max_rebuild_attempts) {
      // Local only: the slot is the owner's to publish and the marker the owner's to write. A
      // parked needs-rebuild probes the lock no more (§10.3); a new registration starts over.
      message_ = "too many consecutive transient faults; last: " + message_;
      last_fault_ = readiness_reason::runner_failed;
      reason_ = condemn_reason_ = readiness_reason::runner_failed;
      parked_ = true;
      set_state(runner_state::needs_rebuild);
      ++gen_;
      return out;
    }
    delay = backoff_delay(transient_faults_, config_.options.rebuild_backoff, config_.options.max_rebuild_backoff);
  }
  // Stays in waiting-lock (commits and coverage wakes are ignored while the backoff runs, §8.3).
  out.push_back(fx::arm_timer{timer_kind::transient_retry, delay, ++gen_});
  return out;
}

void runner_core::abandon_mint(const error& e, effects& out) {
  // Unlock without any backend call and try again after the backoff (§9.3). Waiting-lock, as
  // after a refused lock: no wake — a rebuild wake included — starts an acquisition sooner.
  acq_.to(acq::unowned);
  message_ = e.message();
  set_state(runner_state::waiting_lock);
  out.push_back(fx::release_lock{});
  out.push_back(fx::arm_timer{timer_kind::transient_retry, config_.options.rebuild_backoff, ++gen_});
}

bool runner_core::minting_now() const noexcept {
  return owner_now() && (acq_.current() == acq::minting || rebuild_.current() == rebuild::minting);
}

// A stop that waited for an epoch's write (acquisition::defer_stop) goes on once nothing is being
// minted: the release of an epoch now durable, or — the write failed and the lock was given up
// without a backend call (abandon_mint) — only the answer.
void runner_core::resume_stop(effects& out, steady_time now) {
  if (!acq_.stop_deferred() || minting_now()) return;
  const bool last_registration = *acq_.take_deferred_stop();
  if (!owner_now()) {
    set_state(runner_state::stopped);
    out.push_back(fx::stopped{result<void>{}});
    return;
  }
  stopping_ = false;
  auto more = stop(now, last_registration);
  out.insert(out.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
}

effects runner_core::on_epoch_minted(const result<epoch_t>& epoch, steady_time now) {
  auto out = epoch_minted(epoch, now);
  resume_stop(out, now);
  return out;
}

effects runner_core::on_epoch_persisted(std::uint64_t gen, const result<void>& outcome, steady_time now) {
  auto out = epoch_persisted(gen, outcome, now);
  resume_stop(out, now);
  return out;
}

effects runner_core::epoch_minted(const result<epoch_t>& epoch, steady_time now) {
  effects out;
  if (rebuild_.current() == rebuild::minting && owner_now()) {
    if (!epoch) {
      fail_attempt(readiness_reason::rebuild_failed, "minting the rebuild epoch: " + epoch.error().message(), out, now);
      return out;
    }
    // Epochs only rise (§9.3). The mint reads shared memory other processes write: a value that
    // went back is a fault of that memory (a segment re-created under us), never an abort here.
    if (*epoch <= epoch_) {
      fail_attempt(readiness_reason::rebuild_failed, epoch_went_back(*epoch, epoch_), out, now);
      return out;
    }
    epoch_ = *epoch;
    out.push_back(fx::persist_epoch{epoch_, gen_});  // step 2: no backend call before it is durable
    return out;
  }
  if (!epoch) {
    abandon_mint(epoch.error(), out);
    return out;
  }
  if (*epoch <= epoch_) {
    abandon_mint(error{errc::record_corrupt, epoch_went_back(*epoch, epoch_)}, out);
    return out;
  }
  epoch_ = *epoch;
  // No backend call uses the epoch before it is persisted (§9.3).
  if (!tailer_up_) {
    pending_retry_ = true;
    return out;
  }
  out.push_back(fx::persist_epoch{epoch_, gen_});
  return out;
}

effects runner_core::epoch_persisted(std::uint64_t gen, const result<void>& outcome, steady_time now) {
  effects out;
  if (current(gen) && rebuild_.current() == rebuild::minting) {
    if (!outcome) {
      fail_attempt(readiness_reason::rebuild_failed, "persisting the rebuild epoch: " + outcome.error().message(), out, now);
      return out;
    }
    publish(readiness_state::rebuilding, rebuild_.trigger, out);  // republished with the new epoch
    rebuild_.to(rebuild::resetting);
    rebuild_.reset_in_flight = gen_;
    out.push_back(fx::reset{gen_, epoch_});  // step 3
    return out;
  }
  if (!current(gen) || acq_.current() != acq::minting) return out;
  if (!outcome) {
    abandon_mint(outcome.error(), out);
    return out;
  }
  acq_.to(acq::reading_meta);
  (void)now;
  if (!proxy_up_) {
    pending_retry_ = true;
    return out;
  }
  out.push_back(fx::read_meta{gen_});
  return out;
}

effects runner_core::on_durable(std::uint64_t gen, const result<std::optional<cursor>>& durable, steady_time now) {
  effects out;
  if (!current(gen) || release_.holding()) return out;
  const bool again = drain_.query() == dq::asked_again;
  drain_.to(dq::none);
  if (rebuild_.current() == rebuild::checking) {
    // §11.4 step 4: after the reset, the backend must report no cursor.
    if (!durable) {
      fail_attempt(readiness_reason::backend_failed, "durable_cursor() after reset: " + durable.error().message(), out, now);
    } else if (*durable) {
      fail_attempt(readiness_reason::backend_failed, "the backend still reports a durable cursor after reset", out, now);
    } else {
      // The registration record is written with the marker's delete at the first `ready` (§10.4).
      if (config_.fingerprint) to(settle::wanted);
      rebuild_.to(rebuild::capturing);
      out.push_back(fx::capture_boundary{gen_, epoch_, rebuild_.scan_bytes_per_s});
    }
    return out;
  }
  if (!durable) {
    if (durable.error().value() == errc::cursor_invalid) {
      condemn(readiness_reason::cursor_missing, durable.error().message(), out, now);
    } else {
      transient_fault(true, "durable_cursor(): " + durable.error().message(), out, now);
    }
    return out;
  }
  // Drain closed: acquisition or a reinstall — except while the logs open at the boundary, when
  // a reconciliation's answer (a flush completed meanwhile) may overtake log_opened.
  if (drain_.current() == drain::closed && !rebuild_.boundary_pending()) {
    // Another flush's answer after the rebuild's end overtook the logs' opening at the boundary:
    // on_log_opened goes on from there (a second open would be a reinstall nobody asked for).
    if (drain_.rebuilt_while_opening) return out;
    // Acquisition (§9.2 step 8) or a reinstall after lost work or a transient fault (§5.7).
    if (*durable) {
      if (acq_.current() != acq::acquired && config_.fingerprint && records_.fingerprint != config_.fingerprint) {
        // §9.2 step 8: the index was made by another registration (or by none we know of).
        condemn(readiness_reason::registration_changed,
                records_.fingerprint ? "the index was made by a registration with another fingerprint"
                                     : "no registration record for this index",
                out, now);
        return out;
      }
      durable_ = *durable;
      out.push_back(fx::open_log{gen_, *durable});
    } else {
      // §9.2 step 8: an index without a cursor is never trusted — it may hold anything (an
      // interrupted reset, a copied directory). It is reset and rebuilt.
      condemn(readiness_reason::cursor_missing, "the index has no durable cursor", out, now);
    }
    return out;
  }
  // Reconciliation (§5.4).
  if (!*durable) {
    if (!rebuild_.boundary_pending()) {
      condemn(readiness_reason::cursor_missing, "the backend lost its durable cursor", out, now);
      return out;
    }
  } else {
    const auto& d = **durable;
    auto match = std::find_if(drain_.offered.begin(), drain_.offered.end(), [&](const drain_pipeline::entry& e) { return e.through == d; });
    if (match == drain_.offered.end()) {
      condemn(readiness_reason::cursor_unoffered, "the durable cursor " + d.to_json() + " was never offered", out, now);
      return out;
    }
    auto index = static_cast<std::size_t>(match - drain_.offered.begin());
    bool advanced = index > 0 || rebuild_.boundary_pending();
    // Whether this advance made a relevant write durable (a rebuild's boundary: its scan): the
    // coverage hook then owes the backend a capture that reaches it.
    bool wrote = rebuild_.boundary_pending();
    for (std::size_t i = 1; i <= index; ++i) {
      wrote = wrote || drain_.offered[i].mutations != 0 || drain_.offered[i].completes_cut;
    }
    drain_.offered.erase(drain_.offered.begin(), match);
    durable_ = d;
    DIX_ASSERT(!drain_.offered.empty() && drain_.offered.front().through == *durable_);  // durable: one of those offered
    // The logs still opening at the boundary (the barrier the boundary asked for overtook
    // log_opened, decision 0062): its anchor ends are not known yet, and no peer may see `ready`
    // before its anchors are verified (§9.2 step 8). on_log_opened owes the hook and settles.
    const bool opening = drain_.current() == drain::closed;
    if (wrote && opening) cover_.hook_owed_at_open = true;
    else if (wrote) cover_.tracker.owe_hook(drain_.offered.front().ends);
    if (advanced) {
      cover_.gate.on_durable_advance();
      transient_faults_ = 0;
      cover_.barrier_passed();
      rebuild_.drop_boundary();  // the rebuild is over: `ready` below (§11.7), or at log_opened
      if (opening) {
        drain_.rebuilt_while_opening = true;  // on_log_opened: the settle, or `ready` itself
      } else if (settle_ == settle::wanted) {
        // The registration record first, then `ready` (§10.4); on_settled publishes.
        to(settle::writing_then_ready);
        out.push_back(fx::settle{gen_, *config_.fingerprint});
      } else if (settle_ == settle::writing) {
        to(settle::writing_then_ready);  // on_settled publishes
      } else if (settle_ == settle::writing_then_ready) {
        // Another durable advance while the settle is still on its way: it publishes.
      } else if (published_ != readiness_state::ready) {
        publish(readiness_state::ready, readiness_reason::none, out);
        next_turn(out, now);  // the capture publish() asked for
      }
    }
  }
  if (verify_.current() == vphase::barrier && durable_ == verify_.target) {
    verify_.to(vphase::opening);  // the index is durable exactly at the fence
    out.push_back(fx::open_digest{gen_});
  }
  if (state_ == runner_state::waiting_durable && !drain_.cut_open &&
      drain_.offered.size() - 1 < config_.options.max_accepted_batches_ahead) {
    set_state(working_state());
    drain_.stalled_since.reset();
    next_turn(out, now);
  }
  if (state_ == runner_state::rebuilding && !attempt_running()) set_state(runner_state::running);
  publish_coverage(out, now);  // §5.4: the newest capture the durable entry covers
  // The barrier may have left a capture delivered meanwhile for the next: ask for it now, not at
  // the next delivery or wake (one outstanding, as before).
  demand_flush(out, now);
  if (again) {
    reconcile(out);
  } else if (drain_.end_of_log && !drain_.more && drain_.current() == drain::open && !drain_.held && state_ == runner_state::running &&
             !non_durable_work()) {
    set_state(runner_state::idle);  // idle pass (§5.6)
  }
  return out;
}

effects runner_core::on_log_opened(std::uint64_t gen, const std::optional<tailer_fault>& fault,
                                   const std::optional<cursor>& installed, steady_time now,
                                   const dix::positions& anchor_ends) {
  effects out;
  if (!current(gen) || release_.holding() || drain_.current() != drain::closed) return out;
  if (fault) {
    if (fault->transient) {
      transient_fault(false, fault->text, out, now);
    } else {
      condemn(fault->reason, fault->text, out, now);
    }
    return out;
  }
  if (!installed) {
    transient_fault(false, "the tailer installed no cursor", out, now);
    return out;
  }
  drain_.to(drain::open);
  cover_.unread.reopened();  // what the marks were passed by may be read again (decision 0065)
  if (acq_.current() == acq::verifying) acq_.to(acq::acquired);
  if (drain_.offered.empty() || drain_.offered.back().through != *installed) {
    drain_.offered.clear();
    drain_.offered.push_back(drain_pipeline::entry{*installed, 0, 0, true, now, {}});
  }
  drain_.offered.back().ends = anchor_ends;
  drain_.rebuilt_while_opening = false;
  if (cover_.hook_owed_at_open) {
    cover_.hook_owed_at_open = false;
    cover_.tracker.owe_hook(anchor_ends);  // the rebuild's boundary became durable while opening
  }
  arm_refresh(out, now);
  if (non_durable_work()) arm_age_timer(out, now, false);
  if (rebuild_.boundary_pending()) {
    if (published_ != readiness_state::rebuilding) publish(readiness_state::rebuilding, rebuild_.trigger, out);
  } else if (published_ != readiness_state::ready) {
    // Every anchor verified: only now may a peer see `ready` (§9.2 step 8, behaviour 5) — and
    // only once the registration record is written and the marker deleted (§10.4). A durable
    // answer that overtook this opening may have ended the rebuild: the settle is sent here
    // (its answer publishes `ready`), not by that answer (decision 0062). A settle whose answer
    // a discard of progress dropped (a transient fault or lost work after the rebuild's durable
    // advance) is wanted again: the durable cursor just installed is the rebuilt index's, so it
    // is sent now and its answer publishes `ready` (found by the simulation's racing writer:
    // `ready` went out before the settle's answer).
    switch (settle_) {
      case settle::done: publish(readiness_state::ready, readiness_reason::none, out); break;
      case settle::wanted:
        DIX_ASSERT(config_.fingerprint);  // only a build with a fingerprint wants a settle
        to(settle::writing_then_ready);
        out.push_back(fx::settle{gen_, *config_.fingerprint});
        break;
      case settle::writing: to(settle::writing_then_ready); break;
      case settle::writing_then_ready: break;
    }
  }
  set_state(working_state());
  drain_.more = true;
  next_turn(out, now);
  return out;
}

effects runner_core::on_chunk(std::uint64_t gen, const pull_outcome& outcome, steady_time now) {
  effects out;
  if (!current(gen) || release_.holding() || drain_.current() != drain::pulling) return out;
  drain_.to(drain::open);
  if (outcome.fault) {
    if (outcome.fault->transient) transient_fault(false, outcome.fault->text, out, now);
    else condemn(outcome.fault->reason, outcome.fault->text, out, now);
    return out;
  }
  const auto& chunk = outcome.chunk;
  logs_ = chunk.logs;
  {
    // One pass over the logs for the gate's forecast (decision 0027) and §13.1's unread age, which
    // moves up as the reader gets past what the log held at a turn's start (core/unread_clock,
    // decision 0065). Past: cut into a chunk (through_ends), not only collected — a transaction
    // carried to the next turns is still to read.
    std::uint64_t read = 0, unread = 0;
    unread_seen_.clear();
    for (const auto& l : chunk.logs) {
      read += l.read_sequence;
      unread += l.latest_sequence > l.read_sequence ? l.latest_sequence - l.read_sequence : 0;
      const auto through = chunk.through_ends.find(l.log);
      const auto past = through == chunk.through_ends.end() ? 0 : std::min(through->second, l.read_sequence);
      unread_seen_.push_back({past, l.latest_sequence});
    }
    cover_.backlog.observe(now, read, unread);
  }
  wal_syncs_ += chunk.wal_syncs;
  unindexable_ += chunk.unindexable;
  // The tailer reports re-opens since its last install; keep a total across installs.
  if (chunk.log_reopens < reopens_seen_) reopens_base_ += reopens_seen_;
  reopens_seen_ = chunk.log_reopens;
  log_reopens_ = reopens_base_ + reopens_seen_;
  drain_.cut_open = chunk.cut_open;
  drain_.end_of_log = chunk.end_of_log;
  cover_.unread.read(cover_.last_turn_at, unread_seen_, chunk.end_of_log, now);
  if (chunk.end_of_log) cover_.gate.on_end_of_log();
  if (chunk.capture) cover_.tracker.add(*chunk.capture);
  if (chunk.delivery && chunk.delivery->through) {
    for (const auto& p : chunk.delivery->through->logs()) {
      auto& t = cover_.read_time[p.log];
      t = std::max(t, p.time);
    }
  }
  if (!chunk.end_of_log) drain_.more = true;
  // The verify's fence: everything up to it is read and in this chunk; once its delivery is
  // accepted (on_delivery), the last offered entry is the barrier's target.
  if (verify_.current() == vphase::to_fence && chunk.fence_reached) verify_.to(vphase::at_fence);
  if (chunk.delivery) {
    drain_.issue(chunk.delivery, chunk.through_ends);
    out.push_back(fx::deliver{gen_, drain_.in_flight});
    return out;
  }
  // Idle pass (§5.6): caught up with nothing carried. The end of the log requests no flush —
  // unless a coverage demand waits for it (§12.4).
  drain_.stalled_since.reset();
  reconcile(out);
  publish_coverage(out, now);
  demand_flush(out, now);
  if (!non_durable_work() && !drain_.more) set_state(runner_state::idle);
  else if (non_durable_work()) arm_age_timer(out, now, false);
  if (verify_.current() == vphase::at_fence) reach_fence(out, now);
  next_turn(out, now);
  return out;
}

effects runner_core::on_log_fault(std::uint64_t gen, const tailer_fault& fault, steady_time now) {
  // A fault answering a boundary capture or a scan pull (the tailer sends them all as log_fault).
  if (rebuild_.current() == rebuild::capturing) {
    boundary_outcome b;
    b.fault = fault;
    return on_boundary(gen, b, now);
  }
  if (rebuild_.current() == rebuild::scanning && drain_.current() == drain::pulling) {
    scan_outcome x;
    x.fault = fault;
    return on_scan_chunk(gen, x, now);
  }
  if (drain_.current() == drain::closed) return on_log_opened(gen, fault, std::nullopt, now);
  pull_outcome out;
  out.fault = fault;
  return on_chunk(gen, out, now);
}

std::uint64_t runner_core::flush_requests() const noexcept {
  return std::accumulate(flushes_.begin(), flushes_.end(), std::uint64_t{0});
}

effects runner_core::on_delivery(std::uint64_t gen, delivery_result r, steady_time now) {
  effects out;
  if (!current(gen) || release_.holding() || drain_.current() != drain::delivering) return out;
  auto b = drain_.answered();
  if (!b) return out;
  const auto requests_before = flush_requests();
  switch (r) {
    case delivery_result::failed:
      condemn(readiness_reason::backend_failed, "deliver() returned failed", out, now);  // in a rebuild: the attempt fails
      return out;
    case delivery_result::deferred:
      drain_.held = std::move(b);
      set_state(runner_state::deferred);
      if (!drain_.stalled_since) drain_.stalled_since = now;
      if (drain_.changed_since_issue()) {
        deliver_held(out, now);  // a `changed` arrived meanwhile: the room may exist already
      } else {
        out.push_back(fx::arm_timer{timer_kind::deferral_retry, config_.options.max_flush_age, gen_});
      }
      return out;
    case delivery_result::accepted: break;
  }
  drain_.stalled_since.reset();
  ++delivered_batches_;
  delivered_records_ += b->records.size();
  const bool boundary_chunk = rebuild_.current() == rebuild::scanning && b->through.has_value();
  if (rebuild_.current() == rebuild::scanning) {
    rebuild_.rebuilt_records += b->records.size();
    rebuild_.scanned_bytes += b->bytes;
  }
  const auto mutations = mutations_of(*b) + (rebuild_.current() == rebuild::scanning ? b->records.size() : 0);
  // Cursor-only: no mutation of its own and none absorbed from the cut chunks it completes.
  const bool cursor_only = is_cursor_only(*b) && drain_.unanchored_bytes == 0 && drain_.unanchored_mutations == 0;
  if (b->through && (drain_.offered.empty() || *b->through != drain_.offered.back().through)) {
    drain_.offered.push_back(drain_pipeline::entry{*b->through, b->bytes + drain_.unanchored_bytes, mutations + drain_.unanchored_mutations,
                                     cursor_only, now, drain_.in_flight_ends, drain_.cut_delivered});
    drain_.unanchored_bytes = drain_.unanchored_mutations = 0;
    drain_.cut_delivered = false;
  } else {
    drain_.unanchored_bytes += b->bytes;
    drain_.unanchored_mutations += mutations;
  }
  if (drain_.cut_open && rebuild_.current() != rebuild::scanning) drain_.cut_delivered = true;
  if (cursor_only) {
    if (!drain_.cursor_timer_armed) {
      drain_.cursor_timer_armed = true;
      out.push_back(fx::arm_timer{timer_kind::cursor_flush, config_.cursor_flush_age, gen_});
    }
  } else {
    drain_.unflushed_bytes += b->bytes;
    drain_.unflushed_mutations += mutations;
    arm_age_timer(out, now, false);
  }
  if (drain_.unflushed_mutations >= config_.options.flush_after_mutations ||
      drain_.unflushed_bytes >= config_.options.flush_after_bytes) {
    request_flush(flush_reason::threshold, out, now);
  } else if (!boundary_chunk) {
    demand_flush(out, now);
  }
  if (!boundary_chunk) publish_coverage(out, now);  // cursor progress alone certifies (§12.3)
  if (boundary_chunk) {
    // §11.7: the offered list is [boundary], durable or not; the drain resumes from it.
    rebuild_.to(rebuild::boundary_pending);
    rebuild_.scan_ended_at = now;
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(now - *rebuild_.scan_started_at).count();
    if (took > 0 && rebuild_.scanned_bytes > 0) {
      rebuild_.scan_bytes_per_s = std::max<std::uint64_t>(1, rebuild_.scanned_bytes * 1000 / static_cast<std::uint64_t>(took));
    }
    drain_.to(drain::closed);
    out.push_back(fx::open_log{gen_, drain_.offered.back().through});
    // The barrier that ends the rebuild, now, unless this delivery's thresholds asked for it: the
    // scan's work is complete and `ready` waits for nothing else (§11.7) — a reader waiting at the
    // first build included (issue 29). Left to the age, a rebuild's end waited up to
    // max_flush_age with nothing to do (issue 32 item 3, decision 0062).
    if (flush_requests() == requests_before) request_flush(flush_reason::threshold, out, now);
    return out;
  }
  if (rebuild_.current() == rebuild::scanning) {
    // Scan chunks are unanchored work: nothing to reconcile, no accepted-ahead cap (§11.6).
    set_state(runner_state::rebuilding);
    next_turn(out, now);
    return out;
  }
  reconcile(out);
  if (verify_.current() == vphase::at_fence) reach_fence(out, now);
  if (!drain_.cut_open && drain_.offered.size() - 1 >= config_.options.max_accepted_batches_ahead) {
    set_state(runner_state::waiting_durable);
    drain_.stalled_since = now;
    // The reader stops until a barrier: ask for it now, unless this delivery already did (the
    // thresholds, a coverage demand, a verify's fence). Waiting for the age (or, when only
    // cursor-only progress fills the cap, the long cursor timer) would stall the index with work
    // to do: a writer paced by the gate makes small batches and reaches the cap long before the
    // age, and the stall then shows as lag (issue 32, decision 0060).
    if (flush_requests() == requests_before) {
      request_flush(non_durable_work() ? flush_reason::threshold : flush_reason::age, out, now);
    }
    return out;
  }
  set_state(working_state());
  next_turn(out, now);
  return out;
}

effects runner_core::on_flush_done(std::uint64_t gen, const result<void>& outcome, steady_time now) {
  effects out;
  if (gen != gen_ || !owner_now()) return out;
  if (release_.current() == release_sequence::phase::flushing) {
    // An error here is logged only; the shutdown decides (§9.6).
    if (!outcome) message_ = "flush(shutdown): " + outcome.error().message();
    const auto step = release_.on_flush_done(outcome);
    if (step == release_sequence::step::unlock) release_done(step, out, now);  // begun over a quiesced epoch
    else carry_release(step, out, now);
    return out;
  }
  if (release_.holding()) return out;
  if (!outcome) {
    condemn(readiness_reason::backend_failed, "flush: " + outcome.error().message(), out, now);
    return out;
  }
  reconcile(out);
  return out;
}

effects runner_core::on_state_change(state_change change, steady_time now) {
  effects out;
  if (!owner_now() || state_ == runner_state::stopped || state_ == runner_state::unavailable || release_.holding()) {
    return out;
  }
  switch (change.kind) {
    case state_change_kind::changed:
      drain_.note_changed();
      if (state_ == runner_state::deferred && drain_.held && drain_.current() == drain::open) deliver_held(out, now);
      if (drain_.current() != drain::closed && drain_.offered.size() > 1) reconcile(out);
      break;
    case state_change_kind::accepted_work_lost:
      if (change.epoch != 0 && change.epoch != epoch_) break;
      if (attempt_running()) {
        // §7: the attempt fails with backend-failed.
        fail_attempt(readiness_reason::backend_failed, "the backend lost accepted work during the rebuild", out, now);
        break;
      }
      // A rebuild waiting for its backoff or a respawned child resets the backend anyway: no
      // replay, which would reinstall the condemned cursor and publish `ready` (§11.7).
      if (rebuild_.current() == rebuild::backoff || rebuild_.current() == rebuild::held) break;
      // Replay everything after the durable cursor (§5.7).
      discard_progress(out);
      query_durable(out);
      break;
    case state_change_kind::failed:
      if (change.epoch != 0 && change.epoch != epoch_) break;
      condemn(readiness_reason::backend_failed, "the backend reported a permanent failure", out, now);
      break;
  }
  return out;
}

effects runner_core::on_timer(timer_kind kind, std::uint64_t gen, steady_time now) {
  effects out;
  if (kind == timer_kind::lag_tick) {
    // The chain of this ownership only; it ends with the ownership (or a stop).
    if (gen != cover_.lag_tick_id || !owner_now() || stopping_ || state_ == runner_state::stopped) return out;
    gate_sample(out, now);
    out.push_back(fx::arm_timer{timer_kind::lag_tick, std::chrono::milliseconds(config_.gate.lag_tick_ms()), cover_.lag_tick_id});
    return out;
  }
  if (kind == timer_kind::verify_schedule) {
    if (gen != verify_schedule_id_ || !owner_now() || stopping_ || state_ == runner_state::stopped) return out;
    out.push_back(fx::arm_timer{timer_kind::verify_schedule, config_.options.verify_every, verify_schedule_id_});
    // Its turn is skipped while a verify runs or the index may not be verified (not ready,
    // rebuilding, …): the next turn tries again.
    verify_request scheduled;
    scheduled.entries_per_s = config_.options.verify_entries_per_s;
    if (!verify_.running() && !verify_refusal(scheduled)) {
      begin_verify(scheduled, out);
    }
    (void)now;
    return out;
  }
  if (kind == timer_kind::verify_deadline) {
    // That verify's only (its number): it bounds the way to the fence and the view, not the scan.
    if (gen == verify_.number && verify_.before_scan()) {
      // A lagging index may need longer than the deadline only to read what it is behind by:
      // say so, with the remedies.
      std::string behind;
      if (verify_.backlog_ms == verify_backlog_cap_ms) {
        behind = "; when it began the index's reader had read nothing for a while though its log held more";
      } else if (verify_.backlog_ms * 2 > static_cast<std::uint64_t>(verify_.request.deadline.count())) {
        behind = "; when it began the index was about " + std::to_string(verify_.backlog_ms) +
                 " ms of reading behind its log: give a longer deadline, or verify once it caught up";
      }
      abandon_verify(errc::timeout,
                     "the index did not reach the verify's fence within " + std::to_string(verify_.request.deadline.count()) +
                       " ms" + behind,
                     out, now);
    }
    return out;
  }
  if (gen != gen_ || stopping_ || parked_) return out;
  switch (kind) {
    case timer_kind::flush_age:
      drain_.age_timer_armed = false;
      if (!owner_now() || !drain_.age_deadline) break;
      if (now < *drain_.age_deadline) {
        arm_age_timer(out, now, false);  // restarted since this event was armed
      } else {
        drain_.age_deadline.reset();
        if (non_durable_work()) request_flush(flush_reason::age, out, now);
      }
      break;
    case timer_kind::cursor_flush:
      drain_.cursor_timer_armed = false;
      if (owner_now() && drain_.offered.size() > 1) request_flush(flush_reason::age, out, now);
      break;
    case timer_kind::deferral_retry:
      if (owner_now() && state_ == runner_state::deferred && drain_.held && drain_.current() == drain::open) deliver_held(out, now);
      break;
    case timer_kind::transient_retry:
      retry(out);
      break;
    case timer_kind::rebuild_backoff:
      if (owner_now() && rebuild_.current() == rebuild::backoff && !release_.holding()) start_attempt(out, now);
      break;
    case timer_kind::lag_tick: break;         // handled above
    case timer_kind::verify_deadline: break;  // handled above
    case timer_kind::verify_schedule: break;  // handled above
    case timer_kind::coverage_refresh:
      cover_.refresh_armed_gen.reset();
      if (!owner_now() || release_.holding() || drain_.current() == drain::closed) break;
      // §12.3: an idle owner that ran no turn for max_flush_age reads what its idle state ignored
      // (system transactions) and captures, so coverage_time keeps up without writes.
      if (state_ == runner_state::idle && (!cover_.last_turn_at || now - *cover_.last_turn_at >= config_.options.max_flush_age)) {
        cover_.refresh_due = true;
        drain_.more = true;
        next_turn(out, now);
      }
      arm_refresh(out, now);
      break;
  }
  return out;
}

effects runner_core::on_shutdown_done(epoch_t epoch, const result<void>& outcome, steady_time now) {
  effects out;
  // As the actor records it in the ownership record, in the same handler (ownership::quiesced).
  if (outcome && epoch > quiesced_) quiesced_ = epoch;
  if (rebuild_.quiesce_in_flight == epoch) {
    rebuild_.quiesce_in_flight.reset();
    if (std::exchange(rebuild_.release_after_quiesce, false)) {
      if (rebuild_.current() == rebuild::quiescing) rebuild_.to(rebuild::none);
      begin_release(out);  // quiesced: flush and unlock; rejected: its own shutdown retries
      return out;
    }
  }
  if (epoch != epoch_) return out;
  if (rebuild_.current() == rebuild::quiescing && owner_now() && !release_.holding()) {
    if (!outcome) {
      // §10.3 "shutdown rejected": the backend cannot prove quiescence, the lock is kept (§9.7);
      // request_rebuild revives the runner, a stop retries the release.
      rebuild_.to(rebuild::none);
      message_ = "shutdown rejected: " + outcome.error().message();
      discard_progress(out);
      parked_ = true;
      set_state(runner_state::unavailable);
      publish(readiness_state::unavailable, readiness_reason::shutdown_failed, out);
      return out;
    }
    rebuild_.to(rebuild::minting);
    out.push_back(fx::mint_epoch{});
    return out;
  }
  const auto step = release_.on_shutdown_done(epoch, outcome);
  if (step == release_sequence::step::publish_rejected) {
    message_ = "shutdown rejected: " + outcome.error().message();
    carry_release(step, out, now);
    if (stopping_) out.push_back(fx::stopped{error{errc::backend_failed, message_}});
    return out;
  }
  if (step != release_sequence::step::unlock) return out;
  release_done(step, out, now);
  return out;
}

// A release that quiesced its epoch ends (the shutdown accepted, or the flush of an epoch a
// shutdown quiesced already): the unlock, then stopped or dormant.
void runner_core::release_done(release_sequence::step unlock, effects& out, steady_time now) {
  ++gen_;
  carry_release(unlock, out, now);
  if (stopping_) {
    set_state(runner_state::stopped);
    out.push_back(fx::stopped{result<void>{}});
  } else if (!parked_) {
    set_state(runner_state::dormant);  // parked: stays needs_rebuild or unavailable
  }
}

effects runner_core::on_child_down(child_kind kind, bool escalated, steady_time now) {
  effects out;
  bool& up = kind == child_kind::tailer ? tailer_up_ : proxy_up_;
  if (kind == child_kind::runner || state_ == runner_state::stopped) return out;
  const bool was_up = up;
  up = false;
  interrupt_verify(out);  // what the child held for it (the fence, the view) went with it
  if (kind == child_kind::proxy && rebuild_.quiesce_in_flight) {
    // As a reset's below: the shutdown's answer went with the proxy.
    rebuild_.quiesce_in_flight.reset();
    if (std::exchange(rebuild_.release_after_quiesce, false) && !escalated) {
      if (rebuild_.current() == rebuild::quiescing) rebuild_.to(rebuild::none);
      begin_release(out);
      return out;
    }
  }
  if (kind == child_kind::proxy && rebuild_.reset_in_flight) {
    // Its answer went with the proxy (the runner actor drops a dead proxy's errors): what waited
    // for it goes on now — a release then awaits the replacement proxy, or is abandoned below.
    rebuild_.reset_in_flight.reset();
    if (rebuild_.release_after_reset) {
      rebuild_.release_after_reset = false;
      if (!escalated) {
        if (rebuild_.current() == rebuild::resetting) rebuild_.to(rebuild::none);
        begin_release(out);
        return out;
      }
    }
  }
  if (escalated) {
    // Supervision escalated (§10.3): unavailable, released, nothing restarted for this id.
    if (parked_ && state_ == runner_state::unavailable) return out;
    const auto reason = kind == child_kind::proxy ? readiness_reason::backend_failed : readiness_reason::runner_failed;
    last_fault_ = reason;
    message_ = kind == child_kind::proxy ? "the backend proxy kept failing" : "the log tailer kept failing";
    discard_progress(out);
    parked_ = true;
    if (!owner_now()) {
      if (state_ == runner_state::waiting_lock) out.push_back(fx::release_lock{});
      set_state(stopping_ ? runner_state::stopped : runner_state::unavailable);
      return out;
    }
    publish(readiness_state::unavailable, reason, out);
    set_state(runner_state::unavailable);
    if (kind == child_kind::tailer) {
      if (!release_.holding()) begin_release(out);
      return out;
    }
    // No proxy will come back to quiesce the backend: release without it. The epoch fences the
    // backend's late work (a successor mints a larger one, backends check is_owner_epoch).
    carry_release(release_.abandon(), out, now);
    if (stopping_) {
      set_state(runner_state::stopped);
      out.push_back(fx::stopped{error{errc::backend_failed, message_ + "; its shutdown was not possible"}});
    }
    return out;
  }
  if (!was_up) return out;
  if (kind == child_kind::tailer && marker_ == marker::writing) {
    // The marker write died with the tailer: as a failed write (§10.3).
    return on_marker_written(gen_, error{errc::io_error, "the log tailer stopped"}, now);
  }
  if (kind == child_kind::tailer) {
    // A tailer crash is transient (§10.5): no marker, readiness unchanged, the durable cursor is
    // reinstalled once the replacement is up. The release needs no tailer.
    if (!owner_now() || stopping_ || parked_ || release_.holding()) return out;
    // A rebuild waiting for its backoff or for a respawned child has nothing in flight and
    // starts afresh: the fault must not cancel it and reinstall the condemned cursor (§11.7).
    if (rebuild_.current() == rebuild::backoff || rebuild_.current() == rebuild::held) return out;
    transient_fault(false, "the log tailer stopped", out, now);
    return out;
  }
  // A proxy crash is suspect (§10.5: backend-failed). A release under way starts again with the
  // replacement (its replies from the dead proxy are dropped by generation and phase).
  if (release_.current() == release_sequence::phase::flushing ||
      release_.current() == release_sequence::phase::shutting_down) {
    ++gen_;
    carry_release(release_.on_proxy_down(), out, now);
    return out;
  }
  if (!owner_now()) {
    last_fault_ = readiness_reason::backend_failed;
    return out;
  }
  if (!parked_ && !stopping_) condemn(readiness_reason::backend_failed, "the backend proxy stopped", out, now);
  return out;
}

effects runner_core::on_child_up(child_kind kind, steady_time now) {
  effects out;
  if (kind == child_kind::tailer) tailer_up_ = true;
  else if (kind == child_kind::proxy) proxy_up_ = true;
  else return out;
  if (release_.current() == release_sequence::phase::awaiting_proxy && proxy_up_ && owner_now()) {
    carry_release(release_.on_proxy_up(), out, now);
    return out;
  }
  if (rebuild_.current() == rebuild::held && tailer_up_ && proxy_up_ && owner_now() && !stopping_ && !release_.holding()) {
    start_attempt(out, now);
    return out;
  }
  if (pending_retry_ && tailer_up_ && proxy_up_ && !stopping_ && !parked_) {
    retry(out);
  } else if (acq_.stop_deferred() && acq_.current() == acq::minting && tailer_up_ && proxy_up_) {
    // A stop waits for the epoch's write, and the tailer that had it may have gone down with it
    // (its retry timer is ignored while stopping): write it again (epoch/<id> keeps the highest).
    retry(out);
  }
  return out;
}

effects runner_core::stop(steady_time now, bool last_registration) {
  effects out;
  (void)now;
  if (stopping_) return out;  // the first stop's outcome stands
  stopping_ = true;
  if (release_.held()) {
    out.push_back(fx::stopped{error{errc::backend_failed, message_}});
    return out;
  }
  if (release_.holding()) return out;  // a release is under way: it settles stop
  if (minting_now()) {
    // §9.2 step 2, §9.3: the epoch being minted or persisted is used by no backend call, and the
    // lock is not handed on, until its write is durable; the answer resumes this stop.
    acq_.defer_stop(last_registration);
    return out;
  }
  if (!owner_now()) {
    if (state_ == runner_state::waiting_lock) out.push_back(fx::release_lock{});
    set_state(runner_state::stopped);
    if (release_.current() == release_sequence::phase::abandoned) {
      out.push_back(fx::stopped{error{errc::backend_failed, message_ + "; its shutdown was not possible"}});
    } else {
      out.push_back(fx::stopped{result<void>{}});
    }
    return out;
  }
  if (marker_ == marker::writing) {  // its reply will be dropped: publish the condemnation now
    to(marker::unknown);
    publish(readiness_state::needs_rebuild, condemn_reason_, out);
  }
  discard_progress(out);
  rebuild_.to(rebuild::none);
  set_state(runner_state::releasing);
  if (last_registration) force_gate_open(out);  // §13.4: no registration of the id is left here
  begin_release(out);
  return out;
}

// ---- the verify (issue 31, core/verify_attempt.hpp) -------------------------------------------------

verify_outcome runner_core::verify_failed(errc code, std::string message) const {
  verify_outcome o;
  o.what = verify_outcome::kind::failed;
  o.through = verify_.target;
  o.code = code;
  o.message = std::move(message);
  return o;
}

void runner_core::end_verify(verify_outcome outcome, effects& out) {
  verify_.to(vphase::none);
  verify_.target.reset();
  out.push_back(fx::verify_ended{std::move(outcome), verify_.number});
}

void runner_core::interrupt_verify(effects& out) {
  if (!verify_.running()) return;
  // The next install drops a fence too; a runner that releases instead installs nothing, and
  // the fence's snapshots would pin the store's old versions until then.
  if (verify_.fenced()) out.push_back(fx::lift_fence{gen_, false});
  verify_outcome o;
  o.what = verify_outcome::kind::interrupted;
  o.through = verify_.target;
  o.code = errc::cancelled;
  o.message = message_.empty() ? std::string("the runner discarded its progress") : "interrupted: " + message_;
  end_verify(std::move(o), out);
}

void runner_core::abandon_verify(errc code, std::string message, effects& out, steady_time now) {
  if (verify_.fenced()) out.push_back(fx::lift_fence{gen_, false});
  const bool held = verify_.holds_pulls();
  end_verify(verify_failed(code, std::move(message)), out);
  if (held) {
    drain_.more = true;
    next_turn(out, now);
  }
}

void runner_core::reach_fence(effects& out, steady_time now) {
  DIX_ASSERT(!drain_.offered.empty());
  verify_.target = drain_.offered.back().through;
  verify_.to(vphase::barrier);
  if (durable_ == verify_.target) {
    verify_.to(vphase::opening);
    out.push_back(fx::open_digest{gen_});
    return;
  }
  // A barrier as a waiting reader's (flush_reason::coverage): the flush makes every accepted
  // entry durable, the last offered one included.
  request_flush(flush_reason::coverage, out, now);
}

effects runner_core::on_verify_request(const verify_request& request, steady_time now) {
  effects out;
  if (auto refused = verify_refusal(request)) {
    out.push_back(fx::verify_refused{std::move(*refused)});
    return out;
  }
  if (!verify_.running()) begin_verify(request, out);  // else it joins the running one
  (void)now;
  return out;
}

std::optional<verify_outcome> runner_core::verify_refusal(const verify_request& request) const {
  auto refuse = [](errc code, std::string message) {
    verify_outcome o;
    o.what = verify_outcome::kind::refused;
    o.code = code;
    o.message = std::move(message);
    return std::optional<verify_outcome>(std::move(o));
  };
  if (stopping_ || state_ == runner_state::stopped) return refuse(errc::stopped, "the runner is stopping");
  if (!owner_now()) return refuse(errc::unavailable, "this runner does not own the index");
  if (attempt_running() || rebuild_.waiting()) return refuse(errc::rebuilding, "the index is being rebuilt: verify it once it is ready");
  if (parked_ || release_.holding() || published_ != readiness_state::ready) {
    return refuse(errc::unavailable, "the index is not ready (" + std::string(to_string(published_)) + ")");
  }
  if (drain_.current() == drain::closed) return refuse(errc::io_error, "the runner is reinstalling its cursor: retry");
  if (verify_.running()) {
    if (verify_.request.report_only != request.report_only) {
      return refuse(errc::invalid_argument, std::string("a verify ") + (verify_.request.report_only ? "with" : "without") +
                                              " --report-only is running: wait for it");
    }
    return std::nullopt;  // joins it: answered with its outcome
  }
  if (request.deadline.count() <= 0) return refuse(errc::invalid_argument, "the verify's deadline must be positive");
  return std::nullopt;
}

void runner_core::begin_verify(const verify_request& request, effects& out) {
  DIX_ASSERT(!verify_.running());
  verify_read_ = verify_expected_ = 0;
  verify_eta_ms_ = -1;
  verify_.request = request;
  verify_.number = ++verify_numbers_;
  verify_.backlog_ms = cover_.backlog.drain_ms(verify_backlog_cap_ms);
  verify_.target.reset();
  verify_.to(vphase::fencing);
  out.push_back(fx::fence{gen_});
  out.push_back(fx::arm_timer{timer_kind::verify_deadline, request.deadline, verify_.number});
}

effects runner_core::on_fence_taken(std::uint64_t gen, const result<void>& taken, steady_time now) {
  effects out;
  if (!current(gen) || verify_.current() != vphase::fencing) return out;
  if (!taken) {
    // A refused fence holds nothing to lift.
    end_verify(verify_failed(taken.error().value(), "the log tailer could not fence: " + taken.error().message()), out);
    return out;
  }
  verify_.to(vphase::to_fence);
  // A caught-up runner takes no turn by itself: one turn reads up to the fence (or says so).
  drain_.more = true;
  next_turn(out, now);
  return out;
}

effects runner_core::on_digest_opened(std::uint64_t gen, const result<std::optional<cursor>>& through, steady_time now) {
  effects out;
  if (!current(gen) || verify_.current() != vphase::opening) return out;
  if (!through) {
    abandon_verify(through.error().value(), "the backend's digest: " + through.error().message(), out, now);
    return out;
  }
  if (*through != verify_.target) {
    // Out of contract: the view must be the durable state, and nothing was delivered since.
    abandon_verify(errc::backend_failed,
                   "the backend's digest is at " + (*through ? (*through)->to_json() : std::string("no cursor")) +
                     ", not at the verify's fence " + verify_.target->to_json(),
                   out, now);
    return out;
  }
  verify_.to(vphase::lifting);
  out.push_back(fx::lift_fence{gen_, true});
  return out;
}

effects runner_core::on_fence_lifted(std::uint64_t gen, steady_time now) {
  effects out;
  if (!current(gen) || verify_.current() != vphase::lifting) return out;
  verify_.to(vphase::scanning);
  out.push_back(fx::start_verify{gen_, verify_.request, *verify_.target});
  drain_.more = true;  // the drain goes on during the scan
  next_turn(out, now);
  return out;
}

effects runner_core::on_verify_progress(std::uint64_t gen, std::uint64_t read, std::uint64_t expected, std::int64_t eta_ms) {
  if (!current(gen) || verify_.current() != vphase::scanning) return {};
  verify_read_ = read;
  verify_expected_ = std::max(expected, read);
  verify_eta_ms_ = eta_ms;
  return {};
}

effects runner_core::on_verify_scanned(std::uint64_t gen, const result<verify_outcome>& scanned, steady_time now) {
  effects out;
  if (!current(gen) || verify_.current() != vphase::scanning) return out;
  if (!scanned) {
    end_verify(verify_failed(scanned.error().value(), "the verify's scan: " + scanned.error().message()), out);
    return out;
  }
  auto o = *scanned;
  o.through = verify_.target;
  o.code = errc::none;
  if (o.differences == 0 && !o.digest_agrees) {
    // The entries equal the projection, but the digest stored beside them does not sum them: the
    // backend's digest is out of contract (it is not what the next verify's merge can trust).
    end_verify(verify_failed(errc::backend_failed,
                             "the index's entries equal the projection, but the digest it stores (" +
                               std::to_string(o.stored_digest.records) + " records, sum " + to_hex(o.stored_digest.sum) +
                               ") is not theirs (" + std::to_string(o.entries_digest.records) + " records, sum " +
                               to_hex(o.entries_digest.sum) + "): the backend's digest is out of contract"),
               out);
    return out;
  }
  if (o.differences == 0) {
    o.what = verify_outcome::kind::verified;
    verified_ = verify_.target;
    verified_at_ = now;
    verified_records_ = o.records;
    end_verify(std::move(o), out);
    return out;
  }
  o.what = verify_outcome::kind::drift;
  ++verify_failures_;
  const bool condemns = !verify_.request.report_only;
  o.condemned = condemns;
  const auto text = std::to_string(o.differences) + " record" + (o.differences == 1 ? "" : "s") +
                    " of the index differ from the primary store's projection at " + verify_.target->to_json();
  o.message = text;
  // The condemnation's effects first, then the answer (which the interpreter holds until the
  // publications before it landed; the condemnation's own publication follows its marker's
  // write). The verify is over before condemn() discards progress, so it is not "interrupted".
  const auto number = verify_.number;
  verify_.to(vphase::none);
  verify_.target.reset();
  if (condemns) condemn(readiness_reason::verify_failed, "verify: " + text, out, now);
  out.push_back(fx::verify_ended{std::move(o), number});
  return out;
}

runner_snapshot runner_core::snapshot() const {
  runner_snapshot s;
  s.state = state_;
  s.reason = reason_;
  s.epoch = epoch_;
  s.owner = owner_now();
  s.message = message_;
  s.durable = durable_;
  if (owner_now()) {
    s.accepted_batches = drain_.offered.empty() ? 0 : drain_.offered.size() - 1;
    s.accepted_bytes = drain_.unanchored_bytes;
    s.accepted_mutations = drain_.unanchored_mutations;
    for (std::size_t i = 1; i < drain_.offered.size(); ++i) {
      s.accepted_bytes += drain_.offered[i].bytes;
      s.accepted_mutations += drain_.offered[i].mutations;
    }
    s.oldest_accepted_at = drain_.oldest_accepted_at();
    if (!drain_.offered.empty()) s.durable_ends = drain_.offered.front().ends;
    s.deferred_bytes = drain_.held ? drain_.held->bytes : 0;
    s.stalled_since = drain_.stalled_since;
    s.cursor_lag_ms = cursor_lag_ms();
    s.unread_since = cover_.unread.since();
    if (release_.quiescing()) s.quiescence_since = quiescence_since_;
  }
  s.delivered_batches = delivered_batches_;
  s.delivered_records = delivered_records_;
  s.flushes = flushes_;
  s.wal_syncs = wal_syncs_;
  s.log_reopens = log_reopens_;
  s.unindexable_records = unindexable_;
  s.transient_faults = transient_faults_;
  s.last_fault = last_fault_;
  s.logs = logs_;
  s.rebuilt_records = rebuild_.rebuilt_records;
  s.estimated_records = rebuild_.estimated_records;
  s.scan_started_at = rebuild_.scan_started_at;
  s.scan_ended_at = rebuild_.scan_ended_at;
  s.verifying = verify_.running();
  s.verified = verified_;
  s.verified_at = verified_at_;
  s.verified_records = verified_records_;
  if (verify_.current() == vphase::scanning) {
    s.verify_read = verify_read_;
    s.verify_expected = verify_expected_;
    s.verify_eta_ms = verify_eta_ms_;
  }
  s.verify_failures = verify_failures_;
  return s;
}

runner_snapshot released_for_dead_runner(runner_snapshot last, readiness_state published, readiness_reason reason) {
  auto s = std::move(last);
  s.state = published == readiness_state::unavailable ? runner_state::unavailable : runner_state::needs_rebuild;
  s.reason = reason;
  s.owner = false;
  s.last_fault = readiness_reason::runner_failed;
  s.message = reason == readiness_reason::shutdown_failed ? "the runner failed and its shutdown was rejected"
                                                          : "the runner failed";
  s.accepted_batches = s.accepted_bytes = s.accepted_mutations = s.deferred_bytes = 0;
  s.cursor_lag_ms = 0;
  s.oldest_accepted_at.reset();
  s.stalled_since.reset();
  s.unread_since.reset();
  s.quiescence_since.reset();
  return s;
}

runner_status runner_snapshot::status() const { return runner_status{state, reason, epoch, message}; }

runner_metrics runner_snapshot::metrics(steady_time now) const {
  auto age = [now](const std::optional<steady_time>& since) -> std::uint64_t { return since ? ms_between(*since, now) : 0; };
  runner_metrics m;
  m.owner = owner;
  m.epoch = epoch;
  m.accepted_batches = accepted_batches;
  m.accepted_bytes = accepted_bytes;
  m.accepted_mutations = accepted_mutations;
  m.deferred_bytes = deferred_bytes;
  m.oldest_accepted_age_ms = age(oldest_accepted_at);
  m.cursor_lag_ms = cursor_lag_ms;
  m.stalled_ms = age(stalled_since);
  m.unread_age_ms = age(unread_since);
  m.lag_ms = std::max({m.cursor_lag_ms, m.stalled_ms, m.unread_age_ms, m.oldest_accepted_age_ms});
  m.quiescence_age_ms = age(quiescence_since);
  m.delivered_batches = delivered_batches;
  m.delivered_records = delivered_records;
  m.flushes = flushes;
  m.wal_syncs = wal_syncs;
  m.unindexable_records = unindexable_records;
  m.log_reopens = log_reopens;
  m.transient_faults = transient_faults;
  m.last_fault = last_fault;
  m.rebuilt_records = rebuilt_records;
  m.estimated_records = estimated_records;
  m.verifying = verifying;
  m.verified = verified_at.has_value();
  m.verified_records = verified_records;
  m.verified_age_ms = age(verified_at);
  m.verify_failures = verify_failures;
  m.verify_read_entries = verify_read;
  m.verify_expected_entries = verify_expected;
  m.verify_eta_ms = verify_eta_ms;
  if (scan_started_at) {
    const auto took = ms_between(*scan_started_at, scan_ended_at.value_or(now));
    if (took > 0) m.scan_records_per_s = rebuilt_records * 1000 / took;
    if (!scan_ended_at && m.scan_records_per_s > 0 && estimated_records > rebuilt_records) {
      m.rebuild_eta_ms = (estimated_records - rebuilt_records) * 1000 / m.scan_records_per_s;
    }
  }
  for (const auto& l : logs) {
    log_metrics lm;
    lm.log = l.log;
    lm.read_sequence = l.read_sequence;
    lm.latest_sequence = l.latest_sequence;
    if (durable) {
      if (const auto* entry = durable->find(l.log)) lm.durable_sequence = entry->sequence;
    }
    lm.sequence_lag = lm.latest_sequence > lm.durable_sequence ? lm.latest_sequence - lm.durable_sequence : 0;
    if (verified) {
      if (const auto* entry = verified->find(l.log)) lm.verified_sequence = entry->sequence;
    }
    m.logs.push_back(std::move(lm));
  }
  return m;
}

}  // namespace dix
