#include "messages/values.hpp"

#include <string>

namespace dix::wire {

caf::error check_range(const char* field, long long value, long long min, long long max) {
  if (value >= min && value <= max) return caf::error{};
  return make_error(errc::message_invalid, std::string(field) + " = " + std::to_string(value) +
                                               ": must be in [" + std::to_string(min) + ", " +
                                               std::to_string(max) + "]");
}

caf::error check_bits(const char* field, unsigned value, unsigned mask) {
  if ((value & ~mask) == 0) return caf::error{};
  return make_error(errc::message_invalid, std::string(field) + " = " + std::to_string(value) +
                                               ": bits outside " + std::to_string(mask));
}

caf::error check_batch(const batch& b) {
  for (std::size_t t = 0; t < b.transactions.size(); ++t) {
    for (const auto& m : b.transactions[t].mutations) {
      if (m.record >= b.records.size())
        return make_error(errc::message_invalid,
                          "dix.batch.transactions[" + std::to_string(t) + "] names record " +
                              std::to_string(m.record) + ": must be < " +
                              std::to_string(b.records.size()) + " (records in the batch)");
    }
  }
  return caf::error{};
}

caf::error cursor_load_error(const dix::error& decode_error) {
  return make_error(errc::message_invalid, "cursor does not decode (" +
                                               std::string(to_string(decode_error.value())) +
                                               ": " + decode_error.message() + ")");
}

}  // namespace dix::wire
