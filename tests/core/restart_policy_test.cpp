// restart_policy (actors.md §3, protocol.md §11.3): the supervisor's restart delays and
// escalation, with plain values and a fake time.
#include <catch2/catch.hpp>

#include <chrono>

#include "core/restart_policy.hpp"

using namespace dix;

namespace {

using std::chrono::milliseconds;
using steady_time = std::chrono::steady_clock::time_point;

}  // namespace

TEST_CASE("restart policy: delays double from rebuild_backoff up to the cap, max_rebuild_attempts in a row escalate, 60 s of calm resets", "[core][supervision]") {
  runner_options o;
  o.rebuild_backoff = milliseconds(100);
  o.max_rebuild_backoff = milliseconds(250);
  o.max_rebuild_attempts = 4;
  restart_history h;
  steady_time t{};
  auto d = decide_restart(child_kind::tailer, h, t, o);
  CHECK_FALSE(d.escalate);
  CHECK(d.delay == milliseconds(100));
  d = decide_restart(child_kind::tailer, h, t + milliseconds(1), o);
  CHECK(d.delay == milliseconds(200));
  d = decide_restart(child_kind::tailer, h, t + milliseconds(2), o);
  CHECK(d.delay == milliseconds(250));  // capped
  d = decide_restart(child_kind::tailer, h, t + milliseconds(3), o);
  CHECK(d.escalate);
  restart_history calm;
  decide_restart(child_kind::proxy, calm, t, o);
  decide_restart(child_kind::proxy, calm, t + std::chrono::seconds(1), o);
  d = decide_restart(child_kind::proxy, calm, t + std::chrono::seconds(62), o);  // 61 s after the last
  CHECK_FALSE(d.escalate);
  CHECK(d.delay == milliseconds(100));
  CHECK(backoff_delay(200, milliseconds(1000), milliseconds(300000)) == milliseconds(300000));  // shift saturates
}
