// Writes the seed corpus of every fuzz target (tests/fuzz/corpus/<target>/) from real encodings:
// cursors made by cursor::make, headers and values by their encoders, WriteBatches built with
// RocksDB's own API, segments made by readiness_segment::attach and claim (metrics segments by
// attach and metrics_segment::write), messages saved by
// CAF's binary_serializer. Run `dix_fuzz_corpus tests/fuzz/corpus` from the source root after a
// format changes, and commit what it wrote. Every seed is a valid input but the few named
// `rejected-…`, which sit just outside a rule.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>

#include <rocksdb/comparator.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <dix/cursor.hpp>
#include <dix/caf/error.hpp>

#include "adapters/meta_records.hpp"
#include "adapters/metrics_segment.hpp"
#include "adapters/readiness_segment.hpp"
#include "core/txn_header.hpp"
#include "messages/type_ids.hpp"

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "dix_fuzz_corpus: %s\n", what.c_str());
  std::exit(1);
}

class corpus_writer {
 public:
  explicit corpus_writer(fs::path root) : root_(std::move(root)) {}

  void put(const std::string& target, const std::string& name, const std::string& bytes) {
    std::error_code ec;
    fs::create_directories(root_ / target, ec);
    if (ec) fail("cannot create " + (root_ / target).string() + ": " + ec.message());
    std::ofstream out(root_ / target / name, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) fail("cannot write " + (root_ / target / name).string());
    ++written_;
  }
  int written() const noexcept { return written_; }

 private:
  fs::path root_;
  int written_ = 0;
};

std::string prefixed(char selector, const std::string& bytes) { return std::string(1, selector) + bytes; }

dix::cursor make_cursor(std::vector<dix::log_position> logs) {
  auto c = dix::cursor::make(std::move(logs));
  if (!c) fail("cursor::make: " + c.error().message());
  return *c;
}

void cursors(corpus_writer& out) {
  out.put("cursor", "one-log", make_cursor({{"main", "identity-main", 42, 1'733'000'000'000'000'000}}).encode());
  out.put("cursor", "two-logs",
          make_cursor({{"main", "identity-main", 7, 1'000}, {"aux", "identity-aux", 5, 900}}).encode());
  out.put("cursor", "long-names",
          make_cursor({{std::string(64, 'z'), std::string(64, '\xff'), ~std::uint64_t{0}, ~std::uint64_t{0}}})
              .encode());
  auto valid = make_cursor({{"main", "identity-main", 42, 1'000}}).encode();
  out.put("cursor", "rejected-truncated", valid.substr(0, valid.size() - 1));
}

void headers(corpus_writer& out) {
  using dix::header_flag::reload;
  using dix::header_flag::system;
  out.put("txn_header", "header-plain", prefixed('\0', dix::encode_header({0, 1'733'000'000'000'000'000, 2})));
  out.put("txn_header", "header-system", prefixed('\0', dix::encode_header({system, 1'000, 1})));
  out.put("txn_header", "header-reload", prefixed('\0', dix::encode_header({reload | 1, 1'000, 3})));
  out.put("txn_header", "value-payload", prefixed('\1', dix::encode_value(7, "payload")));
  out.put("txn_header", "value-empty", prefixed('\1', dix::encode_value(1, "")));
  out.put("txn_header", "rejected-value-version-0", prefixed('\1', dix::encode_value(0, "x")));
}

void meta_records(corpus_writer& out) {
  out.put("meta_records", "epoch", prefixed('\0', dix::meta::encode_u64(3)));
  out.put("meta_records", "registration", prefixed('\1', dix::meta::encode_u64(0xcbf29ce484222325)));
  out.put("meta_records", "rejected-marker-as-epoch", prefixed('\0', std::string(dix::meta::marker_value)));
}

// A column family handle for WriteBatch's API: its id is all a batch records.
class family final : public rocksdb::ColumnFamilyHandle {
 public:
  explicit family(std::uint32_t id) : id_(id) {}
  const std::string& GetName() const override { return name_; }
  uint32_t GetID() const override { return id_; }
  rocksdb::Status GetDescriptor(rocksdb::ColumnFamilyDescriptor*) override { return rocksdb::Status::NotSupported(); }
  const rocksdb::Comparator* GetComparator() const override { return rocksdb::BytewiseComparator(); }

 private:
  std::uint32_t id_;
  std::string name_ = "family";
};

void check(const rocksdb::Status& s) {
  if (!s.ok()) fail("WriteBatch: " + s.ToString());
}

// The batch's bytes with its sequence set (the 8 first bytes of the rep).
std::string at_sequence(const rocksdb::WriteBatch& batch, std::uint64_t sequence) {
  std::string rep = batch.Data();
  for (std::size_t i = 0; i < 8; ++i) rep[i] = static_cast<char>(sequence >> (8 * i));
  return rep;
}

// The family ids of fuzz_wal_batch.cpp's map: 1 dix.meta, 2 table 7, 3 table 8.
void wal_batches(corpus_writer& out) {
  family meta(1), table7(2), table8(3);
  using dix::encode_header;
  using dix::encode_value;
  {
    rocksdb::WriteBatch b;
    check(b.PutLogData(encode_header({0, 1'733'000'000'000'000'000, 3})));
    check(b.Put(&table7, "k1", encode_value(41, "v1")));
    check(b.Delete(&table7, "k2"));
    check(b.Put(&table8, "k3", encode_value(41, "")));
    out.put("wal_batch", "tables", at_sequence(b, 41));
  }
  {
    rocksdb::WriteBatch b;
    check(b.PutLogData(encode_header({dix::header_flag::system, 1'000, 2})));
    check(b.Put(&meta, dix::meta::epoch_key("by-brand"), dix::meta::encode_u64(2)));
    check(b.Delete(&meta, dix::meta::condemned_key("by-brand")));
    out.put("wal_batch", "system", at_sequence(b, 7));
  }
  {
    rocksdb::WriteBatch b;
    check(b.PutLogData(encode_header({dix::header_flag::reload, 1'000, 2})));
    check(b.DeleteRange(&table7, "", "\xff"));
    check(b.Put(&table7, "k1", encode_value(9, "v1")));
    out.put("wal_batch", "reload", at_sequence(b, 9));
  }
  {
    rocksdb::WriteBatch b;  // RocksDB's recovery marker (decision 0005)
    out.put("wal_batch", "recovery-marker", at_sequence(b, 100));
  }
  {
    rocksdb::WriteBatch b;
    check(b.PutLogData(encode_header({0, 1'000, 1})));
    check(b.Merge(&table7, "k1", "v"));
    out.put("wal_batch", "rejected-merge", at_sequence(b, 3));
  }
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read " + path.string());
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void segments(corpus_writer& out, const fs::path& scratch) {
  struct shape {
    const char* name;
    std::uint32_t slots;
    std::vector<const char*> ids;
  };
  for (const auto& s : {shape{"one-slot-free", 1, {}}, shape{"two-slots-one-claimed", 2, {"by-brand"}},
                        shape{"four-slots-two-claimed", 4, {"by-brand", "by-category"}}}) {
    const auto home = scratch / s.name;
    std::error_code ec;
    fs::create_directories(home, ec);
    if (ec) fail("cannot create " + home.string() + ": " + ec.message());
    {
      auto segment = dix::readiness_segment::attach(home, s.slots);
      if (!segment) fail("attach: " + segment.error().message());
      for (const char* id : s.ids) {
        auto slot = (*segment)->claim(id);
        if (!slot) fail("claim: " + slot.error().message());
        (void)(*slot)->mint_epoch();
        (*slot)->apply({dix::readiness_state::ready, dix::readiness_reason::none, 0, 1'000, 0});
      }
    }
    out.put("segment", s.name, read_file(home / "dix" / "readiness.seg"));
  }
  auto valid = read_file(scratch / "one-slot-free" / "dix" / "readiness.seg");
  out.put("segment", "rejected-truncated", valid.substr(0, valid.size() - 1));
}

// Metrics segments of 2 blocks (fuzz_metrics_segment.cpp's readiness segment has 2 slots), of
// layout 2. The corpus keeps layout-1-* seeds this generator wrote before decision 0030 (an older
// runtime's file, which readers still read).
void metrics_segments(corpus_writer& out, const fs::path& scratch) {
  const auto home = scratch / "metrics";
  std::error_code ec;
  fs::create_directories(home, ec);
  if (ec) fail("cannot create " + home.string() + ": " + ec.message());
  auto segment = dix::readiness_segment::attach(home, 2);
  if (!segment) fail("attach: " + segment.error().message());
  const auto file = home / "dix" / "metrics.seg";
  out.put("metrics_segment", "never-written", read_file(file));
  (*segment)->metrics().write(0, dix::metrics_block{1'700'000'000'000'000'000ull,
                                                    dix::rebuild_progress{1, 6144, 14000, 52000, 151, false}});
  (*segment)->metrics().write(1, dix::metrics_block{1'700'000'000'500'000'000ull,
                                                    dix::rebuild_progress{3, 14000, 14000, 51000, 0, true}});
  auto written = read_file(file);
  out.put("metrics_segment", "two-blocks-written", written);
  // Lag figures of two logs with their names (1 and 64 bytes: the names part, decision 0030).
  dix::lag_figures lag;
  lag.epoch = 3;
  lag.taken_wall_ns = 1'700'000'001'000'000'000ull;
  lag.state = dix::runner_state::running;
  lag.log_count = 2;
  lag.logs = {dix::log_lag_figures{12, 2000, -1, "m"}, dix::log_lag_figures{0, 0, 90'000, std::string(64, 'z')}};
  (*segment)->metrics().write(1, dix::metrics_block{1'700'000'001'000'000'000ull, std::nullopt, lag});
  out.put("metrics_segment", "lag-with-names", read_file(file));
  out.put("metrics_segment", "rejected-truncated", written.substr(0, written.size() - 1));
  auto odd = written;
  odd[128] = static_cast<char>(odd[128] | 1);  // block 0's sequence odd: a writer died mid-write
  out.put("metrics_segment", "block-mid-write", odd);
}

template <class T>
std::string save(caf::actor_system& sys, T x) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  if (auto err = sink(x)) fail("binary_serializer: " + sys.render(err));
  return std::string(buf.begin(), buf.end());
}

std::string save_message(caf::actor_system& sys, caf::message msg) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  if (auto err = caf::inspect(static_cast<caf::serializer&>(sink), msg)) fail("binary_serializer: " + sys.render(err));
  return std::string(buf.begin(), buf.end());
}

// The selector byte of fuzz_messages.cpp: the type's position in the block; one past the last
// is a whole caf::message.
template <class T>
char selector() {
  return static_cast<char>(caf::type_id<T>::value - caf::id_block::dix::begin);
}

template <std::size_t... I>
void default_messages(corpus_writer& out, caf::actor_system& sys, std::index_sequence<I...>) {
  (out.put("messages", "default-" + std::to_string(I),
           prefixed(static_cast<char>(I),
                    save(sys, typename caf::type_by_id<caf::id_block::dix::begin + I>::type{}))),
   ...);
}

void messages(corpus_writer& out) {
  caf::actor_system_config cfg;
  dix::configure_dix(cfg);
  cfg.set("scheduler.max-threads", 1);
  caf::actor_system sys{cfg};
  constexpr std::size_t count = caf::id_block::dix::end - caf::id_block::dix::begin;
  default_messages(out, sys, std::make_index_sequence<count>{});

  auto b = std::make_shared<dix::batch>();
  b->epoch = 7;
  b->records = {
    {"main", 3, "alpha", 1'041, {dix::state_kind::record, 1'041, std::string("proj\0bytes", 10), ""}},
    {"main", 3, "beta", 1'041, {dix::state_kind::absent, 0, "", ""}},
    {"aux", 4, "gamma", 905, {dix::state_kind::unindexable, 904, "", "too-long"}},
  };
  b->transactions = {{"main", 41, 1'041, {{0, 1'041}, {1, 1'041}}}, {"aux", 5, 905, {{2, 905}}}};
  b->through = make_cursor({{"main", "identity-main", 42, 1'041}, {"aux", "identity-aux", 5, 900}});
  b->bytes = 12'345;
  dix::deliver d{3, dix::batch_msg{b}};
  out.put("messages", "deliver-full-batch", prefixed(selector<dix::deliver>(), save(sys, d)));
  dix::durable with_cursor{4, make_cursor({{"main", "identity-main", 42, 1'041}}), caf::error{}};
  out.put("messages", "durable-cursor", prefixed(selector<dix::durable>(), save(sys, with_cursor)));
  dix::flush_done failed{5, dix::make_error(dix::errc::io_error, "SyncWAL: disk full")};
  out.put("messages", "flush-done-error", prefixed(selector<dix::flush_done>(), save(sys, failed)));
  out.put("messages", "message-deliver", prefixed(static_cast<char>(count), save_message(sys, caf::make_message(d))));
  out.put("messages", "message-durable-query",
          prefixed(static_cast<char>(count), save_message(sys, caf::make_message(dix::durable_query{6}))));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIRECTORY\n", argv[0]);
    return 2;
  }
  corpus_writer out{argv[1]};
  std::string pattern = (fs::temp_directory_path() / "dix-fuzz-corpus-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) fail("mkdtemp failed");
  cursors(out);
  headers(out);
  meta_records(out);
  wal_batches(out);
  segments(out, pattern);
  metrics_segments(out, pattern);
  messages(out);
  std::error_code ec;
  fs::remove_all(pattern, ec);
  std::printf("dix_fuzz_corpus: %d seed(s) written under %s\n", out.written(), argv[1]);
  return 0;
}
