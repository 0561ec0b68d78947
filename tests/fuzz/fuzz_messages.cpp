// Fuzz target: every CAF message load (messages/type_ids.hpp). A remote peer's bytes reach each
// message type's inspect() through CAF 0.17's binary_deserializer, so every type of the dix
// type-ID block is loaded from arbitrary bytes here: the first input byte picks the type (one
// more value picks a whole caf::message, whose load looks the type up by its announced name),
// the rest is the payload. Properties: a load fails with an error or succeeds; what it loaded
// saves, and those bytes load again and save to the same bytes (nothing a load accepts is lost
// or changed by a second trip), except for a whole caf::message holding a float or double
// infinity (caf_saves below).
#include <array>
#include <cstddef>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/message.hpp>

#include "messages/type_ids.hpp"
#include "messages/values.hpp"

#include "fuzz_check.hpp"

namespace {

using buffer = std::vector<char>;

// One actor system for the process, never destroyed, and its config with it (a static config
// would be destroyed at exit under the system's still running threads): its scheduler threads
// outlive every input, and a static pointer keeps both reachable for the leak checker.
caf::actor_system& fuzz_system() {
  static caf::actor_system* sys = [] {
    auto* cfg = new caf::actor_system_config;
    dix::configure_dix(*cfg);
    cfg->set("scheduler.max-threads", 1);
    return new caf::actor_system(*cfg);
  }();
  return *sys;
}

template <class T>
buffer save(caf::actor_system& sys, T& x) {
  buffer out;
  caf::binary_serializer sink{sys, out};
  FUZZ_CHECK(!sink(x));
  return out;
}

// caf::message goes through caf::inspect: message's serialize() overload drops the error
// (tests/messages/messages_test.cpp).
template <>
buffer save(caf::actor_system& sys, caf::message& x) {
  buffer out;
  caf::binary_serializer sink{sys, out};
  FUZZ_CHECK(!caf::inspect(static_cast<caf::serializer&>(sink), x));
  return out;
}

template <class T>
caf::error load(caf::actor_system& sys, const char* data, std::size_t size, T& x) {
  caf::binary_deserializer source{sys, data, size};
  return source(x);
}

template <>
caf::error load(caf::actor_system& sys, const char* data, std::size_t size, caf::message& x) {
  caf::binary_deserializer source{sys, data, size};
  return caf::inspect(static_cast<caf::deserializer&>(source), x);
}

// CAF's own float or double, in any of the types CAF announces, loads from a peer's bits as an
// infinity that CAF 0.17.6's serializer never finishes saving (decision 0043): a whole caf::message
// holding one is loaded, not saved. A type of dix refuses such a load itself (wire::err), so every
// one it loaded saves.
bool caf_saves(caf::actor_system& sys, const caf::message& x) {
  return dix::wire::saves_finitely(x, sys.dummy_execution_unit());
}

template <class T>
bool caf_saves(caf::actor_system&, const T&) {
  return true;
}

template <class T>
void load_and_roundtrip(caf::actor_system& sys, const char* data, std::size_t size) {
  T first{};
  if (load(sys, data, size, first)) return;
  if (!caf_saves(sys, first)) return;
  auto saved = save(sys, first);
  T second{};
  FUZZ_CHECK(!load(sys, saved.data(), saved.size(), second));
  FUZZ_CHECK(save(sys, second) == saved);
}

using loader = void (*)(caf::actor_system&, const char*, std::size_t);

template <std::size_t... I>
constexpr auto make_loaders(std::index_sequence<I...>) {
  return std::array<loader, sizeof...(I) + 1>{
    &load_and_roundtrip<typename caf::type_by_id<caf::id_block::dix::begin + I>::type>...,
    &load_and_roundtrip<caf::message>};
}

constexpr std::size_t message_types = caf::id_block::dix::end - caf::id_block::dix::begin;
constexpr auto loaders = make_loaders(std::make_index_sequence<message_types>{});

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  auto& sys = fuzz_system();
  loaders[data[0] % loaders.size()](sys, reinterpret_cast<const char*>(data + 1), size - 1);
  return 0;
}
