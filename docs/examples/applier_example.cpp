// A complete backend on the applier skeleton (<dix/applier.hpp>, decision 0050) and its conformance
// test (docs/conformance.md). The skeleton owns queue, cap, thread, epoch fencing, barriers,
// poisoning, shutdown, reset ordering and callbacks; the backend is only its engine: a map that a
// barrier writes with its cursor to one file (temp file, fsync, rename, fsync of the directory).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <mutex>
#include <dix/applier.hpp>
#include <dix/testing/backend_conformance.hpp>

namespace {

using dix::testing::stored_key;
using dix::testing::stored_records;
void put(std::string& out, const std::string& field) { out += std::to_string(field.size()) + ":" + field; }
bool get(const std::string& in, std::size_t& at, std::string& field) {
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
  const bool ok = fd >= 0 && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

class file_map_backend final : public dix::applier_backend {
 public:
  explicit file_map_backend(std::filesystem::path dir)
      : applier_backend("file-map", dix::applier_limits{4096, 0}), file_(dir / "state") {}
  ~file_map_backend() override { stop(); }  // first: the applier thread calls the engine below
  std::string_view kind() const noexcept override { return "file_map"; }
  bool supports_reset() const noexcept override { return true; }

  stored_records records() {  // what the kit reads: every record with its version
    std::lock_guard lock(mutex_);
    (void)load();
    return records_;
  }

 protected:
  dix::result<std::optional<dix::cursor>> load_cursor() override {
    std::lock_guard lock(mutex_);
    if (auto ok = load(); !ok) return ok.error();
    return cursor_;
  }
  dix::result<dix::apply_outcome> apply_batch(const dix::batch& b) override {
    std::lock_guard lock(mutex_);
    if (auto ok = load(); !ok) return ok.error();
    for (const auto& r : b.records) {
      const stored_key key{r.log, r.table, r.record_id};
      const bool record = r.state.kind == dix::state_kind::record;
      const bool indexable = record && r.state.projection.rfind("v:", 0) == 0;
      if (record && !indexable) skeleton().host()->note_unindexable("bad_projection");
      if (indexable) records_[key] = r.state.version;
      else records_.erase(key);
    }
    return dix::apply_outcome::applied;
  }
  dix::result<bool> commit(const std::optional<dix::cursor>& through, dix::epoch_t) override {
    std::lock_guard lock(mutex_);
    if (!through) return false;  // during a scan: no cursor to store yet
    if (auto ok = save(through, records_); !ok) return ok.error();
    return true;
  }
  dix::result<void> close() override {
    std::lock_guard lock(mutex_);
    loaded_ = false;  // the next owner reads the file again
    return {};
  }
  dix::result<void> reset_index() override {
    std::lock_guard lock(mutex_);
      if (auto ok = save(std::nullopt, {}); !ok) return ok;  // cursor and records gone in one rename
    records_.clear();
    cursor_.reset();
    loaded_ = true;
    return {};
  }

 private:
  dix::result<void> load() {
    if (loaded_) return {};
    records_.clear();
    cursor_.reset();
    std::ifstream in(file_, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::size_t at = 0;  // the file: cursor bytes, count, then per record log, table, id, version
    std::string bytes, count, log, table, id, version;
    if (in && (!get(text, at, bytes) || !get(text, at, count))) return dix::error{dix::errc::io_error, "truncated"};
    if (!bytes.empty()) {
      auto c = dix::cursor::decode(bytes);
      if (!c) return c.error();
      cursor_ = *c;
    }
    for (auto n = count.empty() ? 0 : std::stoull(count); n > 0; --n) {
      if (!get(text, at, log) || !get(text, at, table) || !get(text, at, id) || !get(text, at, version)) {
        return dix::error{dix::errc::io_error, "truncated"};
      }
      records_[{log, static_cast<std::uint32_t>(std::stoul(table)), id}] = std::stoull(version);
    }
    loaded_ = true;
    return {};
  }
  dix::result<void> save(const std::optional<dix::cursor>& c, const stored_records& rows) {
    std::string text;
    put(text, c ? c->bytes() : std::string());
    put(text, std::to_string(rows.size()));
    for (const auto& [key, version] : rows) {
      for (const auto& field : {key.log, std::to_string(key.table), key.record_id, std::to_string(version)}) put(text, field);
    }
    const auto temp = file_.string() + ".tmp";
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text, out.close();  // written out before the fsync and the rename, not when `out` dies
    if (!out || !sync_path(temp, O_RDONLY) || std::rename(temp.c_str(), file_.c_str()) != 0 ||
        !sync_path(file_.parent_path(), O_RDONLY | O_DIRECTORY)) {
      return dix::error{dix::errc::io_error, file_.string() + ": write, sync or rename failed"};
    }
    return {};
  }

  const std::filesystem::path file_;  // "v:<anything>" projections are indexed, other bytes unindexable
  std::mutex mutex_;  // the applier's steps, load_cursor() and records() share the map
  bool loaded_ = false;
  stored_records records_;
  std::optional<dix::cursor> cursor_;  // the stored one, as loaded
};

dix::testing::backend_subject file_map_subject() {
  dix::testing::backend_subject s;
  s.name = "applier file_map";
  s.make = [](const std::filesystem::path& dir) { return std::make_shared<file_map_backend>(dir); };
  s.projection = [](std::uint64_t n) { return "v:" + std::to_string(n); };
  s.unindexable = [] { return std::string("not a projection"); };
  s.stored = [](dix::backend& b) { return dynamic_cast<file_map_backend&>(b).records(); };
  s.defer_batch_bytes = 4096;  // the cap: the skeleton defers the second batch queued behind one
  return s;
}

}  // namespace
DIX_BACKEND_CONFORMANCE("applier example conformance", file_map_subject)
