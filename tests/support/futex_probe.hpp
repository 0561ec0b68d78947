// Whether a thread sleeps in the futex system call, from /proc (Linux): tests make sure a waiter
// is asleep before they wake it, so the wake — not the waiter's pre-check — is what returns it.
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace dix::test {

// True once thread `tid` of process `pid` (this process by default) sits in the futex call.
inline bool in_futex_wait(pid_t tid, pid_t pid = ::getpid()) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/syscall");
  long number = -1;
  in >> number;
  return number == SYS_futex;
}

}  // namespace dix::test
