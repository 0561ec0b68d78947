// Whether a thread sleeps in the futex system call, from /proc (Linux): tests make sure a waiter
// is asleep before they wake it, so the wake — not the waiter's pre-check — is what returns it.
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace dix::test {

// True once thread `tid` of process `pid` (this process by default) sits in the futex call.
inline bool in_futex_wait(pid_t tid, pid_t pid = ::getpid()) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/syscall");
  long number = -1;
  in >> number;
  return number == SYS_futex;
}

// Spins (yield, bounded at 20 s) until thread `tid` of `pid` sleeps in FUTEX_WAIT; false when
// `tid` is 0 (not started) throughout or the bound passed.
inline bool until_asleep(pid_t tid, pid_t pid = ::getpid()) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (tid != 0 && in_futex_wait(tid, pid)) return true;
    std::this_thread::yield();
  }
  return false;
}

}  // namespace dix::test
