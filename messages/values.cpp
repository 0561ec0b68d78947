#include "messages/values.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include <caf/message.hpp>
#include <caf/sec.hpp>
#include <caf/serializer.hpp>

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

// A serializer that writes nothing and stops at the first float or double that is not finite:
// it walks whatever CAF can save (every announced type, nested messages and errors included) as
// the real serializer would, without its loop. `infinite` tells, as CAF drops the error a nested
// message's save returns (it saves one through serialize(), messages/README.md).
class finite_probe final : public caf::serializer {
 public:
  explicit finite_probe(caf::execution_unit* context) : caf::serializer(context) {}

  bool infinite = false;

  caf::error begin_object(std::uint16_t&, std::string&) override { return caf::error{}; }
  caf::error end_object() override { return caf::error{}; }
  caf::error begin_sequence(std::size_t&) override { return caf::error{}; }
  caf::error end_sequence() override { return caf::error{}; }
  caf::error apply_raw(std::size_t, void*) override { return caf::error{}; }

 protected:
  caf::error apply_impl(std::int8_t&) override { return caf::error{}; }
  caf::error apply_impl(std::uint8_t&) override { return caf::error{}; }
  caf::error apply_impl(std::int16_t&) override { return caf::error{}; }
  caf::error apply_impl(std::uint16_t&) override { return caf::error{}; }
  caf::error apply_impl(std::int32_t&) override { return caf::error{}; }
  caf::error apply_impl(std::uint32_t&) override { return caf::error{}; }
  caf::error apply_impl(std::int64_t&) override { return caf::error{}; }
  caf::error apply_impl(std::uint64_t&) override { return caf::error{}; }
  caf::error apply_impl(float& x) override { return check(std::isfinite(x)); }
  caf::error apply_impl(double& x) override { return check(std::isfinite(x)); }
  caf::error apply_impl(long double&) override { return caf::error{}; }  // CAF saves it as text
  caf::error apply_impl(std::string&) override { return caf::error{}; }
  caf::error apply_impl(std::u16string&) override { return caf::error{}; }
  caf::error apply_impl(std::u32string&) override { return caf::error{}; }

 private:
  caf::error check(bool finite) {
    if (finite) return caf::error{};
    infinite = true;
    return caf::make_error(caf::sec::invalid_argument);
  }
};

}  // namespace

bool saves_finitely(const caf::message& x, caf::execution_unit* context) {
  finite_probe probe{context};
  const bool saved = !x.save(probe);
  return saved && !probe.infinite;
}

// Its code and category are integers: its context says.
bool saves_finitely(const caf::error& x, caf::execution_unit* context) {
  return !x || saves_finitely(x.context(), context);  // no code, no context
}

caf::error sendable_reason(caf::error reason, caf::execution_unit* context) {
  if (saves_finitely(reason, context)) return reason;
  return make_error(errc::stopped, "ended by an exit reason that could not be sent again (a float or double "
                                   "that is not finite)");
}

caf::error check_error(const char* name, const caf::error& x, caf::execution_unit* context) {
  if (saves_finitely(x, context)) return caf::error{};
  return make_error(errc::message_invalid, std::string(name) +
                                               ": its context cannot be sent again (CAF 0.17 never finishes saving "
                                               "a float or double that is not finite)");
}

caf::error cursor_load_error(const dix::error& decode_error) {
  return make_error(errc::message_invalid, "cursor does not decode (" +
                                               std::string(to_string(decode_error.value())) +
                                               ": " + decode_error.message() + ")");
}

}  // namespace dix::wire
