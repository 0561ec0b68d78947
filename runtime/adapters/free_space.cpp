#include "adapters/free_space.hpp"

#include <dix/primary_store.hpp>

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

namespace dix {

result<space_reading> read_space(const std::filesystem::path& path) {
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) {
    return error{errc::io_error, "cannot read the free space of " + path.string() + ": " + std::strerror(errno)};
  }
  return space_reading{static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize,
                       static_cast<std::uint64_t>(st.f_blocks) * st.f_frsize, static_cast<std::uint64_t>(st.f_fsid)};
}

result<store_space> read_store_space(const std::filesystem::path& store) {
  auto reading = read_space(store);
  if (!reading) return reading.error();
  return store_space{reading->available_bytes, reading->capacity_bytes, live_wal_bytes(store)};
}

}  // namespace dix
