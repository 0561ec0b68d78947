// release_sequence (protocol.md §9.6–§9.7): the steps of one release, with plain values.
#include <catch2/catch.hpp>

#include "core/release_sequence.hpp"

using namespace dix;
using phase = release_sequence::phase;
using step = release_sequence::step;

TEST_CASE("release sequence: flush(shutdown), then shutdown of the epoch, then unlock", "[core][release]") {
  release_sequence r;
  CHECK_FALSE(r.holding());
  CHECK(r.begin(7, true, false) == step::flush);
  CHECK(r.current() == phase::flushing);
  CHECK(r.holding());
  CHECK(r.on_flush_done(result<void>{}) == step::shutdown);
  CHECK(r.epoch() == 7);
  CHECK(r.quiescing());
  CHECK(r.on_shutdown_done(7, result<void>{}) == step::unlock);
  CHECK(r.current() == phase::released);
  CHECK_FALSE(r.holding());
}

TEST_CASE("release sequence: over an epoch already quiesced, the flush(shutdown) runs and the unlock follows without a second shutdown", "[core][release]") {
  release_sequence r;
  CHECK(r.begin(7, true, true) == step::flush);
  CHECK(r.holding());
  CHECK(r.on_flush_done(error{errc::io_error, "flush failed"}) == step::unlock);  // only logged, as ever
  CHECK(r.current() == phase::released);
  CHECK(r.on_shutdown_done(7, result<void>{}) == step::none);
}

TEST_CASE("release sequence: over a quiesced epoch with the proxy down, the replacement flushes and the unlock follows", "[core][release]") {
  release_sequence r;
  CHECK(r.begin(7, false, true) == step::none);
  CHECK(r.on_proxy_up() == step::flush);
  CHECK(r.on_flush_done(result<void>{}) == step::unlock);
}

TEST_CASE("release sequence: a failed flush(shutdown) is only logged and the shutdown follows", "[core][release]") {
  release_sequence r;
  (void)r.begin(3, true, false);
  CHECK(r.on_flush_done(error{errc::io_error, "flush failed"}) == step::shutdown);
  CHECK(r.on_shutdown_done(3, result<void>{}) == step::unlock);
}

TEST_CASE("release sequence: a rejected shutdown keeps the lock and publishes unavailable, a retry starts again with the same epoch", "[core][release]") {
  release_sequence r;
  (void)r.begin(5, true, false);
  (void)r.on_flush_done(result<void>{});
  CHECK(r.on_shutdown_done(5, error{errc::backend_failed, "no"}) == step::publish_rejected);
  CHECK(r.held());
  CHECK(r.holding());
  CHECK(r.on_shutdown_done(5, result<void>{}) == step::none);  // nothing in flight any more
  CHECK(r.retry(true) == step::flush);
  CHECK(r.on_flush_done(result<void>{}) == step::shutdown);
  CHECK(r.epoch() == 5);
  CHECK(r.on_shutdown_done(5, result<void>{}) == step::unlock);
}

TEST_CASE("release sequence: it waits for the proxy, and a proxy lost mid-release starts the flush again with the replacement", "[core][release]") {
  release_sequence r;
  CHECK(r.begin(2, false, false) == step::none);
  CHECK(r.current() == phase::awaiting_proxy);
  CHECK(r.on_flush_done(result<void>{}) == step::none);  // not asked yet
  CHECK(r.on_proxy_up() == step::flush);
  CHECK(r.on_flush_done(result<void>{}) == step::shutdown);
  CHECK(r.on_proxy_down() == step::none);
  CHECK(r.current() == phase::awaiting_proxy);
  CHECK(r.on_shutdown_done(2, result<void>{}) == step::none);  // the dead proxy's answer is not waited for
  CHECK(r.on_proxy_up() == step::flush);
  CHECK(r.on_flush_done(result<void>{}) == step::shutdown);
  CHECK(r.on_shutdown_done(2, result<void>{}) == step::unlock);
}

TEST_CASE("release sequence: an answer for another epoch is ignored", "[core][release]") {
  release_sequence r;
  (void)r.begin(9, true, false);
  (void)r.on_flush_done(result<void>{});
  CHECK(r.on_shutdown_done(8, result<void>{}) == step::none);
  CHECK(r.quiescing());
}

TEST_CASE("release sequence: abandoned when no proxy will come back: unlock without a shutdown, once", "[core][release]") {
  release_sequence r;
  (void)r.begin(4, false, false);
  CHECK(r.abandon() == step::unlock);
  CHECK(r.current() == phase::abandoned);
  CHECK_FALSE(r.holding());
  CHECK(r.abandon() == step::none);
  CHECK(r.on_proxy_up() == step::none);
  release_sequence held;
  (void)held.begin(1, true, false);
  (void)held.on_flush_done(result<void>{});
  (void)held.on_shutdown_done(1, error{errc::backend_failed, "no"});
  CHECK(held.abandon() == step::unlock);
}
