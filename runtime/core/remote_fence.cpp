#include "core/remote_fence.hpp"

#include <algorithm>

namespace dix {
namespace {

error invalid(const std::string& rule) { return error{errc::message_invalid, rule}; }

}  // namespace

host_fence::decision host_fence::on_message(epoch_t epoch) const noexcept {
  decision d;
  if (epoch == highest_) return d;
  if (epoch < highest_) {
    d.what = decision::kind::superseded;
    return d;
  }
  d.what = decision::kind::adopt;
  if (highest_ != 0) d.quiesce = highest_;
  return d;
}

void host_fence::adopted(epoch_t epoch) noexcept { highest_ = std::max(highest_, epoch); }

result<void> check_hello(std::uint32_t version, const std::string& backend_id, const std::string& kind, epoch_t epoch,
                         const std::string& host_id, const std::string& host_kind) {
  if (version != remote_protocol_version) {
    return invalid("hello: protocol version " + std::to_string(version) + ", this host speaks " +
                   std::to_string(remote_protocol_version));
  }
  if (epoch == 0) return invalid("hello: epoch 0 (an owner's epoch is at least 1)");
  if (backend_id != host_id) return invalid("hello: backend id \"" + backend_id + "\", this host serves \"" + host_id + "\"");
  if (kind != host_kind) return invalid("hello: backend kind \"" + kind + "\", this host wraps \"" + host_kind + "\"");
  return {};
}

result<void> check_window(std::uint64_t seq, std::uint64_t applied, std::uint64_t queued_bytes, std::uint64_t bytes,
                          std::uint32_t max_batches, std::uint64_t max_bytes) {
  if (seq > applied + max_batches || queued_bytes > max_bytes || bytes > max_bytes - queued_bytes) {
    return invalid("deliver: window overrun (more than " + std::to_string(max_batches) + " batches or " +
                   std::to_string(max_bytes) + " bytes unacknowledged)");
  }
  return {};
}

result<void> check_deliver(epoch_t epoch, std::uint64_t seq, std::uint64_t expected_seq, std::uint64_t bytes,
                           std::uint64_t records) {
  if (epoch == 0) return invalid("deliver: epoch 0 (an owner's epoch is at least 1)");
  if (seq != expected_seq) {
    return invalid("deliver: sequence " + std::to_string(seq) + " where the session expects " + std::to_string(expected_seq) +
                   " (a session's deliveries are contiguous)");
  }
  if (bytes > max_remote_message_bytes) {
    return invalid("deliver: " + std::to_string(bytes) + " bytes, more than the limit of " +
                   std::to_string(max_remote_message_bytes));
  }
  if (records > max_remote_records) {
    return invalid("deliver: " + std::to_string(records) + " records, more than the limit of " +
                   std::to_string(max_remote_records));
  }
  return {};
}

result<void> check_record_index(std::uint64_t index, std::uint64_t records) {
  if (index < records) return {};
  return invalid("record index " + std::to_string(index) + " outside a batch of " + std::to_string(records) + " records");
}

}  // namespace dix
