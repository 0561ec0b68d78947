// core/activity: the stall attribution of decision 0021, one test per cause, with plain figures
// as the metrics segment carries them.
#include <catch2/catch.hpp>

#include <dix/activity.hpp>

using namespace dix;

namespace {

readiness ready_slot() { return readiness{readiness_state::ready, readiness_reason::none, 0, 4}; }

// An owner caught up: every component 0, nothing behind.
lag_figures caught_up() {
  lag_figures l;
  l.epoch = 4;
  l.state = runner_state::idle;
  l.max_accepted_batches_ahead = 64;
  l.log_count = 1;
  l.logs = {log_lag_figures{0, 0, -1}};
  return l;
}

// The owner's figures in `state`, otherwise caught up, to set the components a test is about on.
lag_figures owner_in(runner_state state) {
  auto l = caught_up();
  l.state = state;
  return l;
}

// What a ready slot with these figures is said to be doing.
activity_report of(const lag_figures& l, const attribution_options& options = {}) {
  return attribute(ready_slot(), l, options);
}

// Figures `l` read as following at a lag of `limit` and as catching up 1 ms past it.
void check_following_up_to(lag_figures l, std::uint64_t limit) {
  l.lag_ms = limit;
  CHECK(of(l).activity == index_activity::following);
  l.lag_ms = limit + 1;
  CHECK(of(l).activity == index_activity::catching_up);
}

}  // namespace

TEST_CASE("activity: an owner caught up is idle, with no cause and no ETA", "[core][activity]") {
  auto r = of(caught_up());
  CHECK(r.activity == index_activity::idle);
  CHECK(r.cause == stall_cause::none);
  CHECK_FALSE(r.eta_ms);
  CHECK(r.words == "idle: caught up");
  // Read to the end, the last batches accepted but not yet durable (or ignored by the index):
  // every lag component is 0, so idle, whatever the sequence lag.
  auto l = caught_up();
  l.logs = {log_lag_figures{4, 0, -1}};
  CHECK(of(l).activity == index_activity::idle);
}

TEST_CASE("activity: behind and reading is catching up, with the read rate and an ETA to the end of the log", "[core][activity]") {
  auto l = owner_in(runner_state::running);
  l.lag_ms = l.cursor_lag_ms = 800;
  l.logs = {log_lag_figures{5000, 2000, -1}};
  auto r = of(l);
  CHECK(r.activity == index_activity::catching_up);
  CHECK(r.read_per_s == 2000);
  REQUIRE(r.eta_ms);
  CHECK(*r.eta_ms == 2500);  // 5000 sequences at 2000/s
  CHECK(r.lag_ms == 800);
  CHECK(r.words.find("ETA 2.5 s") != std::string::npos);
}

TEST_CASE("activity: a steady writer at the flush rhythm is followed, not caught up with, and the words say lag once", "[core][activity]") {
  // The owner reads as fast as the writer commits (10000/s); the durable position trails by the
  // work of one flush interval, 874 ms of it.
  auto l = owner_in(runner_state::running);
  l.lag_ms = l.cursor_lag_ms = l.oldest_accepted_age_ms = 874;
  l.oldest_accepted_growing = true;
  l.accepted_batches = 30;
  l.logs = {log_lag_figures{8740, 10000, -1}};
  auto r = of(l);
  CHECK(r.activity == index_activity::following);
  CHECK(r.cause == stall_cause::none);
  CHECK(r.lag_ms == 874);
  CHECK(r.words == "following the log, lag 0.9 s");
  CHECK(to_string(r.activity) == "following");
  // At the limit still following; past it, or with a backlog whose ETA is longer than a flush
  // interval, catching up.
  check_following_up_to(l, 1500);
  l.logs = {log_lag_figures{40000, 10000, -1}};  // 4 s of reading to the end
  r = of(l);
  CHECK(r.activity == index_activity::catching_up);
  CHECK(r.words == "catching up: lag 0.9 s, 40000 sequences behind at 10000 sequences/s, ETA 4.0 s");
  // The limit is an option: an owner known to flush every 5 s is following at 4 s.
  l.lag_ms = 4000;
  l.logs = {log_lag_figures{8740, 10000, -1}};
  attribution_options slow_flush;
  slow_flush.following_lag_ms = 5500;
  CHECK(of(l, slow_flush).activity == index_activity::following);
}

TEST_CASE("activity: following is judged against the owner's own max_flush_age when the figures carry it", "[core][activity]") {
  // A steady writer behind an owner that flushes every 3 s: the durable position trails by up to
  // 3 s of work, read as fast as it is written.
  auto l = owner_in(runner_state::running);
  l.lag_ms = l.cursor_lag_ms = l.oldest_accepted_age_ms = 2900;
  l.oldest_accepted_growing = true;
  l.logs = {log_lag_figures{29000, 10000, -1}};
  // Without the owner's flush age (0, a writer before decision 0031): the fixed limits, 1.5 s
  // to follow, 2 s for an age to be stuck, so a batch 2.9 s from durable reads as a barrier.
  CHECK(following_limit_ms(l) == 1500);
  CHECK(stuck_limit_ms(l) == 2000);
  CHECK(of(l).cause == stall_cause::barrier);
  l.oldest_accepted_age_ms = 1000;
  CHECK(of(l).activity == index_activity::catching_up);
  l.oldest_accepted_age_ms = 2900;
  l.max_flush_age_ms = 3000;
  CHECK(following_limit_ms(l) == 3500);  // max_flush_age + the 0.5 s margin
  CHECK(stuck_limit_ms(l) == 6000);      // twice max_flush_age: one flush may pass
  auto r = of(l);
  CHECK(r.activity == index_activity::following);
  CHECK(r.words == "following the log, lag 2.9 s");
  // The limit holds for the lag and for the ETA alike.
  check_following_up_to(l, 3500);
  l.logs = {log_lag_figures{35010, 10000, -1}};  // 3.501 s of reading to the end
  CHECK(of(l).activity == index_activity::catching_up);
  l.logs = {log_lag_figures{35000, 10000, -1}};
  CHECK(of(l).activity == index_activity::following);
  // Past twice the flush age the oldest batch not yet durable is a barrier that does not complete.
  l.oldest_accepted_age_ms = 6000;
  CHECK(of(l).cause == stall_cause::barrier);
  l.oldest_accepted_age_ms = 2900;
  // A short flush age never narrows the limits below following_lag_ms and stuck_after_ms: the
  // barrier and the publication interval take their time whatever the rhythm.
  l.max_flush_age_ms = 50;
  CHECK(following_limit_ms(l) == 1500);
  CHECK(stuck_limit_ms(l) == 2000);
  l.lag_ms = 1400;
  l.oldest_accepted_age_ms = 1400;
  l.logs = {log_lag_figures{100, 10000, -1}};
  CHECK(of(l).activity == index_activity::following);
  // The margin is an option too.
  l.max_flush_age_ms = 3000;
  attribution_options wide;
  wide.following_margin_ms = 2000;
  CHECK(following_limit_ms(l, wide) == 5000);
  l.lag_ms = 4900;
  CHECK(of(l, wide).activity == index_activity::following);
  CHECK(of(l).activity == index_activity::catching_up);
}

TEST_CASE("activity: a runner parked in deferred is stalled by a deferring backend", "[core][activity]") {
  auto l = owner_in(runner_state::deferred);
  l.stalled_ms = l.lag_ms = 3000;
  l.stalled_growing = true;
  auto r = of(l);
  CHECK(r.activity == index_activity::stalled);
  CHECK(r.cause == stall_cause::backend_deferred);
  CHECK(r.words.find("the backend defers") != std::string::npos);
}

TEST_CASE("activity: waiting-durable below the cap for long is a barrier not completing, briefly it is the flush rhythm", "[core][activity]") {
  auto l = owner_in(runner_state::waiting_durable);
  l.accepted_batches = 3;
  l.stalled_ms = l.lag_ms = 2000;
  l.stalled_growing = true;
  auto r = of(l);
  CHECK(r.activity == index_activity::stalled);
  CHECK(r.cause == stall_cause::barrier);
  l.stalled_ms = l.lag_ms = 500;  // the next flush is simply not due yet
  CHECK(of(l).activity == index_activity::following);
}

TEST_CASE("activity: an oldest accepted age growing past the threshold with no durable advance is a barrier", "[core][activity]") {
  auto l = owner_in(runner_state::running);
  l.accepted_batches = 2;
  l.oldest_accepted_age_ms = l.lag_ms = 2500;
  l.oldest_accepted_growing = true;
  CHECK(of(l).cause == stall_cause::barrier);
  l.oldest_accepted_age_ms = l.lag_ms = 1999;  // below stuck_after_ms: still catching up
  CHECK(of(l).activity == index_activity::catching_up);
  l.oldest_accepted_age_ms = 2500;
  l.oldest_accepted_growing = false;  // a durable advance took the figures: not growing
  CHECK(of(l).cause == stall_cause::none);
}

TEST_CASE("activity: accepted batches at the cap with nothing durable is the accepted-ahead cap", "[core][activity]") {
  auto l = owner_in(runner_state::waiting_durable);
  l.accepted_batches = 64;
  l.stalled_ms = l.lag_ms = 4000;
  l.stalled_growing = true;
  auto r = of(l);
  CHECK(r.activity == index_activity::stalled);
  CHECK(r.cause == stall_cause::accepted_cap);
  CHECK(r.words.find("64 of 64") != std::string::npos);
  l.stalled_ms = l.lag_ms = 900;  // at the cap under load, durability due within a flush
  CHECK(of(l).activity == index_activity::following);
}

TEST_CASE("activity: an unread age growing with no reads is an unreadable log", "[core][activity]") {
  auto l = owner_in(runner_state::running);
  l.unread_age_ms = l.lag_ms = 5000;
  l.unread_growing = true;
  l.logs = {log_lag_figures{40, 0, -1}};
  auto r = of(l);
  CHECK(r.cause == stall_cause::log_unreadable);
  l.logs = {log_lag_figures{40, 300, -1}};  // reading, only slowly: catching up
  CHECK(of(l).activity == index_activity::catching_up);
}

TEST_CASE("activity: transient faults in a row are an unreadable log, naming the last fault", "[core][activity]") {
  auto l = owner_in(runner_state::running);
  l.transient_faults = 3;
  l.last_fault = readiness_reason::log_missing;
  auto r = of(l);
  CHECK(r.cause == stall_cause::log_unreadable);
  CHECK(r.words.find("3 transient fault(s)") != std::string::npos);
  CHECK(r.words.find("log-missing") != std::string::npos);
}

TEST_CASE("activity: a rebuilding or needs-rebuild slot is held by a rebuild, even without figures", "[core][activity]") {
  readiness rebuilding{readiness_state::rebuilding, readiness_reason::rebuild_requested, 1, 5};
  CHECK(attribute(rebuilding, std::nullopt).cause == stall_cause::rebuild);
  readiness condemned{readiness_state::needs_rebuild, readiness_reason::log_retention, 0, 5};
  auto r = attribute(condemned, caught_up());
  CHECK(r.cause == stall_cause::rebuild);
  CHECK(r.words.find("log-retention") != std::string::npos);
}

TEST_CASE("activity: a ready slot beside figures still saying rebuilding is not held by a rebuild (the figures are older: "
          "ready is published first)",
          "[core][activity]") {
  const auto r = of(owner_in(runner_state::rebuilding));
  CHECK(r.cause != stall_cause::rebuild);
  CHECK(r.activity == index_activity::idle);
  // A slot that is not ready (unknown: no runtime attached) still takes the figures' word.
  readiness unknown{readiness_state::unknown, readiness_reason::none, 0, 4};
  CHECK(attribute(unknown, owner_in(runner_state::rebuilding)).cause == stall_cause::rebuild);
}

TEST_CASE("activity: an exceeded or throttling gate with no other cause is named as the gate", "[core][activity]") {
  auto l = caught_up();
  l.lag_gate = lag_gate_exceeded;
  auto r = of(l);
  CHECK(r.cause == stall_cause::gate);
  CHECK(r.words.find("refused") != std::string::npos);
  l.lag_gate = 120;
  CHECK(of(l).words.find("120 us") != std::string::npos);
  l.state = runner_state::deferred;  // a cause of its own comes first
  CHECK(of(l).cause == stall_cause::backend_deferred);
}

TEST_CASE("activity: no figures and a ready slot is unknown, and unavailable is said as such", "[core][activity]") {
  CHECK(attribute(ready_slot(), std::nullopt).activity == index_activity::unknown);
  readiness gone{readiness_state::unavailable, readiness_reason::rebuild_exhausted, 5, 5};
  CHECK(attribute(gone, caught_up()).cause == stall_cause::unavailable);
}

TEST_CASE("activity: a reader ages the growing components by its own wall clock, the others not", "[core][activity]") {
  auto l = caught_up();
  l.taken_wall_ns = 10'000'000'000;
  l.stalled_ms = 100;
  l.stalled_growing = true;
  l.unread_age_ms = 50;  // not growing
  l.cursor_lag_ms = 70;
  l.lag_ms = 100;
  auto aged = l.aged_at(l.taken_wall_ns + 2'500'000'000);
  CHECK(aged.stalled_ms == 2600);
  CHECK(aged.unread_age_ms == 50);
  CHECK(aged.lag_ms == 2600);
  CHECK(l.aged_at(l.taken_wall_ns - 1).stalled_ms == 100);  // a reader's clock behind: no change
  CHECK(to_string(index_activity::catching_up) == "catching-up");
  CHECK(to_string(stall_cause::accepted_cap) == "accepted-cap");
}
