#include "core/shared_reads.hpp"

#include <functional>

namespace dix {

namespace {

// What an entry costs beyond its id and value: the node (key, entry, the strings' headers), its
// hash slot and the allocator's headers.
constexpr std::size_t entry_overhead = 128;

}  // namespace

std::size_t shared_reads::key_hash::operator()(const std::pair<std::uint32_t, std::string>& k) const noexcept {
  return std::hash<std::string>{}(k.second) ^ (static_cast<std::size_t>(k.first) * 0x9e3779b97f4a7c15ull);
}

void shared_reads::follow() noexcept {
  std::lock_guard hold(mutex_);
  ++followers_;
}

void shared_reads::unfollow() noexcept {
  generation current, previous;  // freed after the mutex is released
  std::lock_guard hold(mutex_);
  if (followers_ > 0) --followers_;
  if (followers_ < limits_.min_followers) {
    // Nobody to share with: free the memory now.
    current.swap(current_);
    previous.swap(previous_);
    current_bytes_ = 0;
  }
}

bool shared_reads::active() const noexcept {
  std::lock_guard hold(mutex_);
  return followers_ >= limits_.min_followers;
}

void shared_reads::set_probe(std::uint32_t table, std::string_view id) {
  // The probe key is scratch: unordered_map has no heterogeneous lookup in C++17.
  probe_.first = table;
  probe_.second.assign(id.data(), id.size());
}

const shared_reads::entry* shared_reads::find(std::uint32_t table, std::string_view id) {
  set_probe(table, id);
  // The current generation holds a key's newest read (record() never puts an older read over a
  // newer one, in either generation), so the previous one answers only for a key it lacks.
  if (auto it = current_.find(probe_); it != current_.end()) return &it->second;
  if (auto it = previous_.find(probe_); it != previous_.end()) return &it->second;
  return nullptr;
}

std::optional<std::size_t> shared_reads::lookup(std::uint32_t table, const std::vector<std::string_view>& ids,
                                                const std::vector<std::uint64_t>& at_least,
                                                std::vector<std::optional<std::string>>& values,
                                                std::vector<bool>& found) {
  values.assign(ids.size(), std::nullopt);
  found.assign(ids.size(), false);
  std::lock_guard hold(mutex_);
  if (followers_ < limits_.min_followers) return std::nullopt;
  std::size_t n = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const entry* e = find(table, ids[i]);
    if (e == nullptr || e->read_at < at_least[i]) continue;
    values[i] = e->value;
    found[i] = true;
    ++n;
  }
  count_.hits += n;
  return n;
}

void shared_reads::record(std::uint32_t table, const std::vector<std::string_view>& ids,
                          const std::vector<std::optional<std::string>>& values, std::uint64_t read_at) {
  std::vector<generation> dropped;  // freed after the mutex is released: the other tailers need not wait
  std::lock_guard hold(mutex_);
  if (followers_ < limits_.min_followers) return;
  auto cost_of = [](const std::string& id, const entry& e) { return id.size() + (e.value ? e.value->size() : 0) + entry_overhead; };
  for (std::size_t i = 0; i < ids.size() && i < values.size(); ++i) {
    const std::size_t cost = ids[i].size() + (values[i] ? values[i]->size() : 0) + entry_overhead;
    if (cost > limits_.max_bytes / 8) continue;  // a large value would turn the whole table over
    set_probe(table, ids[i]);
    if (auto it = current_.find(probe_); it != current_.end()) {
      if (it->second.read_at > read_at) continue;  // a later read is here
      // Replaced: the table is charged the difference.
      current_bytes_ -= cost_of(it->first.second, it->second);
      current_.erase(it);
    } else if (auto older = previous_.find(probe_); older != previous_.end() && older->second.read_at > read_at) {
      continue;  // a later read is in the previous generation
    }
    if (current_bytes_ + cost > limits_.max_bytes && !current_.empty()) {
      dropped.push_back(std::move(previous_));
      previous_ = std::move(current_);
      current_ = generation();
      current_bytes_ = 0;
      ++count_.rotations;
    }
    current_.emplace(probe_, entry{read_at, values[i]});
    current_bytes_ += cost;
    ++count_.recorded;
  }
}

void shared_reads::forget() {
  generation current, previous;  // freed after the mutex is released, as record() does
  std::lock_guard hold(mutex_);
  current.swap(current_);
  previous.swap(previous_);
  current_bytes_ = 0;
}

shared_reads::counters shared_reads::count() const {
  std::lock_guard hold(mutex_);
  return count_;
}

}  // namespace dix
