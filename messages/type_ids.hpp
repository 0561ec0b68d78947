// The one type-ID block of dix (actors.md §2). Debian's CAF 0.17.6 already ships the 0.18-style
// macros (caf/type_id.hpp) and actor_system_config::add_message_types<IdBlock>(); on 0.17 the
// block is a registration list: it assigns each message type an ID and a portable name
// ("dix::log_pull"), and add_dix_message_types() announces every type to the config, which is
// what serialization (the middleman, to_string of type-erased values) needs. Local sends work
// without it; a remote one fails at run time with an unannounced type.
//
// Every type that is a message element is listed here; types that only appear inside one
// (batch_msg, turn_budgets, coverage_capture, log_progress, rebuild_progress, the dix value types) are not, nor
// are the messages that carry objects which never leave the process (supervise,
// register_index: CAF_ALLOW_UNSAFE_MESSAGE_TYPE).
// Add new message types at the end: IDs are positions in this block.
#pragma once

#include <caf/fwd.hpp>
#include <caf/type_id.hpp>

#include <dix/caf/messages.hpp>

#include "messages/delivery.hpp"
#include "messages/lag_publication.hpp"
#include "messages/publication.hpp"
#include "messages/remote.hpp"
#include "messages/runner.hpp"
#include "messages/tailer.hpp"

CAF_BEGIN_TYPE_ID_BLOCK(dix, caf::first_custom_type_id)

  // runner.hpp
  CAF_ADD_TYPE_ID(dix, (dix::wake))
  CAF_ADD_TYPE_ID(dix, (dix::lock_acquired))
  CAF_ADD_TYPE_ID(dix, (dix::timer))
  CAF_ADD_TYPE_ID(dix, (dix::stop))
  CAF_ADD_TYPE_ID(dix, (dix::stopped))
  CAF_ADD_TYPE_ID(dix, (dix::rebuild_request))

  // tailer.hpp
  CAF_ADD_TYPE_ID(dix, (dix::log_open))
  CAF_ADD_TYPE_ID(dix, (dix::log_opened))
  CAF_ADD_TYPE_ID(dix, (dix::log_pull))
  CAF_ADD_TYPE_ID(dix, (dix::log_chunk))
  CAF_ADD_TYPE_ID(dix, (dix::log_fault))
  CAF_ADD_TYPE_ID(dix, (dix::meta_write))
  CAF_ADD_TYPE_ID(dix, (dix::meta_written))

  // delivery.hpp
  CAF_ADD_TYPE_ID(dix, (dix::deliver))
  CAF_ADD_TYPE_ID(dix, (dix::delivery_result_msg))
  CAF_ADD_TYPE_ID(dix, (dix::durable_query))
  CAF_ADD_TYPE_ID(dix, (dix::durable))
  CAF_ADD_TYPE_ID(dix, (dix::flush_request))
  CAF_ADD_TYPE_ID(dix, (dix::flush_done))
  CAF_ADD_TYPE_ID(dix, (dix::state_change_msg))
  CAF_ADD_TYPE_ID(dix, (dix::shutdown_request))
  CAF_ADD_TYPE_ID(dix, (dix::quiescence))

  // publication.hpp
  CAF_ADD_TYPE_ID(dix, (dix::publication))
  CAF_ADD_TYPE_ID(dix, (dix::published))

  // runner.hpp: supervision
  CAF_ADD_TYPE_ID(dix, (dix::child_down))
  CAF_ADD_TYPE_ID(dix, (dix::child_up))
  CAF_ADD_TYPE_ID(dix, (dix::unsupervise))
  CAF_ADD_TYPE_ID(dix, (dix::respawn))

  // tailer.hpp: metadata reads
  CAF_ADD_TYPE_ID(dix, (dix::meta_read))
  CAF_ADD_TYPE_ID(dix, (dix::meta_state))

  // the runtime actor's own (runner.hpp, publication.hpp) and its public API (<dix/caf/messages.hpp>)
  CAF_ADD_TYPE_ID(dix, (dix::runner_status_observed))
  CAF_ADD_TYPE_ID(dix, (dix::readiness_observed))
  CAF_ADD_TYPE_ID(dix, (dix::index_registered))
  CAF_ADD_TYPE_ID(dix, (dix::unregister_index))
  CAF_ADD_TYPE_ID(dix, (dix::index_unregistered))
  CAF_ADD_TYPE_ID(dix, (dix::query_status))
  CAF_ADD_TYPE_ID(dix, (dix::status_report))
  CAF_ADD_TYPE_ID(dix, (dix::query_metrics))
  CAF_ADD_TYPE_ID(dix, (dix::metrics_report))
  CAF_ADD_TYPE_ID(dix, (dix::query_readiness))
  CAF_ADD_TYPE_ID(dix, (dix::readiness_report))
  CAF_ADD_TYPE_ID(dix, (dix::rebuild_index))
  CAF_ADD_TYPE_ID(dix, (dix::rebuild_requested))
  CAF_ADD_TYPE_ID(dix, (dix::subscribe))
  CAF_ADD_TYPE_ID(dix, (dix::subscribed))
  CAF_ADD_TYPE_ID(dix, (dix::unsubscribe))
  CAF_ADD_TYPE_ID(dix, (dix::unsubscribed))
  CAF_ADD_TYPE_ID(dix, (dix::readiness_changed))
  CAF_ADD_TYPE_ID(dix, (dix::runner_state_changed))
  CAF_ADD_TYPE_ID(dix, (dix::stop_runtime))
  CAF_ADD_TYPE_ID(dix, (dix::runtime_stopped))
  CAF_ADD_TYPE_ID(dix, (dix::unregister_registration))

  // the rebuild (tailer.hpp, delivery.hpp)
  CAF_ADD_TYPE_ID(dix, (dix::boundary_capture))
  CAF_ADD_TYPE_ID(dix, (dix::boundary_captured))
  CAF_ADD_TYPE_ID(dix, (dix::scan_pull))
  CAF_ADD_TYPE_ID(dix, (dix::scan_chunk))
  CAF_ADD_TYPE_ID(dix, (dix::reset_request))
  CAF_ADD_TYPE_ID(dix, (dix::reset_done))

  // the metrics segment (publication.hpp)
  CAF_ADD_TYPE_ID(dix, (dix::metrics_publication))
  CAF_ADD_TYPE_ID(dix, (dix::metrics_published))

  // coverage waits (<dix/caf/messages.hpp>, runner.hpp)
  CAF_ADD_TYPE_ID(dix, (dix::wait_coverage))
  CAF_ADD_TYPE_ID(dix, (dix::coverage_reached))
  CAF_ADD_TYPE_ID(dix, (dix::coverage_waited))
  // coverage (delivery.hpp)
  CAF_ADD_TYPE_ID(dix, (dix::coverage_publish))
  // the lag part of the metrics segment (lag_publication.hpp)
  CAF_ADD_TYPE_ID(dix, (dix::lag_publication))
  CAF_ADD_TYPE_ID(dix, (dix::lag_due))
  // supervision (runner.hpp): a request revives an escalated registration
  CAF_ADD_TYPE_ID(dix, (dix::revive))
  // remote backends, protocol v1 (remote.hpp)
  CAF_ADD_TYPE_ID(dix, (dix::rb_hello))
  CAF_ADD_TYPE_ID(dix, (dix::rb_deliver))
  CAF_ADD_TYPE_ID(dix, (dix::rb_op))
  CAF_ADD_TYPE_ID(dix, (dix::rb_welcome))
  CAF_ADD_TYPE_ID(dix, (dix::rb_ack))
  CAF_ADD_TYPE_ID(dix, (dix::rb_reply))
  CAF_ADD_TYPE_ID(dix, (dix::rb_durable))
  CAF_ADD_TYPE_ID(dix, (dix::rb_event))
  CAF_ADD_TYPE_ID(dix, (dix::rb_refused))
  CAF_ADD_TYPE_ID(dix, (dix::rb_coverage))
  CAF_ADD_TYPE_ID(dix, (dix::rb_query))
  CAF_ADD_TYPE_ID(dix, (dix::rb_rows))
  // commits and queries as messages (<dix/caf/messages.hpp>, issue 29)
  CAF_ADD_TYPE_ID(dix, (dix::commit_transaction))
  CAF_ADD_TYPE_ID(dix, (dix::transaction_committed))
  CAF_ADD_TYPE_ID(dix, (dix::query_index))
  CAF_ADD_TYPE_ID(dix, (dix::index_rows))
  // subscriptions to every id (<dix/caf/messages.hpp>, issue 29)
  CAF_ADD_TYPE_ID(dix, (dix::subscribe_all))
  CAF_ADD_TYPE_ID(dix, (dix::subscribed_all))
  CAF_ADD_TYPE_ID(dix, (dix::unsubscribe_all))
  CAF_ADD_TYPE_ID(dix, (dix::unsubscribed_all))
  // verify requests (<dix/caf/messages.hpp>, issue 31)
  CAF_ADD_TYPE_ID(dix, (dix::verify_index))
  CAF_ADD_TYPE_ID(dix, (dix::index_verified))
  // dix verify of a remote index (remote.hpp, issue 31)
  CAF_ADD_TYPE_ID(dix, (dix::rb_digest))
  CAF_ADD_TYPE_ID(dix, (dix::rb_digest_reply))

CAF_END_TYPE_ID_BLOCK(dix)

namespace dix {

// cfg.add_message_types<caf::id_block::dix>(): announces every type of the block.
void add_dix_message_types(caf::actor_system_config& cfg);

// add_dix_message_types and add_dix_error_category (errors.hpp): what every actor system that
// runs dix actors needs.
void configure_dix(caf::actor_system_config& cfg);

}  // namespace dix
