// What both sides of a remote backend share (decision 0043): the private actor system's
// configuration (the middleman, heartbeats on, dix's types, TLS when asked), the checks of TLS
// options, the middleman actor to ask (plain or TLS), and the wire's error codes.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman_actor.hpp>

#include <dix/remote.hpp>
#include <dix/result.hpp>

namespace dix::remote_detail {

// cfg for a private actor system: the middleman loaded, heartbeats and the connection timeout
// set, dix's message types and error category, and with TLS the openssl manager and the three
// files (peer verification is libcaf-openssl's default once a CA is set).
void configure(caf::actor_system_config& cfg, const remote_heartbeat& hb, const remote_tls& tls);

// invalid_argument naming what is missing when TLS is partial, or a file that cannot be read.
result<void> check_tls(const remote_tls& tls);

// Under LeakSanitizer only (a no-op otherwise): spawns the middleman's BASP broker now and marks
// it, with everything reachable from it at exit, as no leak. CAF 0.17.6 can leave the broker and
// its tables allocated when a system shuts down with connections cut mid-way (tests/lsan.supp
// names the flake; its suppression did not catch it). Call right after the actor system is made,
// before anything connects or publishes: the middleman's broker table is not thread-safe.
void ignore_broker_at_exit(caf::actor_system& sys);

// The middleman actor that connects and publishes: the TLS one when TLS is configured.
caf::io::middleman_actor middleman_of(caf::actor_system& sys, const remote_tls& tls);

// errc as the wire carries it, and back (a value outside the enum reads as message_invalid).
inline std::uint8_t code_of(const error& e) noexcept { return static_cast<std::uint8_t>(e.value()); }
inline error error_of(std::uint8_t code, std::string text) {
  auto c = code < errc_count ? static_cast<errc>(code) : errc::message_invalid;
  if (c == errc::none) c = errc::message_invalid;
  return error{c, std::move(text)};
}

}  // namespace dix::remote_detail
