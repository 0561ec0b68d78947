#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <thread>

#include <dix/free_functions.hpp>

#include "adapters/readiness_segment.hpp"
#include "adapters/test_support.hpp"
#include "core/index_time.hpp"
#include "core/clock.hpp"
#include "support/child.hpp"
#include "support/file_bytes.hpp"
#include "support/futex_probe.hpp"
#include "core/bytes.hpp"

using namespace dix;
using dix::test::temp_dir;
using dix::test::fork_child;
using dix::test::in_futex_wait;
using dix::test::pipe_pair;
using dix::test::umask_scope;
using dix::test::wait_exit;
using dix::test::patch_file;
using dix::test::read_file;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// A home store directory; the segment needs nothing of RocksDB but the directory.
fs::path make_home(const temp_dir& dir) {
  auto home = dir / "db";
  fs::create_directories(home);
  return home;
}

fs::path segment_file(const fs::path& home) { return fs::canonical(home) / "dix" / "readiness.seg"; }

std::string le32(std::uint32_t v) { return test::le(v); }

mode_t mode_of(const fs::path& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

std::shared_ptr<readiness_segment> attach(const fs::path& home, std::uint32_t slots = 64) {
  auto s = readiness_segment::attach(home, slots);
  if (!s) FAIL(s.error().to_string());
  return *s;
}

std::shared_ptr<segment_slot> claim(readiness_segment& s, std::string_view id) {
  auto slot = s.claim(id);
  if (!slot) FAIL(slot.error().to_string());
  return *slot;
}


}  // namespace

TEST_CASE("readiness segment: attach creates dix/ 0700 and the files 0600 with the exact 128-byte header, whatever the umask", "[adapter][segment]") {
  for (mode_t mask : {mode_t{0}, mode_t{0277}}) {
    temp_dir dir;
    auto home = make_home(dir);
    {
      umask_scope scope(mask);
      auto s = attach(home);
      CHECK(s->slot_count() == 64);
      CHECK(s->directory() == fs::canonical(home) / "dix");
    }
    auto d = fs::canonical(home) / "dix";
    CHECK(mode_of(d) == 0700);
    CHECK(mode_of(d / "runner") == 0700);
    CHECK(mode_of(d / "readiness.seg") == 0600);
    CHECK(mode_of(d / "readiness.lock") == 0600);
    CHECK(mode_of(d / "attach.lock") == 0600);

    auto bytes = read_file(d / "readiness.seg");
    REQUIRE(bytes.size() == 128 + 64 * 128);
    CHECK(bytes.substr(0, 8) == "DIXREADY");
    CHECK(get_le<std::uint32_t>(bytes, 8) == 1u);    // layout_version
    CHECK(get_le<std::uint32_t>(bytes, 12) == 128u); // header_bytes
    CHECK(get_le<std::uint32_t>(bytes, 16) == 128u); // slot_bytes
    CHECK(get_le<std::uint32_t>(bytes, 20) == 64u);  // slot_count
    CHECK(get_le<std::uint64_t>(bytes, 24) == 1u);   // reset_count: the first attach reset
    CHECK(bytes.substr(40, 88) == std::string(88, '\0'));
    CHECK(bytes.substr(128) == std::string(64 * 128, '\0'));
  }
}

TEST_CASE("readiness segment: a dix/ that is a symlink or a file is refused with io_error naming the path", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  fs::create_directories(dir / "elsewhere");
  fs::create_directory_symlink(dir / "elsewhere", home / "dix");
  auto linked = readiness_segment::attach(home, 64);
  REQUIRE_FALSE(linked);
  CHECK(linked.error().value() == errc::io_error);
  CHECK_THAT(linked.error().message(), Catch::Contains("expected a directory (not a symlink) at " +
                                                      (fs::canonical(home) / "dix").string()));
  CHECK(fs::is_empty(dir / "elsewhere"));  // nothing was created through the link
  fs::remove(home / "dix");
  std::ofstream(home / "dix") << "x";
  auto file = readiness_segment::attach(home, 64);
  REQUIRE_FALSE(file);
  CHECK(file.error().value() == errc::io_error);
}

TEST_CASE("readiness segment: a claim writes the id, its length and bumps both change counters", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home, 4);
  auto before = s->segment_change_counter();
  auto a = claim(*s, "by-brand");
  auto b = claim(*s, "by-category");
  CHECK(a->index() == 0);
  CHECK(b->index() == 1);
  CHECK(a->id() == "by-brand");
  CHECK(claim(*s, "by-brand")->index() == 0);  // found, not claimed again
  CHECK(s->segment_change_counter() == before + 2);
  CHECK(a->change_counter() == 1);

  auto bytes = read_file(segment_file(home));
  CHECK(get_le<std::uint32_t>(bytes, 128 + 56) == 8u);
  CHECK(bytes.substr(128 + 64, 64) == std::string("by-brand") + std::string(56, '\0'));
  CHECK(get_le<std::uint32_t>(bytes, 256 + 56) == 11u);

  auto bad = s->claim(".hidden");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().value() == errc::invalid_argument);
}

TEST_CASE("readiness segment: the third claim of a 2-slot segment fails segment_full", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home, 2);
  claim(*s, "a");
  claim(*s, "b");
  auto full = s->claim("c");
  REQUIRE_FALSE(full);
  CHECK(full.error().value() == errc::segment_full);
  CHECK(full.error().message().find("\"c\"") != std::string::npos);
  CHECK(claim(*s, "b")->index() == 1);  // existing ids still resolve
}

TEST_CASE("readiness segment: layout version 2 fails segment_layout_mismatch naming path, versions and remedy", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  attach(home).reset();
  auto path = segment_file(home);
  patch_file(path, 8, le32(2));

  auto r = readiness_segment::attach(home);
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::segment_layout_mismatch);
  const auto& m = r.error().message();
  CHECK(m.find(path.string()) != std::string::npos);
  CHECK(m.find("found layout version 2") != std::string::npos);
  CHECK(m.find("expected layout version 1") != std::string::npos);
  CHECK(m.find("stop every process using this database, then delete " + path.string()) != std::string::npos);

  // Readers refuse the same way, and the file is left alone.
  auto read = read_readiness(home, "x");
  REQUIRE_FALSE(read);
  CHECK(read.error().value() == errc::segment_layout_mismatch);
  CHECK(get_le<std::uint32_t>(read_file(path), 8) == 2u);
}

TEST_CASE("readiness segment: a file of the wrong size fails segment_layout_mismatch", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  attach(home).reset();
  auto path = segment_file(home);
  fs::resize_file(path, 1000);

  auto r = readiness_segment::attach(home);
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::segment_layout_mismatch);
  const auto& m = r.error().message();
  CHECK(m.find(path.string()) != std::string::npos);
  CHECK(m.find("1000 bytes") != std::string::npos);
  CHECK(m.find("expected layout version 1") != std::string::npos);
  CHECK(m.find("then delete " + path.string()) != std::string::npos);
  CHECK(fs::file_size(path) == 1000);

  // A foreign magic too.
  fs::resize_file(path, 128 + 64 * 128);
  patch_file(path, 0, "NOTDIX!!");
  auto foreign = readiness_segment::attach(home);
  REQUIRE_FALSE(foreign);
  CHECK(foreign.error().value() == errc::segment_layout_mismatch);
  CHECK(foreign.error().message().find("NOTDIX!!") != std::string::npos);
}

TEST_CASE("readiness segment: a zero magic or an empty file (interrupted creation) is recreated", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  {
    auto s = attach(home, 8);
    claim(*s, "old")->publish(readiness_state::ready, readiness_reason::none, 0);
  }
  auto path = segment_file(home);
  patch_file(path, 0, std::string(8, '\0'));
  patch_file(path, 8, le32(7));  // whatever else an interrupted creator left behind

  auto before = read_readiness(home, "old");
  REQUIRE(before);
  CHECK(before->state == readiness_state::unknown);
  CHECK(before->owner_epoch == 0);

  {
    auto s = attach(home);  // default 64 slots: the old size does not matter
    CHECK(s->slot_count() == 64);
    auto bytes = read_file(path);
    REQUIRE(bytes.size() == 128 + 64 * 128);
    CHECK(bytes.substr(0, 8) == "DIXREADY");
    CHECK(get_le<std::uint32_t>(bytes, 8) == 1u);
    CHECK(bytes.substr(128) == std::string(64 * 128, '\0'));  // the old claim is gone
    auto gone = read_readiness(home, "old");
    REQUIRE_FALSE(gone);
    CHECK(gone.error().value() == errc::not_registered);
  }

  fs::resize_file(path, 0);
  CHECK(read_readiness(home, "old")->state == readiness_state::unknown);
  auto s = attach(home, 3);
  CHECK(s->slot_count() == 3);
  CHECK(fs::file_size(path) == 128 + 3 * 128);
  CHECK(mode_of(path) == 0600);
}

TEST_CASE("readiness segment: publish reads back, bumps both counters, and unknown codes read unknown and none", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home);
  auto slot = claim(*s, "idx");
  auto slot_before = slot->change_counter();
  auto segment_before = s->segment_change_counter();

  slot->publish(readiness_state::needs_rebuild, readiness_reason::log_retention, 3);
  auto r = slot->read();
  CHECK(r.state == readiness_state::needs_rebuild);
  CHECK(r.reason == readiness_reason::log_retention);
  CHECK(r.rebuild_attempts == 3);
  CHECK(slot->change_counter() == slot_before + 1);
  CHECK(s->segment_change_counter() == segment_before + 1);

  auto bytes = read_file(segment_file(home));
  CHECK(get_le<std::uint32_t>(bytes, 128 + 0) == 3u);  // state needs-rebuild
  CHECK(get_le<std::uint32_t>(bytes, 128 + 4) == 4u);  // reason log-retention
  CHECK(get_le<std::uint32_t>(bytes, 128 + 8) == 3u);  // rebuild_attempts
  CHECK(get_le<std::uint64_t>(bytes, 128 + 40) == slot->change_counter());

  // The file and the mapping share the page cache: foreign codes written into the file.
  patch_file(segment_file(home), 128, le32(99) + le32(77));
  r = slot->read();
  CHECK(r.state == readiness_state::unknown);
  CHECK(r.reason == readiness_reason::none);
  CHECK(read_readiness(home, "idx")->state == readiness_state::unknown);
}

TEST_CASE("readiness segment: minted epochs rise by one and the epoch floor never lowers", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home);
  auto slot = claim(*s, "idx");
  CHECK(slot->owner_epoch() == 0);
  CHECK(slot->mint_epoch().value() == 1);
  CHECK(slot->mint_epoch().value() == 2);
  slot->raise_epoch_floor(10);
  CHECK(slot->owner_epoch() == 10);
  auto counter = slot->change_counter();
  slot->raise_epoch_floor(4);  // never lowers, and no change to announce
  CHECK(slot->owner_epoch() == 10);
  CHECK(slot->change_counter() == counter);
  CHECK(slot->mint_epoch().value() == 11);
  // Another handle on the same slot sees the same epoch.
  CHECK(claim(*s, "idx")->owner_epoch() == 11);
}

TEST_CASE("readiness segment: a slot whose epoch reads 2^64-1 refuses the mint with record_corrupt and never wraps", "[adapter][segment][epoch]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home);
  auto slot = claim(*s, "idx");
  constexpr auto top = std::numeric_limits<epoch_t>::max();
  REQUIRE(slot->mint_epoch().value() == 1);
  REQUIRE(slot->check_mintable());
  // Written into the file by someone else: owner_epoch is at slot offset 24 (formats.md §4.3).
  std::string word;
  put_le<std::uint64_t>(word, top - 1);
  patch_file(segment_file(home), 128 + 24, word);
  CHECK(slot->mint_epoch().value() == top);  // the last epoch there is
  const auto counter = slot->change_counter();
  auto refused = slot->mint_epoch();
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::record_corrupt);
  CHECK_THAT(refused.error().message(), Catch::Contains("idx") && Catch::Contains("2^64-1") &&
                                            Catch::Contains("delete its dix/readiness.seg"));
  CHECK(slot->owner_epoch() == top);  // unchanged, not 0
  CHECK(slot->change_counter() == counter);  // nothing to announce
  CHECK(slot->check_mintable().error().value() == errc::record_corrupt);
  slot->raise_epoch_floor(5);
  CHECK(slot->owner_epoch() == top);
}

TEST_CASE("readiness segment: lag gate, coverage time and demand, rebuild request", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home);
  auto slot = claim(*s, "idx");
  slot->set_lag_gate(250);
  CHECK(slot->lag_gate() == 250);
  slot->set_coverage_time(1'733'000'000'000'000'000ull);
  CHECK(slot->coverage_time() == 1'733'000'000'000'000'000ull);

  CHECK_FALSE(slot->consume_rebuild_request());
  slot->request_rebuild();
  CHECK(slot->consume_rebuild_request());
  CHECK_FALSE(slot->consume_rebuild_request());

  slot->raise_coverage_demand(50);
  slot->raise_coverage_demand(40);  // CAS max: stays 50
  CHECK(slot->coverage_demand() == 50);
  CHECK_FALSE(slot->clear_coverage_demand(40));  // a waiter raised it past what the owner saw
  CHECK(slot->coverage_demand() == 50);
  CHECK(slot->clear_coverage_demand(50));
  CHECK(slot->coverage_demand() == 0);

  auto bytes = read_file(segment_file(home));
  CHECK(get_le<std::uint32_t>(bytes, 128 + 16) == 250u);
  CHECK(get_le<std::uint64_t>(bytes, 128 + 32) == 1'733'000'000'000'000'000ull);
}

TEST_CASE("readiness segment: wait_change returns the counter at once when it already moved, and the seen value on timeout", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home);
  auto slot = claim(*s, "idx");
  auto seen = s->segment_change_counter();
  CHECK(s->wait_change(seen, 1ms) == seen);
  CHECK(slot->wait_change(slot->change_counter(), 1ms) == slot->change_counter());
  slot->publish(readiness_state::ready, readiness_reason::none, 0);
  CHECK(s->wait_change(seen, 10s) == seen + 1);
}

TEST_CASE("readiness segment: the first attacher resets stale slots but keeps epoch, rebuild request and id", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  {
    auto s = attach(home);
    CHECK(s->reset_count() == 1);
    auto slot = claim(*s, "idx");
    slot->raise_epoch_floor(7);
    slot->publish(readiness_state::ready, readiness_reason::reload, 2);
    slot->set_lag_gate(5);
    slot->set_coverage_time(123);
    slot->raise_coverage_demand(456);
    slot->request_rebuild();
    slot->set_hold(backend_hold::low_disk_space);
  }  // detached
  auto s = attach(home);
  CHECK(s->reset_count() == 2);
  auto slot = claim(*s, "idx");
  CHECK(slot->index() == 0);
  auto r = slot->read();
  CHECK(r.state == readiness_state::unknown);
  CHECK(r.reason == readiness_reason::none);
  CHECK(r.rebuild_attempts == 0);
  CHECK(r.owner_epoch == 7);
  CHECK(slot->lag_gate() == 0);
  CHECK(slot->coverage_time() == 0);
  CHECK(slot->coverage_demand() == 0);
  CHECK(slot->hold() == backend_hold::none);
  CHECK(slot->consume_rebuild_request());
}

TEST_CASE("readiness segment: a backend's hold (slot offset 20) is stored and notified only when it changes, and the home store's reserve lives at header offset 40 (decision 0013)", "[adapter][segment][space]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home);
  auto slot = claim(*s, "idx");
  CHECK(slot->hold() == backend_hold::none);
  const auto before = slot->change_counter();
  slot->set_hold(backend_hold::low_disk_space);
  CHECK(slot->hold() == backend_hold::low_disk_space);
  CHECK(slot->change_counter() == before + 1);
  slot->set_hold(backend_hold::low_disk_space);  // no change: no write, no wake
  CHECK(slot->change_counter() == before + 1);
  s->set_store_reserve(12u << 20);
  auto view = segment_view::open(home).value();
  CHECK(view->hold(slot->index()) == backend_hold::low_disk_space);
  CHECK(view->store_reserve() == (12u << 20));
  auto bytes = read_file(s->directory() / "readiness.seg");
  CHECK(get_le<std::uint32_t>(bytes, 128 + 20) == 1u);
  CHECK(get_le<std::uint64_t>(bytes, 40) == (12u << 20));
  slot->set_hold(backend_hold::none);
  CHECK(view->hold(slot->index()) == backend_hold::none);
  CHECK(slot->change_counter() == before + 2);
}

TEST_CASE("readiness segment: no stale reset while another runtime is still attached", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto first = attach(home);
  claim(*first, "idx")->publish(readiness_state::ready, readiness_reason::none, 0);
  auto second = attach(home);  // waits for nothing: the first one already downgraded
  CHECK(second->reset_count() == 1);
  first.reset();
  auto third = attach(home);
  CHECK(third->reset_count() == 1);
  CHECK(claim(*third, "idx")->read().state == readiness_state::ready);
  CHECK(read_readiness(home, "idx")->state == readiness_state::ready);
}

TEST_CASE("readiness segment: a claimed slot keeps its segment attached after the last segment handle goes", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home);
  auto slot = claim(*s, "idx");
  slot->publish(readiness_state::ready, readiness_reason::none, 0);
  s.reset();
  CHECK(read_readiness(home, "idx")->state == readiness_state::ready);
  slot.reset();
  CHECK(read_readiness(home, "idx")->state == readiness_state::unknown);
}

TEST_CASE("read_readiness: no segment, unknown id, attached and detached runtime", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);

  auto none = read_readiness(home, "idx");
  REQUIRE(none);
  CHECK(none->state == readiness_state::unknown);
  CHECK(none->owner_epoch == 0);
  CHECK(read_readiness(dir / "missing", "idx")->state == readiness_state::unknown);
  CHECK_FALSE(fs::exists(fs::canonical(home) / "dix"));  // readers create nothing

  auto invalid = read_readiness(home, "a/b");
  REQUIRE_FALSE(invalid);
  CHECK(invalid.error().value() == errc::invalid_argument);

  {
    auto s = attach(home);
    auto slot = claim(*s, "idx");
    slot->raise_epoch_floor(4);
    CHECK(slot->mint_epoch().value() == 5);
    slot->publish(readiness_state::rebuilding, readiness_reason::rebuild_requested, 1);

    auto unknown = read_readiness(home, "other");
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().value() == errc::not_registered);

    auto live = read_readiness(home, "idx");
    REQUIRE(live);
    CHECK(live->state == readiness_state::rebuilding);
    CHECK(live->reason == readiness_reason::rebuild_requested);
    CHECK(live->rebuild_attempts == 1);
    CHECK(live->owner_epoch == 5);
  }
  auto detached = read_readiness(home, "idx");
  REQUIRE(detached);
  CHECK(detached->state == readiness_state::unknown);
  CHECK(detached->reason == readiness_reason::none);
  CHECK(detached->rebuild_attempts == 0);
  CHECK(detached->owner_epoch == 5);
}

namespace {

// A child process that attaches to the segment at `home`, claims "idx", mints an epoch above
// `floor`, lets `prepare` set the slot up, publishes `ready`, tells the parent 'r' and stays
// attached until it is killed.
template <class Prepare>
pid_t ready_owner_child(const fs::path& home, pipe_pair& to_parent, std::uint64_t floor, Prepare prepare) {
  return fork_child([&]() {
    auto s = readiness_segment::attach(home);
    if (!s) return 10;
    auto slot = (*s)->claim("idx");
    if (!slot) return 11;
    (*slot)->raise_epoch_floor(floor);
    if (!(*slot)->mint_epoch()) return 13;
    prepare(**slot);
    (*slot)->publish(readiness_state::ready, readiness_reason::none, 0);
    char ready = 'r';
    if (::write(to_parent.write_end, &ready, 1) != 1) return 12;
    for (;;) ::pause();  // attached until killed
  });
}

}  // namespace

TEST_CASE("readiness segment: another process publishes ready, read_readiness sees it, and after its SIGKILL the next attach resets", "[system][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  pipe_pair to_parent;
  pid_t child = ready_owner_child(home, to_parent, 8, [](segment_slot&) {});  // epoch 9
  REQUIRE(to_parent.receive() == 'r');

  auto live = read_readiness(home, "idx");
  REQUIRE(live);
  CHECK(live->state == readiness_state::ready);
  CHECK(live->owner_epoch == 9);

  REQUIRE(::kill(child, SIGKILL) == 0);
  CHECK(wait_exit(child) == 128 + SIGKILL);

  auto dead = read_readiness(home, "idx");
  REQUIRE(dead);
  CHECK(dead->state == readiness_state::unknown);
  CHECK(dead->owner_epoch == 9);

  auto s = attach(home);
  CHECK(s->reset_count() == 2);  // the child's first attach, then this one
  auto r = claim(*s, "idx")->read();
  CHECK(r.state == readiness_state::unknown);
  CHECK(r.reason == readiness_reason::none);
  CHECK(r.owner_epoch == 9);
}

namespace {

// What a reader saw while the first attacher after a crash held attach.lock's write lock, its
// stale reset not yet run: read at the attacher's map of readiness.seg (the hook).
struct attach_window {
  fs::path home;
  bool seen = false;
  readiness state;
  coverage covered;
} window;

void read_in_attach_window(const fs::path& segment) {
  if (window.seen || segment.filename() != "readiness.seg") return;
  window.seen = true;
  // OFD locks conflict between open file descriptions, in one process too: this tests
  // attach.lock as another process's reader would.
  if (auto r = read_readiness(window.home, "idx")) window.state = *r;
  window.covered = read_coverage(window.home, "idx", std::chrono::milliseconds(60000));
}

}  // namespace

TEST_CASE("readiness segment: while the first attacher after a crash holds attach.lock before its stale reset, readers see unknown, not the crashed run's ready and coverage", "[system][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  pipe_pair to_parent;
  pid_t child = ready_owner_child(home, to_parent, 0, [](segment_slot& slot) {
    slot.set_coverage_time(process_index_time().next(system_clock().wall_now_ns()));
  });
  REQUIRE(to_parent.receive() == 'r');
  REQUIRE(::kill(child, SIGKILL) == 0);
  REQUIRE(wait_exit(child) == 128 + SIGKILL);
  CHECK(read_readiness(home, "idx")->state == readiness_state::unknown);  // nobody attached

  window = attach_window{};
  window.home = home;
  test_set_segment_map_hook(read_in_attach_window);
  auto s = readiness_segment::attach(home);
  test_set_segment_map_hook(nullptr);
  REQUIRE(s);
  REQUIRE(window.seen);
  // The crashed run may have written a condemnation marker and died before publishing it
  // (§10.4): its `ready` must not be served again before the reset clears it.
  CHECK(window.state.state == readiness_state::unknown);
  CHECK(window.covered.state == coverage_state::unknown);
  // Once attached (downgraded to the read lock): the reset slot, and a runtime attached.
  auto after = read_readiness(home, "idx");
  REQUIRE(after);
  CHECK(after->state == readiness_state::unknown);
  auto slot = (*s)->claim("idx");
  REQUIRE(slot);
  (*slot)->publish(readiness_state::ready, readiness_reason::none, 0);
  CHECK(read_readiness(home, "idx")->state == readiness_state::ready);
}

TEST_CASE("readiness segment: a futex waiter is woken by another process's publish", "[system][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home);
  auto slot = claim(*s, "idx");
  pipe_pair go;
  pipe_pair done;
  // Forked before any thread exists here; the child attaches as a second runtime (no reset).
  pid_t child = fork_child([&]() {
    char c = 0;
    if (::read(go.read_end, &c, 1) != 1) return 10;
    auto seg = readiness_segment::attach(home);
    if (!seg) return 11;
    auto child_slot = (*seg)->claim("idx");
    if (!child_slot) return 12;
    (*child_slot)->publish(readiness_state::ready, readiness_reason::none, 0);
    char ok = 'p';
    if (::write(done.write_end, &ok, 1) != 1) return 13;
    return 0;
  });

  auto segment_seen = s->segment_change_counter();
  auto slot_seen = slot->change_counter();
  std::atomic<pid_t> segment_tid{0}, slot_tid{0};
  std::uint64_t segment_after = 0, slot_after = 0;
  std::chrono::steady_clock::duration segment_took{}, slot_took{};
  std::thread segment_waiter([&] {
    segment_tid = static_cast<pid_t>(::syscall(SYS_gettid));
    auto start = std::chrono::steady_clock::now();
    segment_after = s->wait_change(segment_seen, 10s);
    segment_took = std::chrono::steady_clock::now() - start;
  });
  std::thread slot_waiter([&] {
    slot_tid = static_cast<pid_t>(::syscall(SYS_gettid));
    auto start = std::chrono::steady_clock::now();
    slot_after = slot->wait_change(slot_seen, 10s);
    slot_took = std::chrono::steady_clock::now() - start;
  });
  // Both waiters must be asleep in FUTEX_WAIT before the child publishes, so the wake (not the
  // pre-check) is what returns them. Bounded spin on /proc, no sleep.
  auto spin_deadline = std::chrono::steady_clock::now() + 10s;
  bool both_asleep = false;
  while (!both_asleep && std::chrono::steady_clock::now() < spin_deadline) {
    both_asleep = segment_tid != 0 && slot_tid != 0 && in_futex_wait(segment_tid) && in_futex_wait(slot_tid);
    if (!both_asleep) std::this_thread::yield();
  }
  CHECK(both_asleep);
  go.send('g');
  segment_waiter.join();
  slot_waiter.join();
  CHECK(done.receive() == 'p');
  CHECK(wait_exit(child) == 0);

  CHECK(segment_after != segment_seen);
  CHECK(slot_after != slot_seen);
  CHECK(segment_took < 5s);
  CHECK(slot_took < 5s);
  CHECK(slot->read().state == readiness_state::ready);
}

TEST_CASE("readiness segment: readers testing attach.lock while runtimes attach never prevent the stale reset (behaviour 29)", "[system][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  attach(home);  // create the segment
  // Two reader processes read the slot as fast as they can (each read tests attach.lock with
  // F_OFD_GETLK) until the parent closes their pipe.
  pipe_pair stop;
  std::vector<pid_t> readers;
  for (int i = 0; i < 2; ++i) {
    readers.push_back(fork_child([&]() {
      ::close(stop.write_end);
      ::fcntl(stop.read_end, F_SETFL, O_NONBLOCK);
      for (;;) {
        (void)read_readiness(home, "idx");
        char c = 0;
        if (::read(stop.read_end, &c, 1) == 0) return 0;  // the parent closed the pipe
      }
    }));
  }
  epoch_t last = 0;
  for (int round = 0; round < 40; ++round) {
    // A run that published `ready` and a coverage time, then crashed (SIGKILL while attached).
    pipe_pair to_parent;
    pid_t crashed = fork_child([&]() {
      auto s = readiness_segment::attach(home);
      if (!s) return 10;
      auto slot = (*s)->claim("idx");
      if (!slot) return 11;
      if (!(*slot)->mint_epoch()) return 13;
      (*slot)->set_coverage_time(1000 + static_cast<index_time_t>(round));
      (*slot)->publish(readiness_state::ready, readiness_reason::none, 0);
      char ready = 'r';
      if (::write(to_parent.write_end, &ready, 1) != 1) return 12;
      for (;;) ::pause();
    });
    REQUIRE(to_parent.receive() == 'r');
    REQUIRE(::kill(crashed, SIGKILL) == 0);
    REQUIRE(wait_exit(crashed) == 128 + SIGKILL);
    // The next runtime's attach resets the slot although readers keep testing the lock.
    auto s = attach(home);
    auto slot = claim(*s, "idx");
    auto r = slot->read();
    CHECK(r.state == readiness_state::unknown);
    CHECK(slot->coverage_time() == 0);
    CHECK(r.owner_epoch > last);  // epochs stay monotone across the crashes
    last = r.owner_epoch;
  }
  ::close(stop.write_end);
  stop.write_end = -1;
  for (auto pid : readers) CHECK(wait_exit(pid) == 0);
}

// -- the Boost.Interprocess mapping and the publisher's slot operations (decision 0007) -------

namespace {

// The test hook's state: the path swapped over readiness.seg at the first call, and the calls.
fs::path swap_in;
int map_hook_calls = 0;

// Between the validated open and Boost's open by path: renames `swap_in` over the segment.
void swap_segment(const fs::path& segment) {
  if (map_hook_calls++ == 0) fs::rename(swap_in, segment);
}

// Installs the hook for the scope.
struct map_hook_scope {
  explicit map_hook_scope(fs::path replacement) {
    swap_in = std::move(replacement);
    map_hook_calls = 0;
    test_set_segment_map_hook(swap_segment);
  }
  ~map_hook_scope() { test_set_segment_map_hook(nullptr); }
  map_hook_scope(const map_hook_scope&) = delete;
  map_hook_scope& operator=(const map_hook_scope&) = delete;
};

}  // namespace

TEST_CASE("readiness segment: a readiness.seg that is a symlink is refused with io_error by attach and by the views", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  attach(home);  // creates dix/ and a valid segment
  auto path = segment_file(home);
  auto target = dir / "elsewhere.seg";
  fs::rename(path, target);
  fs::create_symlink(target, path);

  auto attached = readiness_segment::attach(home);
  REQUIRE_FALSE(attached);
  CHECK(attached.error().value() == errc::io_error);
  CHECK(attached.error().message().find(path.string()) != std::string::npos);
  for (auto mode : {segment_view::access::read_only, segment_view::access::read_write}) {
    auto view = segment_view::open(home, mode);
    REQUIRE_FALSE(view);
    CHECK(view.error().value() == errc::io_error);
  }
  CHECK(fs::is_symlink(path));  // refused, not replaced
}

TEST_CASE("readiness segment: a process keeps the view it opened while readiness.seg is the same file, and opens afresh once it was replaced, removed or made a symlink", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  {
    auto s = attach(home);
    claim(*s, "first");
  }
  auto v1 = segment_view::open(home).value();
  REQUIRE(v1);
  CHECK(segment_view::open(home).value() == v1);  // kept: the same view, the same mapping
  auto writable = segment_view::open(home, segment_view::access::read_write).value();
  REQUIRE(writable);
  CHECK(writable != v1);  // kept per mode
  CHECK(segment_view::open(home, segment_view::access::read_write).value() == writable);

  // A new segment at the same path (the home deleted and made again): a new file, so a new view
  // that reads it, never the kept one of the file that is gone.
  fs::remove_all(home / "dix");
  CHECK(segment_view::open(home).value() == nullptr);  // gone: no segment, as without the kept view
  {
    auto s = attach(home);
    claim(*s, "second");
  }
  auto v2 = segment_view::open(home).value();
  REQUIRE(v2);
  CHECK(v2 != v1);
  CHECK(v2->find("second").has_value());
  CHECK_FALSE(v2->find("first").has_value());
  CHECK(v1->find("first").has_value());  // a view still held keeps reading its own file
  auto w2 = segment_view::open(home, segment_view::access::read_write).value();
  REQUIRE(w2);
  CHECK(w2->find("second").has_value());

  // Opened to other users after the writer's view was kept: a writer trusts it no more
  // (decision 0011), as a fresh open would refuse it. A reader opens it afresh too: a changed
  // mode or owner is a changed identity.
  const auto path = segment_file(home);
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  auto untrusted = segment_view::open(home, segment_view::access::read_write);
  REQUIRE_FALSE(untrusted);
  CHECK(untrusted.error().value() == errc::io_error);
  auto reopened = segment_view::open(home).value();
  REQUIRE(reopened);
  CHECK(reopened != v2);
  CHECK(segment_view::open(home).value() == reopened);
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  auto trusted = segment_view::open(home, segment_view::access::read_write).value();
  REQUIRE(trusted);

  // Truncated and made again in place with another size (the same inode; nothing of dix does
  // this to a valid segment, an operator might), with no open between: the kept views are not
  // handed out again (their mappings are of the old size) and the new segment is read.
  v1.reset();
  v2.reset();
  w2.reset();
  writable.reset();
  reopened.reset();
  trusted.reset();
  fs::resize_file(path, 0);
  {
    auto s = attach(home, 4);
    claim(*s, "third");
  }
  auto v3 = segment_view::open(home).value();
  REQUIRE(v3);
  CHECK(v3->slot_count() == 4);
  CHECK(v3->find("third").has_value());
  auto w3 = segment_view::open(home, segment_view::access::read_write).value();
  REQUIRE(w3);
  CHECK(w3->slot_count() == 4);

  // Its magic zeroed in place under the kept views (an interrupted creation's mark): no segment,
  // as an open answers.
  v3.reset();
  w3.reset();
  patch_file(path, 0, std::string(8, '\0'));
  CHECK(segment_view::open(home).value() == nullptr);
  CHECK(segment_view::open(home, segment_view::access::read_write).value() == nullptr);
  attach(home);  // made again

  // Made a symlink to the very file the kept view maps: refused as any symlink is.
  fs::rename(path, dir / "moved.seg");
  fs::create_symlink(dir / "moved.seg", path);
  auto refused = segment_view::open(home);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().value() == errc::io_error);
}

TEST_CASE("readiness segment: a view tests attach.lock through the descriptor it keeps and opens it afresh once the file was removed and made again", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto runtime = attach(home);
  auto view = segment_view::open(home).value();
  REQUIRE(view);
  CHECK(view->runtime_attached().value());
  runtime.reset();  // detached: its read lock is gone
  CHECK_FALSE(view->runtime_attached().value());
  // attach.lock removed (say by someone clearing "stale locks") and made again by the next
  // runtime, which locks the new file: the kept descriptor's file is unlocked, the path's is not.
  const auto lock_file = fs::canonical(home) / "dix" / "attach.lock";
  fs::remove(lock_file);
  auto next = attach(home);
  REQUIRE(fs::exists(lock_file));
  CHECK(view->runtime_attached().value());
  CHECK(segment_view::open(home).value() == view);  // the segment itself is the same file
  next.reset();
  CHECK_FALSE(view->runtime_attached().value());
  fs::remove(lock_file);
  CHECK_FALSE(view->runtime_attached().value());  // no lock file: nobody attached
  next = attach(home);
  CHECK(view->runtime_attached().value());
}

TEST_CASE("readiness segment: a file renamed over readiness.seg after its validated open is not mapped (io_error)", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  {
    auto s = attach(home);
    claim(*s, "idx");
  }
  auto path = segment_file(home);
  auto replacement = dir / "replacement.seg";

  SECTION("attach") {
    fs::copy_file(path, replacement);  // a valid segment: only its identity differs
    map_hook_scope hook(replacement);
    auto s = readiness_segment::attach(home);
    REQUIRE_FALSE(s);
    CHECK(s.error().value() == errc::io_error);
    CHECK(s.error().message().find("not the file opened and validated") != std::string::npos);
    CHECK(s.error().message().find(path.string()) != std::string::npos);
    CHECK(map_hook_calls == 1);
  }
  for (auto mode : {segment_view::access::read_only, segment_view::access::read_write}) {
    SECTION(mode == segment_view::access::read_only ? "a read-only view" : "a read-write view") {
      fs::copy_file(path, replacement);
      map_hook_scope hook(replacement);
      auto view = segment_view::open(home, mode);
      REQUIRE_FALSE(view);
      CHECK(view.error().value() == errc::io_error);
      CHECK(view.error().message().find("not the file opened and validated") != std::string::npos);
    }
  }
  SECTION("a symlink to another segment") {
    fs::copy_file(path, dir / "other.seg");
    fs::create_symlink(dir / "other.seg", replacement);
    map_hook_scope hook(replacement);
    auto view = segment_view::open(home, segment_view::access::read_only);
    REQUIRE_FALSE(view);
    CHECK(view.error().value() == errc::io_error);
  }
  // Without the swap the same file maps as before.
  if (!fs::is_symlink(path)) {
    CHECK(readiness_segment::attach(home));
    auto view = segment_view::open(home);
    REQUIRE(view);
    REQUIRE(*view);
    CHECK((*view)->find("idx").has_value());
  }
}

TEST_CASE("readiness segment: apply stores a whole publication with one notify and zeroes coverage unless ready", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home);
  auto slot = claim(*s, "idx");
  auto slot_before = slot->change_counter();
  auto segment_before = s->segment_change_counter();

  auto counter = slot->apply({readiness_state::ready, readiness_reason::none, 0, 1'500u, 250u});
  CHECK(counter == slot_before + 1);
  CHECK(slot->change_counter() == counter);
  CHECK(s->segment_change_counter() == segment_before + 1);  // one notify for four fields
  CHECK(slot->read().state == readiness_state::ready);
  CHECK(slot->coverage_time() == 1'500);
  CHECK(slot->lag_gate() == 250);

  counter = slot->apply({readiness_state::ready, readiness_reason::none, 0, std::nullopt, std::nullopt});
  CHECK(counter == slot_before + 2);
  CHECK(slot->coverage_time() == 1'500);  // absent: unchanged
  CHECK(slot->lag_gate() == 250);

  counter = slot->apply({readiness_state::needs_rebuild, readiness_reason::log_corrupt, 2, 9'000u, 0u});
  CHECK(counter == slot_before + 3);
  auto bytes = read_file(segment_file(home));
  CHECK(get_le<std::uint32_t>(bytes, 128 + 0) == 3u);   // state needs-rebuild
  CHECK(get_le<std::uint32_t>(bytes, 128 + 4) == 5u);   // reason log-corrupt
  CHECK(get_le<std::uint32_t>(bytes, 128 + 8) == 2u);   // rebuild_attempts
  CHECK(get_le<std::uint32_t>(bytes, 128 + 16) == 0u);  // lag_gate as carried
  CHECK(get_le<std::uint64_t>(bytes, 128 + 32) == 0u);  // coverage_time: not ready, so 0
  CHECK(get_le<std::uint64_t>(bytes, 128 + 40) == counter);
}

TEST_CASE("readiness segment: find returns the slot any runtime claimed and never claims one", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home);
  auto counter = s->segment_change_counter();
  CHECK(s->find("idx") == nullptr);
  CHECK(s->find("not a valid id") == nullptr);
  CHECK(s->segment_change_counter() == counter);
  auto view = segment_view::open(home);
  REQUIRE(view);
  REQUIRE(*view);
  CHECK((*view)->claimed().empty());

  auto other_runtime = attach(home);
  auto claimed = claim(*other_runtime, "idx");
  auto found = s->find("idx");
  REQUIRE(found);
  CHECK(found->index() == claimed->index());
  found->apply({readiness_state::rebuilding, readiness_reason::rebuild_requested, 1, std::nullopt, std::nullopt});
  CHECK(claimed->read().state == readiness_state::rebuilding);
}

TEST_CASE("readiness segment: a waiter on a read-only view's futex is woken by another thread's publish", "[adapter][segment]") {
  temp_dir dir;
  auto home = make_home(dir);
  auto s = attach(home);
  auto slot = claim(*s, "idx");
  auto view = segment_view::open(home, segment_view::access::read_only);
  REQUIRE(view);
  REQUIRE(*view);
  CHECK((*view)->slot(slot->index()) == nullptr);  // really read-only
  auto seen = (*view)->segment_change_counter();
  std::atomic<pid_t> tid{0};
  std::uint64_t after = 0;
  std::thread waiter([&] {
    tid = static_cast<pid_t>(::syscall(SYS_gettid));
    after = (*view)->wait_change(seen, 10s);
  });
  auto deadline = std::chrono::steady_clock::now() + 10s;
  bool asleep = false;
  while (!asleep && std::chrono::steady_clock::now() < deadline) {
    asleep = tid != 0 && in_futex_wait(tid);
    if (!asleep) std::this_thread::yield();
  }
  CHECK(asleep);
  auto start = std::chrono::steady_clock::now();
  slot->apply({readiness_state::ready, readiness_reason::none, 0, std::nullopt, std::nullopt});
  waiter.join();
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  CHECK(after == seen + 1);
  CHECK((*view)->read(slot->index()).state == readiness_state::ready);
}

TEST_CASE("readiness segment: a dix/ directory, lock file or segment open to other users, or owned by another user, is refused naming the path and the remedy (formats.md §4.1)", "[adapter][segment][security]") {
  temp_dir dir;
  auto home = make_home(dir);
  REQUIRE(readiness_segment::attach(home, 4));  // made by dix: private, ours
  const auto dix_dir = fs::canonical(home) / "dix";
  struct place {
    fs::path path;
    fs::perms wide;
    const char* wanted;
  };
  const std::vector<place> places{{dix_dir, fs::perms::all, "0700"},
                                  {dix_dir / "runner", fs::perms::all, "0700"},
                                  {dix_dir / "attach.lock", fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read, "0600"},
                                  {dix_dir / "readiness.lock", fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_write, "0600"},
                                  {dix_dir / "readiness.seg", fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_write, "0600"}};
  for (const auto& p : places) {
    CAPTURE(p.path);
    const auto before = fs::status(p.path).permissions();
    fs::permissions(p.path, p.wide);
    auto wide = readiness_segment::attach(home, 4);
    REQUIRE_FALSE(wide);
    CHECK(wide.error().value() == errc::io_error);
    CHECK_THAT(wide.error().message(), Catch::Contains(p.path.string() + " has mode") &&
                                           Catch::Contains(std::string("chmod ") + p.wanted + " " + p.path.string()));
    // Write bits for group or others: "change"; read bits alone: "open".
    const bool writable = (p.wide & (fs::perms::group_write | fs::perms::others_write)) != fs::perms::none;
    CHECK_THAT(wide.error().message(), Catch::Contains(writable ? "other users could change it" : "other users could open it"));
    fs::permissions(p.path, before);
    if (::geteuid() == 0) {  // only root can give a file away
      REQUIRE(::lchown(p.path.c_str(), 4242, static_cast<gid_t>(-1)) == 0);
      auto foreign = readiness_segment::attach(home, 4);
      REQUIRE_FALSE(foreign);
      CHECK(foreign.error().value() == errc::io_error);
      CHECK_THAT(foreign.error().message(), Catch::Contains(p.path.string() + " is owned by uid 4242") &&
                                                Catch::Contains("remove it, or chown it to uid 0"));
      if (p.path.filename() == "readiness.seg") {
        // A writer of the segment (dix rebuild) trusts it as a runtime does; a reader only reads.
        auto writer = segment_view::open(home, segment_view::access::read_write);
        REQUIRE_FALSE(writer);
        CHECK_THAT(writer.error().message(), Catch::Contains("is owned by uid 4242"));
        CHECK(segment_view::open(home, segment_view::access::read_only));
      }
      REQUIRE(::lchown(p.path.c_str(), 0, static_cast<gid_t>(-1)) == 0);
    } else {
      WARN("not root: the foreign-owner half needs chown and is skipped");
    }
    REQUIRE(readiness_segment::attach(home, 4));  // restored: accepted again
  }
}

TEST_CASE("readiness segment: the owner clears the coverage demand only when coverage_time reaches it, and a waiter's concurrent raise survives", "[adapter][segment][coverage]") {
  temp_dir home;
  auto seg = readiness_segment::attach(home.path()).value();
  auto slot = seg->claim("idx").value();
  CHECK_FALSE(slot->clear_covered_demand(100));  // no demand: nothing to clear
  slot->raise_coverage_demand(150);
  CHECK_FALSE(slot->clear_covered_demand(100));  // not reached
  CHECK(slot->coverage_demand() == 150);
  const auto counter = slot->change_counter();
  CHECK(slot->clear_covered_demand(150));
  CHECK(slot->coverage_demand() == 0);
  CHECK(slot->change_counter() > counter);  // the clear notifies
  // A waiter raising past what the owner covers, while the owner clears what it covers: the
  // waiter's last (largest) demand is never lost — a plain store of 0 after the load would lose it.
  for (int round = 0; round < 50; ++round) {
    constexpr index_time_t covered = 5000, last = 10000;
    std::atomic<bool> done{false};
    std::thread waiter([&] {
      for (index_time_t since = 1; since <= last; ++since) slot->raise_coverage_demand(since);
      done = true;
    });
    while (!done) (void)slot->clear_covered_demand(covered);
    waiter.join();
    (void)slot->clear_covered_demand(covered);
    REQUIRE(slot->coverage_demand() == last);
    REQUIRE(slot->clear_coverage_demand(last));
  }
}
