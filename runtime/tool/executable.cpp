#include "tool/executable.hpp"

#include <system_error>

namespace dix::tool {

std::optional<std::filesystem::path> sibling_executable(std::string_view name, std::string& error) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    error = "cannot read /proc/self/exe: " + ec.message();
    return std::nullopt;
  }
  return self.parent_path() / name;
}

}  // namespace dix::tool
