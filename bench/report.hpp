// Helpers shared by the benchmarks: medians, peak RSS, a scratch directory, the JSON preamble.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "tool/args.hpp"

namespace dix::bench {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The q-quantile (0 ≤ q ≤ 1) of `v`, nearest rank below; 0 when empty.
inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The process's CPU time so far (every thread, user + system), µs.
double process_cpu_us();

// The CPU time so far of this process's threads whose name starts with `prefix` (user + system,
// from /proc/self/task/*/stat at the kernel's tick, 10 ms), µs. Threads that ended are not
// counted: meant for long-lived pools such as RocksDB's background threads ("rocksdb:").
double threads_cpu_us(std::string_view prefix);

// The process's peak resident set (VmHWM), MiB.
double peak_rss_mb();

// "build_type":"Release","commit":"abc1234" (no braces), for the start of a report.
std::string build_fields();

// --dir, when given, must name an existing directory: the benchmark makes its scratch directory
// inside it and removes only that, so a typo neither grows a tree nor leaves one behind. False,
// with `problem` naming the argument, otherwise.
bool check_scratch_base(const tool::args& a, std::string& problem);

// A fresh directory under `base` (or the system temp dir), removed by the destructor; `base`
// itself is never created.
class scratch_dir {
 public:
  explicit scratch_dir(const std::string& base);
  ~scratch_dir();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Where a report goes: stdout, and the --json FILE when given. The file is created before the
// benchmark runs, so a path that cannot be written is a bad argument at once rather than a
// report lost after minutes of work.
class json_report {
 public:
  // Creates --json FILE when given. False, with `problem` naming the argument, when it cannot.
  bool open(const tool::args& a, std::string& problem);
  // Prints `text` and writes it to the file. False, with `problem` set, when the write fails.
  bool write(const std::string& text, std::string& problem);

 private:
  std::string path_;
  std::ofstream file_;
};

}  // namespace dix::bench
