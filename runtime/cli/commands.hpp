// The `dix` subcommands. Each takes its own arguments (after the subcommand name) and returns
// the process exit status: 0 success, 1 an operating error, 2 bad arguments, 3 the log cannot
// serve the request (log-retention, log-corrupt, log-missing) or, for `dix status`, the readiness
// segment has another layout.
#pragma once

#include <string>
#include <vector>

namespace dix::cli {

inline constexpr int exit_ok = 0;
inline constexpr int exit_error = 1;
inline constexpr int exit_usage = 2;
inline constexpr int exit_log = 3;
inline constexpr int exit_layout = 3;  // dix status: the readiness segment has another layout

int run_wal(const std::vector<std::string>& argv);
int run_write(const std::vector<std::string>& argv);
int run_demo(const std::vector<std::string>& argv);
int run_status(const std::vector<std::string>& argv);
int run_rebuild(const std::vector<std::string>& argv);
// 0 equal, 1 different, 2 bad arguments, 3 no owner attached, 4 not verified (cmd_verify.cpp).
int run_verify(const std::vector<std::string>& argv);
int run_serve(const std::vector<std::string>& argv);
int run_serve_backend(const std::vector<std::string>& argv);
int run_query(const std::vector<std::string>& argv);
// Runs `dix-bench` from the directory of this executable with `argv`; returns only on failure.
int run_bench(const std::vector<std::string>& argv);

}  // namespace dix::cli
