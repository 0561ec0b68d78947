#include "core/wal_continuity.hpp"

#include <string>

namespace dix {

result<void> wal_continuity::check_expected_sequence(std::uint64_t sequence) const {
  if (expected_sequence_ == 0 || sequence == expected_sequence_) return {};
  return {errc::log_retention,
          "expected the transaction at sequence " + std::to_string(expected_sequence_) +
              " but the log holds sequence " + std::to_string(sequence) +
              (sequence > expected_sequence_ ? " (missing in between: purged, or skipped as unreadable)" : "")};
}

result<void> wal_continuity::check(std::uint64_t sequence, std::uint32_t count,
                                   index_time_t time) {
  if (expected_sequence_ != 0) {
    if (auto ok = check_expected_sequence(sequence); !ok) return ok;
    if (expected_time_ != 0 && time != expected_time_) {
      return {errc::log_retention,
              "the transaction at sequence " + std::to_string(sequence) + " has header time " +
                  std::to_string(time) + ", not " + std::to_string(expected_time_) +
                  " (sequences reused after a lost WAL tail)"};
    }
  } else if (last_end_ != 0 && sequence != last_end_ + 1) {
    return {errc::log_corrupt, "sequence " + std::to_string(sequence) + " follows " +
                                   std::to_string(last_end_) + "; expected " +
                                   std::to_string(last_end_ + 1)};
  }
  if (last_time_ != 0 && time <= last_time_) {
    return {errc::log_corrupt, "header time " + std::to_string(time) + " at sequence " +
                                   std::to_string(sequence) + " does not exceed " +
                                   std::to_string(last_time_)};
  }
  if (count == 0) {
    return {errc::log_corrupt, "empty batch at sequence " + std::to_string(sequence)};
  }
  expected_sequence_ = 0;
  expected_time_ = 0;
  last_end_ = sequence + count - 1;
  last_time_ = time;
  return {};
}

}  // namespace dix
