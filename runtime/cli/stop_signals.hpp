// SIGINT and SIGTERM as a request to stop, for the commands that run until stopped or finish
// (dix status --watch, dix demo): the handler only records which signal came. No SA_RESTART, so
// a blocked poll or futex wait returns at once (EINTR) and the command looks at stop_signal().
// dix serve has handlers of its own (a wake pipe, a standby's immediate exit).
#pragma once

namespace dix::cli {

void install_stop_handlers();
// The signal that asked to stop (SIGINT or SIGTERM), 0 while none came.
int stop_signal() noexcept;

}  // namespace dix::cli
