// [adapter] The metrics segment (docs/formats-metrics.md) over a real file in a temporary home:
// created beside the readiness segment by attach, its layout byte for byte, the seqlock under a
// concurrent reader (a thread, and a writer in another process), layout mismatches, and the
// ownership and permission rules of decision 0011.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "adapters/mapped_file.hpp"
#include "adapters/metrics_segment.hpp"
#include "adapters/readiness_segment.hpp"
#include "core/bytes.hpp"
#include "core/lag_pacer.hpp"
#include "support/child.hpp"
#include "support/file_bytes.hpp"
#include "support/temp_dir.hpp"

using namespace dix;
using dix::test::le;
using dix::test::patch_file;
using dix::test::read_file;
using dix::test::temp_dir;
namespace fs = std::filesystem;

namespace {

fs::path make_home(const temp_dir& dir) {
  auto home = dir / "db";
  fs::create_directories(home);
  return fs::canonical(home);
}

fs::path metrics_file(const fs::path& home) { return home / "dix" / "metrics.seg"; }

std::shared_ptr<readiness_segment> attach(const fs::path& home, std::uint32_t slots = 64) {
  auto s = readiness_segment::attach(home, slots);
  if (!s) FAIL(s.error().to_string());
  return *s;
}

std::shared_ptr<metrics_segment> open_reader(const fs::path& home, std::uint32_t blocks = 64) {
  auto m = metrics_segment::open(home / "dix", blocks);
  if (!m) FAIL(m.error().to_string());
  REQUIRE(*m != nullptr);
  return *m;
}

// A block whose every figure follows from `n`: a copy mixing two writes shows at once.
metrics_block block_of(std::uint64_t n) {
  return metrics_block{n * 7 + 1, rebuild_progress{n, n * 3, n * 5 + 2, n * 11, n * 13, n % 2 == 1}};
}

// The n a whole block was made from; nullopt for a torn one (or one no block_of made).
std::optional<std::uint64_t> made_from(const metrics_block& b) {
  if (!b.progress) return std::nullopt;
  const auto n = b.progress->epoch;
  const auto want = block_of(n);
  const auto& p = *b.progress;
  const auto& q = *want.progress;
  const bool whole = b.written_wall_ns == want.written_wall_ns && p.rebuilt_records == q.rebuilt_records &&
                     p.estimated_records == q.estimated_records && p.scan_records_per_s == q.scan_records_per_s &&
                     p.rebuild_eta_ms == q.rebuild_eta_ms && p.scan_ended == q.scan_ended;
  return whole ? std::optional<std::uint64_t>(n) : std::nullopt;
}

// What a reader saw of a block one writer fills with block_of(1), block_of(2), …
struct torn_count {
  std::uint64_t whole = 0, torn = 0, backwards = 0, last = 0;

  void read(const metrics_segment& reader, std::uint32_t index) {
    auto b = reader.read(index);
    if (!b || !b->progress) return;  // a writer at work at every try, or nothing written yet
    auto n = made_from(*b);
    if (!n) {
      ++torn;
      return;
    }
    ++whole;
    backwards += *n < last ? 1 : 0;
    last = *n;
  }
  // The write the block holds once the writer is done.
  std::optional<std::uint64_t> final_write(const metrics_segment& reader, std::uint32_t index) const {
    auto b = reader.read(index);
    return b ? made_from(*b) : std::nullopt;
  }
};

mode_t mode_of(const fs::path& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("metrics segment: attach creates metrics.seg 0600 beside the readiness segment, whatever the umask, with the documented header and one zeroed block per slot", "[adapter][metrics]") {
  for (mode_t mask : {mode_t{0}, mode_t{0277}}) {
    temp_dir dir;
    auto home = make_home(dir);
    {
      test::umask_scope scope(mask);
      auto s = attach(home, 3);
      CHECK(s->metrics().block_count() == 3);
    }
    CHECK(mode_of(metrics_file(home)) == 0600);
    auto bytes = read_file(metrics_file(home));
    REQUIRE(bytes.size() == 128 + 3 * 512);
    CHECK(bytes.substr(0, 8) == "DIXMETRC");
    CHECK(get_le<std::uint32_t>(bytes, 8) == 2u);    // layout_version
    CHECK(get_le<std::uint32_t>(bytes, 12) == 128u); // header_bytes
    CHECK(get_le<std::uint32_t>(bytes, 16) == 512u); // block_bytes
    CHECK(get_le<std::uint32_t>(bytes, 20) == 3u);   // block_count = slot_count
    CHECK(bytes.substr(32, 96) == std::string(96, '\0'));
    // The first attach cleared every block through the seqlock: whole (even) and never written.
    for (std::size_t i = 0; i < 3; ++i) {
      const auto at = 128 + i * 512;
      CHECK(get_le<std::uint64_t>(bytes, at) % 2 == 0);
      CHECK(bytes.substr(at + 8, 504) == std::string(504, '\0'));
    }
  }
}

TEST_CASE("metrics segment: a write lands at the documented offsets, bumps the change counter, and reads back whole, and a never-written block has no progress", "[adapter][metrics]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home, 4);
  auto& m = s->metrics();
  const auto before = m.change_counter();
  m.write(2, metrics_block{1'700'000'000'123'456'789ull, rebuild_progress{9, 6144, 14000, 52000, 150, false}});
  CHECK(m.change_counter() == before + 1);

  auto bytes = read_file(metrics_file(home));
  const std::size_t at = 128 + 2 * 512;
  CHECK(get_le<std::uint64_t>(bytes, at) % 2 == 0);                        // sequence: whole
  CHECK(get_le<std::uint64_t>(bytes, at + 8) == 1'700'000'000'123'456'789ull);  // written_wall_ns
  CHECK(get_le<std::uint64_t>(bytes, at + 16) == 9u);                      // epoch
  CHECK(get_le<std::uint32_t>(bytes, at + 24) == 1u);                      // flags: progress, running
  CHECK(get_le<std::uint64_t>(bytes, at + 32) == 6144u);                   // rebuilt_records
  CHECK(get_le<std::uint64_t>(bytes, at + 40) == 14000u);                  // estimated_records
  CHECK(get_le<std::uint64_t>(bytes, at + 48) == 52000u);                  // scan_records_per_s
  CHECK(get_le<std::uint64_t>(bytes, at + 56) == 150u);                    // rebuild_eta_ms
  CHECK(bytes.substr(at + 64, 448) == std::string(448, '\0'));             // no lag part, no names
  CHECK(get_le<std::uint64_t>(bytes, 24) == before + 1);                   // header change_counter

  auto reader = open_reader(home, 4);
  auto got = reader->read(2);
  REQUIRE(got);
  CHECK(got->written_wall_ns == 1'700'000'000'123'456'789ull);
  REQUIRE(got->progress);
  CHECK(got->progress->epoch == 9);
  CHECK(got->progress->rebuilt_records == 6144);
  CHECK(got->progress->estimated_records == 14000);
  CHECK(got->progress->scan_records_per_s == 52000);
  CHECK(got->progress->rebuild_eta_ms == 150);
  CHECK_FALSE(got->progress->scan_ended);

  m.write(2, metrics_block{5, rebuild_progress{9, 14000, 14000, 51000, 0, true}});
  CHECK(get_le<std::uint32_t>(read_file(metrics_file(home)), at + 24) == 3u);  // flags: progress, scan ended
  CHECK(reader->read(2)->progress->scan_ended);

  auto never = reader->read(1);
  REQUIRE(never);
  CHECK(never->written_wall_ns == 0);
  CHECK_FALSE(never->progress);
  CHECK_FALSE(reader->read(4));  // past the last block
}

TEST_CASE("metrics segment: a reader on its own mapping never sees a torn block while a thread writes it", "[adapter][metrics][seqlock]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home, 2);
  auto reader = open_reader(home, 2);
  constexpr std::uint64_t writes = 200'000;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (std::uint64_t n = 1; n <= writes; ++n) s->metrics().write(1, block_of(n));
    done = true;
  });
  torn_count count;
  while (!done.load()) count.read(*reader, 1);
  writer.join();
  CHECK(count.torn == 0);
  CHECK(count.backwards == 0);  // one writer: a later read never shows an older write
  CHECK(count.whole > 0);
  CHECK(count.final_write(*reader, 1) == writes);
}

TEST_CASE("metrics segment: a reader never sees a torn block while the owner in another process writes it", "[system][metrics][seqlock]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home, 2);
  auto reader = open_reader(home, 2);
  constexpr std::uint64_t writes = 100'000;
  test::pipe_pair go;
  const pid_t child = test::fork_child([&] {
    if (go.receive() != 'g') return 4;
    for (std::uint64_t n = 1; n <= writes; ++n) s->metrics().write(0, block_of(n));
    return 0;
  });
  go.send('g');
  torn_count count;
  int status = 0;
  while (::waitpid(child, &status, WNOHANG) == 0) count.read(*reader, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(count.torn == 0);
  CHECK(count.backwards == 0);
  CHECK(count.final_write(*reader, 0) == writes);
}

TEST_CASE("metrics segment: a block a writer left odd (it died mid-write) reads as no figures until the next write repairs it", "[adapter][metrics][seqlock]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home, 2);
  s->metrics().write(0, block_of(4));
  const std::size_t at = 128;
  const auto sequence = get_le<std::uint64_t>(read_file(metrics_file(home)), at);
  patch_file(metrics_file(home), at, le<std::uint64_t>(sequence + 1));  // odd: a write never finished
  auto reader = open_reader(home, 2);
  CHECK_FALSE(reader->read(0));
  s->metrics().write(0, block_of(5));
  const auto repaired = get_le<std::uint64_t>(read_file(metrics_file(home)), at);
  CHECK(repaired % 2 == 0);
  CHECK(repaired > sequence + 1);
  auto b = reader->read(0);
  REQUIRE(b);
  CHECK(made_from(*b) == 5u);
}

TEST_CASE("metrics segment: the first attacher clears the blocks, a runtime attaching beside a live one keeps them", "[adapter][metrics]") {
  temp_dir dir;
  auto home = make_home(dir);
  {
    auto first = attach(home, 2);
    first->metrics().write(1, block_of(3));
    auto second = attach(home, 2);  // another runtime while the first is attached: no stale reset
    CHECK(made_from(*second->metrics().read(1)) == 3u);
  }
  auto again = attach(home, 2);  // nobody attached: the owner's figures are gone with it
  auto b = again->metrics().read(1);
  REQUIRE(b);
  CHECK_FALSE(b->progress);
  CHECK(b->written_wall_ns == 0);
}

TEST_CASE("metrics segment: another layout version, magic, block size or block count fails segment_layout_mismatch for attach and readers, naming the path and the remedy", "[adapter][metrics]") {
  struct bad {
    const char* name;
    std::size_t offset;
    std::string bytes;
    const char* found;
  };
  const std::vector<bad> cases{{"version", 8, le<std::uint32_t>(3), "found layout version 3, expected layout version 2"},
                               {"magic", 0, "DIXNOPE!", "(not a dix metrics segment)"},
                               {"block size", 16, le<std::uint32_t>(128), "block_bytes 128"}};
  for (const auto& c : cases) {
    SECTION(c.name) {
      temp_dir dir;
      auto home = make_home(dir);
      attach(home, 2).reset();
      patch_file(metrics_file(home), c.offset, c.bytes);
      auto attached = readiness_segment::attach(home, 2);
      REQUIRE_FALSE(attached);
      CHECK(attached.error().value() == errc::segment_layout_mismatch);
      CHECK_THAT(attached.error().message(),
                 Catch::StartsWith("metrics segment " + metrics_file(home).string()) && Catch::Contains(c.found) &&
                     Catch::Contains("stop every process using this database, then delete " + metrics_file(home).string()));
      auto reader = metrics_segment::open(home / "dix", 2);
      REQUIRE_FALSE(reader);
      CHECK(reader.error().value() == errc::segment_layout_mismatch);
    }
  }
  SECTION("a block count other than the slot count") {
    temp_dir dir;
    auto home = make_home(dir);
    attach(home, 3).reset();
    fs::create_directories(dir / "other");
    attach(fs::canonical(dir / "other"), 2).reset();
    fs::copy_file(metrics_file(fs::canonical(dir / "other")), metrics_file(home), fs::copy_options::overwrite_existing);
    auto attached = readiness_segment::attach(home, 3);
    REQUIRE_FALSE(attached);
    CHECK(attached.error().value() == errc::segment_layout_mismatch);
    CHECK_THAT(attached.error().message(), Catch::Contains("found block_count 2, expected block_count 3 (the readiness segment's slot_count)"));
    CHECK(metrics_segment::open(home / "dix", 3).error().value() == errc::segment_layout_mismatch);
  }
}

TEST_CASE("metrics segment: a readiness segment created anew gets a new metrics segment of its slot count, renamed over the old one, which a reader keeps reading", "[adapter][metrics]") {
  temp_dir dir;
  auto home = make_home(dir);
  attach(home, 2)->metrics().write(1, block_of(8));
  auto old_reader = open_reader(home, 2);
  fs::remove(home / "dix" / "readiness.seg");  // the next attach creates it: its slots pair with no block
  auto s = attach(home, 3);
  CHECK(s->metrics().block_count() == 3);
  CHECK(fs::file_size(metrics_file(home)) == 128 + 3 * 512);
  CHECK(mode_of(metrics_file(home)) == 0600);
  CHECK_FALSE(s->metrics().read(1)->progress);
  CHECK_FALSE(fs::exists(home / "dix" / "metrics.seg.new"));
  CHECK(made_from(*old_reader->read(1)) == 8u);  // its own file, whole
}

TEST_CASE("metrics segment: a zero magic (an interrupted creation) is created anew, and no file is no figures for a reader", "[adapter][metrics]") {
  temp_dir dir;
  auto home = make_home(dir);
  attach(home, 2)->metrics().write(0, block_of(2));
  CHECK(metrics_segment::open(home / "dix", 2).value() != nullptr);
  patch_file(metrics_file(home), 0, std::string(8, '\0'));
  CHECK(metrics_segment::open(home / "dix", 2).value() == nullptr);
  auto s = attach(home, 2);
  CHECK(read_file(metrics_file(home)).substr(0, 8) == "DIXMETRC");
  CHECK_FALSE(s->metrics().read(0)->progress);
  fs::remove(metrics_file(home));
  CHECK(metrics_segment::open(home / "dix", 2).value() == nullptr);
}

TEST_CASE("metrics segment: a metrics.seg open to other users, owned by another user, or a symlink is refused by attach naming the path, while a read-only reader only reads", "[adapter][metrics][security]") {
  temp_dir dir;
  auto home = make_home(dir);
  attach(home, 2).reset();
  const auto path = metrics_file(home);
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read);
  auto wide = readiness_segment::attach(home, 2);
  REQUIRE_FALSE(wide);
  CHECK(wide.error().value() == errc::io_error);
  CHECK_THAT(wide.error().message(), Catch::Contains(path.string() + " has mode 0604: other users could open it") &&
                                         Catch::Contains("chmod 0600 " + path.string()));
  CHECK(metrics_segment::open(home / "dix", 2).value() != nullptr);  // a monitoring user may read
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  if (::geteuid() == 0) {  // only root can give a file away
    REQUIRE(::lchown(path.c_str(), 4242, static_cast<gid_t>(-1)) == 0);
    auto foreign = readiness_segment::attach(home, 2);
    REQUIRE_FALSE(foreign);
    CHECK_THAT(foreign.error().message(), Catch::Contains(path.string() + " is owned by uid 4242"));
    REQUIRE(::lchown(path.c_str(), 0, static_cast<gid_t>(-1)) == 0);
  } else {
    WARN("not root: the foreign-owner half needs chown and is skipped");
  }
  REQUIRE(readiness_segment::attach(home, 2));  // restored: accepted again

  fs::rename(path, dir / "elsewhere.seg");
  fs::create_symlink(dir / "elsewhere.seg", path);
  auto linked = readiness_segment::attach(home, 2);
  REQUIRE_FALSE(linked);
  CHECK(linked.error().value() == errc::io_error);
  CHECK_THAT(linked.error().message(), Catch::Contains(path.string()));
  CHECK_FALSE(metrics_segment::open(home / "dix", 2));
  CHECK(fs::is_symlink(path));  // refused, not replaced
}

namespace {

fs::path swap_in_metrics;

// Between metrics.seg's validated open and Boost's open by path: renames a copy over it.
void swap_metrics(const fs::path& file) {
  if (file.filename() == "metrics.seg" && !swap_in_metrics.empty()) {
    fs::rename(swap_in_metrics, file);
    swap_in_metrics.clear();
  }
}

}  // namespace

TEST_CASE("metrics segment: a file renamed over metrics.seg after its validated open is not mapped (io_error)", "[adapter][metrics][security]") {
  temp_dir dir;
  auto home = make_home(dir);
  attach(home, 2).reset();
  fs::copy_file(metrics_file(home), dir / "copy.seg");  // valid: only its identity differs
  swap_in_metrics = dir / "copy.seg";
  test_set_segment_map_hook(swap_metrics);
  auto s = readiness_segment::attach(home, 2);
  test_set_segment_map_hook(nullptr);
  REQUIRE_FALSE(s);
  CHECK(s.error().value() == errc::io_error);
  CHECK_THAT(s.error().message(), Catch::Contains("metrics segment " + metrics_file(home).string()) &&
                                      Catch::Contains("not the file opened and validated"));
  CHECK(readiness_segment::attach(home, 2));  // without the swap it maps
}

TEST_CASE("metrics segment: the verify part lands at its documented offsets with the lag part and reads back whole, and a block an older writer wrote reads no verify figures (issue 31)", "[adapter][metrics][verify]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home, 2);
  auto& m = s->metrics();
  lag_figures l;
  l.epoch = 3;
  l.taken_wall_ns = 1'700'000'000'000'000'000ull;
  l.log_count = 2;
  l.logs = {log_lag_figures{0, 0, -1, "main", 4242}, log_lag_figures{0, 0, -1, "side", 77}};
  l.verifying = true;
  l.verified = true;
  l.verified_records = 1'000'000;
  l.verified_age_ms = 1500;
  l.verify_failures = 2;
  l.verify_read_entries = 61440;
  l.verify_expected_entries = 200000;
  l.verify_eta_ms = 2100;
  m.write(0, metrics_block{9, std::nullopt, l});
  auto bytes = read_file(metrics_file(home));
  const std::size_t at = 128;
  CHECK(get_le<std::uint32_t>(bytes, at + 392) == 15u);       // present, verifying, verified, ETA known
  CHECK(get_le<std::uint32_t>(bytes, at + 396) == 0u);
  CHECK(get_le<std::uint64_t>(bytes, at + 400) == 2u);        // verify_failures
  CHECK(get_le<std::uint64_t>(bytes, at + 408) == 1'000'000u);  // verified_records
  CHECK(get_le<std::uint64_t>(bytes, at + 416) == 1500u);     // verified_age_ms
  CHECK(get_le<std::uint64_t>(bytes, at + 424) == 4242u);     // log 0's verified sequence
  CHECK(get_le<std::uint64_t>(bytes, at + 432) == 77u);       // log 1's
  CHECK(get_le<std::uint64_t>(bytes, at + 440) == 61440u);    // the scan's entries read
  CHECK(get_le<std::uint64_t>(bytes, at + 448) == 200000u);   // … expected
  CHECK(get_le<std::uint64_t>(bytes, at + 456) == 2100u);     // its ETA
  CHECK(bytes.substr(at + 464, 48) == std::string(48, '\0'));
  auto got = open_reader(home, 2)->read(0);
  REQUIRE(got);
  REQUIRE(got->lag);
  CHECK(*got->lag == l);
  // Read later, the age has grown by the time since the figures were taken.
  CHECK(got->lag->aged_at(l.taken_wall_ns + 2'000'000'000ull).verified_age_ms == 3500);
  // Bytes an older writer left zero (it reserved them): no verify figures, nothing else lost.
  {
    std::fstream f(metrics_file(home), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at + 392));
    const std::string zeros(72, '\0');
    f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
    REQUIRE(f.good());
  }
  got = open_reader(home, 2)->read(0);
  REQUIRE(got);
  REQUIRE(got->lag);
  CHECK_FALSE(got->lag->verified);
  CHECK_FALSE(got->lag->verifying);
  CHECK(got->lag->verify_failures == 0);
  CHECK(got->lag->verify_eta_ms == -1);
  CHECK(got->lag->logs.at(0).verified_sequence == 0);
  CHECK(got->lag->logs.at(0).log == "main");
}

TEST_CASE("metrics segment: the lag part lands at its documented offsets beside the progress and reads back whole, with the owner's flush age, and a block without it reads no lag figures", "[adapter][metrics][lag]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home, 2);
  auto& m = s->metrics();
  lag_figures l;
  l.epoch = 7;
  l.taken_wall_ns = 1'700'000'000'000'000'001ull;
  l.state = runner_state::deferred;
  l.lag_ms = 4000;
  l.cursor_lag_ms = 10;
  l.stalled_ms = 4000;
  l.unread_age_ms = 20;
  l.oldest_accepted_age_ms = 30;
  l.stalled_growing = true;
  l.oldest_accepted_growing = true;
  l.accepted_batches = 5;
  l.max_accepted_batches_ahead = 64;
  l.max_flush_age_ms = 3000;
  l.lag_gate = 250;
  l.transient_faults = 2;
  l.last_fault = readiness_reason::log_missing;
  l.log_count = 3;
  const std::string long_name(64, 'x');  // the longest a log name may be
  l.logs = {log_lag_figures{100, 2000, -1, "a"}, log_lag_figures{7, 0, 12345, long_name}};
  m.write(1, metrics_block{9, rebuild_progress{7, 1, 2, 3, 4, false}, l});

  auto bytes = read_file(metrics_file(home));
  const std::size_t at = 128 + 512;
  CHECK(get_le<std::uint64_t>(bytes, at + 32) == 1u);          // the progress is untouched
  CHECK(get_le<std::uint64_t>(bytes, at + 64) == 7u);          // lag epoch
  CHECK(get_le<std::uint64_t>(bytes, at + 72) == 1'700'000'000'000'000'001ull);  // taken_wall_ns
  CHECK(get_le<std::uint64_t>(bytes, at + 80) == 4000u);       // lag_ms
  CHECK(get_le<std::uint64_t>(bytes, at + 88) == 10u);         // cursor_lag_ms
  CHECK(get_le<std::uint64_t>(bytes, at + 96) == 4000u);       // stalled_ms
  CHECK(get_le<std::uint64_t>(bytes, at + 104) == 20u);        // unread_age_ms
  CHECK(get_le<std::uint64_t>(bytes, at + 112) == 30u);        // oldest_accepted_age_ms
  CHECK(get_le<std::uint32_t>(bytes, at + 120) == 5u);         // accepted_batches
  CHECK(get_le<std::uint32_t>(bytes, at + 124) == 64u);        // max_accepted_batches_ahead
  CHECK(get_le<std::uint32_t>(bytes, at + 128) == 250u);       // lag_gate
  CHECK(get_le<std::uint32_t>(bytes, at + 132) == 2u);         // transient_faults
  CHECK(static_cast<unsigned char>(bytes[at + 136]) == 4u);    // runner_state deferred
  CHECK(static_cast<unsigned char>(bytes[at + 137]) == 0x0Bu); // lag_flags: present, stalled, oldest accepted growing
  CHECK(static_cast<unsigned char>(bytes[at + 138]) == 3u);    // last_fault log-missing
  CHECK(static_cast<unsigned char>(bytes[at + 139]) == 3u);    // log_count
  CHECK(get_le<std::uint32_t>(bytes, at + 140) == 3000u);      // max_flush_age_ms (decision 0031)
  CHECK(get_le<std::uint64_t>(bytes, at + 144) == 100u);       // log 0 sequence_lag
  CHECK(get_le<std::uint64_t>(bytes, at + 152) == 2000u);      // log 0 read_per_s
  CHECK(get_le<std::uint64_t>(bytes, at + 160) == ~std::uint64_t{0});  // log 0 headroom −1
  CHECK(get_le<std::uint64_t>(bytes, at + 184) == 12345u);     // log 1 headroom
  CHECK(bytes.substr(at + 192, 64) == std::string(64, '\0'));  // still reserved
  // The names part (layout 2, decision 0030): lengths, then each name zero padded to 64 bytes.
  CHECK(static_cast<unsigned char>(bytes[at + 256]) == 1u);    // log 0 name_len
  CHECK(static_cast<unsigned char>(bytes[at + 257]) == 64u);   // log 1 name_len
  CHECK(bytes.substr(at + 258, 6) == std::string(6, '\0'));
  CHECK(bytes.substr(at + 264, 64) == "a" + std::string(63, '\0'));
  CHECK(bytes.substr(at + 328, 64) == long_name);
  CHECK(get_le<std::uint32_t>(bytes, at + 392) == 1u);          // the verify part: present, nothing verified
  CHECK(bytes.substr(at + 396, 116) == std::string(116, '\0'));

  auto got = open_reader(home, 2)->read(1);
  REQUIRE(got);
  REQUIRE(got->lag);
  CHECK(got->lag->epoch == 7);
  CHECK(got->lag->state == runner_state::deferred);
  CHECK(got->lag->stalled_growing);
  CHECK_FALSE(got->lag->unread_growing);
  CHECK(got->lag->oldest_accepted_growing);
  CHECK(got->lag->last_fault == readiness_reason::log_missing);
  CHECK(got->lag->log_count == 3);
  CHECK(got->lag->max_flush_age_ms == 3000);
  CHECK(got->lag->max_accepted_batches_ahead == 64);
  REQUIRE(got->lag->logs.size() == 2);
  CHECK(got->lag->logs[0].read_per_s == 2000);
  CHECK(got->lag->logs[0].retention_headroom_ms == -1);
  CHECK(got->lag->logs[1].retention_headroom_ms == 12345);
  CHECK(got->lag->logs[0].log == "a");
  CHECK(got->lag->logs[1].log == long_name);
  CHECK(log_label(*got->lag, 1) == long_name);

  // One log now: the second name is gone with its figures; a name outside the rules is stored
  // as none, and a reader labels that log by its position. No flush age (a writer that did not
  // fill it): the word reads 0, unknown.
  l.log_count = 1;
  l.max_flush_age_ms = 0;
  l.logs = {log_lag_figures{1, 0, -1, "Not a log!"}};
  m.write(1, metrics_block{10, std::nullopt, l});
  bytes = read_file(metrics_file(home));
  CHECK(static_cast<unsigned char>(bytes[at + 256]) == 0u);
  CHECK(static_cast<unsigned char>(bytes[at + 257]) == 0u);
  CHECK(bytes.substr(at + 264, 128) == std::string(128, '\0'));
  CHECK(get_le<std::uint32_t>(bytes, at + 140) == 0u);
  auto unnamed = open_reader(home, 2)->read(1);
  REQUIRE(unnamed);
  REQUIRE(unnamed->lag);
  CHECK(unnamed->lag->max_flush_age_ms == 0);
  REQUIRE(unnamed->lag->logs.size() == 1);
  CHECK(unnamed->lag->logs[0].log.empty());
  CHECK(log_label(*unnamed->lag, 0) == "0");

  // A block as a writer before the lag part wrote it (the lag bytes zero): progress, no lag.
  m.write(0, metrics_block{9, rebuild_progress{7, 1, 2, 3, 4, false}});
  auto older = open_reader(home, 2)->read(0);
  REQUIRE(older);
  CHECK(older->progress);
  CHECK_FALSE(older->lag);
}

TEST_CASE("metrics segment: an owner flushing every 3 s behind a steady writer reads following alike from its runner_metrics (dix serve) and from the segment (dix status), and catching up or stalled where the flush age is unknown", "[adapter][metrics][lag]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home, 2);
  runner_options options;
  options.max_flush_age = std::chrono::milliseconds(3000);
  const steady_time now = steady_time{} + std::chrono::hours(1);
  constexpr std::uint64_t wall = 1'700'000'000'000'000'000ull;
  // Read to the log's end, the batches of the last 2.9 s accepted and not yet durable: the next
  // flush is not due before 3 s.
  runner_snapshot snap;
  snap.owner = true;
  snap.epoch = 4;
  snap.state = runner_state::running;
  snap.logs = {log_progress{"main", 29'000, 29'000}};
  snap.oldest_accepted_at = now - std::chrono::milliseconds(2900);
  snap.accepted_batches = 30;
  const readiness ready{readiness_state::ready, readiness_reason::none, 0, 4};

  // dix serve: attribute() of the runtime's own runner_metrics under the runner's options.
  const auto served = attribute(ready, lag_figures_of(snap.metrics(now), snap.state, options));
  // dix status: the figures the lag pacer publishes, through the block and a reader's mapping,
  // aged to the reader's now (the same instant here).
  lag_pacer pacer;
  auto published = pacer.next(snap, options, now, wall).publish;
  REQUIRE(published);
  s->metrics().write(0, metrics_block{wall, std::nullopt, *published});
  auto read = open_reader(home, 2)->read(0);
  REQUIRE(read);
  REQUIRE(read->lag);
  CHECK(read->lag->max_flush_age_ms == 3000);
  const auto status = attribute(ready, read->lag->aged_at(wall));
  CHECK(served.activity == index_activity::following);
  CHECK(status.activity == index_activity::following);
  CHECK(served.words == "following the log, lag 2.9 s");
  CHECK(status.words == served.words);

  // The same figures from a writer that did not fill the flush age: judged by the fixed limits,
  // a batch 2.9 s from durable is a barrier that does not complete.
  auto unknown = *read->lag;
  unknown.max_flush_age_ms = 0;
  s->metrics().write(0, metrics_block{wall, std::nullopt, unknown});
  auto older = open_reader(home, 2)->read(0);
  REQUIRE(older);
  REQUIRE(older->lag);
  CHECK(older->lag->max_flush_age_ms == 0);
  CHECK(attribute(ready, older->lag->aged_at(wall)).cause == stall_cause::barrier);
}

TEST_CASE("metrics segment: a layout-1 file (an older runtime's) is replaced by the first attacher with a layout-2 file renamed over it, while a reader of the old file keeps reading it without names", "[adapter][metrics][names]") {
  temp_dir dir;
  auto home = make_home(dir);
  attach(home, 2).reset();  // the readiness segment, which the older runtime would have made
  const auto old_bytes = test::layout_1_metrics_file(2, 1, 5);
  test::replace_file(metrics_file(home), old_bytes);

  // A reader reads the older runtime's figures as before, its log without a name.
  auto old_reader = open_reader(home, 2);
  CHECK(old_reader->layout_version() == 1);
  auto before = old_reader->read(1);
  REQUIRE(before);
  REQUIRE(before->lag);
  CHECK(before->lag->epoch == 5);
  REQUIRE(before->lag->logs.size() == 1);
  CHECK(before->lag->logs[0].sequence_lag == 42);
  CHECK(before->lag->logs[0].log.empty());
  CHECK(log_label(*before->lag, 0) == "0");

  // No runtime attached: nothing of the file is live, so the first attacher replaces it.
  auto s = attach(home, 2);
  CHECK(s->metrics().layout_version() == 2);
  auto bytes = read_file(metrics_file(home));
  REQUIRE(bytes.size() == 128 + 2 * 512);
  CHECK(get_le<std::uint32_t>(bytes, 8) == 2u);
  CHECK(get_le<std::uint32_t>(bytes, 16) == 512u);
  CHECK(mode_of(metrics_file(home)) == 0600);
  CHECK_FALSE(fs::exists(home / "dix" / "metrics.seg.new"));
  CHECK_FALSE(s->metrics().read(1)->lag);
  CHECK(open_reader(home, 2)->layout_version() == 2);
  // The reader that mapped the old file keeps it, whole.
  auto kept = old_reader->read(1);
  REQUIRE(kept);
  REQUIRE(kept->lag);
  CHECK(kept->lag->logs[0].sequence_lag == 42);
}

TEST_CASE("metrics segment: a layout-1 file while a runtime is attached is refused by a later attacher and left unchanged, and an older runtime's check refuses a layout-2 file", "[adapter][metrics][names]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto first = attach(home, 2);  // stands for the older runtime, attached first
  const auto old_bytes = test::layout_1_metrics_file(2, 0, 5);
  test::replace_file(metrics_file(home), old_bytes);  // the file it would have made and validated

  auto second = readiness_segment::attach(home, 2);
  REQUIRE_FALSE(second);
  CHECK(second.error().value() == errc::segment_layout_mismatch);
  CHECK_THAT(second.error().message(),
             Catch::StartsWith("metrics segment " + metrics_file(home).string()) &&
                 Catch::Contains("found layout version 1, expected layout version 2") &&
                 Catch::Contains("stop every process using this database, then delete " + metrics_file(home).string()));
  CHECK(read_file(metrics_file(home)) == old_bytes);  // the live runtime's file is untouched
  first.reset();

  // The other way round: a runtime of layout 1 validates a file as layout 1 with 256-byte
  // blocks, which a layout-2 file fails (formats.md §4.6 step 2), attaching first or not.
  auto current = attach(home, 2);
  CHECK(current->metrics().layout_version() == 2);
  const file_layout older{"metrics segment", "DIXMETRC", 1, 128, 256, "block", 65536};
  auto refused = open_existing(metrics_file(home), older, true);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::segment_layout_mismatch);
  CHECK_THAT(refused.error().message(), Catch::Contains("found layout version 2, expected layout version 1"));
}

TEST_CASE("metrics segment: a remote backend's link part lands at offsets 192 to 255 with the lag part, reads back "
          "whole with its address cut at 24 bytes, and a block without one reads as no link",
          "[adapter][metrics][remote]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home, 4);
  auto& m = s->metrics();
  lag_figures lag;
  lag.epoch = 3;
  lag.taken_wall_ns = 42;
  link_figures link;
  link.address = "index-node-7.example.internal:7000";  // 34 bytes: the segment keeps 24
  link.connected = true;
  link.round_trip_us = 850;
  link.window_batches = 5;
  link.window_bytes = 123456;
  link.durable_sequence = 9001;
  link.connects = 4;
  lag.link = link;
  metrics_block block;
  block.written_wall_ns = 7;
  block.lag = lag;
  m.write(1, block);

  auto bytes = read_file(metrics_file(home));
  const std::size_t at = 128 + 1 * 512;
  CHECK(get_le<std::uint32_t>(bytes, at + 192) == 3u);  // present, connected
  CHECK(get_le<std::uint32_t>(bytes, at + 196) == 5u);
  CHECK(get_le<std::uint64_t>(bytes, at + 200) == 123456u);
  CHECK(get_le<std::uint64_t>(bytes, at + 208) == 850u);
  CHECK(get_le<std::uint64_t>(bytes, at + 216) == 9001u);
  CHECK(get_le<std::uint64_t>(bytes, at + 224) == 4u);
  CHECK(bytes.substr(at + 232, 24) == link.address.substr(0, 24));

  auto reader = open_reader(home, 4);
  auto got = reader->read(1);
  REQUIRE(got);
  REQUIRE(got->lag);
  REQUIRE(got->lag->link);
  CHECK(got->lag->link->address == link.address.substr(0, 24));
  CHECK(got->lag->link->connected);
  CHECK(got->lag->link->round_trip_us == 850);
  CHECK(got->lag->link->window_batches == 5);
  CHECK(got->lag->link->window_bytes == 123456);
  CHECK(got->lag->link->durable_sequence == 9001);
  CHECK(got->lag->link->connects == 4);

  lag.link.reset();
  block.lag = lag;
  m.write(1, block);
  CHECK(read_file(metrics_file(home)).substr(at + 192, 64) == std::string(64, '\0'));
  got = reader->read(1);
  REQUIRE(got);
  REQUIRE(got->lag);
  CHECK_FALSE(got->lag->link);
}
