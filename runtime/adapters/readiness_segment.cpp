#include "adapters/readiness_segment.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <mutex>
#include <system_error>
#include <vector>

#include <dix/free_functions.hpp>

#include "adapters/mapped_file.hpp"
#include "adapters/metrics_segment.hpp"
#include "adapters/posix_files.hpp"
#include "core/names.hpp"

namespace dix {

namespace {

namespace fs = std::filesystem;
using namespace segment_layout;

// Header offsets (formats.md §4.2) past the fields every mapped file shares (file_layout).
constexpr std::size_t h_reset_count = 24;
constexpr std::size_t h_change_counter = 32;
constexpr std::size_t h_store_reserve = 40;  // docs/formats.md: the home store's free-space reserve (decision 0013)
constexpr std::size_t h_reserved = 48;

// Slot offsets (formats.md §4.3).
constexpr std::size_t s_state = 0;
constexpr std::size_t s_reason = 4;
constexpr std::size_t s_rebuild_attempts = 8;
constexpr std::size_t s_rebuild_request = 12;
constexpr std::size_t s_lag_gate = 16;
constexpr std::size_t s_hold = 20;  // formats.md §4.3: the slot's hold word (decision 0013)
constexpr std::size_t s_owner_epoch = 24;
constexpr std::size_t s_coverage_time = 32;
constexpr std::size_t s_change_counter = 40;
constexpr std::size_t s_coverage_demand = 48;
constexpr std::size_t s_id_len = 56;
constexpr std::size_t s_id = 64;
static_assert(s_id + max_id_bytes == slot_bytes);
static_assert(h_reserved + 80 == header_bytes);

constexpr std::uint32_t highest_state = static_cast<std::uint32_t>(readiness_state::unavailable);
constexpr std::uint32_t highest_reason = static_cast<std::uint32_t>(last_readiness_reason);

using mapped::field;
using mapped::load;
using mapped::store;
using mapped::wait_counter;
using mapped::wake_all;

constexpr std::string_view subject = "readiness segment";

error os_error(const std::string& what, const fs::path& path, int code) { return posix_error(subject, what, path, code); }

// An open-file-description lock on the whole file (F_OFD_SETLK, F_OFD_SETLKW, F_OFD_GETLK).
int ofd_lock(int fd, int command, short type, struct flock* out = nullptr) noexcept {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 0;  // whole file
  fl.l_pid = 0;  // required for OFD locks
  int rc;
  do {
    rc = ::fcntl(fd, command, &fl);
  } while (rc != 0 && errno == EINTR && command == F_OFD_SETLKW);
  if (out) *out = fl;
  return rc;
}

// flock(LOCK_EX) on readiness.lock for the guard's lifetime.
class flock_guard {
 public:
  static result<flock_guard> lock(int fd, const fs::path& path) {
    int rc;
    do {
      rc = ::flock(fd, LOCK_EX);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) return os_error("flock", path, errno);
    return flock_guard(fd);
  }
  flock_guard(flock_guard&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  flock_guard& operator=(flock_guard&&) = delete;
  ~flock_guard() {
    if (fd_ >= 0) ::flock(fd_, LOCK_UN);
  }

 private:
  explicit flock_guard(int fd) : fd_(fd) {}
  int fd_;
};

// formats.md §4.2: the header's first fields, the slots behind it.
constexpr file_layout readiness_layout{subject, "DIXREADY", layout_version, header_bytes, slot_bytes, "slot", max_slot_count};
static_assert(readiness_layout.magic_word() == 0x5944414552584944ull);

// Id helpers: eight 64-bit words at slot offset 64 (§4.4: relaxed word stores, then id_len).
void write_id(unsigned char* slot, std::string_view id) noexcept {
  unsigned char bytes[max_id_bytes] = {};
  std::memcpy(bytes, id.data(), id.size());
  for (std::size_t w = 0; w < max_id_bytes / 8; ++w) {
    std::uint64_t word;
    std::memcpy(&word, bytes + w * 8, 8);
    store<std::uint64_t>(slot, s_id + w * 8, word, __ATOMIC_RELAXED);
  }
  store<std::uint32_t>(slot, s_id_len, static_cast<std::uint32_t>(id.size()));
}

// The claimed id of a slot; empty for a free one (or a corrupt length).
std::string read_id(unsigned char* slot) {
  auto len = load<std::uint32_t>(slot, s_id_len);
  if (len == 0 || len > max_id_bytes) return {};
  char bytes[max_id_bytes];
  for (std::size_t w = 0; w < max_id_bytes / 8; ++w) {
    auto word = __atomic_load_n(field<std::uint64_t>(slot, s_id + w * 8), __ATOMIC_RELAXED);
    std::memcpy(bytes + w * 8, &word, 8);
  }
  return std::string(bytes, len);
}

dix::readiness read_slot(unsigned char* slot) noexcept {
  // state first (acquire): a new state implies a reason and count at least as new (§4.4).
  auto state = load<std::uint32_t>(slot, s_state);
  auto reason = load<std::uint32_t>(slot, s_reason);
  dix::readiness r;
  r.state = state <= highest_state ? static_cast<readiness_state>(state) : readiness_state::unknown;
  r.reason = reason <= highest_reason ? static_cast<readiness_reason>(reason) : readiness_reason::none;
  r.rebuild_attempts = load<std::uint32_t>(slot, s_rebuild_attempts);
  r.owner_epoch = load<std::uint64_t>(slot, s_owner_epoch);
  return r;
}

readiness_state state_of(std::uint32_t code) noexcept {
  return code <= highest_state ? static_cast<readiness_state>(code) : readiness_state::unknown;
}

coverage_reading double_read(unsigned char* slot, const between_loads& between) {
  coverage_reading r;
  for (int attempt = 0; attempt < coverage_read_attempts; ++attempt) {
    coverage_loads l;
    l.state1 = state_of(load<std::uint32_t>(slot, s_state));
    l.epoch1 = load<std::uint64_t>(slot, s_owner_epoch);
    l.coverage_time = load<std::uint64_t>(slot, s_coverage_time);
    if (between) between(attempt);
    l.state2 = state_of(load<std::uint32_t>(slot, s_state));
    l.epoch2 = load<std::uint64_t>(slot, s_owner_epoch);
    bool settled = false;
    r = judge_loads(l, settled);
    if (settled) return r;
  }
  return r;  // torn every time: the last state, no time
}

backend_hold read_hold(unsigned char* slot) noexcept {
  switch (load<std::uint32_t>(slot, s_hold)) {
    case 1: return backend_hold::low_disk_space;
    case 2: return backend_hold::remote_unreachable;
    default: return backend_hold::none;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The mapped file.

class segment_mapping {
 public:
  // The file is mapped MAP_SHARED (read-write or read-only), page-aligned at offset 0.
  explicit segment_mapping(std::unique_ptr<mapped_file> file) : file_(std::move(file)), base_(file_->base()) {}
  segment_mapping(const segment_mapping&) = delete;
  segment_mapping& operator=(const segment_mapping&) = delete;

  unsigned char* base() const noexcept { return base_; }
  std::size_t bytes() const noexcept { return file_->bytes(); }
  // Valid once the layout was checked (fixed at creation).
  std::uint32_t slot_count() const noexcept { return slot_count_; }
  void set_slot_count(std::uint32_t n) noexcept { slot_count_ = n; }
  unsigned char* slot(std::uint32_t index) const noexcept {
    return base_ + header_bytes + static_cast<std::size_t>(index) * slot_bytes;
  }

  // §4.4: after a slot write, the slot's counter, then the header's (release), then wake both.
  // Returns the slot's counter as this bump left it.
  std::uint64_t changed(std::uint32_t index) const noexcept {
    auto counter = __atomic_add_fetch(field<std::uint64_t>(slot(index), s_change_counter), 1, __ATOMIC_RELEASE);
    __atomic_fetch_add(field<std::uint64_t>(base_, h_change_counter), 1, __ATOMIC_RELEASE);
    wake_all(slot(index), s_change_counter);
    wake_all(base_, h_change_counter);
    return counter;
  }

  std::optional<std::uint32_t> find(std::string_view id) const {
    for (std::uint32_t i = 0; i < slot_count_; ++i) {
      auto len = load<std::uint32_t>(slot(i), s_id_len);
      if (len == id.size() && read_id(slot(i)) == id) return i;
    }
    return std::nullopt;
  }

 private:
  std::unique_ptr<mapped_file> file_;  // unmapped on destruction
  unsigned char* base_;
  std::uint32_t slot_count_ = 0;
};

namespace {

std::shared_ptr<segment_mapping> mapping_of(mapped_layout&& m) {
  auto mapping = std::make_shared<segment_mapping>(std::move(m.file));
  mapping->set_slot_count(m.count);
  return mapping;
}

// §4.6 step 1, first attacher only, holding readiness.lock: no runtime is attached.
void stale_reset(const segment_mapping& m) {
  std::vector<std::uint32_t> claimed;
  for (std::uint32_t i = 0; i < m.slot_count(); ++i) {
    auto* slot = m.slot(i);
    if (load<std::uint32_t>(slot, s_id_len) == 0) continue;
    // owner_epoch, rebuild_request and the id stay: a request made while nothing ran is kept.
    store<std::uint32_t>(slot, s_reason, 0);
    store<std::uint32_t>(slot, s_rebuild_attempts, 0);
    store<std::uint32_t>(slot, s_lag_gate, 0);
    store<std::uint32_t>(slot, s_hold, 0);
    store<std::uint64_t>(slot, s_coverage_time, 0);
    store<std::uint64_t>(slot, s_coverage_demand, 0);
    store<std::uint32_t>(slot, s_state, 0);
    claimed.push_back(i);
  }
  __atomic_fetch_add(field<std::uint64_t>(m.base(), h_reset_count), 1, __ATOMIC_RELEASE);
  for (auto i : claimed) m.changed(i);
  if (claimed.empty()) {
    __atomic_fetch_add(field<std::uint64_t>(m.base(), h_change_counter), 1, __ATOMIC_RELEASE);
    wake_all(m.base(), h_change_counter);
  }
}

// realpath(home_db); nullopt when it does not exist.
result<std::optional<fs::path>> canonical_home(const fs::path& home_db) {
  std::error_code ec;
  auto home = fs::canonical(home_db, ec);
  if (!ec) return std::optional<fs::path>(home);
  if (ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory) {
    return std::optional<fs::path>();
  }
  return os_error("realpath", home_db, ec.value());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// segment_slot

segment_slot::segment_slot(std::shared_ptr<const segment_mapping> mapping, std::uint32_t index)
    : mapping_(std::move(mapping)), index_(index) {}

unsigned char* segment_slot::base() const noexcept { return mapping_->slot(index_); }

std::uint64_t segment_slot::changed() noexcept { return mapping_->changed(index_); }

result<epoch_t> segment_slot::mint_epoch() {
  // A CAS loop rather than fetch_add: an epoch that cannot be incremented is refused unchanged,
  // never wrapped to 0 (an epoch below every fence would let a stale owner's late work through).
  auto* word = field<std::uint64_t>(base(), s_owner_epoch);
  auto current = __atomic_load_n(word, __ATOMIC_ACQUIRE);
  do {
    if (current == std::numeric_limits<epoch_t>::max()) return exhausted();  // judged by the value loaded
  } while (!__atomic_compare_exchange_n(word, &current, current + 1, true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
  changed();
  return current + 1;
}

error segment_slot::exhausted() const {
  return error{errc::record_corrupt, "readiness segment: slot " + std::to_string(index_) + " (" + id() +
                                         ") holds owner_epoch 2^64-1, which cannot be incremented; stop every "
                                         "process using this database, then delete its dix/readiness.seg"};
}

result<void> segment_slot::check_mintable() const {
  if (owner_epoch() != std::numeric_limits<epoch_t>::max()) return {};
  return exhausted();
}

epoch_t segment_slot::owner_epoch() const noexcept { return load<std::uint64_t>(base(), s_owner_epoch); }

void segment_slot::raise_epoch_floor(epoch_t floor) {
  auto* word = field<std::uint64_t>(base(), s_owner_epoch);
  auto current = __atomic_load_n(word, __ATOMIC_ACQUIRE);
  while (current < floor) {
    if (__atomic_compare_exchange_n(word, &current, floor, true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      changed();
      return;
    }
  }
}

void segment_slot::publish(readiness_state state, readiness_reason reason, std::uint32_t attempts) {
  store<std::uint32_t>(base(), s_reason, static_cast<std::uint32_t>(reason));
  store<std::uint32_t>(base(), s_rebuild_attempts, attempts);
  store<std::uint32_t>(base(), s_state, static_cast<std::uint32_t>(state));
  changed();
}

dix::readiness segment_slot::read() const noexcept { return read_slot(base()); }

coverage_reading segment_slot::read_coverage(const between_loads& between) const { return double_read(base(), between); }

void segment_slot::poke() noexcept { changed(); }

std::uint64_t segment_slot::apply(const slot_publication& p) {
  // A state other than ready certifies no coverage, and says so before anything else changes.
  if (p.state != readiness_state::ready) {
    store<std::uint64_t>(base(), s_coverage_time, 0);
  } else if (p.coverage_time) {
    store<std::uint64_t>(base(), s_coverage_time, *p.coverage_time);
  }
  if (p.lag_gate) store<std::uint32_t>(base(), s_lag_gate, *p.lag_gate);
  store<std::uint32_t>(base(), s_reason, static_cast<std::uint32_t>(p.reason));
  store<std::uint32_t>(base(), s_rebuild_attempts, p.attempts);
  store<std::uint32_t>(base(), s_state, static_cast<std::uint32_t>(p.state));
  return changed();
}

void segment_slot::set_lag_gate(std::uint32_t gate) {
  store<std::uint32_t>(base(), s_lag_gate, gate);
  changed();
}

std::uint32_t segment_slot::lag_gate() const noexcept { return load<std::uint32_t>(base(), s_lag_gate); }

void segment_slot::set_hold(backend_hold hold) {
  if (read_hold(base()) == hold) return;
  store<std::uint32_t>(base(), s_hold, static_cast<std::uint32_t>(hold));
  changed();
}

backend_hold segment_slot::hold() const noexcept { return read_hold(base()); }

void segment_slot::set_coverage_time(index_time_t time) {
  store<std::uint64_t>(base(), s_coverage_time, time);
  changed();
}

index_time_t segment_slot::coverage_time() const noexcept { return load<std::uint64_t>(base(), s_coverage_time); }

void segment_slot::request_rebuild() {
  store<std::uint32_t>(base(), s_rebuild_request, 1);
  changed();
}

bool segment_slot::rebuild_requested() const noexcept { return load<std::uint32_t>(base(), s_rebuild_request) != 0; }

bool segment_slot::consume_rebuild_request() {
  auto was = __atomic_exchange_n(field<std::uint32_t>(base(), s_rebuild_request), 0u, __ATOMIC_ACQ_REL);
  if (was != 0) changed();
  return was != 0;
}

index_time_t segment_slot::coverage_demand() const noexcept { return load<std::uint64_t>(base(), s_coverage_demand); }

void segment_slot::raise_coverage_demand(index_time_t since) {
  auto* word = field<std::uint64_t>(base(), s_coverage_demand);
  auto current = __atomic_load_n(word, __ATOMIC_ACQUIRE);
  while (current < since) {
    if (__atomic_compare_exchange_n(word, &current, since, true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      changed();
      return;
    }
  }
}

bool segment_slot::clear_coverage_demand(index_time_t seen) {
  auto expected = seen;
  bool cleared = __atomic_compare_exchange_n(field<std::uint64_t>(base(), s_coverage_demand), &expected,
                                             std::uint64_t{0}, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  if (cleared && seen != 0) changed();
  return cleared;
}

bool segment_slot::clear_covered_demand(index_time_t covered) {
  const auto seen = coverage_demand();
  if (seen == 0 || seen > covered) return false;
  return clear_coverage_demand(seen);
}

std::uint64_t segment_slot::change_counter() const noexcept { return load<std::uint64_t>(base(), s_change_counter); }

std::uint64_t segment_slot::wait_change(std::uint64_t seen, milliseconds timeout) const {
  return wait_counter(base(), s_change_counter, seen, timeout);
}

std::string segment_slot::id() const { return read_id(base()); }

// ---------------------------------------------------------------------------------------------
// readiness_segment

readiness_segment::readiness_segment(fs::path directory, int attach_fd, int lock_fd,
                                     std::shared_ptr<segment_mapping> mapping, std::shared_ptr<metrics_segment> metrics)
    : directory_(std::move(directory)),
      attach_fd_(attach_fd),
      lock_fd_(lock_fd),
      mapping_(std::move(mapping)),
      metrics_(std::move(metrics)) {}

readiness_segment::~readiness_segment() {
  mapping_.reset();
  metrics_.reset();
  ::close(lock_fd_);
  ::close(attach_fd_);  // releases the OFD read lock: this runtime is detached
}

result<std::shared_ptr<readiness_segment>> readiness_segment::attach(const fs::path& home_db,
                                                                     std::uint32_t slot_count) {
  if (slot_count == 0 || slot_count > max_slot_count) {
    return error{errc::invalid_argument, "readiness segment: slot_count " + std::to_string(slot_count) +
                                             " outside 1…" + std::to_string(max_slot_count)};
  }
  auto home = canonical_home(home_db);
  if (!home) return home.error();
  if (!*home) return os_error("realpath", home_db, ENOENT);
  auto directory = **home / "dix";
  if (auto made = make_private_directory(directory, "readiness segment"); !made) return made.error();
  if (auto made = make_private_directory(directory / "runner", "readiness segment"); !made) return made.error();
  auto attach_fd = open_private_file(directory / "attach.lock", "readiness segment");
  if (!attach_fd) return attach_fd.error();
  auto lock_fd = open_private_file(directory / "readiness.lock", "readiness segment");
  if (!lock_fd) return lock_fd.error();

  // The first attacher holds a write lock until it has reset stale state; later ones wait for
  // its downgrade with a blocking read lock.
  bool first = ofd_lock(attach_fd->get(), F_OFD_SETLK, F_WRLCK) == 0;
  if (!first) {
    if (errno != EAGAIN && errno != EACCES) return os_error("lock", directory / "attach.lock", errno);
    if (ofd_lock(attach_fd->get(), F_OFD_SETLKW, F_RDLCK) != 0) {
      return os_error("lock", directory / "attach.lock", errno);
    }
  }
  std::shared_ptr<segment_mapping> mapping;
  std::shared_ptr<metrics_segment> metrics;
  {
    auto guard = flock_guard::lock(lock_fd->get(), directory / "readiness.lock");
    if (!guard) return guard.error();
    // §4.6 step 2.
    auto validated = dix::create_or_validate(directory / "readiness.seg", readiness_layout, slot_count);
    if (!validated) return validated.error();  // closing attach_fd drops the lock
    const bool created = validated->created;
    mapping = mapping_of(std::move(*validated));
    // One metrics block per slot, beside it (docs/formats-metrics.md); a new segment's slots pair
    // with no block of an earlier metrics segment, and the first attacher replaces one of layout 1.
    auto blocks = metrics_segment::create_or_validate(directory, mapping->slot_count(), created, first);
    if (!blocks) return blocks.error();
    metrics = std::move(*blocks);
    if (first) {
      stale_reset(*mapping);
      metrics->clear();  // an owner's figures live while a runtime is attached, as its readiness
    }
  }
  // Downgrade after readiness.lock is released; atomic, so no other attacher slips in between.
  if (first && ofd_lock(attach_fd->get(), F_OFD_SETLK, F_RDLCK) != 0) {
    return os_error("downgrade lock", directory / "attach.lock", errno);
  }
  return std::shared_ptr<readiness_segment>(new readiness_segment(std::move(directory), attach_fd->release(),
                                                                   lock_fd->release(), std::move(mapping),
                                                                   std::move(metrics)));
}

result<std::shared_ptr<segment_slot>> readiness_segment::claim(std::string_view id) {
  if (auto ok = check_backend_id(id, "readiness segment"); !ok) return ok.error();
  std::lock_guard in_process(claim_mutex_);
  auto guard = flock_guard::lock(lock_fd_, directory_ / "readiness.lock");
  if (!guard) return guard.error();
  auto index = mapping_->find(id);
  if (!index) {
    for (std::uint32_t i = 0; i < mapping_->slot_count(); ++i) {
      if (load<std::uint32_t>(mapping_->slot(i), s_id_len) == 0) {
        index = i;
        break;
      }
    }
    if (!index) {
      return error{errc::segment_full, "readiness segment " + (directory_ / "readiness.seg").string() + ": all " +
                                           std::to_string(mapping_->slot_count()) +
                                           " slots are claimed, none left for backend id \"" + std::string(id) +
                                           "\""};
    }
    write_id(mapping_->slot(*index), id);
    mapping_->changed(*index);
  }
  // The slot shares ownership of the whole segment: its owner stays attached while it lives.
  return std::make_shared<segment_slot>(std::shared_ptr<const segment_mapping>(shared_from_this(), mapping_.get()),
                                        *index);
}

std::shared_ptr<segment_slot> readiness_segment::find(std::string_view id) {
  if (!is_valid_backend_id(id)) return nullptr;
  auto index = mapping_->find(id);
  if (!index) return nullptr;
  return std::make_shared<segment_slot>(std::shared_ptr<const segment_mapping>(shared_from_this(), mapping_.get()),
                                        *index);
}

std::uint32_t readiness_segment::slot_count() const noexcept { return mapping_->slot_count(); }

void readiness_segment::set_store_reserve(std::uint64_t bytes) noexcept {
  store<std::uint64_t>(mapping_->base(), h_store_reserve, bytes);
}

std::uint64_t readiness_segment::reset_count() const noexcept {
  return load<std::uint64_t>(mapping_->base(), h_reset_count);
}

std::uint64_t readiness_segment::segment_change_counter() const noexcept {
  return load<std::uint64_t>(mapping_->base(), h_change_counter);
}

std::uint64_t readiness_segment::wait_change(std::uint64_t seen, milliseconds timeout) const {
  return wait_counter(mapping_->base(), h_change_counter, seen, timeout);
}

void readiness_segment::notify() noexcept {
  __atomic_fetch_add(field<std::uint64_t>(mapping_->base(), h_change_counter), 1, __ATOMIC_RELEASE);
  wake_all(mapping_->base(), h_change_counter);
}

// ---------------------------------------------------------------------------------------------
// segment_view

segment_view::segment_view(fs::path directory, std::shared_ptr<segment_mapping> mapping, access mode,
                           mapped_file mapped)
    : directory_(std::move(directory)),
      file_(directory_ / "readiness.seg"),
      mapping_(std::move(mapping)),
      mode_(mode),
      mapped_(mapped) {}

segment_view::~segment_view() = default;

namespace {

// The views segment_view::open keeps (see its comment): most recently used last.
struct file_identity {
  std::uint64_t device = 0, inode = 0, bytes = 0;
  std::uint32_t mode = 0, uid = 0, gid = 0;  // permission bits and owner: what an open checks
  bool operator==(const file_identity& o) const noexcept {
    return device == o.device && inode == o.inode && bytes == o.bytes && mode == o.mode && uid == o.uid && gid == o.gid;
  }
};

file_identity identity_of(const struct stat& st) {
  return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_size),
          static_cast<std::uint32_t>(st.st_mode & 07777), static_cast<std::uint32_t>(st.st_uid), static_cast<std::uint32_t>(st.st_gid)};
}

struct kept_view {
  std::string home;  // home_db as the caller gave it
  segment_view::access mode;
  file_identity identity;  // of the file mapped, as lstat saw it before the open
  std::shared_ptr<segment_view> view;
};
constexpr std::size_t kept_views_max = 8;

struct kept_views {
  std::mutex mutex;
  std::vector<kept_view> views;
};

kept_views& kept() {
  // Never destroyed: callers may run during static destruction. Around fork() the table's mutex
  // is held, so a child never starts with it locked by a thread it does not have.
  static auto* const table = [] {
    auto* t = new kept_views;
    ::pthread_atfork([] { kept().mutex.lock(); }, [] { kept().mutex.unlock(); }, [] { kept().mutex.unlock(); });
    return t;
  }();
  return *table;
}

}  // namespace

result<std::shared_ptr<segment_view>> segment_view::open(const fs::path& home_db, access mode) {
  struct stat st {};
  const auto file = home_db / "dix" / "readiness.seg";
  const bool present = ::lstat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  const auto now = identity_of(st);
  auto& k = kept();
  auto same_key = [&](const kept_view& v) { return v.mode == mode && v.home == home_db.native(); };
  std::shared_ptr<segment_view> candidate;
  if (present) {
    std::lock_guard g(k.mutex);
    auto it = std::find_if(k.views.begin(), k.views.end(), same_key);
    // The same file (device, inode), of the size mapped (a truncated mapping would fault on
    // access), with the mode and owner it was opened and checked with (decision 0011).
    if (it != k.views.end() && it->identity == now) {
      candidate = it->view;
      std::rotate(it, std::next(it), k.views.end());  // most recently used last
    }
  }
  // Its header still the one validated (nothing of dix rewrites a valid segment in place; a file
  // rewritten so is checked as an open checks it), outside the table's lock.
  if (candidate && candidate->still_valid()) return candidate;
  auto view = open_afresh(home_db, mode);
  std::shared_ptr<segment_view> dropped;  // unmapped after the lock, if nobody holds it
  std::lock_guard g(k.mutex);
  auto it = std::find_if(k.views.begin(), k.views.end(), same_key);
  if (it != k.views.end()) {  // stale, or another thread's fresh one: this one replaces it
    dropped = std::move(it->view);
    k.views.erase(it);
  }
  // Kept only when the lstat above saw the very file mapped: its identity is then that file's.
  if (view && *view && present && (*view)->mapped_ == mapped_file{now.device, now.inode, now.bytes}) {
    if (k.views.size() >= kept_views_max) {
      if (!dropped) dropped = std::move(k.views.front().view);
      k.views.erase(k.views.begin());
    }
    k.views.push_back(kept_view{home_db.native(), mode, now, *view});
  }
  return view;
}

result<std::shared_ptr<segment_view>> segment_view::open_afresh(const fs::path& home_db, access mode) {
  auto home = canonical_home(home_db);
  if (!home) return home.error();
  if (!*home) return std::shared_ptr<segment_view>();
  auto directory = **home / "dix";
  auto m = open_existing(directory / "readiness.seg", readiness_layout, mode == access::read_write);
  if (!m) return m.error();
  if (!*m) return std::shared_ptr<segment_view>();
  const mapped_file identity{(*m)->device, (*m)->inode, static_cast<std::uint64_t>((*m)->file->bytes())};
  return std::shared_ptr<segment_view>(new segment_view(std::move(directory), mapping_of(std::move(**m)), mode, identity));
}

bool segment_view::still_valid() const {
  // A zero magic reads as no segment to an open; check_layout wants one set.
  if (load<std::uint64_t>(mapping_->base(), 0) == 0) return false;
  auto count = check_layout(mapping_->base(), mapping_->bytes(), file_, readiness_layout);
  return count && *count == mapping_->slot_count();
}

std::optional<std::uint32_t> segment_view::find(std::string_view id) const { return mapping_->find(id); }

dix::readiness segment_view::read(std::uint32_t index) const { return read_slot(mapping_->slot(index)); }

coverage_reading segment_view::read_coverage(std::uint32_t index, const between_loads& between) const {
  return double_read(mapping_->slot(index), between);
}

backend_hold segment_view::hold(std::uint32_t index) const { return read_hold(mapping_->slot(index)); }

bool segment_view::rebuild_requested(std::uint32_t index) const noexcept {
  return load<std::uint32_t>(mapping_->slot(index), s_rebuild_request) != 0;
}

std::uint64_t segment_view::store_reserve() const noexcept { return load<std::uint64_t>(mapping_->base(), h_store_reserve); }

std::uint32_t segment_view::slot_count() const noexcept { return mapping_->slot_count(); }

std::vector<std::pair<std::uint32_t, std::string>> segment_view::claimed() const {
  std::vector<std::pair<std::uint32_t, std::string>> out;
  for (std::uint32_t i = 0; i < mapping_->slot_count(); ++i) {
    auto id = read_id(mapping_->slot(i));
    if (!id.empty()) out.emplace_back(i, std::move(id));
  }
  return out;
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> segment_view::damaged_ids() const {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  for (std::uint32_t i = 0; i < mapping_->slot_count(); ++i) {
    const auto len = load<std::uint32_t>(mapping_->slot(i), s_id_len);
    if (len > max_id_bytes) out.emplace_back(i, len);
  }
  return out;
}

std::uint64_t segment_view::segment_change_counter() const noexcept {
  return load<std::uint64_t>(mapping_->base(), h_change_counter);
}

std::uint64_t segment_view::wait_change(std::uint64_t seen, milliseconds timeout) const {
  return wait_counter(mapping_->base(), h_change_counter, seen, timeout);
}

std::shared_ptr<segment_slot> segment_view::slot(std::uint32_t index) const {
  if (mode_ != access::read_write) return nullptr;
  return std::make_shared<segment_slot>(mapping_, index);
}

// attach.lock as a view keeps it open: closed when the last look using it is done.
struct segment_view::attach_file {
  int fd;
  explicit attach_file(int f) : fd(f) {}
  ~attach_file() { ::close(fd); }
  attach_file(const attach_file&) = delete;
  attach_file& operator=(const attach_file&) = delete;
};

namespace {

// F_OFD_GETLK for an F_WRLCK: reports a conflicting lock without taking one (§4.6 step 5). An
// attached runtime holds a read lock. A write lock is a first attacher that has not yet reset the
// stale state (§4.6 steps 1–5): the slots still hold a crashed run's `ready` and coverage, so that
// counts as not attached (readers answer unknown) until its downgrade.
result<bool> read_locked(int fd, const fs::path& path) {
  struct flock found {};
  if (ofd_lock(fd, F_OFD_GETLK, F_WRLCK, &found) != 0) return os_error("test lock", path, errno);
  return found.l_type == F_RDLCK;
}

}  // namespace

result<bool> attach_lock_held(const fs::path& dix_dir) {
  const auto path = dix_dir / "attach.lock";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    return os_error("open", path, errno);
  }
  auto held = read_locked(fd, path);
  ::close(fd);
  return held;
}

result<bool> segment_view::runtime_attached() const {
  const auto path = directory_ / "attach.lock";
  if (auto kept = std::atomic_load(&attach_)) {
    auto attached = read_locked(kept->fd, path);
    if (!attached || *attached) return attached;
    // Unlocked: so only while the path still names the file tested. One removed and made again
    // would answer unlocked for ever; it is opened afresh (lstat: a symlink is refused below).
    struct stat named {}, tested {};
    if (::lstat(path.c_str(), &named) == 0 && ::fstat(kept->fd, &tested) == 0 && named.st_dev == tested.st_dev &&
        named.st_ino == tested.st_ino) {
      return false;
    }
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) {
      std::atomic_store(&attach_, std::shared_ptr<attach_file>());
      return false;
    }
    return os_error("open", path, errno);
  }
  auto fresh = std::make_shared<attach_file>(fd);
  auto attached = read_locked(fresh->fd, path);
  std::atomic_store(&attach_, std::move(fresh));
  return attached;
}

// ---------------------------------------------------------------------------------------------
// Free functions (api.md §7)

result<readiness> read_readiness(const fs::path& home_db, std::string_view id) {
  if (auto ok = check_backend_id(id, "read_readiness"); !ok) return ok.error();
  auto view = segment_view::open(home_db, segment_view::access::read_only);
  if (!view) return view.error();
  if (!*view) return readiness{};  // no segment: unknown, epoch 0
  auto index = (*view)->find(id);
  if (!index) {
    return error{errc::not_registered, "read_readiness: backend id \"" + std::string(id) +
                                           "\" has no slot in the readiness segment of " + home_db.string()};
  }
  // The lock before the slot: a state read after seeing a runtime attached was published by a
  // runtime that was attached, never a leftover a later stale reset would have cleared.
  auto attached = (*view)->runtime_attached();
  if (!attached) return attached.error();
  auto r = (*view)->read(*index);
  if (!*attached) return readiness{readiness_state::unknown, readiness_reason::none, 0, r.owner_epoch};
  return r;
}

result<bool> request_rebuild(const fs::path& home_db, std::string_view id) {
  if (auto ok = check_backend_id(id, "request_rebuild"); !ok) return ok.error();
  auto view = segment_view::open(home_db, segment_view::access::read_write);
  if (!view) return view.error();
  if (!*view) {
    return error{errc::not_registered, "request_rebuild: " + home_db.string() + " has no readiness segment"};
  }
  auto index = (*view)->find(id);
  if (!index) {
    return error{errc::not_registered, "request_rebuild: backend id \"" + std::string(id) +
                                           "\" has no slot in the readiness segment of " + home_db.string()};
  }
  (*view)->slot(*index)->request_rebuild();
  return true;
}

}  // namespace dix
