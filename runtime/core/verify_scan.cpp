#include "core/verify_scan.hpp"

#include <algorithm>
#include <utility>

namespace dix {

namespace {

constexpr std::uint64_t most = ~std::uint64_t{0};

}  // namespace

verify_scan::verify_scan(entry_source& index, std::vector<std::string> logs, primary_source_of primary_of,
                         std::size_t limit, std::uint64_t expected, std::uint64_t entries_per_s,
                         clock::steady_time start)
    : merge_(index, std::move(logs), std::move(primary_of), limit),
      expected_(expected),
      rate_(entries_per_s),
      burst_(std::max<std::uint64_t>(entries_per_s / 10, 64)),
      start_(start) {}

std::uint64_t verify_scan::allowed(clock::steady_time now) const {
  if (rate_ == 0) return most;
  const auto elapsed_us =
      static_cast<std::uint64_t>(std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::microseconds>(now - start_).count()));
  // rate × elapsed without overflow: whole seconds and the rest apart.
  const auto seconds = elapsed_us / 1'000'000, rest_us = elapsed_us % 1'000'000;
  if (seconds != 0 && rate_ > most / seconds) return most;
  const auto by_time = rate_ * seconds + (rest_us * rate_) / 1'000'000;
  return by_time > most - burst_ ? most : by_time + burst_;
}

result<verify_step> verify_scan::step(clock::steady_time now, std::uint64_t max_entries) {
  verify_step out;
  const auto read = merge_.read();
  const auto allowance = allowed(now);
  const auto budget = std::min(allowance > read ? allowance - read : 0, max_entries);
  if (budget > 0) {
    auto done = merge_.step(budget);
    if (!done) return done.error();
    out.done = *done;
  }
  if (out.done) return out;
  if (budget == max_entries) return out;  // the turn's maximum: go on at once
  // The rate's next allowance: when `read + 1` entries are allowed.
  const auto next = merge_.read() + 1;
  const auto owed = next > burst_ ? next - burst_ : 0;
  const auto us = rate_ == 0 ? 0 : (owed * 1'000'000 + rate_ - 1) / rate_;
  out.resume_at = start_ + std::chrono::microseconds(static_cast<std::int64_t>(us));
  return out;
}

verify_progress verify_scan::progress(clock::steady_time now) const {
  verify_progress p;
  p.read = merge_.read();
  p.expected = std::max(expected_, p.read);
  if (merge_.done()) {
    p.expected = p.read;
    p.eta = std::chrono::milliseconds(0);
    return p;
  }
  const auto elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - start_).count();
  if (elapsed_ms <= 0 || p.read == 0) return p;
  // At the pace read so far (which the rate bounds): the rest takes rest × elapsed / read.
  const auto rest = p.expected - p.read;
  p.eta = std::chrono::milliseconds(static_cast<std::int64_t>(
      static_cast<double>(rest) * static_cast<double>(elapsed_ms) / static_cast<double>(p.read)));
  return p;
}

}  // namespace dix
