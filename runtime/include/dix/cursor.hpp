// The cursor: per log of a registration, the identity, sequence and header time of the last
// completed transaction a backend made durable (formats.md §3). Backends persist encode()'s bytes
// atomically with their index and hand them back through durable_cursor(); the encoding is
// canonical, so two cursors are equal exactly when their encodings are byte-equal.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <dix/result.hpp>

namespace dix {

struct log_position {
  std::string log;       // log name, [a-z0-9][a-z0-9._-]{0,63}
  std::string identity;  // the store's RocksDB DB identity, 1…64 bytes
  std::uint64_t sequence = 0;  // first sequence of the anchor transaction, ≥ 1
  index_time_t time = 0;       // the anchor's header time, ≥ 1

  friend bool operator==(const log_position& a, const log_position& b) noexcept {
    return a.log == b.log && a.identity == b.identity && a.sequence == b.sequence &&
           a.time == b.time;
  }
};

// Per log, the latest committed sequence (0 = no write). Coverage only; never stored in a cursor.
using positions = std::map<std::string, std::uint64_t>;

// True when both name the same logs at the same sequences.
bool same_positions(const positions& a, const positions& b) noexcept;

class cursor {
 public:
  static constexpr std::size_t max_logs = 32;
  static constexpr std::size_t max_encoded_bytes = 8192;

  // Sorts by log name; cursor_invalid when formats.md §3 is violated (message names the rule).
  static result<cursor> make(std::vector<log_position> logs);
  // Every rejection rule of formats.md §3 gives cursor_invalid; never repairs or guesses.
  static result<cursor> decode(std::string_view bytes);

  std::string encode() const { return encoded_; }
  const std::string& bytes() const noexcept { return encoded_; }
  const std::vector<log_position>& logs() const noexcept { return logs_; }  // ascending by name
  const log_position* find(std::string_view log) const noexcept;

  // Diagnostic rendering for logs only, never parsed:
  // {"format":1,"logs":{"main":{"identity":"…","sequence":42,"time":1733…}}}
  std::string to_json() const;

  friend bool operator==(const cursor& a, const cursor& b) noexcept {
    return a.encoded_ == b.encoded_;
  }
  friend bool operator!=(const cursor& a, const cursor& b) noexcept { return !(a == b); }

 private:
  cursor(std::vector<log_position> logs, std::string encoded)
      : logs_(std::move(logs)), encoded_(std::move(encoded)) {}
  std::vector<log_position> logs_;
  std::string encoded_;
};

}  // namespace dix
