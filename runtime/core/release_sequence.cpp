#include "core/release_sequence.hpp"

#include <cstdio>
#include <cstdlib>

namespace dix {

void check_transition(bool legal, const char* machine, int from, int to) noexcept {
  if (legal) return;
  std::fprintf(stderr, "dix: illegal %s transition %d -> %d\n", machine, from, to);
  std::abort();
}

namespace {

bool legal(release_sequence::phase from, release_sequence::phase to) noexcept {
  using p = release_sequence::phase;
  switch (to) {
    case p::idle: return false;
    case p::awaiting_proxy: return from == p::idle || from == p::flushing || from == p::shutting_down || from == p::held;
    case p::flushing: return from == p::idle || from == p::awaiting_proxy || from == p::held;
    case p::shutting_down: return from == p::flushing;
    case p::held: return from == p::shutting_down;
    case p::released: return from == p::shutting_down || from == p::flushing;
    case p::abandoned: return from != p::released && from != p::abandoned;
  }
  return false;
}

}  // namespace

void release_sequence::transition(phase to) noexcept {
  check_transition(legal(phase_, to), "release_sequence", static_cast<int>(phase_), static_cast<int>(to));
  phase_ = to;
}

bool release_sequence::holding() const noexcept {
  return phase_ == phase::awaiting_proxy || phase_ == phase::flushing || phase_ == phase::shutting_down ||
         phase_ == phase::held;
}

release_sequence::step release_sequence::flush_when(bool proxy_up) {
  if (!proxy_up) {
    transition(phase::awaiting_proxy);
    return step::none;
  }
  transition(phase::flushing);
  return step::flush;
}

release_sequence::step release_sequence::begin(epoch_t epoch, bool proxy_up, bool quiesced) {
  epoch_ = epoch;
  quiesced_ = quiesced;
  return flush_when(proxy_up);
}

release_sequence::step release_sequence::on_proxy_down() {
  // The replacement proxy starts the flush again; the dead one's answers are not waited for.
  if (phase_ != phase::flushing && phase_ != phase::shutting_down) return step::none;
  transition(phase::awaiting_proxy);
  return step::none;
}

release_sequence::step release_sequence::on_proxy_up() {
  if (phase_ != phase::awaiting_proxy) return step::none;
  transition(phase::flushing);
  return step::flush;
}

release_sequence::step release_sequence::on_flush_done(const result<void>& outcome) {
  (void)outcome;  // logged by the holder; the shutdown decides (§9.6)
  if (phase_ != phase::flushing) return step::none;
  if (quiesced_) {
    transition(phase::released);
    return step::unlock;
  }
  transition(phase::shutting_down);
  return step::shutdown;
}

release_sequence::step release_sequence::on_shutdown_done(epoch_t epoch, const result<void>& outcome) {
  if (phase_ != phase::shutting_down || epoch != epoch_) return step::none;
  if (!outcome) {
    transition(phase::held);
    return step::publish_rejected;
  }
  transition(phase::released);
  return step::unlock;
}

release_sequence::step release_sequence::retry(bool proxy_up) {
  if (phase_ != phase::held) return step::none;
  return flush_when(proxy_up);
}

release_sequence::step release_sequence::abandon() {
  if (phase_ == phase::released || phase_ == phase::abandoned) return step::none;
  transition(phase::abandoned);
  return step::unlock;
}

}  // namespace dix
