#include "core/runner_interpreter.hpp"

#include <utility>
#include <variant>

#include "core/progress_pacer.hpp"

namespace dix {

void runner_interpreter::apply(effects out) {
  // Every event samples the gate (protocol.md §13.3: turns, idle passes, flush ticks and more):
  // it stores only what changed.
  auto gate = core_.sample_gate(ports_.now());
  out.insert(out.end(), gate.begin(), gate.end());
  auto progress = ports_.store_snapshot();
  // The withdrawal of the last scan's figures (a new attempt, progress_pacer) goes ahead of the
  // event's effects: the attempt's `rebuilding` is never read beside the previous scan's figures.
  if (progress && progress_pacer::withdraws(*progress)) publish_progress(*std::exchange(progress, std::nullopt));
  for (auto& e : out) {
    auto step = [this, e]() mutable { carry_out(e); };
    // The unlock, and the answer that the release is over, wait for the publications before
    // them: whoever hears `stopped` reads in the slot what the release published. A gate store
    // waits too, so the slot never holds an older gate than the core decided last (§13.3).
    // A verify's answer waits likewise: a requester told of a condemnation finds what was
    // published before it.
    if (std::holds_alternative<fx::release_lock>(e) || std::holds_alternative<fx::stopped>(e) ||
        std::holds_alternative<fx::store_gate>(e) || std::holds_alternative<fx::verify_ended>(e)) {
      // The figures go behind the event's other effects, but never behind the unlock.
      if (progress) publish_progress(*std::exchange(progress, std::nullopt));
      publish_lag_due();
      fence_.after_landed(std::move(step));
    } else if (std::holds_alternative<fx::mint_epoch>(e)) {
      // The mint waits for the publications before it: the slot's owner_epoch moves at once,
      // its state only when the publisher stores it, so a mint ahead of a rebuild's `rebuilding`
      // (protocol.md §11.4 publishes it first) showed readers `ready` under the rebuild's new
      // epoch while the attempt shut the backend down and reset it (decision 0032).
      fence_.after_landed(std::move(step));
    } else {
      fence_.then(std::move(step));
    }
  }
  if (progress) publish_progress(*progress);
  publish_lag_due();
  // A pull can also end without its answer (a discard of progress, a stop): the bell left
  // ringing through it is taken then, so nothing that rang is left without a wake. Once: the
  // flag is cleared first, and a ring after the take sends a wake of its own.
  if (bell_held_ && !core_.pulling()) take_held_bell();
}

void runner_interpreter::carry_out(effect& e) {
  if (auto* p = std::get_if<fx::publish>(&e)) {
    // A coverage time is certified under the epoch the core names: if the slot's epoch is no
    // longer that one, another owner minted since and this one must not certify (§12.3). The
    // whole publication is dropped, not only its coverage part: only the current owner mints
    // (formats.md §4.3–4.4), so a slot epoch other than p->epoch means this runner is no longer
    // the owner, and every field of the publication is owner-written — its state and reason
    // would overwrite the successor's, its lag_gate undo an inherited gate the successor must
    // keep (§13.3). Publications without a coverage time carry no certification.
    if (p->coverage_time && ports_.owner_epoch() != p->epoch) return;
    fence_.sent();  // before the send: a port may land it at once
    ports_.publish(*p);
    return;
  }
  if (std::holds_alternative<fx::mint_epoch>(e)) {
    apply(ports_.mint_epoch());
    return;
  }
  ports_.carry_out(e);
}

void runner_interpreter::publish_lag_due() {
  if (auto lag = ports_.take_lag()) publish_lag(*lag);
}

// The figures for the metrics segment, in the fence's order like a publication and counted as
// one: a release hands the lock over only after they landed, so no earlier owner's figures
// arrive after a successor's.
void runner_interpreter::publish_progress(const rebuild_progress& progress) {
  fence_.then([this, progress] {
    fence_.sent();
    ports_.publish_progress(progress);
  });
}

void runner_interpreter::publish_lag(const lag_figures& lag) {
  fence_.then([this, lag] {
    fence_.sent();
    ports_.publish_lag(lag);
  });
}

void runner_interpreter::on_wake(std::uint8_t flags) {
  // What rang the bell counts with this wake; a bell's own wake finds it taken by an earlier one
  // when nothing rang since, and is then nothing at all. The bell's own wake during a pull leaves
  // it ringing, so the commits rung meanwhile send no wake of their own; it is taken just before
  // the pull's answer (before_pull_answer).
  if (flags == 0 && core_.pulling()) {
    bell_held_ = true;
    return;
  }
  if (bell_ != nullptr) flags = wake_flag::merge(flags, bell_->take());
  if (flags == 0) return;
  if ((flags & wake_flag::rebuild) != 0) {
    const auto action = core_.on_rebuild_wake(ports_.owns_lock());
    if (action == runner_core::rebuild_wake::consume && ports_.consume_rebuild_request()) {
      apply(core_.on_rebuild_requested(ports_.now()));
    }
    // Only `acquire` is left for on_wake, which starts the acquisition.
    if (action != runner_core::rebuild_wake::acquire) flags = static_cast<std::uint8_t>(flags & ~wake_flag::rebuild);
    if (flags == 0) return;
  }
  // §12.4: the demand a coverage wake is about, as the slot holds it now.
  if ((flags & wake_flag::coverage) != 0) core_.on_coverage_demand(ports_.coverage_demand());
  apply(core_.on_wake(flags, ports_.now()));
}

void runner_interpreter::before_pull_answer() { take_held_bell(); }

void runner_interpreter::take_held_bell() {
  if (!bell_held_) return;
  bell_held_ = false;
  if (bell_ == nullptr) return;
  if (auto flags = bell_->take(); flags != 0) apply(core_.on_wake(flags, ports_.now()));
}

void runner_interpreter::on_lock_granted(std::uint64_t gen) {
  const bool was_owner = core_.owner();
  auto out = core_.on_lock_acquired(gen, ports_.now(), ports_.lag_gate());
  if (!was_owner && core_.owner()) ports_.acquired();  // the core took the grant
  apply(std::move(out));
}

void runner_interpreter::on_meta_state(std::uint64_t gen, const result<meta_records>& records) {
  const bool requested = records && core_.awaits_meta(gen) && ports_.consume_rebuild_request();
  apply(core_.on_meta_state(gen, records, ports_.read_slot(), ports_.now(), requested));
}

}  // namespace dix
