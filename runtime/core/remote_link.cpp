#include "core/remote_link.hpp"

#include <algorithm>

namespace dix {

std::optional<remote_link::time_point> remote_link::connect_due() const noexcept {
  if (phase_ != phase::disconnected) return std::nullopt;
  return retry_at_.value_or(time_point{});
}

void remote_link::connecting(time_point now) {
  (void)now;
  if (phase_ == phase::disconnected) phase_ = phase::connecting;
}

void remote_link::connect_failed(time_point now, double jitter) {
  if (phase_ != phase::connecting) return;
  phase_ = phase::disconnected;
  // 100 ms, 200 ms, … doubling up to the cap: the exponent stops growing once the cap is reached.
  auto backoff = limits_.first_backoff;
  for (std::uint32_t i = 0; i < failures_ && backoff < limits_.max_backoff; ++i) backoff *= 2;
  backoff = std::min(backoff, limits_.max_backoff);
  ++failures_;
  const double spread = 1.0 - std::clamp(jitter, 0.0, 1.0) / 2.0;
  retry_at_ = now + std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(
                      static_cast<double>(backoff.count()) * spread));
}

remote_link::on_connect remote_link::connected(time_point now, std::uint64_t host_instance) {
  (void)now;
  on_connect out;
  if (phase_ != phase::connecting) return out;
  phase_ = phase::connected;
  failures_ = 0;
  retry_at_.reset();
  // Any end of the previous connection went through lost(), which judged the work in doubt then:
  // a host that restarted meanwhile lost nothing more than that (its durable cursor is on disk).
  host_instance_ = host_instance;
  out.work_lost = lost_in_doubt_;
  lost_in_doubt_ = false;
  if (out.work_lost) {
    // The runtime replays from its durable cursor: what was sent since is not in doubt any more
    // for this link, it will be sent again under new sequence numbers.
    durable_through_ = last_sent_;
  }
  out.changed = out.work_lost || deferred_;
  deferred_ = false;
  return out;
}

void remote_link::lost(time_point now) {
  if (phase_ == phase::disconnected) return;
  phase_ = phase::disconnected;
  window_.clear();
  window_bytes_ = 0;
  if (work_in_doubt()) lost_in_doubt_ = true;
  retry_at_ = now;  // reconnect at once; failures back off from there
}

void remote_link::new_session(time_point now) {
  (void)now;
  window_.clear();
  window_bytes_ = 0;
  durable_through_ = last_sent_;
  phase_ = phase::connecting;
}

void remote_link::refused(time_point now, double jitter) {
  lost(now);
  phase_ = phase::connecting;
  connect_failed(now, jitter);
}

std::optional<std::uint64_t> remote_link::deliver(std::uint64_t bytes, time_point now) {
  const bool room = window_.empty() ||
                    (window_.size() < limits_.max_batches && window_bytes_ + bytes <= limits_.max_bytes);
  if (phase_ != phase::connected || !room) {
    deferred_ = true;
    return std::nullopt;
  }
  const auto seq = next_seq_++;
  window_.push_back(in_flight{seq, bytes, now});
  window_bytes_ += bytes;
  last_sent_ = seq;
  return seq;
}

bool remote_link::acked(std::uint64_t seq, time_point now) {
  (void)now;
  if (seq > last_sent_) return false;  // acknowledges what was never sent: the peer is wrong
  while (!window_.empty() && window_.front().seq <= seq) {
    window_bytes_ -= window_.front().bytes;
    window_.pop_front();
  }
  return true;
}

bool remote_link::at_most_half() const noexcept {
  return window_.size() <= limits_.max_batches / 2 && window_bytes_ <= limits_.max_bytes / 2;
}

bool remote_link::take_changed() noexcept {
  if (!deferred_ || phase_ != phase::connected || !at_most_half()) return false;
  deferred_ = false;
  return true;
}

bool remote_link::ack_overdue(time_point now) const noexcept {
  return phase_ == phase::connected && !window_.empty() && now - window_.front().sent_at > limits_.ack_deadline;
}

void remote_link::durable_through(std::uint64_t seq) noexcept {
  durable_through_ = std::max(durable_through_, std::min(seq, last_sent_));
}

}  // namespace dix
