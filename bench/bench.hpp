// End-to-end benchmarks, run as `dix bench <name> ...`. Each prints a JSON report (throughput,
// the baseline measured in the same run, their ratio, peak memory, build type, commit).
#pragma once

#include <string>
#include <vector>

namespace dix::bench {

// argv[0] is the benchmark name. Returns the process exit status.
int run(const std::vector<std::string>& argv);

int run_wal(const std::vector<std::string>& argv);
int run_catchup(const std::vector<std::string>& argv);
int run_failover(const std::vector<std::string>& argv);

}  // namespace dix::bench
