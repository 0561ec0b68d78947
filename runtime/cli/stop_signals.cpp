#include "stop_signals.hpp"

#include <csignal>

namespace dix::cli {
namespace {

volatile std::sig_atomic_t received = 0;

void record_stop_signal(int sig) { received = sig; }

}  // namespace

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = record_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

int stop_signal() noexcept { return received; }

}  // namespace dix::cli
