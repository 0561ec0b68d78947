// Finding the project's other executables: `dix bench` runs `dix-bench`, and `dix bench failover`
// runs `dix serve`, each from the directory of the running executable (build/bin, or an
// installed bin/). Linux: reads /proc/self/exe.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace dix::tool {

// The path of `name` in the directory of this process's executable; nullopt with `error` set when
// /proc/self/exe cannot be read. Does not check that the file exists.
std::optional<std::filesystem::path> sibling_executable(std::string_view name, std::string& error);

}  // namespace dix::tool
