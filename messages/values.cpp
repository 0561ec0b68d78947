#include "messages/values.hpp"

#include <cmath>
#include <type_traits>
#include <string>

#include <caf/config_value.hpp>
#include <caf/downstream_msg.hpp>
#include <caf/message.hpp>
#include <caf/system_messages.hpp>
#include <caf/upstream_msg.hpp>

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

namespace {

using wire::saves_finitely;  // the message's and the error's, beside this file's own overloads

bool saves_finitely(const caf::config_value& x) {
  if (auto real = caf::get_if<double>(&x)) return std::isfinite(*real);
  if (auto list = caf::get_if<caf::config_value::list>(&x)) {
    for (const auto& y : *list)
      if (!saves_finitely(y)) return false;
  }
  if (auto dictionary = caf::get_if<caf::config_value::dictionary>(&x)) {
    for (const auto& entry : *dictionary)
      if (!saves_finitely(entry.second)) return false;
  }
  return true;
}

bool saves_finitely(const caf::downstream_msg& x) {
  if (auto batch = caf::get_if<caf::downstream_msg::batch>(&x.content)) return saves_finitely(batch->xs);
  if (auto closed = caf::get_if<caf::downstream_msg::forced_close>(&x.content)) return saves_finitely(closed->reason);
  return true;
}

bool saves_finitely(const caf::upstream_msg& x) {
  if (auto dropped = caf::get_if<caf::upstream_msg::forced_drop>(&x.content)) return saves_finitely(dropped->reason);
  return true;
}

template <class T>
bool element_saves_finitely(const caf::message& x, std::size_t i, bool& matched) {
  if (matched || !x.match_element<T>(i)) return true;
  matched = true;
  const auto& value = x.get_as<T>(i);
  if constexpr (std::is_floating_point<T>::value) return std::isfinite(value);
  else if constexpr (std::is_same<T, caf::down_msg>::value || std::is_same<T, caf::exit_msg>::value)
    return saves_finitely(value.reason);
  else if constexpr (std::is_same<T, caf::open_stream_msg>::value) return saves_finitely(value.msg);
  else return saves_finitely(value);
}

}  // namespace

bool saves_finitely(const caf::message& x) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    bool matched = false;
    const bool finite = element_saves_finitely<float>(x, i, matched) && element_saves_finitely<double>(x, i, matched) &&
                        element_saves_finitely<caf::config_value>(x, i, matched) &&
                        element_saves_finitely<caf::message>(x, i, matched) &&
                        element_saves_finitely<caf::error>(x, i, matched) &&
                        element_saves_finitely<caf::down_msg>(x, i, matched) &&
                        element_saves_finitely<caf::exit_msg>(x, i, matched) &&
                        element_saves_finitely<caf::open_stream_msg>(x, i, matched) &&
                        element_saves_finitely<caf::downstream_msg>(x, i, matched) &&
                        element_saves_finitely<caf::upstream_msg>(x, i, matched);
    if (!finite) return false;
  }
  return true;
}

// An error without a code has no context (CAF 0.17 holds none: context() would read through null).
bool saves_finitely(const caf::error& x) { return !x || saves_finitely(x.context()); }

caf::error check_error(const char* name, const caf::error& x) {
  if (saves_finitely(x)) return caf::error{};
  return make_error(errc::message_invalid, std::string(name) +
                                               ": its context holds a float or double that is not finite, "
                                               "which CAF 0.17 cannot send again");
}

caf::error cursor_load_error(const dix::error& decode_error) {
  return make_error(errc::message_invalid, "cursor does not decode (" +
                                               std::string(to_string(decode_error.value())) +
                                               ": " + decode_error.message() + ")");
}

}  // namespace dix::wire
