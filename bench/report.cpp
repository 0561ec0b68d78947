#include "report.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "dix_git_commit.hpp"  // generated at build time (cmake/git_commit.cmake)
#include "tool/json.hpp"

namespace dix::bench {

double process_cpu_us() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto us = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_usec); };
  return us(u.ru_utime) + us(u.ru_stime);
}

double threads_cpu_us(std::string_view prefix) {
  static const double us_per_tick = 1e6 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  double total = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (!std::getline(comm, name) || name.compare(0, prefix.size(), prefix) != 0) continue;
    std::ifstream stat(task.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;  // the thread ended meanwhile
    // pid (comm) state ppid … : the fields after the comm's closing parenthesis, utime the 12th
    // and stime the 13th of them (proc(5) fields 14 and 15).
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(line.substr(close + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 1; i <= 13 && fields >> field; ++i) {
      if (i == 12) utime = std::stod(field);
      if (i == 13) stime = std::stod(field);
    }
    total += (utime + stime) * us_per_tick;
  }
  return total;
}

double peak_rss_mb() {
  // VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss across execve (and a forked child
  // starts from its parent's), so an exec'd baseline would report the bench's own peak.
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // "VmHWM:   1234 kB"
  }
  return 0;
}

std::string build_fields() {
  return std::string("\"build_type\":") + tool::json_string(DIX_BUILD_TYPE) + ",\"commit\":" +
         tool::json_string(DIX_GIT_COMMIT);
}

scratch_dir::scratch_dir(const std::string& base) {
  std::filesystem::path root = base.empty() ? std::filesystem::temp_directory_path() : std::filesystem::path(base);
  std::random_device rd;
  // A name nobody else holds: the destructor removes the directory and all in it, so it must be
  // one this run created (create_directory says false for one that existed: another name).
  for (int attempt = 0; attempt < 100; ++attempt) {
    path_ = root / ("dix-bench-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    if (std::filesystem::create_directory(path_)) return;
  }
  throw std::runtime_error("cannot make a scratch directory of its own in " + root.string());
}

bool check_scratch_base(const tool::args& a, std::string& problem) {
  if (!a.has("dir")) return true;
  std::error_code ec;
  const auto kind = std::filesystem::status(a.get("dir"), ec).type();
  // A path the system refuses to look at (a loop, no search permission) is the run's io_error.
  if (kind == std::filesystem::file_type::directory || (ec && kind != std::filesystem::file_type::not_found)) return true;
  problem = "--dir " + a.get("dir") + ": " +
            (kind == std::filesystem::file_type::not_found ? "no such directory" : "not a directory") +
            " (the benchmark makes its scratch directory inside it)";
  return false;
}

scratch_dir::~scratch_dir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

bool json_report::open(const tool::args& a, std::string& problem) {
  if (!a.has("json")) return true;
  path_ = a.get("json");
  errno = 0;
  file_.open(path_, std::ios::out | std::ios::trunc);
  if (file_.is_open()) return true;
  problem = "--json " + path_ + ": cannot create the file" + (errno != 0 ? std::string(": ") + std::strerror(errno) : "");
  return false;
}

bool json_report::write(const std::string& text, std::string& problem) {
  std::cout << text;
  if (path_.empty()) return true;
  file_ << text;
  file_.flush();
  if (file_.good()) return true;
  problem = "--json " + path_ + ": writing the report failed";
  return false;
}

}  // namespace dix::bench
