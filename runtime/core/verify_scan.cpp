#include "core/verify_scan.hpp"

#include <algorithm>
#include <utility>

#include <dix/verify.hpp>

namespace dix {

namespace {

constexpr std::int64_t micro = 1'000'000;

}  // namespace

verify_scan::verify_scan(entry_source& index, std::vector<std::string> logs, primary_source_of primary_of,
                         std::size_t limit, std::uint64_t expected, std::uint64_t entries_per_s,
                         clock::steady_time start)
    : merge_(index, std::move(logs), std::move(primary_of), limit),
      expected_(expected),
      rate_(0),
      measuring_(entries_per_s == verify_rate_measured),
      burst_micro_(0),
      credit_micro_(0),
      start_(start),
      last_(start) {
  set_rate(measuring_ ? 0 : entries_per_s, start);
}

void verify_scan::set_rate(std::uint64_t entries_per_s, clock::steady_time now) {
  // Beyond 10^11 entries a second the rate is no bound: unbounded (and rate × 10 s fits).
  rate_ = entries_per_s > 100'000'000'000ull ? 0 : entries_per_s;
  burst_micro_ = static_cast<std::int64_t>(std::max<std::uint64_t>(rate_ / 10, 64)) * micro;
  credit_micro_ = burst_micro_;
  last_ = now;
}

std::optional<std::uint64_t> verify_scan::pace() const noexcept {
  if (measuring_) return std::nullopt;
  return rate_;
}

void verify_scan::refill(clock::steady_time now) {
  if (now <= last_) return;
  // Credit is capped at the burst, so no elapsed time beyond the burst's refill matters:
  // capping it first keeps rate × elapsed within 64 bits.
  const auto elapsed_us = std::min<std::int64_t>(std::chrono::duration_cast<std::chrono::microseconds>(now - last_).count(),
                                                 10 * micro);
  credit_micro_ = std::min(burst_micro_, credit_micro_ + static_cast<std::int64_t>(rate_) * elapsed_us);
  last_ = now;
}

result<verify_step> verify_scan::step(clock::steady_time now, std::uint64_t max_entries) {
  verify_step out;
  out.done = merge_.done();
  if (out.done) return out;
  if (measuring_ && merge_.read() >= verify_calibration_entries) {
    // What was read so far, as fast as it went, all read before `now`.
    measuring_ = false;
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now - start_).count();
    if (us > 0) {
      const auto measured = static_cast<double>(merge_.read()) * 1e6 / static_cast<double>(us);
      set_rate(static_cast<std::uint64_t>(std::clamp(measured / 4, 1000.0, 1e11)), now);
    }
  }
  max_entries = std::max<std::uint64_t>(max_entries, 1);
  std::uint64_t budget = max_entries;
  if (rate_ != 0) {
    refill(now);
    budget = credit_micro_ <= 0 ? 0 : std::min<std::uint64_t>(static_cast<std::uint64_t>(credit_micro_ / micro), max_entries);
  }
  if (budget > 0) {
    const auto before = merge_.read();
    auto done = merge_.step(budget);
    if (!done) return done.error();
    out.done = *done;
    if (rate_ != 0) credit_micro_ -= static_cast<std::int64_t>(merge_.read() - before) * micro;
  }
  if (out.done) return out;
  if (rate_ == 0 || budget == max_entries) return out;  // the turn's maximum: go on at once
  // The next whole entry's credit: (1 entry − credit) at the rate, rounded up.
  const auto owed = micro - credit_micro_;
  const auto us = (owed + static_cast<std::int64_t>(rate_) - 1) / static_cast<std::int64_t>(rate_);
  out.resume_at = now + std::chrono::microseconds(us);
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
