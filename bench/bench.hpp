// End-to-end benchmarks, the program `dix-bench` that `dix bench <name> ...` runs (main.cpp).
// Each prints a JSON report (throughput, the baseline measured in the same run, their ratio, peak
// memory, build type, commit). Each takes the arguments after its name and returns the exit
// status: 0 success, 1 an error, 2 bad arguments.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dix::bench {

// The usage of benchmark `name` for its --help; of all of them for any other name.
std::string usage(std::string_view name);

int run_wal(const std::vector<std::string>& argv);
int run_catchup(const std::vector<std::string>& argv);
// `dix-bench catchup-baseline`: one baseline of `catchup`, which runs it as a child process of
// its own; prints {"records_per_s":R,"peak_rss_mb":M}.
int run_catchup_baseline(const std::vector<std::string>& argv);
int run_failover(const std::vector<std::string>& argv);
int run_rebuild(const std::vector<std::string>& argv);
int run_verify(const std::vector<std::string>& argv);
// The baseline of run_rebuild, which runs it as `dix-bench rebuild-baseline` in a child process.
int run_rebuild_baseline(const std::vector<std::string>& argv);

int run_ryw(const std::vector<std::string>& argv);
// The other-process reader of run_ryw, which runs it as `dix-bench ryw-reader` in a child process.
int run_ryw_reader(const std::vector<std::string>& argv);
int run_sustained(const std::vector<std::string>& argv);
int run_fulltext(const std::vector<std::string>& argv);
int run_vector(const std::vector<std::string>& argv);
int run_remote(const std::vector<std::string>& argv);

}  // namespace dix::bench
