// A backend written outside dix, and its conformance test (docs/conformance.md). The backend,
// `file_map_backend`, is as small as the contract allows: it applies each batch inside deliver
// (after the epoch check) to a map in memory, and a barrier writes the map and the cursor to one
// file (temporary file, fsync, rename, fsync of the directory), so the file always holds a
// cursor with exactly the state it covers. Its projection is the text "v:<anything>"; any other
// bytes are unindexable ("bad_projection"). It never defers (no queue) and resets by renaming an
// empty file over the state: cursor and records go in one step.
//
// Small, not a model to copy in one respect: backends.md §0 and api.md §5 want `deliver` and
// `flush` to return at once — validate and enqueue, and apply, write and fsync on a helper thread
// of the backend's own (never a CAF scheduler thread, which is where the runtime calls them). This
// one does that work inside the call to stay short; the shipped backends (runtime/backends) show
// the applier thread.
//
// The test is the last line: DIX_BACKEND_CONFORMANCE with a factory describing the backend.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>

#include <dix/backend.hpp>
#include <dix/testing/backend_conformance.hpp>

namespace {

using dix::testing::stored_key;
using dix::testing::stored_records;

// Length-prefixed fields: decimal length, ':', the bytes.
void put_field(std::string& out, const std::string& field) { out += std::to_string(field.size()) + ":" + field; }
bool get_field(const std::string& in, std::size_t& at, std::string& field) {
  const auto colon = in.find(':', at);
  if (colon == std::string::npos) return false;
  const auto length = std::stoull(in.substr(at, colon - at));
  if (colon + 1 + length > in.size()) return false;
  field = in.substr(colon + 1, length);
  at = colon + 1 + length;
  return true;
}

bool sync_path(const std::filesystem::path& p, int flags) {
  const int fd = ::open(p.c_str(), flags);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

class file_map_backend final : public dix::backend {
 public:
  explicit file_map_backend(std::filesystem::path dir) : file_(dir / "state"), id_("file-map") {}

  const std::string& id() const noexcept override { return id_; }
  std::string_view kind() const noexcept override { return "file_map"; }
  void attach(dix::backend_host& host) override { host_ = &host; }

  dix::result<std::optional<dix::cursor>> durable_cursor() override {
    std::lock_guard lock(mutex_);
    if (auto ok = load(); !ok) return ok.error();
    return durable_;
  }

  dix::delivery_result deliver(std::shared_ptr<const dix::batch> b) override {
    std::lock_guard lock(mutex_);
    if (!load()) return dix::delivery_result::failed;
    if (!host_->is_owner_epoch(b->epoch)) return dix::delivery_result::accepted;  // dropped: not the owner's
    for (const auto& r : b->records) {
      stored_key key{r.log, r.table, r.record_id};
      const bool indexable = r.state.kind == dix::state_kind::record && r.state.projection.rfind("v:", 0) == 0;
      if (r.state.kind == dix::state_kind::record && !indexable) host_->note_unindexable("bad_projection");
      if (indexable) records_[key] = r.state.version;
      else records_.erase(key);
    }
    if (b->through) {
      applied_ = b->through;
      applied_epoch_ = b->epoch;
    }
    return dix::delivery_result::accepted;
  }

  void flush(dix::flush_reason, dix::completion done) override {
    dix::result<void> outcome;
    {
      std::lock_guard lock(mutex_);
      outcome = load();
      // Publish only the owner's work (protocol.md §9.4): a superseded epoch writes nothing.
      if (outcome && applied_ && host_->is_owner_epoch(applied_epoch_)) {
        outcome = save(applied_, records_);
        if (outcome) durable_ = applied_;
      }
    }
    std::move(done)(std::move(outcome));
    emit();
  }

  void shutdown(dix::epoch_t, dix::completion done) override {
    {
      std::lock_guard lock(mutex_);
      loaded_ = false;  // nothing queued, nothing held; the next owner reads the file again
    }
    std::move(done)(dix::result<void>{});
  }

  dix::subscription on_state_change(std::function<void(dix::state_change)> callback) override {
    std::lock_guard lock(callbacks_mutex_);
    const auto key = next_key_++;
    callbacks_[key] = std::move(callback);
    return dix::subscription([this, key] {
      std::lock_guard g(callbacks_mutex_);
      callbacks_.erase(key);
    });
  }

  bool supports_reset() const noexcept override { return true; }
  void reset(dix::epoch_t, dix::completion done) override {
    dix::result<void> outcome;
    {
      std::lock_guard lock(mutex_);
      outcome = save(std::nullopt, {});  // cursor and records gone in one rename
      if (outcome) {
        records_.clear();
        applied_.reset();
        durable_.reset();
        loaded_ = true;
      }
    }
    std::move(done)(std::move(outcome));
  }

  // Every record the index holds, with its version: the listing the conformance kit reads.
  stored_records records() {
    std::lock_guard lock(mutex_);
    (void)load();
    return records_;
  }

 private:
  dix::result<void> load() {
    if (loaded_) return {};
    records_.clear();
    durable_.reset();
    applied_.reset();
    std::ifstream in(file_, std::ios::binary);
    if (in) {
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::size_t at = 0;
      std::string cursor_bytes, count;
      if (!get_field(text, at, cursor_bytes) || !get_field(text, at, count)) {
        return dix::error{dix::errc::io_error, file_.string() + ": truncated"};
      }
      if (!cursor_bytes.empty()) {
        auto c = dix::cursor::decode(cursor_bytes);
        if (!c) return c.error();
        durable_ = applied_ = *c;
      }
      for (auto n = std::stoull(count); n > 0; --n) {
        std::string log, table, id, version;
        if (!get_field(text, at, log) || !get_field(text, at, table) || !get_field(text, at, id) ||
            !get_field(text, at, version)) {
          return dix::error{dix::errc::io_error, file_.string() + ": truncated"};
        }
        records_[{log, static_cast<std::uint32_t>(std::stoul(table)), id}] = std::stoull(version);
      }
    }
    loaded_ = true;
    return {};
  }

  dix::result<void> save(const std::optional<dix::cursor>& c, const stored_records& rows) {
    std::string text;
    put_field(text, c ? c->bytes() : std::string());
    put_field(text, std::to_string(rows.size()));
    for (const auto& [key, version] : rows) {
      put_field(text, key.log);
      put_field(text, std::to_string(key.table));
      put_field(text, key.record_id);
      put_field(text, std::to_string(version));
    }
    const auto temp = file_.string() + ".tmp";
    {
      std::ofstream out(temp, std::ios::binary | std::ios::trunc);
      out << text;
      if (!out.flush()) return dix::error{dix::errc::io_error, temp + ": write failed"};
    }
    if (!sync_path(temp, O_RDONLY) || std::rename(temp.c_str(), file_.c_str()) != 0 ||
        !sync_path(file_.parent_path(), O_RDONLY | O_DIRECTORY)) {
      return dix::error{dix::errc::io_error, file_.string() + ": sync or rename failed"};
    }
    return {};
  }

  void emit() {
    std::lock_guard lock(callbacks_mutex_);
    for (auto& [key, callback] : callbacks_) callback({dix::state_change_kind::changed, 0});
  }

  const std::filesystem::path file_;
  const std::string id_;
  dix::backend_host* host_ = nullptr;
  std::mutex mutex_;
  bool loaded_ = false;
  stored_records records_;
  std::optional<dix::cursor> applied_;
  dix::epoch_t applied_epoch_ = 0;
  std::optional<dix::cursor> durable_;
  std::mutex callbacks_mutex_;
  std::map<std::uint64_t, std::function<void(dix::state_change)>> callbacks_;
  std::uint64_t next_key_ = 0;
};

// The subject: how the kit makes, feeds and reads this backend.
dix::testing::backend_subject file_map_subject() {
  dix::testing::backend_subject s;
  s.name = "file_map";
  s.make = [](const std::filesystem::path& dir) { return std::make_shared<file_map_backend>(dir); };
  s.projection = [](std::uint64_t n) { return "v:" + std::to_string(n); };
  s.unindexable = [] { return std::string("not a projection"); };
  s.stored = [](dix::backend& b) { return dynamic_cast<file_map_backend&>(b).records(); };
  // No queue, so no cap: defer_batch_bytes stays 0 and the deferral check asserts it never defers.
  return s;
}

}  // namespace

DIX_BACKEND_CONFORMANCE("file_map conformance", file_map_subject)
