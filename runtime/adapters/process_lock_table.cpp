#include "adapters/process_lock_table.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <system_error>

#include "adapters/posix_files.hpp"
#include "core/assert.hpp"

namespace dix {

namespace {

namespace fs = std::filesystem;

// Canonical form of a directory that may not exist yet.
fs::path canonical_directory(const fs::path& path) {
  std::error_code ec;
  auto canonical = fs::weakly_canonical(path, ec);
  if (!ec) return canonical;
  auto absolute = fs::absolute(path, ec);
  return ec ? path.lexically_normal() : absolute.lexically_normal();
}

}  // namespace

std::shared_ptr<process_lock_table> process_lock_table::for_home(const fs::path& dix_dir) {
  // Tables live while their users hold them; an expired one is replaced, and having closed its
  // descriptors on destruction it left no flock behind.
  static std::mutex registry_mutex;
  static std::map<fs::path, std::weak_ptr<process_lock_table>> registry;
  auto key = canonical_directory(dix_dir);
  std::lock_guard lock(registry_mutex);
  for (auto it = registry.begin(); it != registry.end();) {
    it = it->second.expired() ? registry.erase(it) : std::next(it);
  }
  auto& slot = registry[key];
  auto table = slot.lock();
  if (!table) {
    table = std::make_shared<process_lock_table>(key);
    slot = table;
  }
  return table;
}

process_lock_table::process_lock_table(fs::path dix_dir) : dix_dir_(std::move(dix_dir)) {}

process_lock_table::~process_lock_table() {
  for (auto& [id, e] : entries_) {
    if (e.descriptor >= 0) ::close(e.descriptor);
  }
}

fs::path process_lock_table::lock_file(const std::string& id) const {
  return dix_dir_ / "runner" / (id + ".lock");
}

result<int> process_lock_table::take_flock(const std::string& id, bool& contended) const {
  contended = false;
  auto path = lock_file(id);
  if (auto made = make_private_directory(path.parent_path(), "runner lock"); !made) return made.error();
  auto fd = open_private_file(path, "runner lock");
  if (!fd) return fd.error();
  int rc;
  do {
    rc = ::flock(fd->get(), LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return fd->release();
  if (errno == EWOULDBLOCK) {
    contended = true;
    return error{errc::io_error, "runner lock " + path.string() + " is held by another process"};
  }
  return posix_error("runner lock", "flock", path, errno);
}

void process_lock_table::acquire(const std::string& id, std::uint64_t requester, grant granted) {
  DIX_ASSERT(requester != 0);
  result<void> outcome;
  bool contended = false;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    if (it != entries_.end() && it->second.owner != requester) {
      auto& waiters = it->second.waiters;
      for (auto& w : waiters) {
        if (w.first == requester) {
          w.second = std::move(granted);
          return;
        }
      }
      waiters.emplace_back(requester, std::move(granted));
      changed_.notify_all();
      return;
    }
    if (it == entries_.end()) {
      // Free → owned: the flock is taken under the table mutex, so a release closing the
      // previous descriptor and this open cannot interleave (a second descriptor of this process
      // would find its own flock in the way).
      auto fd = take_flock(id, contended);
      if (fd) {
        auto& e = entries_[id];
        e.owner = requester;
        e.descriptor = *fd;
      } else {
        outcome = fd.error();
      }
    }
    changed_.notify_all();
  }
  granted(std::move(outcome), contended);
}

void process_lock_table::release(const std::string& id, std::uint64_t requester) {
  grant next;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    auto& e = it->second;
    if (e.owner != requester) {
      for (auto w = e.waiters.begin(); w != e.waiters.end(); ++w) {
        if (w->first == requester) {
          e.waiters.erase(w);
          changed_.notify_all();
          break;
        }
      }
      return;
    }
    changed_.notify_all();
    if (e.waiters.empty()) {
      ::close(e.descriptor);  // drops the flock: the entry is free in every process
      entries_.erase(it);
      return;
    }
    // Immediate in-process handoff; the descriptor, and with it the flock, stays.
    e.owner = e.waiters.front().first;
    next = std::move(e.waiters.front().second);
    e.waiters.pop_front();
  }
  if (next) next(result<void>{}, false);
}

bool process_lock_table::owned(const std::string& id) const {
  std::lock_guard lock(mutex_);
  return entries_.count(id) != 0;
}

void process_lock_table::count_registration(const std::string& id, int delta) {
  std::lock_guard lock(mutex_);
  auto& n = registrations_[id];
  if (delta >= 0) n += static_cast<std::size_t>(delta);
  else n -= std::min(n, static_cast<std::size_t>(-static_cast<long long>(delta)));
  if (n == 0) registrations_.erase(id);
}

std::size_t process_lock_table::registrations(const std::string& id) const {
  std::lock_guard lock(mutex_);
  auto it = registrations_.find(id);
  return it == registrations_.end() ? 0 : it->second;
}

std::uint64_t process_lock_table::owner_of(const std::string& id) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(id);
  return it == entries_.end() ? 0 : it->second.owner;
}

bool process_lock_table::wait_until(const std::string& id,
                                    const std::function<bool(bool owned, std::size_t waiters)>& pred,
                                    std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] {
    auto it = entries_.find(id);
    return it == entries_.end() ? pred(false, 0) : pred(true, it->second.waiters.size());
  });
}

std::size_t process_lock_table::test_waiter_count(const std::string& id) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(id);
  return it == entries_.end() ? 0 : it->second.waiters.size();
}

}  // namespace dix
