#include "report.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <random>

#include "tool/json.hpp"

namespace dix::bench {

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

std::string build_fields() {
  return std::string("\"build_type\":") + tool::json_string(DIX_BUILD_TYPE) + ",\"commit\":" +
         tool::json_string(DIX_GIT_COMMIT);
}

scratch_dir::scratch_dir(const std::string& base) {
  std::filesystem::path root = base.empty() ? std::filesystem::temp_directory_path() : std::filesystem::path(base);
  std::random_device rd;
  path_ = root / ("dix-bench-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
  std::filesystem::create_directories(path_);
}

scratch_dir::~scratch_dir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace dix::bench
