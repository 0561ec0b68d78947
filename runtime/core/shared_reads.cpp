#include "core/shared_reads.hpp"

#include <algorithm>
#include <cstring>
#include <functional>

namespace dix {

namespace {

// What an entry is charged beyond its id and value: its slots at their worst (32 bytes each, four
// per entry right after the table doubles to stay at most half full).
constexpr std::size_t entry_overhead = 128;
constexpr std::size_t first_capacity = 256;  // slots

}  // namespace

shared_reads::shared_reads(limits l) : limits_(l) {
  limits_.max_bytes = std::min<std::size_t>(limits_.max_bytes, std::size_t{1} << 30);
}

std::uint64_t shared_reads::hash_of(std::uint32_t table, std::string_view id) noexcept {
  const std::uint64_t h =
      std::hash<std::string_view>{}(id) ^ (static_cast<std::uint64_t>(table) * 0x9e3779b97f4a7c15ull);
  return h == 0 ? 1 : h;  // 0 marks an empty slot
}

shared_reads::slot* shared_reads::generation::find(std::uint64_t hash, std::uint32_t table, std::string_view id) {
  if (slots.empty()) return nullptr;
  const std::size_t mask = slots.size() - 1;
  for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
    slot& s = slots[i];
    if (s.hash == 0) return nullptr;
    if (s.hash == hash && s.table == table && s.id_size == id.size() &&
        std::memcmp(arena.data() + s.offset, id.data(), id.size()) == 0) {
      return &s;
    }
  }
}

shared_reads::slot& shared_reads::generation::empty_slot(std::vector<slot>& in, std::uint64_t hash) noexcept {
  const std::size_t mask = in.size() - 1;
  std::size_t i = hash & mask;
  while (in[i].hash != 0) i = (i + 1) & mask;
  return in[i];
}

shared_reads::slot& shared_reads::generation::insert_slot(std::uint64_t hash) {
  if (2 * (used + 1) > slots.size()) {
    // Double (or start); the stored hashes place every slot again without touching the arena.
    std::vector<slot> grown(std::max(first_capacity, 2 * slots.size()));
    for (const auto& s : slots) {
      if (s.hash != 0) empty_slot(grown, s.hash) = s;
    }
    slots.swap(grown);
  }
  ++used;
  return empty_slot(slots, hash);
}

void shared_reads::generation::prefetch(std::uint64_t hash) const noexcept {
#if defined(__GNUC__)
  if (!slots.empty()) __builtin_prefetch(&slots[hash & (slots.size() - 1)]);
#else
  (void)hash;
#endif
}

void shared_reads::generation::clear() noexcept {
  std::fill(slots.begin(), slots.end(), slot{});
  arena.clear();
  used = 0;
  bytes = 0;
}

std::optional<std::string> shared_reads::value_of(const generation& g, const slot& e) {
  if (e.value_size == absent_value) return std::nullopt;
  return std::string(g.arena.data() + e.offset + e.id_size, e.value_size);
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
    std::swap(current, current_);
    std::swap(previous, previous_);
  }
}

bool shared_reads::active() const noexcept {
  std::lock_guard hold(mutex_);
  return followers_ >= limits_.min_followers;
}

std::optional<std::size_t> shared_reads::lookup(std::uint32_t table, const std::vector<std::string_view>& ids,
                                                const std::vector<std::uint64_t>& at_least,
                                                std::vector<std::optional<std::string>>& values,
                                                std::vector<bool>& found) {
  values.assign(ids.size(), std::nullopt);
  found.assign(ids.size(), false);
  std::lock_guard hold(mutex_);
  if (followers_ < limits_.min_followers) return std::nullopt;
  // The group's hashes first, each with a prefetch of its first slot in the current generation:
  // the probes below then wait for their cache misses together, not one after another (the
  // table is megabytes; a probe's misses were most of a lookup's time).
  hashes_.resize(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    hashes_[i] = hash_of(table, ids[i]);
    current_.prefetch(hashes_[i]);
  }
  std::size_t n = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto hash = hashes_[i];
    // The current generation holds a key's newest read (record() never puts an older read over a
    // newer one, in either generation), so the previous one answers only for a key it lacks.
    const generation* g = &current_;
    const slot* e = current_.find(hash, table, ids[i]);
    if (e == nullptr) {
      g = &previous_;
      e = previous_.find(hash, table, ids[i]);
    }
    if (e == nullptr || e->read_at < at_least[i]) continue;
    values[i] = value_of(*g, *e);
    found[i] = true;
    ++n;
  }
  count_.hits += n;
  return n;
}

void shared_reads::record(std::uint32_t table, const std::vector<std::string_view>& ids,
                          const std::vector<std::optional<std::string>>& values, std::uint64_t read_at) {
  std::lock_guard hold(mutex_);
  if (followers_ < limits_.min_followers) return;
  for (std::size_t i = 0; i < ids.size() && i < values.size(); ++i) {
    const auto& id = ids[i];
    const std::size_t value_size = values[i] ? values[i]->size() : 0;
    const std::size_t cost = id.size() + value_size + entry_overhead;
    if (cost > limits_.max_bytes / 8) continue;  // a large value would turn the whole table over
    const auto hash = hash_of(table, id);
    slot* e = current_.find(hash, table, id);
    if (e != nullptr) {
      if (e->read_at > read_at) continue;  // a later read is here
    } else if (const slot* older = previous_.find(hash, table, id); older != nullptr && older->read_at > read_at) {
      continue;  // a later read is in the previous generation
    }
    if (current_.bytes + cost > limits_.max_bytes && current_.used > 0) {
      // The previous generation is dropped; its memory becomes the new current one.
      std::swap(previous_, current_);
      current_.clear();
      ++count_.rotations;
      e = nullptr;  // the key now lies in the previous generation
    }
    if (current_.arena.capacity() == 0) current_.arena.reserve(limits_.max_bytes);
    // A key recorded again gets new bytes; the old ones stay charged until the generation goes.
    const auto offset = static_cast<std::uint32_t>(current_.arena.size());
    current_.arena.insert(current_.arena.end(), id.begin(), id.end());
    if (values[i]) current_.arena.insert(current_.arena.end(), values[i]->begin(), values[i]->end());
    slot& s = e != nullptr ? *e : current_.insert_slot(hash);
    s = slot{hash, read_at, table, offset, static_cast<std::uint32_t>(id.size()),
             values[i] ? static_cast<std::uint32_t>(value_size) : absent_value};
    current_.bytes += cost;
    ++count_.recorded;
  }
}

void shared_reads::forget() {
  generation current, previous;  // freed after the mutex is released, as unfollow() does
  std::lock_guard hold(mutex_);
  std::swap(current, current_);
  std::swap(previous, previous_);
}

shared_reads::counters shared_reads::count() const {
  std::lock_guard hold(mutex_);
  return count_;
}

}  // namespace dix
