// The process-wide runner lock table with the flock crash guard (protocol.md §9.1): the
// runner_lock port of runtime/ports/ownership.hpp for the runtimes of one process, one table per
// home store directory `<home>/dix`.
//
// In-process contention is settled in memory: a free entry is taken at once, a busy one queues
// the requester FIFO, and a release hands the entry to the first waiter immediately. Across
// processes the entry is guarded by `flock(LOCK_EX|LOCK_NB)` on `<dix>/runner/<id>.lock`
// (formats.md §4.1), through a descriptor the table opens itself (O_CLOEXEC): taken when the
// entry goes from free to owned, kept across in-process handoffs, closed when the entry goes back
// to free. Only a misconfiguration lets another process hold it; the acquisition then fails with
// io_error naming the lock file and the requester is not queued. The kernel drops the flock of a
// process that dies, so a crashed owner never blocks the next one.
//
// Files: `runner/` is created 0700 and each lock file 0600, the modes set explicitly (chmod,
// fchmod) so the umask neither widens nor narrows them. Existing files keep their modes.
//
// Thread safety: every method may be called from any thread. One table mutex guards every entry;
// grant callbacks run after it is released (they post actor messages and may re-enter the table),
// on the acquiring thread for an immediate grant or refusal, on the releasing thread for a
// handoff. Nothing blocks: no call waits for another process or for a release.
//
// Lifetime: the table lives while someone holds its shared_ptr; its destruction closes every
// descriptor it still holds (as the process's death would) and drops pending grants.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "ports/ownership.hpp"

namespace dix {

class process_lock_table final : public runner_lock {
 public:
  // The process-wide table of the home store directory `dix_dir` (`<home>/dix`): the same
  // instance for every path naming the same directory (canonicalised; a directory that does not
  // exist yet is canonicalised up to its existing prefix). A process may have several homes, each
  // with its own table. Creates no file; the first acquisition creates `runner/`.
  static std::shared_ptr<process_lock_table> for_home(const std::filesystem::path& dix_dir);

  explicit process_lock_table(std::filesystem::path dix_dir);
  ~process_lock_table() override;
  process_lock_table(const process_lock_table&) = delete;
  process_lock_table& operator=(const process_lock_table&) = delete;

  // runner_lock. `requester` MUST NOT be 0. An owner acquiring again is granted again; a waiter
  // acquiring again keeps its place and its newest grant. On a refusal the entry stays free and
  // `granted` receives io_error naming the lock file: with `contended` when another process holds
  // the flock, without it when the file cannot be used (a directory or a symlink at its path, a
  // file or `runner/` owned by another user or open to others, a failed open or flock: the
  // errno text or the mode and the remedy).
  void acquire(const std::string& id, std::uint64_t requester, grant granted) override;
  void release(const std::string& id, std::uint64_t requester) override;

  // Whether some requester of this process owns `id`.
  bool owned(const std::string& id) const override;
  // Registrations of `id` in the process (protocol.md §9.1); a count never goes below 0.
  void count_registration(const std::string& id, int delta) override;
  std::size_t registrations(const std::string& id) const override;
  // The requester that owns `id` in this process; 0 when none does (protocol.md §12.5 step 3
  // finds the owner runner's published proof through it).
  std::uint64_t owner_of(const std::string& id) const;

  const std::filesystem::path& directory() const noexcept { return dix_dir_; }
  // `<dix>/runner/<id>.lock`.
  std::filesystem::path lock_file(const std::string& id) const;

  // Requesters queued behind the owner of `id`.
  std::size_t test_waiter_count(const std::string& id) const;
  // Blocks until pred(owned, waiters) holds for `id` or the timeout passes; the table's condition
  // variable is notified at every change (protocol.md §9.1: for blocking callers and tests).
  bool wait_until(const std::string& id, const std::function<bool(bool owned, std::size_t waiters)>& pred,
                  std::chrono::milliseconds timeout) const;

 private:
  struct entry {
    std::uint64_t owner = 0;  // never 0 while the entry exists: free entries are erased
    int descriptor = -1;      // holds the flock while owned
    std::deque<std::pair<std::uint64_t, grant>> waiters;
  };

  // Opens and flocks the lock file of `id`; the descriptor, or the refusal (`contended`: another
  // process holds the flock; otherwise the file could not be used).
  result<int> take_flock(const std::string& id, bool& contended) const;

  const std::filesystem::path dix_dir_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::map<std::string, entry> entries_;
  std::map<std::string, std::size_t> registrations_;  // ids with ≥ 1 registration
};

}  // namespace dix
