#include "actors/remote_system.hpp"

#include <unistd.h>

#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include "messages/type_ids.hpp"

namespace dix::remote_detail {

void configure(caf::actor_system_config& cfg, const remote_heartbeat& hb, const remote_tls& tls) {
  configure_dix(cfg);
  cfg.load<caf::io::middleman>();
  // CAF 0.17 ships both off: a frozen or partitioned peer would never be noticed.
  cfg.set("middleman.heartbeat-interval", caf::timespan{std::chrono::duration_cast<caf::timespan>(hb.interval)});
  cfg.set("middleman.connection-timeout",
          caf::timespan{std::chrono::duration_cast<caf::timespan>(hb.connection_timeout)});
  // The private system runs dix's few actors; the middleman's own thread does the I/O.
  cfg.set("scheduler.max-threads", std::size_t{2});
  if (tls.complete()) {
    cfg.load<caf::openssl::manager>();
    cfg.openssl_certificate = tls.certificate.string();
    cfg.openssl_key = tls.key.string();
    cfg.openssl_cafile = tls.ca.string();
  }
}

result<void> check_tls(const remote_tls& tls) {
  if (!tls.any()) return {};
  if (!tls.complete()) {
    std::string missing;
    for (auto [name, path] : {std::pair{"certificate", &tls.certificate}, std::pair{"key", &tls.key},
                              std::pair{"CA", &tls.ca}}) {
      if (path->empty()) missing += std::string(missing.empty() ? "" : ", ") + name;
    }
    return error{errc::invalid_argument,
                 "TLS needs a certificate, a key and a CA file, all three; missing: " + missing +
                     " (with none at all the connection is plain TCP, allowed on loopback only)"};
  }
  for (const auto* path : {&tls.certificate, &tls.key, &tls.ca}) {
    if (::access(path->c_str(), R_OK) != 0) {
      return error{errc::invalid_argument, "TLS file " + path->string() + " cannot be read"};
    }
  }
  return {};
}

void ignore_broker_at_exit(caf::actor_system& sys) {
#if defined(__SANITIZE_ADDRESS__)
  auto broker = sys.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  // The control block starts the broker's heap block (CAF's actor_storage).
  if (auto* block = caf::actor_cast<caf::actor_control_block*>(broker)) __lsan_ignore_object(block);
#else
  (void)sys;
#endif
}

caf::io::middleman_actor middleman_of(caf::actor_system& sys, const remote_tls& tls) {
  if (tls.complete()) return sys.openssl_manager().actor_handle();
  return sys.middleman().actor_handle();
}

}  // namespace dix::remote_detail
