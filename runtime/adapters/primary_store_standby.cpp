// The standby open (protocol.md §9.8): primary_store::open_standby waits, without polling, for
// another process's LOCK on the store with a blocking F_SETLKW probe, closed before DB::Open, and
// opens the store once it is granted; one standby per store path in this process at a time.
#include "adapters/primary_store_detail.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include <rocksdb/env.h>

namespace dix {

using namespace store_detail;

namespace {

// One standby per store path in this process at a time: a second thread blocked on the same LOCK
// would be granted together with the first (POSIX locks do not conflict within a process) and its
// close() would drop the lock the first one's DB::Open just took.
std::mutex& standby_mutex(const std::filesystem::path& path) {
  static std::mutex table_mutex;
  static std::map<std::string, std::unique_ptr<std::mutex>> table;
  std::error_code ec;
  auto key = std::filesystem::weakly_canonical(path, ec);
  std::lock_guard guard(table_mutex);
  auto& m = table[(ec ? path.lexically_normal() : key).string()];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

enum class lock_probe { free, other_process, this_process, unknown };

// A non-blocking probe through RocksDB's own LockFile, which consults the process's table of
// locked files before it opens LOCK: it never opens a second descriptor of a LOCK this process
// holds. Free: taken and released again at once.
lock_probe probe_lock(const std::filesystem::path& lock_path) {
  auto* env = rocksdb::Env::Default();
  rocksdb::FileLock* lock = nullptr;
  auto s = env->LockFile(lock_path.string(), &lock);
  if (s.ok()) {
    env->UnlockFile(lock).PermitUncheckedError();  // the next DB::Open reports any real trouble
    return lock_probe::free;
  }
  auto text = s.ToString();
  if (text.find("lock hold by current process") != std::string::npos) return lock_probe::this_process;
  if (text.find("While lock file") != std::string::npos) return lock_probe::other_process;
  return lock_probe::unknown;  // e.g. no directory yet: open() creates it or says why not
}

// DB::Open failed because another process holds the store (open_failure keeps RocksDB's text).
bool lock_conflict(const error& e) { return e.message().find("While lock file") != std::string::npos; }

// Blocks until this process is granted a write lock on the whole of `lock_path`, i.e. until no
// other process holds one; then closes the descriptor, which releases the probe. Never polls.
result<void> wait_for_lock(const std::filesystem::path& lock_path) {
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return {};  // nothing to wait for; the open decides
    return {errc::io_error, "cannot open " + lock_path.string() + " to wait for the store: " + std::strerror(err)};
  }
  struct flock want {};
  want.l_type = F_WRLCK;
  want.l_whence = SEEK_SET;
  want.l_start = 0;
  want.l_len = 0;  // the whole file, as RocksDB locks it
  int rc = 0;
  int err = 0;
  do {
    rc = ::fcntl(fd, F_SETLKW, &want);
    err = rc == -1 ? errno : 0;
  } while (rc == -1 && err == EINTR);
  ::close(fd);  // before DB::Open, always (§9.8)
  if (rc == -1) {
    return {errc::io_error, "waiting for the lock on " + lock_path.string() + ": " + std::strerror(err)};
  }
  return {};
}

}  // namespace

result<std::shared_ptr<primary_store>> primary_store::open_standby(const std::filesystem::path& path,
                                                                   const store_options& options,
                                                                   const standby_events& events) {
  if (auto ok = validate(options); !ok) return ok.error();
  // Before the probe, which creates LOCK: a directory that is not ours gets nothing (decision 0035).
  if (options.create_if_missing) {
    if (auto ok = make_store_directory(path); !ok) return ok.error();
  }
  std::lock_guard one_standby(standby_mutex(path));
  const auto lock_path = path / "LOCK";
  for (;;) {
    auto probe = probe_lock(lock_path);
    if (probe == lock_probe::this_process) {
      return error{errc::io_error, "primary store " + path.string() + " is already open in this process"};
    }
    if (probe == lock_probe::other_process) {
      if (events.waiting) events.waiting();
      if (auto ok = wait_for_lock(lock_path); !ok) return ok.error();
      if (events.granted) events.granted();
    }
    auto store = open_store(path, options, probe != lock_probe::other_process);
    if (store || !lock_conflict(store.error())) return store;
    // Another process took the store between the grant (or the free probe) and DB::Open.
  }
}

}  // namespace dix
