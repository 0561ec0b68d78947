// A fake of the runtime actor (<dix/caf.hpp>) for an application's actor tests: an actor with the
// whole dix::runtime_actor interface, spawned in the application's own actor system, that answers
// from a small in-memory model (registered ids, their readiness and runner status) or with
// answers the test scripts, records every request it gets, and sends subscribers the events the
// test asks for. No store, no backend, no threads: under CAF's test coordinator it runs only when
// the test runs the scheduler. docs/testing.md; docs/examples/fake_runtime_test.cpp.
//
//   caf::actor_system_config cfg;                 // scheduler.policy = testing for the coordinator
//   dix::configure(cfg);
//   caf::actor_system sys{cfg};
//   dix::testing::fake_runtime rt{sys};
//   auto app = sys.spawn(my_app, rt.actor());
//   rt.script<dix::wait_coverage>(dix::error{dix::errc::index_lagging, "behind"});
//   … run the scheduler …
//   rt.emit_readiness("by-brand", {dix::readiness_state::needs_rebuild, dix::readiness_reason::log_corrupt});
//   CHECK(rt.requests_of<dix::subscribe>().size() == 1);
//
// It answers with the real runtime's message types and, for failures, with its error values
// (dix::make_error: category "dix", the errc the real runtime gives in that case, api.md §6). It
// models what an application sees, not the protocol: a registration is ready at once, a coverage
// wait is reached at once, nothing is ever rebuilt. Script an answer for anything else.
//
// Thread-safety: every member function may be called from any thread; the events emit_* sends
// leave from the caller's thread, so under CAF's test coordinator call them from the thread that
// runs the scheduler (the test's), as for any send. Needs no Catch2: link dix::fake_runtime.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <typeindex>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>

#include <dix/caf.hpp>
#include <dix/caf/messages.hpp>
#include <dix/readiness.hpp>
#include <dix/result.hpp>
#include <dix/status.hpp>

namespace dix::testing {

// The reply type of each request of dix::runtime_actor.
template <class Request>
struct reply_of;
template <>
struct reply_of<register_index> { using type = index_registered; };
template <>
struct reply_of<unregister_index> { using type = index_unregistered; };
template <>
struct reply_of<query_status> { using type = status_report; };
template <>
struct reply_of<query_metrics> { using type = metrics_report; };
template <>
struct reply_of<query_readiness> { using type = readiness_report; };
template <>
struct reply_of<rebuild_index> { using type = rebuild_requested; };
template <>
struct reply_of<verify_index> { using type = index_verified; };
template <>
struct reply_of<subscribe> { using type = subscribed; };
template <>
struct reply_of<unsubscribe> { using type = unsubscribed; };
template <>
struct reply_of<stop_runtime> { using type = runtime_stopped; };
template <>
struct reply_of<wait_coverage> { using type = coverage_reached; };
template <>
struct reply_of<commit_transaction> { using type = transaction_committed; };
template <>
struct reply_of<query_index> { using type = index_rows; };
template <>
struct reply_of<subscribe_all> { using type = subscribed_all; };
template <>
struct reply_of<unsubscribe_all> { using type = unsubscribed_all; };

template <class Request>
using reply_of_t = typename reply_of<Request>::type;

class fake_runtime {
 public:
  struct state;  // shared by the object and its actor (fake_runtime.cpp)

  // Spawns the fake in `sys`, which should be configured with dix::configure (the error renderer).
  // Not detached: CAF's test coordinator runs it like the application's actors.
  explicit fake_runtime(caf::actor_system& sys);
  // Sends the actor an exit message (user_shutdown); it ends when the scheduler runs it.
  ~fake_runtime();
  fake_runtime(const fake_runtime&) = delete;
  fake_runtime& operator=(const fake_runtime&) = delete;

  // The handle to give the application (as the real one from dix::spawn_runtime).
  const runtime_actor& actor() const noexcept { return actor_; }

  // -- default answers ------------------------------------------------------------------------
  //
  // register_index   invalid_argument when the backend is null or there is no projection;
  //                  already_registered when backend->id() is registered; stopped after a stop.
  //                  Else the id is registered — readiness ready (owner epoch 1) unless
  //                  set_readiness gave it one, runner status idle at epoch 1 — → index_registered.
  // unregister_index the id is unregistered (its slot stays) → index_unregistered; not_registered
  //                  for an id that is not, stopped after a stop.
  // query_status     → status_report with the runner status of a registered id, else without.
  // query_metrics    → metrics_report with {readiness, owner, epoch} of a registered id, else without.
  // query_readiness  → readiness_report of an id with a slot (registered once, or set_readiness);
  //                  not_registered otherwise.
  // rebuild_index    → rebuild_requested, accepted for a registered id before a stop.
  // verify_index     → index_verified, equal with no records and no cursor (the fake holds no
  //                  index), for a registered id; not_registered otherwise, stopped after a stop.
  //                  Script a difference or a cursor with answer<verify_index>(…).
  // subscribe        the sender receives the id's events it asked for (subscribe::events) until
  //                  unsubscribe or its end → subscribed with the values now; not_registered for
  //                  an id without a slot; invalid_argument for bad events.
  // unsubscribe      → unsubscribed.
  // subscribe_all    the sender receives the events it asked for of every registered id, now
  //                  and later: the values now at once, as events → subscribed_all with the
  //                  registered ids; invalid_argument for bad events, stopped after a stop.
  // unsubscribe_all  → unsubscribed_all.
  // commit_transaction  nothing is written anywhere: → transaction_committed with the log named
  //                  (empty: "main"), a sequence that grows by the operations' count and a time
  //                  that grows by one per commit (both from 1); sequence 0 for no operations;
  //                  stopped after a stop.
  // query_index      → index_rows without rows, coverage unknown, for a registered id;
  //                  not_registered otherwise, stopped after a stop. Script the rows a test needs.
  //                  Both: not_supported from another node or without a sender (decision 0066).
  // stop_runtime     every id unregistered, later registrations refused → runtime_stopped.
  // wait_coverage    → coverage_reached at once for a registered id; invalid_argument for since
  //                  0, not_registered, stopped after a stop.

  // The next request of type Request is answered with `answer` (a reply, or a dix::error sent as
  // dix::make_error) instead of the default, without touching the model; several queue up and
  // are used in order. Request is one of runtime_actor's requests.
  template <class Request>
  void script(result<reply_of_t<Request>> answer) {
    if (answer) {
      push_script(typeid(Request), caf::make_message(std::move(*answer)), error{errc::none});
    } else {
      push_script(typeid(Request), caf::message{}, answer.error());
    }
  }

  // -- the model ------------------------------------------------------------------------------

  // Gives `id` a slot with `value` (registered or not: any process's slot), sending no event.
  void set_readiness(const std::string& id, readiness value);
  // Sets the runner status a registered id reports, sending no event.
  void set_status(const std::string& id, runner_status value);
  // set_readiness, then readiness_changed{id, value} to each subscriber of `id` that asked for
  // readiness events (explicitly or through subscribe_all). Returns how many were sent.
  std::size_t emit_readiness(const std::string& id, readiness value);
  // set_status, then runner_state_changed{id, value} to each subscriber of `id` that asked for
  // runner state events.
  std::size_t emit_runner_state(const std::string& id, runner_status value);

  // -- what it got ----------------------------------------------------------------------------

  // Every request so far, in arrival order, each as the message received.
  std::vector<caf::message> requests() const;

  // The requests of one type, in arrival order.
  template <class Request>
  std::vector<Request> requests_of() const {
    std::vector<Request> out;
    for (const auto& m : requests()) {
      if (m.match_elements<Request>()) out.push_back(m.get_as<Request>(0));
    }
    return out;
  }

  // The ids registered now, in name order; whether a stop_runtime came; the subscribers of `id`.
  std::vector<std::string> registered() const;
  bool stopped() const;
  std::size_t subscriber_count(const std::string& id) const;

 private:
  void push_script(std::type_index request, caf::message reply, error failure);

  std::shared_ptr<state> state_;
  runtime_actor actor_;
};

}  // namespace dix::testing
