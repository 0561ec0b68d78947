// The usage texts of `dix` and of each command, kept in one table so `dix help` and
// `dix <command> --help` say the same thing.
#pragma once

#include <string>
#include <string_view>

namespace dix::cli {

// Every command, the argument rules and the exit statuses: `dix help`, bare `dix`.
std::string dix_usage();
// One command's synopsis and description with the same rules: `dix <command> --help`.
std::string command_usage(std::string_view command);

}  // namespace dix::cli
