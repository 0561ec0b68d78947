#include <dix/backends/xapian_backend.hpp>
#include <dix/applier.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <xapian.h>

#include "backends/index_dir.hpp"
#include "backends/index_space.hpp"
#include "backends/xapian_probe.hpp"
#include "core/bytes.hpp"
#include "core/names.hpp"

namespace dix {
namespace {

constexpr std::size_t max_term_bytes = 245;  // Xapian's limit on a term's length
constexpr const char* cursor_key = "dix.cursor";
// The index digest (formats.md §7), written in the transaction of the documents it counts;
// absent with no document (a fresh or reset database). Each document carries its entry hash in
// value slot 0 (16 bytes: lo, hi, little-endian), so an update or a delete can take it out.
constexpr const char* digest_key = "dix.digest";
constexpr Xapian::valueno entry_hash_slot = 0;

std::string encode_hash(const hash128& h) {
  std::string out;
  put_le<std::uint64_t>(out, h.lo);
  put_le<std::uint64_t>(out, h.hi);
  return out;
}

std::optional<hash128> decode_hash(std::string_view bytes) {
  if (bytes.size() != 16) return std::nullopt;
  return hash128{get_le<std::uint64_t>(bytes, 0), get_le<std::uint64_t>(bytes, 8)};
}
constexpr std::chrono::milliseconds first_lock_retry{10};
constexpr std::chrono::milliseconds max_lock_retry{1000};
constexpr int max_errors_without_barrier = 3;

// A glass database exists once its version file does; a directory without it holds no database
// (a reset deletes it first, so a crash in the middle of a reset leaves "missing", never "torn").
constexpr const char* version_file = "iamglass";

// The record ref of the id term: u8 log length, log, u32 big-endian table, record id.
std::string ref_bytes(std::string_view log, std::uint32_t table, std::string_view id) {
  std::string out;
  out.reserve(1 + log.size() + 4 + id.size());
  out.push_back(static_cast<char>(log.size()));
  out.append(log);
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((table >> shift) & 0xFF));
  out.append(id);
  return out;
}

std::string base64url(std::string_view in) {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  out.reserve((in.size() * 4 + 2) / 3);
  std::size_t i = 0;
  auto byte = [&](std::size_t k) { return static_cast<std::uint32_t>(static_cast<unsigned char>(in[k])); };
  for (; i + 3 <= in.size(); i += 3) {
    const auto v = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
    for (int shift = 18; shift >= 0; shift -= 6) out.push_back(alphabet[(v >> shift) & 0x3F]);
  }
  const auto rest = in.size() - i;
  if (rest == 1) {
    const auto v = byte(i) << 16;
    out.push_back(alphabet[(v >> 18) & 0x3F]);
    out.push_back(alphabet[(v >> 12) & 0x3F]);
  } else if (rest == 2) {
    const auto v = (byte(i) << 16) | (byte(i + 1) << 8);
    out.push_back(alphabet[(v >> 18) & 0x3F]);
    out.push_back(alphabet[(v >> 12) & 0x3F]);
    out.push_back(alphabet[(v >> 6) & 0x3F]);
  }
  return out;
}

bool decode_document_data(std::string_view bytes, record_ref& out) {
  if (bytes.empty()) return false;
  const std::size_t log_len = static_cast<unsigned char>(bytes[0]);
  if (bytes.size() < 1 + log_len + 12) return false;
  out.log.assign(bytes.substr(1, log_len));
  out.table = get_le<std::uint32_t>(bytes, 1 + log_len);
  out.version = get_le<std::uint64_t>(bytes, 1 + log_len + 4);
  out.record_id.assign(bytes.substr(1 + log_len + 12));
  return true;
}

bool valid_field_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

// Empty, or 1…8 capitals not starting with Q (the id term) or Z (TermGenerator's stemmed terms).
bool valid_prefix(std::string_view prefix) {
  if (prefix.empty()) return true;
  if (prefix.size() > 8 || prefix[0] == 'Q' || prefix[0] == 'Z') return false;
  return std::all_of(prefix.begin(), prefix.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

// The files a glass database (Xapian 1.4) writes: its tables, version file and lock, their
// temporaries, and the changesets of a replicated database. A reset removes these, nothing else.
bool is_xapian_file(std::string_view name) {
  auto ends = [&](std::string_view tail) { return name.size() > tail.size() && name.substr(name.size() - tail.size()) == tail; };
  return name == version_file || name == "flintlock" || ends(".glass") || name == "iamglass.tmp" || ends(".glass.tmp") ||
         (name.rfind("changes", 0) == 0 && name.size() > 7 &&
          std::all_of(name.begin() + 7, name.end(), [](char c) { return c >= '0' && c <= '9'; }));
}

bool database_exists(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::exists(path / version_file, ec);
}

// fsyncs a directory so that an unlink in it is durable.
void sync_directory(const std::filesystem::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

result<void> validate_id_and_options(const std::string& id, const xapian_options& options) {
  if (auto ok = check_backend_id(id); !ok) return ok;
  return validate(options);
}

// A read-only handle on the latest commit of the database at a path. The backend's queries and
// xapian_reader's each have one (Xapian handles are not thread-safe: one mutex per site).
struct query_site {
  std::mutex mutex;
  std::unique_ptr<Xapian::Database> db;
  std::string uuid;               // of the database `db` opened; a reset creates one with another
  std::uint64_t generation = 0;   // the backend's reset count when `db` was opened (reader: 0)
  std::function<void(int)> refreshed;  // test point (xapian_probe); empty in production
};

// Brings the site's handle to the latest commit at `path`; false when there is no database.
// reopen() alone is not enough after a reset: when the new database has reached the revision the
// handle had, reopen() keeps the old (deleted) tables, so a changed uuid opens it afresh.
// Throws Xapian::Error. Caller holds site.mutex.
bool refresh(query_site& site, const std::filesystem::path& path) {
  if (!database_exists(path)) {
    site.db.reset();  // nothing committed yet, or a reset between its deletion and its creation
    return false;
  }
  if (site.db) {
    site.db->reopen();
    if (site.db->get_uuid() == site.uuid) return true;
    site.db.reset();
  }
  auto db = std::make_unique<Xapian::Database>(path.string());
  site.uuid = db->get_uuid();
  site.db = std::move(db);
  return true;
}

// The ranked rows of one query over one committed state. Throws Xapian::Error.
std::vector<scored_ref> run_search(Xapian::Database& db, const xapian_options& options, std::string_view query_string,
                                   std::size_t offset, std::size_t limit) {
  Xapian::QueryParser parser;
  parser.set_database(db);
  parser.set_stemmer(Xapian::Stem(options.stemmer));
  parser.set_stemming_strategy(Xapian::QueryParser::STEM_SOME);
  for (const auto& [name, field] : options.fields) parser.add_prefix(name, field.prefix);
  const auto query = parser.parse_query(std::string(query_string));
  Xapian::Enquire enquire(db);
  enquire.set_query(query);
  const auto max = static_cast<Xapian::doccount>(std::min<std::size_t>(limit, db.get_doccount()));
  const auto matches = enquire.get_mset(static_cast<Xapian::doccount>(offset), max);
  std::vector<scored_ref> rows;
  for (auto it = matches.begin(); it != matches.end(); ++it) {
    scored_ref row;
    if (!decode_document_data(it.get_document().get_data(), row.ref)) continue;
    row.score = it.get_weight();
    rows.push_back(std::move(row));
  }
  return rows;
}

// The search of both handles (backend and reader): admission first, then the refresh, then the
// read, so the state read holds at least what the admission certified. A commit that recycled
// blocks the read still needed (DatabaseModifiedError) refreshes and retries once. `generation`
// is the backend's reset count (a reset drops the handle before it deletes the files).
result<query_result<std::vector<scored_ref>>> admitted_search(backend_host& host, query_site& site, const std::string& id,
                                                              const xapian_options& options, std::uint64_t generation,
                                                              std::string_view query_string, std::size_t offset,
                                                              std::size_t limit, const coverage_mode& mode) {
  auto admitted = host.admit_query(mode);
  if (!admitted) return admitted.error();
  query_result<std::vector<scored_ref>> out;
  out.coverage = *admitted;
  std::lock_guard lock(site.mutex);
  if (site.generation != generation) {
    site.db.reset();
    site.generation = generation;
  }
  for (int attempt = 0;; ++attempt) {
    try {
      if (!refresh(site, options.path)) return out;  // nothing committed yet
      if (site.refreshed) site.refreshed(attempt);
      out.rows = run_search(*site.db, options, query_string, offset, limit);
      return out;
    } catch (const Xapian::QueryParserError& e) {
      return error{errc::invalid_argument, "index " + id + ": query \"" + escape_bytes(query_string) + "\": " + e.get_msg()};
    } catch (const Xapian::DatabaseModifiedError& e) {
      if (attempt == 0) continue;
      return error{errc::io_error, "index " + id + ": " + e.get_description()};
    } catch (const Xapian::Error& e) {
      site.db.reset();
      return error{errc::io_error, "index " + id + ": search: " + e.get_description()};
    }
  }
}

// Every committed document's ref through a Database of its own, ordered by (log, table, id).
result<std::vector<record_ref>> list_records(const std::string& id, const std::filesystem::path& path) {
  std::vector<record_ref> out;
  if (!database_exists(path)) return out;
  try {
    Xapian::Database db(path.string());
    for (auto it = db.postlist_begin(""); it != db.postlist_end(""); ++it) {
      record_ref row;
      if (decode_document_data(db.get_document(*it).get_data(), row)) out.push_back(std::move(row));
    }
  } catch (const Xapian::Error& e) {
    return error{errc::io_error, "index " + id + ": listing " + path.string() + ": " + e.get_description()};
  }
  std::sort(out.begin(), out.end(), [](const record_ref& a, const record_ref& b) {
    return std::tie(a.log, a.table, a.record_id) < std::tie(b.log, b.table, b.record_id);
  });
  return out;
}

}  // namespace

std::string xapian_id_term(std::string_view log, std::uint32_t table, std::string_view record_id) {
  return "Q" + base64url(ref_bytes(log, table, record_id));
}

// u8 log length, log, u32 LE table, u64 LE version, record id.
std::string xapian_document_data(const record_ref& ref) {
  std::string out;
  out.push_back(static_cast<char>(ref.log.size()));
  out.append(ref.log);
  put_le<std::uint32_t>(out, ref.table);
  put_le<std::uint64_t>(out, ref.version);
  out.append(ref.record_id);
  return out;
}

result<void> validate(const xapian_options& o) {
  auto bad = [](const std::string& what) { return result<void>{errc::invalid_argument, "xapian_options." + what}; };
  if (o.path.empty()) return bad("path = \"\": must name a directory");
  if (o.fields.empty() || o.fields.size() > 64) {
    return bad("fields: " + std::to_string(o.fields.size()) + " fields, must be 1…64");
  }
  for (const auto& [name, field] : o.fields) {
    if (!valid_field_name(name)) return bad("fields[\"" + escape_bytes(name) + "\"]: a field name must be 1…64 of [a-z0-9_]");
    if (!valid_prefix(field.prefix)) {
      return bad("fields[\"" + name + "\"].prefix = \"" + escape_bytes(field.prefix) +
                 "\": must be empty or 1…8 of [A-Z], not starting with Q or Z");
    }
    if (field.weight < 1 || field.weight > 100) {
      return bad("fields[\"" + name + "\"].weight = " + std::to_string(field.weight) + ": must be in [1, 100]");
    }
  }
  try {
    Xapian::Stem stem(o.stemmer);
  } catch (const Xapian::Error&) {
    return bad("stemmer = \"" + escape_bytes(o.stemmer) + "\": not a Xapian stemmer (e.g. \"english\", \"none\")");
  }
  if (o.max_queued_batches < 1 || o.max_queued_batches > (1u << 20)) {
    return bad("max_queued_batches = " + std::to_string(o.max_queued_batches) + ": must be in [1, 1048576]");
  }
  if (o.max_queued_bytes < 1024 || o.max_queued_bytes > (16ull << 30)) {
    return bad("max_queued_bytes = " + std::to_string(o.max_queued_bytes) + ": must be in [1024, 17179869184]");
  }
  return check_reserve_option("xapian_options.free_space_reserve_bytes", o.free_space_reserve_bytes);
}

std::string encode_fields(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(fields.size()));
  for (const auto& [name, value] : fields) {
    // A name longer than a u16 can say is cut; it then names no configured field.
    const auto n = std::min<std::size_t>(name.size(), 0xFFFF);
    put_le<std::uint16_t>(out, static_cast<std::uint16_t>(n));
    out.append(name, 0, n);
    put_le<std::uint32_t>(out, static_cast<std::uint32_t>(value.size()));
    out.append(value);
  }
  return out;
}

result<std::vector<std::pair<std::string, std::string>>> decode_fields(std::string_view bytes) {
  const error bad{errc::invalid_argument, "bad_encoding"};
  if (bytes.size() < 4) return bad;
  const auto n = get_le<std::uint32_t>(bytes, 0);
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t at = 4;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (bytes.size() - at < 2) return bad;
    const auto name_len = get_le<std::uint16_t>(bytes, at);
    at += 2;
    if (bytes.size() - at < name_len || name_len == 0) return bad;
    std::string name(bytes.substr(at, name_len));
    at += name_len;
    if (bytes.size() - at < 4) return bad;
    const auto value_len = get_le<std::uint32_t>(bytes, at);
    at += 4;
    if (bytes.size() - at < value_len) return bad;
    out.emplace_back(std::move(name), std::string(bytes.substr(at, value_len)));
    at += value_len;
  }
  if (at != bytes.size()) return bad;
  return out;
}

// ---------------------------------------------------------------------------------------------

// The engine under the applier skeleton (<dix/applier.hpp>, decision 0050), which owns the queue,
// the applier thread, fencing, barrier coalescing, poisoning and the callbacks. This is the
// database: one transaction per barrier, the writer lock (deferral while another holds it), an
// apply error that loses the transaction's work (accepted_work_lost, `failed` at the third in a
// row), free space.
struct xapian_backend::impl final : applier_engine {
  std::string id;
  xapian_options options;  // each user makes its own Xapian::Stem: Xapian's handles count
                           // references without atomics, so none is shared between threads
  backend_host* host() const { return skeleton->host(); }

  // What the hooks (on the proxy's thread and under the skeleton's lock) share with the applier.
  mutable std::mutex mutex;
  std::condition_variable stop_cv;  // a reset waiting for a previous owner's lock, until stopping
  bool stopping = false;
  std::uint64_t queued_bytes = 0;  // the skeleton's, mirrored for the space estimate
  // The writer lock is held by another WritableDatabase: deliveries are deferred, the open is
  // retried at `retry_at`, the wait doubling from 10 ms to 1 s.
  bool lock_busy = false;
  std::chrono::steady_clock::time_point retry_at;
  std::chrono::milliseconds retry_delay = first_lock_retry;
  // An apply error's accepted_work_lost for `lost_epoch` is outstanding (0: none): its
  // deliveries are deferred until durable_cursor() is read again (decision 0022).
  epoch_t lost_epoch = 0;
  // Free space (decision 0013, issue 34): a delivery is deferred while the filesystem has less
  // than the reserve above what the batch will make the database write.
  std::unique_ptr<index_space> space;
  std::uint64_t transaction_bytes = 0;  // weights of the batches the open transaction holds
  // Test points (xapian_probe); empty in production.
  std::function<void(std::uint64_t)> applied_hook;
  std::function<void()> busy_hook;
  int injected_failures = 0;

  // Applier-only state.
  // The digest of the writer's view (the open transaction included): unloaded until the first
  // batch after the writer opened or a transaction was cancelled; unknown for a database written
  // before digests (documents without their entry hash), until a reset empties it.
  enum class digest_state : std::uint8_t { unloaded, known, unknown };
  digest_state digest_is = digest_state::unloaded;
  index_digest digest;
  void load_digest();  // throws Xapian::Error
  std::unique_ptr<Xapian::WritableDatabase> writer;
  bool in_transaction = false;
  epoch_t transaction_epoch = 0;  // the epoch whose batches the open transaction holds
  int errors_without_barrier = 0;
  std::atomic<std::uint64_t> commits{0};

  // The queries' reader: reopened before each query; replaced after a reset (generation).
  query_site queries;
  std::atomic<std::uint64_t> generation{0};

  // Last member: destroyed (its thread stopped) before the writer it applies to.
  std::unique_ptr<applier> skeleton;

  ~impl() override {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    stop_cv.notify_all();
    if (skeleton) skeleton->stop();
    (void)run_shutdown();
  }

  static std::uint64_t weight(const batch& b) { return std::max<std::uint64_t>(b.bytes, 1); }
  // What applying and committing a batch may write: a glass database writes each changed block
  // anew before it frees the old one, and documents carry terms and positions besides the text
  // (measured: the demo's full-text database holds about 6 times the bytes delivered to it).
  static constexpr std::uint64_t disk_factor = 8;
  static std::uint64_t disk_bytes(const batch& b) { return disk_factor * weight(b) + (64u << 10); }
  // Counts what the database will still write for batches queued or applied but not committed
  // as used (index_space's unflushed bytes), so a reading taken now is not fooled by a commit to
  // come. Caller holds mutex.
  void note_pending() { space->set_unflushed(disk_factor * (queued_bytes + transaction_bytes)); }

  // Its database damaged beyond reading — a corrupt block, or a table file of its own missing
  // or unreadable behind its version file (issue 34: a deleted postlist.glass was retried as a
  // transient fault for good): no cursor in it can be trusted. cursor_invalid: the runner
  // condemns at once (cursor-missing) and the rebuild's reset replaces its files.
  error damaged(const Xapian::Error& e) const {
    return {errc::cursor_invalid, "index " + id + ": its database " + options.path.string() + " is damaged (" +
                                      e.get_description() + "): no cursor in it can be trusted; a rebuild replaces it"};
  }

  // Opens the writer (creating the database if missing). Throws Xapian::Error.
  void open_writer();
  void cancel_transaction() noexcept;
  // Cancels and closes the writer after an error. True: the loss is recoverable (lost_epoch set,
  // accepted_work_lost to report); false: the third error without a barrier, `failed`.
  bool apply_failed(epoch_t epoch);
  void apply(const batch& b);  // throws Xapian::Error
  result<void> run_shutdown();
  result<void> run_reset();
  // After a successful shutdown or reset: a fresh start for the next owner.
  void released() {
    errors_without_barrier = 0;
    std::lock_guard lock(mutex);
    lock_busy = false;
    lost_epoch = 0;
  }

  // applier_engine
  result<std::optional<cursor>> load_cursor() override;
  result<apply_outcome> apply_batch(const batch& b) override;
  result<bool> commit(const std::optional<cursor>& through, epoch_t epoch) override;
  result<void> close() override {
    auto outcome = run_shutdown();
    if (outcome) released();
    return outcome;
  }
  result<void> reset_index() override {
    auto outcome = run_reset();
    if (outcome) released();
    return outcome;
  }
  // Below the reserve nothing is queued (decision 0013): the runner retries the batch after its
  // deferral timer, and the host hears of the hold (`dix status`: deferred, low-disk-space).
  backend_hold hold_for(const batch& b) override {
    return space->admits(index_space::level::deliver, disk_bytes(b)) ? backend_hold::none : backend_hold::low_disk_space;
  }
  bool busy(epoch_t epoch) override {
    std::lock_guard lock(mutex);
    return lock_busy || (lost_epoch != 0 && (epoch == 0 || lost_epoch == epoch));
  }
  // While the lock is busy, batches wait; a barrier (nothing uncommitted exists with the writer
  // closed) and a shutdown or reset (which dropped their epoch's batches) do not.
  bool ready(const batch&) override {
    std::lock_guard lock(mutex);
    return !lock_busy;
  }
  std::chrono::milliseconds poll_interval() override {
    std::lock_guard lock(mutex);
    if (!lock_busy) return std::chrono::milliseconds{0};
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(retry_at - std::chrono::steady_clock::now());
    return std::max(std::chrono::milliseconds{1}, left);
  }
  void on_poll() override;  // retries the open when the lock may have freed
  void on_accepted(const batch& b) override {
    std::lock_guard lock(mutex);
    queued_bytes += weight(b);
    note_pending();
  }
  void on_released(const batch& b) override {
    std::lock_guard lock(mutex);
    queued_bytes -= weight(b);
    note_pending();
  }
};

void xapian_backend::impl::open_writer() {
  if (writer) return;
  // Made again (with its marker) if it vanished; refused, never adopted, if it is another's.
  if (auto ok = index_dir::claim(options.path, "xapian", id); !ok) throw Xapian::DatabaseOpeningError(ok.error().message());
  writer = std::make_unique<Xapian::WritableDatabase>(options.path.string(), Xapian::DB_CREATE_OR_OPEN);
}

void xapian_backend::impl::load_digest() {
  const auto bytes = writer->get_metadata(digest_key);
  if (auto stored = index_digest::decode(bytes)) {
    digest = *stored;
    digest_is = digest_state::known;
  } else if (bytes.empty() && writer->get_doccount() == 0) {
    digest = index_digest{};
    digest_is = digest_state::known;
  } else {
    digest_is = digest_state::unknown;
  }
}

void xapian_backend::impl::cancel_transaction() noexcept {
  if (!in_transaction) return;
  in_transaction = false;
  digest_is = digest_state::unloaded;  // the writer is back at its last commit
  {
    std::lock_guard lock(mutex);
    transaction_bytes = 0;
    note_pending();
  }
  try {
    writer->cancel_transaction();
  } catch (...) {
    // Cancelled anyway (Xapian's contract); the writer is closed next where it matters.
  }
}

bool xapian_backend::impl::apply_failed(epoch_t epoch) {
  cancel_transaction();
  digest_is = digest_state::unloaded;
  if (writer) {
    try {
      writer->close();
    } catch (...) {
    }
    writer.reset();
  }
  ++errors_without_barrier;
  const bool fail = errors_without_barrier >= max_errors_without_barrier;
  std::lock_guard lock(mutex);
  // Accepted work queued behind the lost batch is lost with it (the skeleton drops it): the
  // runtime replays from the durable cursor, and applying it over the gap could let a later
  // cursor claim the gap.
  transaction_bytes = 0;
  note_pending();
  if (!fail) lost_epoch = epoch;
  return !fail;
}

void xapian_backend::impl::on_poll() {
  {
    std::lock_guard lock(mutex);
    if (!lock_busy || std::chrono::steady_clock::now() < retry_at) return;
  }
  bool opened = false;
  try {
    open_writer();
    opened = true;
  } catch (const Xapian::DatabaseLockError&) {
  } catch (const Xapian::Error&) {
    opened = true;  // not the lock: the batch's apply meets the error and reports it
  }
  std::function<void()> hook;
  {
    std::lock_guard lock(mutex);
    if (opened) {
      lock_busy = false;
    } else {
      retry_delay = std::min(2 * retry_delay, max_lock_retry);
      retry_at = std::chrono::steady_clock::now() + retry_delay;
      hook = busy_hook;
    }
  }
  if (opened) skeleton->resume();  // the deliveries deferred meanwhile are owed `changed`
  if (hook) hook();
}

result<apply_outcome> xapian_backend::impl::apply_batch(const batch& b) {
  if (in_transaction && transaction_epoch != b.epoch) cancel_transaction();  // a superseded epoch's work
  if (!writer) {
    try {
      open_writer();
    } catch (const Xapian::DatabaseLockError&) {
      std::function<void()> hook;
      {
        std::lock_guard lock(mutex);
        lock_busy = true;
        retry_delay = first_lock_retry;
        retry_at = std::chrono::steady_clock::now() + retry_delay;
        hook = busy_hook;
      }
      if (hook) hook();
      return apply_outcome::later;  // back to the front: it waits for the lock
    } catch (const Xapian::Error& e) {
      if (apply_failed(b.epoch)) return apply_outcome::lost;
      return error{errc::io_error, "index " + id + ": opening the writer: " + e.get_description()};
    }
  }
  try {
    apply(b);
  } catch (const Xapian::Error& e) {
    if (apply_failed(b.epoch)) return apply_outcome::lost;
    return error{errc::io_error, "index " + id + ": applying a batch: " + e.get_description()};
  }
  const auto n = skeleton->applied_batches() + 1;
  std::function<void(std::uint64_t)> hook;
  {
    std::lock_guard lock(mutex);
    hook = applied_hook;
    transaction_bytes += weight(b);
    note_pending();
  }
  if (hook) hook(n);
  return apply_outcome::applied;
}

void xapian_backend::impl::apply(const batch& b) {
  if (!in_transaction) {
    writer->begin_transaction(true);
    in_transaction = true;
    transaction_epoch = b.epoch;
  }
  bool inject = false;
  {
    std::lock_guard lock(mutex);
    if (injected_failures > 0) {
      --injected_failures;
      inject = true;
    }
  }
  if (digest_is == digest_state::unloaded) load_digest();
  const bool counting = digest_is == digest_state::known;
  Xapian::TermGenerator generator;
  generator.set_stemmer(Xapian::Stem(options.stemmer));
  for (const auto& r : b.records) {
    const auto term = xapian_id_term(r.log, r.table, r.record_id);
    if (term.size() > max_term_bytes) {
      // No document can carry this id, so there is none to remove either.
      if (auto* h = host(); h != nullptr) h->note_unindexable("id_too_long");
      continue;
    }
    if (counting) {  // the document this record replaces or deletes leaves the digest
      if (auto old = writer->postlist_begin(term); old != writer->postlist_end(term)) {
        const auto stored = decode_hash(writer->get_document(*old, Xapian::DOC_ASSUME_VALID).get_value(entry_hash_slot));
        if (!stored) throw Xapian::DatabaseCorruptError("a document of " + id + " without its entry hash");
        digest.remove(*stored);
      }
    }
    std::optional<std::vector<std::pair<std::string, std::string>>> fields;
    if (r.state.kind == state_kind::record) {
      auto decoded = decode_fields(r.state.projection);
      if (!decoded) {
        if (auto* h = host(); h != nullptr) h->note_unindexable(decoded.error().message());
      } else if (std::all_of(decoded->begin(), decoded->end(), [&](const auto& f) { return options.fields.count(f.first) != 0; })) {
        fields = std::move(*decoded);
      } else if (auto* h = host(); h != nullptr) {
        h->note_unindexable("unknown_field");
      }
    }
    if (!fields) {
      writer->delete_document(term);
    } else {
      Xapian::Document doc;
      generator.set_document(doc);
      for (const auto& [name, text] : *fields) {
        const auto& field = options.fields.at(name);
        if (!field.prefix.empty()) generator.index_text(text, field.weight, field.prefix);
        generator.index_text(text, field.weight);  // unprefixed too: free text finds every field
        generator.increase_termpos();
      }
      doc.set_data(xapian_document_data(record_ref{r.log, r.table, r.record_id, r.state.version}));
      doc.add_boolean_term(term);
      const auto h = entry_hash(r.log, r.table, r.record_id, r.state.version, r.state.projection);
      doc.add_value(entry_hash_slot, encode_hash(h));
      if (counting) digest.add(h);
      writer->replace_document(term, doc);
    }
    if (inject) throw Xapian::DatabaseError("injected apply failure (xapian_probe)");
  }
  if (inject) throw Xapian::DatabaseError("injected apply failure (xapian_probe)");
  if (b.through) writer->set_metadata(cursor_key, b.through->bytes());
  if (counting) writer->set_metadata(digest_key, digest.encode());
}

// The skeleton asked is_owner_epoch for the transaction's epoch (its last applied batch's) just
// before: a superseded epoch's transaction is never committed (protocol.md §9.4); the next epoch's
// first batch or the shutdown cancels it.
result<bool> xapian_backend::impl::commit(const std::optional<cursor>&, epoch_t) {
  if (!writer || !in_transaction) return true;  // nothing uncommitted
  try {
    writer->commit_transaction();
  } catch (const Xapian::Error& e) {
    in_transaction = false;  // ended either way (Xapian's contract)
    const auto epoch = transaction_epoch;
    if (apply_failed(epoch)) skeleton->lose(epoch);  // forgets the cursor: never committed
    else skeleton->fail(epoch);
    return error{errc::io_error, "index " + id + ": commit: " + e.get_description()};
  }
  in_transaction = false;
  errors_without_barrier = 0;
  ++commits;
  {
    std::lock_guard lock(mutex);
    transaction_bytes = 0;
    note_pending();
  }
  return true;
}

result<void> xapian_backend::impl::run_shutdown() {
  cancel_transaction();
  digest_is = digest_state::unloaded;
  if (writer) {
    try {
      writer->close();
    } catch (const Xapian::Error& e) {
      // The lock may still be held: the runtime may call shutdown again (protocol.md §9.7).
      return {errc::io_error, "index " + id + ": closing the writer: " + e.get_description()};
    }
    writer.reset();
  }
  return {};
}

result<void> xapian_backend::impl::run_reset() {
  if (auto closed = run_shutdown(); !closed) return closed;
  auto fail = [&](const std::string& what) -> result<void> { return {errc::io_error, "index " + id + ": reset: " + what}; };
  // The cursor goes first, durably, through the writer (with no transaction open: commit()
  // inside one throws). A database that cannot be opened (corrupt) has no readable cursor.
  if (database_exists(options.path)) {
    for (auto delay = first_lock_retry;;) {
      try {
        Xapian::WritableDatabase db(options.path.string(), Xapian::DB_OPEN);
        db.set_metadata(cursor_key, "");
        db.commit();
        db.close();
        break;
      } catch (const Xapian::DatabaseLockError&) {
        // A previous owner still closing: wait for it, as the applier would.
        std::unique_lock lock(mutex);
        if (stop_cv.wait_for(lock, delay, [&] { return stopping; })) return fail("stopping");
        delay = std::min(2 * delay, max_lock_retry);
      } catch (const Xapian::Error&) {
        break;  // corrupt: its files go below
      }
    }
  }
  ++generation;  // readers drop their handle on the old files
  std::error_code ec;
  std::filesystem::remove(options.path / version_file, ec);
  if (ec) return fail("deleting " + (options.path / version_file).string() + ": " + ec.message());
  sync_directory(options.path);
  // Only the database's own files, by name (decision 0038): never the marker, never a file
  // someone put beside them, never by a recursive delete of the directory.
  if (auto ok = index_dir::remove_own(options.path, is_xapian_file, "index " + id + ": reset"); !ok) return ok;
  if (auto ok = index_dir::claim(options.path, "xapian", id); !ok) return ok;  // made again if it vanished
  try {
    Xapian::WritableDatabase db(options.path.string(), Xapian::DB_CREATE);
    db.commit();
    db.close();
  } catch (const Xapian::Error& e) {
    return fail("creating " + options.path.string() + ": " + e.get_description());
  }
  ++generation;  // and a reader opened on the old files meanwhile
  return {};
}

// ---------------------------------------------------------------------------------------------

xapian_backend::xapian_backend(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

result<std::shared_ptr<xapian_backend>> xapian_backend::create(std::string id, xapian_options options) {
  if (auto ok = validate_id_and_options(id, options); !ok) return ok.error();
  // Nothing of another program's, or a user's, is adopted (decision 0038).
  if (auto ok = index_dir::claim(options.path, "xapian", id); !ok) return ok.error();
  auto p = std::make_unique<impl>();
  p->id = std::move(id);
  p->options = std::move(options);
  p->space = std::make_unique<index_space>(p->options.path, p->options.free_space_reserve_bytes);
  p->skeleton = std::make_unique<applier>(p->id, *p,
                                          applier_limits{p->options.max_queued_bytes, p->options.max_queued_batches});
  return std::shared_ptr<xapian_backend>(new xapian_backend(std::move(p)));
}

// Queued work was never made durable: a restart replays it from the durable cursor. ~impl stops
// the applier, then closes the writer.
xapian_backend::~xapian_backend() = default;

const std::string& xapian_backend::id() const noexcept { return impl_->id; }

void xapian_backend::attach(backend_host& host) { impl_->skeleton->attach(host); }

result<std::optional<cursor>> xapian_backend::impl::load_cursor() {
  std::string bytes;
  if (database_exists(options.path)) {
    try {
      Xapian::Database db(options.path.string());
      bytes = db.get_metadata(cursor_key);
    } catch (const Xapian::DatabaseCorruptError& e) {
      return damaged(e);
    } catch (const Xapian::DatabaseOpeningError& e) {
      return damaged(e);
    } catch (const Xapian::Error& e) {
      return error{errc::io_error, "index " + id + ": reading the cursor of " + options.path.string() +
                                       ": " + e.get_description()};
    }
  }
  if (bytes.empty()) return std::optional<cursor>{};
  auto decoded = cursor::decode(bytes);
  if (!decoded) return decoded.error();
  return std::optional<cursor>{std::move(*decoded)};
}


result<std::optional<cursor>> xapian_backend::durable_cursor() {
  bool replayed = false;
  {
    // The runtime reads the cursor again to replay after accepted_work_lost (protocol.md §5.7):
    // from here on the epoch's deliveries are its replay.
    std::lock_guard lock(impl_->mutex);
    replayed = std::exchange(impl_->lost_epoch, 0) != 0;
  }
  if (replayed) impl_->skeleton->resume();
  return impl_->skeleton->durable_cursor();
}

delivery_result xapian_backend::deliver(std::shared_ptr<const batch> b) { return impl_->skeleton->deliver(std::move(b)); }
void xapian_backend::flush(flush_reason reason, completion done) { impl_->skeleton->flush(reason, std::move(done)); }
void xapian_backend::shutdown(epoch_t epoch, completion done) { impl_->skeleton->shutdown(epoch, std::move(done)); }
void xapian_backend::reset(epoch_t epoch, completion done) { impl_->skeleton->reset(epoch, std::move(done)); }
subscription xapian_backend::on_state_change(std::function<void(state_change)> callback) {
  return impl_->skeleton->on_state_change(std::move(callback));
}

result<query_result<std::vector<scored_ref>>> xapian_backend::search(std::string_view query_string, std::size_t offset,
                                                                     std::size_t limit, const coverage_mode& mode) {
  auto& p = *impl_;
  auto* host = p.host();
  if (host == nullptr) return error{errc::unavailable, "index " + p.id + " is not registered"};
  return admitted_search(*host, p.queries, p.id, p.options, p.generation.load(), query_string, offset, limit, mode);
}

result<query_rows> xapian_backend::query(const index_query& q) {
  if (q.kind != query_kind::search) return error{errc::not_supported, "a Xapian index answers search only"};
  return search(q.text, q.offset, q.limit, q.mode);
}

namespace {

class loaded_digest_view final : public digest_view {
 public:
  const std::optional<cursor>& through() const noexcept override { return through_; }
  const index_digest& digest() const noexcept override { return digest_; }
  result<const digest_entry*> next() override {
    if (at_ == entries_.size()) return static_cast<const digest_entry*>(nullptr);
    return &entries_[at_++];
  }

  std::optional<cursor> through_;
  index_digest digest_;
  std::vector<digest_entry> entries_;  // sorted by (log, table, record id)
  std::size_t at_ = 0;
};

}  // namespace

// As apply() decides: an id too long for a term, projected fields that do not decode, or a field
// the options do not name.
std::optional<std::string> xapian_backend::skips(const record_entry& r) const {
  if (r.state.kind != state_kind::record) return std::nullopt;
  if (xapian_id_term(r.log, r.table, r.record_id).size() > max_term_bytes) return std::string("id_too_long");
  auto decoded = decode_fields(r.state.projection);
  if (!decoded) return decoded.error().message();
  const auto& known = impl_->options.fields;
  if (!std::all_of(decoded->begin(), decoded->end(), [&](const auto& f) { return known.count(f.first) != 0; })) {
    return std::string("unknown_field");
  }
  return std::nullopt;
}

result<std::unique_ptr<digest_view>> xapian_backend::open_digest() {
  const auto& p = *impl_;
  // A long read may outlive the revision it started on (the writer commits twice meanwhile):
  // it starts again on the newer one.
  for (int attempt = 0; attempt < 8; ++attempt) {
    auto view = std::make_unique<loaded_digest_view>();
    if (!database_exists(p.options.path)) return std::unique_ptr<digest_view>(std::move(view));
    try {
      Xapian::Database db(p.options.path.string());
      if (const auto bytes = db.get_metadata(cursor_key); !bytes.empty()) {
        auto c = cursor::decode(bytes);
        if (!c) return c.error();
        view->through_ = std::move(*c);
      }
      const auto bytes = db.get_metadata(digest_key);
      if (auto stored = index_digest::decode(bytes)) {
        view->digest_ = *stored;
      } else if (!bytes.empty() || db.get_doccount() != 0) {
        return error{errc::not_supported, "index " + p.id + " was written before digests (formats.md §7): a rebuild adds them"};
      }
      view->entries_.reserve(db.get_doccount());
      for (auto it = db.postlist_begin(""); it != db.postlist_end(""); ++it) {
        const auto doc = db.get_document(*it);
        record_ref ref;
        const auto hash = decode_hash(doc.get_value(entry_hash_slot));
        if (!decode_document_data(doc.get_data(), ref) || !hash) {
          return error{errc::io_error, "index " + p.id + ": document " + std::to_string(*it) + " lacks its record or its entry hash"};
        }
        view->entries_.push_back(digest_entry{std::move(ref.log), ref.table, std::move(ref.record_id), ref.version, *hash});
      }
      std::sort(view->entries_.begin(), view->entries_.end(), [](const digest_entry& a, const digest_entry& b) {
        return std::tie(a.log, a.table, a.record_id) < std::tie(b.log, b.table, b.record_id);
      });
      return std::unique_ptr<digest_view>(std::move(view));
    } catch (const Xapian::DatabaseModifiedError&) {
      continue;
    } catch (const Xapian::DatabaseCorruptError& e) {
      return p.damaged(e);
    } catch (const Xapian::Error& e) {
      return error{errc::io_error, "index " + p.id + ": reading the digest of " + p.options.path.string() + ": " + e.get_description()};
    }
  }
  return error{errc::io_error, "index " + p.id + ": its database changed under every attempt to read its digest"};
}

result<std::vector<record_ref>> xapian_backend::stored_records() const { return list_records(impl_->id, impl_->options.path); }

std::uint64_t xapian_backend::commits() const noexcept { return impl_->commits.load(); }

// ---------------------------------------------------------------------------------------------

struct xapian_reader::impl {
  std::string id;
  xapian_options options;
  std::shared_ptr<backend_host> host;
  query_site queries;
};

xapian_reader::xapian_reader(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
xapian_reader::~xapian_reader() = default;

result<std::shared_ptr<xapian_reader>> xapian_reader::open(std::string id, xapian_options options,
                                                           std::shared_ptr<backend_host> host) {
  if (auto ok = validate_id_and_options(id, options); !ok) return ok.error();
  if (!host) return error{errc::invalid_argument, "xapian_reader " + id + ": host is null"};
  auto p = std::make_unique<impl>();
  p->id = std::move(id);
  p->options = std::move(options);
  p->host = std::move(host);
  try {
    (void)refresh(p->queries, p->options.path);  // a missing database is opened by a later query
  } catch (const Xapian::Error& e) {
    return error{errc::io_error, "index " + p->id + ": opening " + p->options.path.string() + ": " + e.get_description()};
  }
  return std::shared_ptr<xapian_reader>(new xapian_reader(std::move(p)));
}

const std::string& xapian_reader::id() const noexcept { return impl_->id; }

result<query_result<std::vector<scored_ref>>> xapian_reader::search(std::string_view query_string, std::size_t offset,
                                                                    std::size_t limit, const coverage_mode& mode) {
  auto& p = *impl_;
  return admitted_search(*p.host, p.queries, p.id, p.options, 0, query_string, offset, limit, mode);
}

result<std::vector<record_ref>> xapian_reader::stored_records() const { return list_records(impl_->id, impl_->options.path); }

// ---------------------------------------------------------------------------------------------

std::uint64_t xapian_probe::queued_batches(const xapian_backend& b) { return b.impl_->skeleton->queued_batches(); }
std::uint64_t xapian_probe::queued_bytes(const xapian_backend& b) { return b.impl_->skeleton->queued_bytes(); }
std::uint64_t xapian_probe::applied_batches(const xapian_backend& b) { return b.impl_->skeleton->applied_batches(); }
std::uint64_t xapian_probe::dropped_batches(const xapian_backend& b) { return b.impl_->skeleton->dropped_batches(); }
void xapian_probe::on_applied(xapian_backend& b, std::function<void(std::uint64_t)> hook) {
  std::lock_guard lock(b.impl_->mutex);
  b.impl_->applied_hook = std::move(hook);
}
void xapian_probe::on_writer_busy(xapian_backend& b, std::function<void()> hook) {
  std::lock_guard lock(b.impl_->mutex);
  b.impl_->busy_hook = std::move(hook);
}
void xapian_probe::set_space_probe(xapian_backend& b, space_probe probe, std::chrono::milliseconds max_age) {
  b.impl_->space->set_probe(std::move(probe), max_age);
}
void xapian_probe::fail_next_applies(xapian_backend& b, int n) {
  std::lock_guard lock(b.impl_->mutex);
  b.impl_->injected_failures = n;
}
void xapian_probe::on_query_refreshed(xapian_backend& b, std::function<void(int)> hook) {
  std::lock_guard lock(b.impl_->queries.mutex);
  b.impl_->queries.refreshed = std::move(hook);
}
void xapian_probe::on_query_refreshed(xapian_reader& r, std::function<void(int)> hook) {
  std::lock_guard lock(r.impl_->queries.mutex);
  r.impl_->queries.refreshed = std::move(hook);
}

}  // namespace dix
