#include "actors/readiness_publisher_actor.hpp"

#include <string>
#include <unordered_map>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "adapters/metrics_segment.hpp"
#include "adapters/readiness_segment.hpp"
#include "core/assert.hpp"
#include "core/clock.hpp"
#include "messages/errors.hpp"

namespace dix {
namespace {

struct publisher_state {
  std::shared_ptr<readiness_segment> segment;
  caf::actor observer;  // invalid: nobody is told
  const clock* time = nullptr;  // the runtime's
  // Slots found so far by id. A slot, once claimed, belongs to its id for the segment's life.
  std::unordered_map<std::string, std::shared_ptr<segment_slot>> slots;
  static inline const char* name = "dix.readiness_publisher";
};

using publisher_pointer = readiness_publisher_actor::stateful_pointer<publisher_state>;

segment_slot* slot_of(publisher_pointer self, const std::string& id) {
  auto& slots = self->state.slots;
  if (auto it = slots.find(id); it != slots.end()) return it->second.get();
  auto slot = self->state.segment->find(id);
  if (!slot) return nullptr;
  return slots.emplace(id, std::move(slot)).first->second.get();
}

caf::error no_slot(publisher_pointer self, const std::string& id) {
  return make_error(errc::not_registered, "readiness publisher: backend id \"" + id +
                                              "\" has no slot in the readiness segment of " +
                                              self->state.segment->directory().string());
}

// The lag part shows the slot's gate as stored (decision 0021): a new gate is copied into a block
// that holds lag figures, so a reader of the block sees the gate that holds writers back now.
void refresh_lag_gate(publisher_pointer self, segment_slot& slot) {
  auto& metrics = self->state.segment->metrics();
  auto block = metrics.read(slot.index());
  if (!block || !block->lag || block->lag->lag_gate == slot.lag_gate()) return;
  block->lag->lag_gate = slot.lag_gate();
  metrics.write(slot.index(), *block);
}

readiness_publisher_actor::behavior_type publisher(publisher_pointer self, std::shared_ptr<readiness_segment> segment,
                                                   caf::actor observer, const clock* time) {
  DIX_ASSERT(segment != nullptr);
  self->state.time = time;
  self->state.segment = std::move(segment);
  self->state.observer = std::move(observer);
  return {
    [self](publication& p) -> caf::result<published> {
      auto* slot = slot_of(self, p.id);
      if (slot == nullptr) return no_slot(self, p.id);
      auto counter = slot->apply({p.state, p.reason, p.attempts, p.coverage_time, p.lag_gate});
      // §12.4: a demand the stored coverage_time reaches is cleared (a waiter's concurrent raise
      // wins the compare-exchange and stays); the clear notifies on its own.
      if (p.state == readiness_state::ready && p.coverage_time && slot->clear_covered_demand(*p.coverage_time)) {
        counter = slot->change_counter();
      }
      if (p.lag_gate) refresh_lag_gate(self, *slot);
      // anon_send: a typed actor may send() only to typed handles, and the observer needs no sender.
      if (self->state.observer) caf::anon_send(self->state.observer, readiness_observed{p.id, counter, slot->read()});
      return published{std::move(p.id), counter};
    },
    [self](metrics_publication& p) -> caf::result<metrics_published> {
      auto* slot = slot_of(self, p.id);
      if (slot == nullptr) return no_slot(self, p.id);
      // The block of the id's slot; stamped with the wall clock, which readers compare with theirs.
      // Its lag part stays as the last lag_publication left it (this actor is the block's only writer).
      auto& metrics = self->state.segment->metrics();
      auto block = metrics.read(slot->index()).value_or(metrics_block{});
      block.written_wall_ns = self->state.time->wall_now_ns();
      block.progress = p.progress;
      metrics.write(slot->index(), block);
      return metrics_published{std::move(p.id), metrics.change_counter()};
    },
    [self](lag_publication& p) -> caf::result<metrics_published> {
      auto* slot = slot_of(self, p.id);
      if (slot == nullptr) return no_slot(self, p.id);
      // The lag part replaced, the rebuild progress kept; the figures carry their own wall time.
      auto& metrics = self->state.segment->metrics();
      auto block = metrics.read(slot->index()).value_or(metrics_block{});
      block.written_wall_ns = self->state.time->wall_now_ns();
      block.lag = std::move(p.lag);
      block.lag->lag_gate = slot->lag_gate();
      metrics.write(slot->index(), block);
      return metrics_published{std::move(p.id), metrics.change_counter()};
    },
  };
}

}  // namespace

readiness_publisher_actor spawn_readiness_publisher(caf::actor_system& sys, std::shared_ptr<readiness_segment> segment,
                                                    caf::actor observer, const clock& time) {
  return sys.spawn(publisher, std::move(segment), std::move(observer), &time);
}

}  // namespace dix
