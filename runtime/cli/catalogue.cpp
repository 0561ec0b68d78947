#include "cli/catalogue.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace dix::cli {
namespace {

constexpr const char* categories[] = {"books", "garden", "kitchen", "music", "outdoor", "toys", "tools", "video"};
constexpr const char* brands[] = {"acme", "borealis", "cobalt", "dunmore", "everest", "fjord", "granite", "helix"};
constexpr const char* words[] = {"compact", "durable", "classic", "wireless", "organic", "premium",
                                 "foldable", "portable", "vintage", "smart", "quiet", "bright"};

}  // namespace

std::string catalogue::id(std::uint64_t n) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "p%08llu", static_cast<unsigned long long>(n));
  return buf;
}

std::string catalogue::payload(std::uint64_t n) {
  auto pick = [&](auto& list) { return list[rng_() % (sizeof list / sizeof list[0])]; };
  std::string text = pick(words);
  text += ' ';
  text += pick(words);
  return std::string("{\"name\":\"item ") + std::to_string(n) + "\",\"category\":\"" + pick(categories) +
         "\",\"brand\":\"" + pick(brands) + "\",\"price_cents\":" + std::to_string(99 + rng_() % 100000) +
         ",\"text\":\"" + text + "\"}";
}

void catalogue::fill(transaction& txn, std::uint64_t n, counts& c) {
  for (std::uint64_t i = 0; i < n; ++i) {
    auto roll = rng_() % 10;
    if (roll < 7 || next_id_ < 10) {
      txn.put(products_table, id(next_id_), payload(next_id_));
      ++next_id_;
      ++c.inserts;
    } else if (roll < 9) {
      auto k = 1 + rng_() % (next_id_ - 1);
      txn.put(products_table, id(k), payload(k));
      ++c.updates;
    } else {
      txn.del(products_table, id(1 + rng_() % (next_id_ - 1)));
      ++c.deletes;
    }
  }
}

result<std::uint64_t> highest_id(const primary_store& store) {
  std::uint64_t highest = 0;
  auto scanned = store.scan(products_table, "", [&](std::string_view id, const record&) {
    std::uint64_t n = 0;
    if (id.size() > 1 && id[0] == 'p') {
      auto digits = id.substr(1);
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
      if (ec == std::errc{} && end == digits.data() + digits.size()) highest = std::max(highest, n);
    }
    return true;
  });
  if (!scanned) return scanned.error();
  return highest;
}

std::optional<std::string_view> field_of(std::string_view payload, std::string_view field) {
  std::string key = "\"" + std::string(field) + "\":\"";
  auto at = payload.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  auto begin = at + key.size();
  auto end = payload.find('"', begin);
  if (end == std::string_view::npos) return std::nullopt;
  return payload.substr(begin, end - begin);
}

}  // namespace dix::cli
