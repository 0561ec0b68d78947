#include "actors/ownership.hpp"

#include <utility>

namespace dix {

ownership::ownership(std::string id, std::uint64_t token, runner_lock* lock) : id_(std::move(id)), lock_(lock) {
  record_.token = token;
}

void ownership::request(runner_lock::grant granted) { lock_->acquire(id_, record_.token, std::move(granted)); }

void ownership::acquired() {
  std::lock_guard g(mutex_);
  record_.owner = true;
  record_.epoch = 0;
}

void ownership::minted(epoch_t epoch) {
  std::lock_guard g(mutex_);
  record_.epoch = epoch;
}

void ownership::quiesced(epoch_t epoch) {
  std::lock_guard g(mutex_);
  if (epoch > record_.quiesced) record_.quiesced = epoch;  // epochs only rise: a late answer never lowers it
}

void ownership::release() {
  std::lock_guard g(mutex_);
  // Under the record's mutex, so no reader sees the entry free while the record says owned.
  lock_->release(id_, record_.token);
  record_.owner = false;
}

ownership_record ownership::read() const {
  std::lock_guard g(mutex_);
  return record_;
}

}  // namespace dix
