// messages/errors: dix::errc ↔ caf::error (api.md §1).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/make_message.hpp>
#include <caf/exit_reason.hpp>
#include <caf/pec.hpp>
#include <caf/sec.hpp>

#include "messages/errors.hpp"
#include "support/caf_fixture.hpp"

using dix::errc;

namespace {

std::vector<errc> every_errc() {
  std::vector<errc> all;
  for (std::uint8_t i = 0; i < dix::errc_count; ++i) all.push_back(static_cast<errc>(i));
  return all;
}

}  // namespace

TEST_CASE("errors: every errc round-trips through make_error and to_errc", "[actor][messages]") {
  for (auto code : every_errc()) {
    CAPTURE(dix::to_string(code));
    CHECK(dix::to_errc(dix::make_error(code)) == code);
    CHECK(dix::to_errc(dix::make_error(code, "some context")) == code);
    auto e = dix::make_error(code, "some context");
    if (code == errc::none) {
      CHECK(!e);
      CHECK(dix::error_text(e).empty());
    } else {
      REQUIRE(e);
      CHECK(e.category() == dix::caf_error_category);
      CHECK(e.code() == static_cast<std::uint8_t>(code));
      CHECK(dix::error_text(e) == "some context");
      CHECK(dix::to_dix_error(e) == dix::error(code, "some context"));
    }
  }
}

TEST_CASE("errors: a dix::errc converts implicitly to caf::error and compares with it",
          "[actor][messages]") {
  caf::error e = errc::log_retention;
  CHECK(e.code() == static_cast<std::uint8_t>(errc::log_retention));
  CHECK(e.category() == caf::atom("dix"));
  CHECK(e == errc::log_retention);
  CHECK(e != errc::log_corrupt);
  caf::error none = errc::none;
  CHECK(!none);
  CHECK(dix::make_error(dix::error{errc::io_error, "fsync"}) ==
        dix::make_error(errc::io_error, "fsync"));
}

TEST_CASE("errors: a foreign or unknown error maps to backend_failed", "[actor][messages]") {
  CHECK(dix::to_errc(caf::error{}) == errc::none);
  CHECK(dix::to_errc(caf::make_error(caf::sec::runtime_error)) == errc::backend_failed);
  CHECK(dix::to_errc(caf::make_error(caf::pec::unexpected_eof)) == errc::backend_failed);
  CHECK(dix::to_errc(caf::error{static_cast<std::uint8_t>(errc::io_error), caf::atom("peer")}) ==
        errc::backend_failed);
  CHECK(dix::to_errc(caf::error{200, caf::atom("dix")}) == errc::backend_failed);
  auto foreign = dix::to_dix_error(caf::make_error(caf::sec::runtime_error));
  CHECK(foreign.value() == errc::backend_failed);
  CHECK_FALSE(foreign.message().empty());
}

// Issue 29: each CAF error a caller of the runtime actor, a backend proxy or an index node can
// receive maps to the errc whose retry advice fits it; a request timeout is retryable.
TEST_CASE("errors: CAF's errors map to the errc whose retry advice fits", "[actor][messages]") {
  struct row {
    caf::error e;
    errc expected;
  };
  const std::vector<row> rows{
    {caf::make_error(caf::sec::request_timeout), errc::timeout},
    {caf::make_error(caf::sec::connection_timeout), errc::timeout},
    {caf::make_error(caf::sec::request_receiver_down), errc::stopped},
    {caf::make_error(caf::sec::cannot_forward_to_invalid_actor), errc::stopped},
    {caf::make_error(caf::sec::unexpected_message), errc::message_invalid},
    {caf::make_error(caf::sec::unexpected_response), errc::message_invalid},
    {caf::make_error(caf::sec::unexpected_actor_messaging_interface), errc::message_invalid},
    {caf::make_error(caf::sec::unknown_type), errc::message_invalid},
    {caf::make_error(caf::sec::incompatible_versions), errc::message_invalid},
    {caf::make_error(caf::sec::incompatible_application_ids), errc::message_invalid},
    {caf::make_error(caf::sec::malformed_basp_message), errc::message_invalid},
    {caf::make_error(caf::sec::cannot_connect_to_node), errc::unavailable},
    {caf::make_error(caf::sec::no_route_to_receiving_node), errc::unavailable},
    {caf::make_error(caf::sec::disconnect_during_handshake), errc::unavailable},
    {caf::make_error(caf::sec::remote_lookup_failed), errc::unavailable},
    {caf::make_error(caf::sec::no_actor_published_at_port), errc::unavailable},
    {caf::make_error(caf::sec::network_syscall_failed), errc::io_error},
    {caf::make_error(caf::sec::socket_disconnected), errc::io_error},
    {caf::make_error(caf::sec::cannot_open_port), errc::io_error},
    {caf::make_error(caf::sec::invalid_argument), errc::invalid_argument},
    {caf::make_error(caf::sec::feature_disabled), errc::not_supported},
    {caf::make_error(caf::exit_reason::user_shutdown), errc::stopped},
    {caf::make_error(caf::exit_reason::kill), errc::stopped},
    {caf::make_error(caf::exit_reason::remote_link_unreachable), errc::unavailable},
    {caf::make_error(caf::exit_reason::unhandled_exception), errc::backend_failed},
  };
  for (const auto& r : rows) {
    INFO(caf::to_string(r.e));
    CHECK(dix::to_errc(r.e) == r.expected);
    auto d = dix::to_dix_error(r.e);
    CHECK(d.value() == r.expected);
    CHECK_FALSE(d.message().empty());  // CAF's rendering of the error
  }
  CHECK(dix::is_retryable(dix::to_errc(caf::make_error(caf::sec::request_timeout))));
}

TEST_CASE("errors: the renderer prints the errc name and the context", "[actor][messages]") {
  for (auto code : every_errc()) {
    if (code == errc::none) continue;
    auto text = dix::render_error(static_cast<std::uint8_t>(code), caf::message{});
    CHECK(text == "dix: " + std::string(dix::to_string(code)));
  }
  CHECK(dix::render_error(200, caf::message{}) == "dix: unknown(200)");
  CHECK(dix::render_error(7, caf::make_message(std::string("sequence 1 purged"))) ==
        "dix: log_retention (sequence 1 purged)");
}

TEST_CASE_METHOD(dix::test::caf_fixture,
                 "errors: the actor system renders dix errors with the registered renderer",
                 "[actor][messages]") {
  CHECK(sys.render(dix::make_error(errc::log_retention, "sequence 1 purged")) ==
        "dix: log_retention (sequence 1 purged)");
  CHECK(sys.render(errc::segment_full) == "dix: segment_full");
}

TEST_CASE_METHOD(dix::test::caf_fixture,
                 "errors: a dix error keeps code and text through the binary serializer",
                 "[actor][messages]") {
  auto original = dix::make_error(errc::cursor_invalid, "anchor time 0");
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  REQUIRE(!sink(original));
  caf::error loaded;
  caf::binary_deserializer source{sys, buf};
  REQUIRE(!source(loaded));
  CHECK(dix::to_errc(loaded) == errc::cursor_invalid);
  CHECK(dix::error_text(loaded) == "anchor time 0");
}
