// The backend conformance kit (<dix/testing/backend_conformance.hpp>) run against the shipped
// xapian_backend: its listing is stored_records(), its busy resource the writer lock (a second
// Xapian::WritableDatabase the kit holds open).
#include <catch2/catch.hpp>

#include <xapian.h>

#include <dix/backends/xapian_backend.hpp>
#include <dix/testing/backend_conformance.hpp>

namespace {

using dix::testing::backend_subject;

backend_subject xapian_subject() {
  backend_subject s;
  s.name = "xapian";
  s.make = [](const std::filesystem::path& dir) -> std::shared_ptr<dix::backend> {
    dix::xapian_options o;
    o.path = dir / "index";
    o.fields = {{"title", {"S", 2}}, {"body", {"", 1}}};
    o.max_queued_bytes = 4096;
    return dix::xapian_backend::create("conformance", o).value();
  };
  s.projection = [](std::uint64_t n) {
    return dix::encode_fields({{"title", "record " + std::to_string(n)}, {"body", "conformance text"}});
  };
  s.unindexable = [] { return dix::encode_fields({{"unknown", "x"}}); };  // unknown_field
  s.stored = [](dix::backend& b) {
    auto rows = dynamic_cast<dix::xapian_backend&>(b).stored_records();
    REQUIRE(rows);
    dix::testing::stored_records out;
    for (const auto& row : *rows) out[{row.log, row.table, row.record_id}] = row.version;
    return out;
  };
  // The number only projection(n)'s title holds, as a term.
  s.finds = [](dix::backend& b, std::uint64_t n) {
    auto rows = dynamic_cast<dix::xapian_backend&>(b).search(std::to_string(n), 0, 1000);
    REQUIRE(rows);
    std::vector<dix::testing::stored_key> out;
    for (const auto& row : rows->rows) out.push_back({row.ref.log, row.ref.table, row.ref.record_id});
    return out;
  };
  s.defer_batch_bytes = 4096;
  // The writer lock: a WritableDatabase held open over the index's path defers deliveries.
  s.occupy = [](const std::filesystem::path& dir) -> std::shared_ptr<void> {
    return std::make_shared<Xapian::WritableDatabase>((dir / "index").string(), Xapian::DB_CREATE_OR_OPEN);
  };
  return s;
}

}  // namespace

DIX_BACKEND_CONFORMANCE("xapian conformance", xapian_subject)
DIX_BACKEND_CONFORMANCE_BUSY_RESOURCE("xapian conformance", xapian_subject)
