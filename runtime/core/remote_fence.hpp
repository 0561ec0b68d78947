// The host side of a remote backend's fencing and message checks (issue 28; backends.md §4,
// decision 0042), pure: what remote_backend_host (not built yet) decides for each message an
// owner sends, before the wrapped backend sees it.
//
//  * host_fence: every message carries the owner epoch. A higher epoch than any seen is persisted
//    first (`<state_dir>/epoch`, fsync + rename: the shell's business) and quiesces the older
//    epoch's work (`wrapped.shutdown(old)`) before the message acts; the highest epoch acts; a
//    lower one is answered `stopped` ("epoch superseded"). is_owner_epoch(e) is e == highest.
//    This survives the owner's death: its queued work stops when a successor's first message
//    arrives.
//  * check_*: what every decoded message must satisfy (CAF 0.17 drops only frames it cannot
//    deserialize; everything else reaches the handler): epoch ≥ 1, a session's sequence numbers
//    contiguous, record indices in range, at most 64 MiB and 1 048 576 records. A violation is
//    answered `message_invalid` naming the rule, and the host goes on serving its legitimate
//    owner: nothing a peer sends may crash it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <dix/result.hpp>

namespace dix {

inline constexpr std::uint64_t max_remote_message_bytes = 64ull << 20;
inline constexpr std::uint64_t max_remote_records = 1'048'576;
inline constexpr std::uint32_t remote_protocol_version = 1;

class host_fence {
 public:
  // What a message of `epoch` does.
  struct decision {
    enum class kind : std::uint8_t {
      act,       // the current epoch: go on
      adopt,     // a higher one: persist it, quiesce `quiesce` (when set), then act
      superseded,  // a lower one: answer stopped, do nothing
    } what = kind::act;
    std::optional<epoch_t> quiesce;  // the older epoch to shut down first (adopt)
  };
  // `persisted`: the highest epoch found in the state directory at start (0: none).
  explicit host_fence(epoch_t persisted = 0) noexcept : highest_(persisted) {}

  decision on_message(epoch_t epoch) const noexcept;
  // The shell persisted `epoch` (fsync + rename) and, when asked, shut the older one down: from
  // now on it is the owner's. Never lowers it.
  void adopted(epoch_t epoch) noexcept;
  bool is_owner_epoch(epoch_t e) const noexcept { return e != 0 && e == highest_; }
  epoch_t highest() const noexcept { return highest_; }

 private:
  epoch_t highest_ = 0;
};

// `hello{protocol_version, backend_id, kind, epoch}` against the host's own backend.
result<void> check_hello(std::uint32_t version, const std::string& backend_id, const std::string& kind, epoch_t epoch,
                         const std::string& host_id, const std::string& host_kind);

// The owner's window is the host's memory bound too (issue 28): a delivery numbered `seq` while
// the wrapped backend has taken through `applied`, with `queued_bytes` of the session's batches
// waiting and `bytes` more, must keep at most max_batches and max_bytes unacknowledged (what a
// legitimate owner never exceeds); message_invalid "deliver: window overrun …" otherwise.
result<void> check_window(std::uint64_t seq, std::uint64_t applied, std::uint64_t queued_bytes, std::uint64_t bytes,
                          std::uint32_t max_batches = 16, std::uint64_t max_bytes = 64ull << 20);

// One `deliver` of a session: its epoch, its sequence number against the one the session expects
// next (contiguous from the first after hello), its size and record count.
result<void> check_deliver(epoch_t epoch, std::uint64_t seq, std::uint64_t expected_seq, std::uint64_t bytes,
                           std::uint64_t records);

// A record index named by a message (an unindexable count, a per-record answer) within a batch of
// `records`.
result<void> check_record_index(std::uint64_t index, std::uint64_t records);

}  // namespace dix
