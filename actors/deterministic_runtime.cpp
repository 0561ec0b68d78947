// dix::testing::deterministic_runtime (<dix/testing/deterministic_runtime.hpp>): the composition
// root of spawn_runtime with the three switches the project's own actor tests use (actors.md §5):
// nothing detached, no watcher thread (look() is its scan), and the coordinator's clock as the
// runtime's.
#include <dix/testing/deterministic_runtime.hpp>

#include <chrono>
#include <stdexcept>
#include <utility>

#include <caf/scheduler/test_coordinator.hpp>
#include <caf/send.hpp>

#include <dix/caf/messages.hpp>

#include "actors/runtime_actor.hpp"
#include "actors/runtime_root.hpp"
#include "actors/watcher.hpp"
#include "core/clock.hpp"

namespace dix::testing {

namespace {

// Steady time is the coordinator's clock; wall time starts at the real wall time of the spawn and
// moves with it (the stores' index times are real wall times: a runtime whose wall time started
// years away would misjudge ages).
class coordinator_clock final : public dix::clock {
 public:
  explicit coordinator_clock(caf::scheduler::test_coordinator& sched)
      : sched_(sched), steady_base_(sched.clock().now()), wall_base_ns_(system_clock().wall_now_ns()) {}

  steady_time steady_now() const noexcept override { return sched_.clock().now(); }
  std::uint64_t wall_now_ns() const noexcept override {
    const auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(steady_now() - steady_base_);
    return wall_base_ns_ + static_cast<std::uint64_t>(elapsed.count());
  }

 private:
  caf::scheduler::test_coordinator& sched_;
  steady_time steady_base_;
  std::uint64_t wall_base_ns_;
};

constexpr std::size_t max_settle_rounds = 10'000;

}  // namespace

struct deterministic_runtime::state {
  caf::scheduler::test_coordinator* sched = nullptr;
  std::shared_ptr<runtime_context> ctx;
  runtime_actor actor;
};

caf::expected<deterministic_runtime> deterministic_runtime::spawn(caf::actor_system& sys,
                                                                  std::vector<std::shared_ptr<primary_store>> stores,
                                                                  runtime_options options) {
  auto* sched = dynamic_cast<caf::scheduler::test_coordinator*>(&sys.scheduler());
  if (sched == nullptr) {
    return make_error(errc::invalid_argument,
                      "deterministic_runtime: the actor system does not run on caf::scheduler::test_coordinator "
                      "(set scheduler.policy = testing)");
  }
  auto ctx = prepare_runtime(std::move(stores), options);
  if (!ctx) return make_error(ctx.error());
  auto time = std::make_shared<coordinator_clock>(*sched);
  (*ctx)->time = time.get();
  (*ctx)->owned_time = std::move(time);
  (*ctx)->detached = false;
  (*ctx)->watcher_thread = false;
  prepare_coverage(**ctx);
  auto s = std::make_unique<state>();
  s->sched = sched;
  s->ctx = *ctx;
  s->actor = runtime_actor{spawn_runtime_actor(sys, std::move(*ctx))};
  sched->run();  // the runtime actor starts: its supervisor, publisher and listeners
  return deterministic_runtime{std::move(s)};
}

deterministic_runtime::deterministic_runtime(std::unique_ptr<state> s) noexcept : s_(std::move(s)) {}
deterministic_runtime::deterministic_runtime(deterministic_runtime&& other) noexcept = default;

deterministic_runtime& deterministic_runtime::operator=(deterministic_runtime&& other) noexcept {
  if (this != &other) {
    end();
    s_ = std::move(other.s_);
  }
  return *this;
}

deterministic_runtime::~deterministic_runtime() { end(); }

void deterministic_runtime::end() noexcept {
  if (!s_) return;
  caf::anon_send_exit(s_->actor, caf::exit_reason::user_shutdown);
  try {
    settle();
  } catch (...) {
    // Still moving after the rounds settle() allows: the actor system's end waits for it.
  }
  s_.reset();
}

const runtime_actor& deterministic_runtime::actor() const noexcept { return s_->actor; }

void deterministic_runtime::look() {
  if (s_->ctx->watch) s_->ctx->watch->scan(false);
}

std::size_t deterministic_runtime::settle() {
  std::size_t ran = 0;
  for (std::size_t round = 0; round < max_settle_rounds; ++round) {
    ran += s_->sched->run();
    look();
    const auto more = s_->sched->run();
    if (more == 0) return ran;
    ran += more;
  }
  throw std::logic_error("deterministic_runtime::settle: messages still flow after 10000 rounds");
}

std::size_t deterministic_runtime::advance(caf::timespan d) {
  auto& clock = s_->sched->clock();
  const auto target = clock.now() + d;
  std::size_t ran = settle();  // what is due now happens now, before time moves
  // Timer by timer, each at its own time, so that a timer set by what an earlier one caused fires
  // too when it falls inside `d` (a flush timer rearmed by the flush before it).
  for (std::size_t round = 0; !clock.schedule().empty() && clock.schedule().begin()->first <= target; ++round) {
    if (round == max_settle_rounds) {
      throw std::logic_error("deterministic_runtime::advance: timers still fire after 10000 rounds");
    }
    clock.trigger_timeout();  // the earliest; the clock moves to its time
    ran += settle();
  }
  if (target > clock.now()) clock.advance_time(target - clock.now());
  return ran + settle();
}

}  // namespace dix::testing
