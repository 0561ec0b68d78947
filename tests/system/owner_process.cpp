// `dix_owner_process`: an owner runtime in a process of its own, for the system tests of readers
// in another process (tests/system/query_only_test.cpp). Exec'd through the harness, never forked
// from a test (a forked child inherits RocksDB's in-process lock table, protocol.md §9.8).
//
//   dix_owner_process --dir DIR --commands-fd N [--search] [--remote-port P]
//
// It opens DIR/db (log "main", table 1), creates a runtime and registers `by-value`: a
// rocksdb_index_backend in DIR/by-value, wrapped (tests/support/wrapped_backend.hpp) so the test
// can hold its barriers, indexing each record's payload as its one key. With --search it also
// registers `fulltext`, a xapian_backend in DIR/fulltext (field `text`, prefix T, unprefixed
// terms too, over the payload), and `similar`, an hnsw_backend in DIR/similar (l2, dimension 4,
// over vector_of(payload)), for the readers of those backends. With --remote-port, by-value is a
// remote_backend (<dix/remote.hpp>) to a `dix serve-backend` on 127.0.0.1:P instead (not wrapped:
// hold, release and rebuild-held fail). Then it prints "owner started"
// and reads commands, one per line, from file descriptor N, answering each on stdout:
// (each line starts with a tag, "#n ", that its answer starts with too)
//   #n put KEY PAYLOAD  → "#n committed TIME SEQUENCE" (one transaction putting KEY = PAYLOAD)
//   #n del KEY          → "#n committed TIME SEQUENCE"
//   #n cover TIME       → "#n covered" once by-value covers TIME, or "#n error …" (30 s)
//   #n hold             → "#n held" (by-value's barriers wait, flush(shutdown) aside)
//   #n release          → "#n released" (they go on)
//   #n rebuild-held     → "#n reset-held" (a rebuild of by-value requested; its reset is held,
//                         never to finish: the test kills the owner inside it)
// End of input stops it: "stopped" once the runtime stopped and the store closed; exit 0. A
// failure prints "error …" (after the tag when a command failed) and exits 1.
// tests/support/owner_process.hpp is the test's side.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <dix/backends/hnsw_backend.hpp>
#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/backends/xapian_backend.hpp>
#include <dix/remote.hpp>
#include <dix/runtime.hpp>

#include "support/index_registration.hpp"
#include "support/owner_process.hpp"
#include "support/wrapped_backend.hpp"

using namespace dix;

namespace {

int fail(const std::string& what, const std::string& tag = "") {
  std::cout << tag << "error " << what << std::endl;
  return 1;
}

// One line from `fd` (without its newline); false at end of input.
bool read_line(int fd, std::string& line) {
  line.clear();
  for (;;) {
    char c = 0;
    auto n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return !line.empty();
    if (c == '\n') return true;
    line.push_back(c);
  }
}

registration search_registration(std::shared_ptr<backend> b, projection p) {
  registration r;
  r.backend = std::move(b);
  r.projections[table_ref{"main", 1}] = std::move(p);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir_arg;
  int commands = -1;
  bool search = false;
  int remote_port = 0;
  bool standby = false;  // waits (open_standby) until the store's owner is gone
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) dir_arg = argv[++i];
    else if (a == "--commands-fd" && i + 1 < argc) commands = std::atoi(argv[++i]);
    else if (a == "--search") search = true;
    else if (a == "--remote-port" && i + 1 < argc) remote_port = std::atoi(argv[++i]);
    else if (a == "--standby") standby = true;
    else return fail("unknown argument " + a);
  }
  if (dir_arg.empty() || commands < 0) return fail("usage: dix_owner_process --dir DIR --commands-fd N [--search]");
  const std::filesystem::path dir = dir_arg;

  store_options so;
  so.log_name = "main";
  standby_events events;
  events.waiting = [] { std::cout << "standby waiting" << std::endl; };
  auto store = standby ? primary_store::open_standby(dir / "db", so, events) : primary_store::open(dir / "db", so);
  if (!store) return fail(store.error().to_string());
  if (auto ok = (*store)->create_table(1); !ok) return fail(ok.error().to_string());
  auto rt = runtime::create({*store});
  if (!rt) return fail(rt.error().to_string());

  std::shared_ptr<test::wrapped_backend> by_value;
  if (remote_port > 0) {
    remote_backend_options ro;
    ro.id = "by-value";
    ro.kind = "rocksdb_index";
    ro.port = static_cast<std::uint16_t>(remote_port);
    auto remote = remote_backend::create(ro);
    if (!remote) return fail(remote.error().to_string());
    if (auto ok = (*rt)->register_index(test::index_registration(*remote)); !ok) return fail(ok.error().to_string());
  } else {
    by_value = std::make_shared<test::wrapped_backend>(test::make_index_at(dir / "by-value", "by-value"));
    if (auto ok = (*rt)->register_index(test::index_registration(by_value)); !ok) return fail(ok.error().to_string());
  }
  if (search) {
    xapian_options xo;
    xo.path = dir / "fulltext";
    xo.fields["text"] = xapian_field{"T", 1};
    auto fulltext = xapian_backend::create("fulltext", xo);
    if (!fulltext) return fail(fulltext.error().to_string());
    auto text = [](std::string_view payload, const record_info&) -> projection_result {
      return encode_fields({{"text", std::string(payload)}});
    };
    if (auto ok = (*rt)->register_index(search_registration(*fulltext, text)); !ok) return fail(ok.error().to_string());
    hnsw_options ho;
    ho.state_dir = dir / "similar";
    ho.dimension = test::owner_vector_dimension;
    auto similar = hnsw_backend::create("similar", ho);
    if (!similar) return fail(similar.error().to_string());
    auto vector = [](std::string_view payload, const record_info&) -> projection_result {
      const auto v = test::vector_of(payload);
      return encode_vector(v.data(), v.size());
    };
    if (auto ok = (*rt)->register_index(search_registration(*similar, vector)); !ok) return fail(ok.error().to_string());
  }
  std::cout << "owner started" << std::endl;

  std::string line;
  while (read_line(commands, line)) {
    std::istringstream words(line);
    std::string tag, verb, key, payload;
    words >> tag >> verb >> key >> payload;
    tag += " ";
    if (verb == "put" || verb == "del") {
      auto txn = (*store)->begin();
      if (verb == "put") txn.put(1, key, payload);
      else txn.del(1, key);
      auto committed = txn.commit();
      if (!committed) return fail(committed.error().to_string(), tag);
      std::cout << tag << "committed " << committed->time << " " << committed->sequence << std::endl;
    } else if (verb == "cover") {
      auto waiting = (*rt)->wait_for_coverage("by-value", std::stoull(key), std::chrono::milliseconds(30000));
      auto r = waiting.get();
      if (!r) {
        std::cout << tag << "error " << r.error().to_string() << std::endl;
      } else {
        std::cout << tag << "covered" << std::endl;
      }
    } else if (!by_value) {
      return fail("not with --remote-port: " + line, tag);
    } else if (verb == "hold") {
      by_value->hold_flushes = true;
      std::cout << tag << "held" << std::endl;
    } else if (verb == "release") {
      by_value->release_flushes();
      std::cout << tag << "released" << std::endl;
    } else if (verb == "rebuild-held") {
      by_value->hold_resets = true;
      if (!(*rt)->request_rebuild("by-value")) return fail("the rebuild was not requested", tag);
      if (!by_value->wait_reset_held(std::chrono::seconds(60))) return fail("no reset came", tag);
      std::cout << tag << "reset-held" << std::endl;
    } else {
      return fail("unknown command " + line, tag);
    }
  }
  if (auto stopped = (*rt)->stop().get(); !stopped) return fail(stopped.error().to_string());
  rt->reset();
  if (auto closed = (*store)->close(); !closed) return fail(closed.error().to_string());
  std::cout << "stopped" << std::endl;
  return 0;
}
