#include "catalogue.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <chrono>
#include <charconv>
#include <cstdio>
#include <thread>

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

result<catalogue_extent> extent_of(const primary_store& store) {
  catalogue_extent extent;
  auto& highest = extent.highest_id;
  auto scanned = store.scan(products_table, "", [&](std::string_view id, const record&) {
    ++extent.products;
    std::uint64_t n = 0;
    if (id.size() > 1 && id[0] == 'p') {
      auto digits = id.substr(1);
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
      if (ec == std::errc{} && end == digits.data() + digits.size()) highest = std::max(highest, n);
    }
    return true;
  });
  if (!scanned) return scanned.error();
  return extent;
}

result<std::uint64_t> highest_id(const primary_store& store) {
  auto extent = extent_of(store);
  if (!extent) return extent.error();
  return extent->highest_id;
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

namespace {

projection by_field(std::string field) {
  return [field](std::string_view payload, const record_info&) -> projection_result {
    auto value = field_of(payload, field);
    if (!value || value->empty()) return unindexable{"no_" + field};
    return encode_keys({std::string(*value)});
  };
}

}  // namespace

result<std::vector<catalogue_index>> make_catalogue_indexes(const std::filesystem::path& dir,
                                                            const std::set<std::string>& leave_out) {
  std::vector<catalogue_index> indexes;
  for (auto [id, field] : {std::pair{"by-category", "category"}, std::pair{"by-brand", "brand"}}) {
    if (leave_out.count(id) == 0) indexes.push_back({id, field, nullptr});
  }
  for (auto& ix : indexes) {
    rocksdb_index_options o;
    o.path = dir / ix.id;
    auto backend = rocksdb_index_backend::create(ix.id, o);
    if (!backend) return error{backend.error().value(), "creating " + ix.id + ": " + backend.error().message()};
    ix.backend = *backend;
  }
  return indexes;
}

result<void> register_catalogue_indexes(runtime& rt, const std::vector<catalogue_index>& indexes,
                                        std::optional<runner_options> options) {
  for (const auto& ix : indexes) {
    registration r;
    r.backend = ix.backend;
    r.projections[table_ref{"main", products_table}] = by_field(ix.field);
    r.projection_version = "demo-v1";
    r.options = options;
    auto handle = rt.register_index(std::move(r));
    if (!handle) return error{handle.error().value(), "registering " + ix.id + ": " + handle.error().message()};
  }
  return {};
}

result<std::vector<catalogue_index>> register_catalogue_indexes(runtime& rt, const std::filesystem::path& dir,
                                                                std::optional<runner_options> options) {
  auto indexes = make_catalogue_indexes(dir);
  if (!indexes) return indexes.error();
  if (auto ok = register_catalogue_indexes(rt, *indexes, options); !ok) return ok.error();
  return indexes;
}

std::vector<float> embed(std::string_view text) {
  std::vector<float> v(embedding_dimension, 0.0f);
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isalnum(static_cast<unsigned char>(text[i])) == 0) ++i;
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the lower-cased word
    bool word = false;
    for (; i < text.size() && std::isalnum(static_cast<unsigned char>(text[i])) != 0; ++i) {
      h = (h ^ static_cast<unsigned char>(std::tolower(static_cast<unsigned char>(text[i])))) * 1099511628211ull;
      word = true;
    }
    if (!word) continue;
    // Positive weights only: words never cancel out, so a text with a word is never the zero
    // vector (which cosine cannot index).
    v[h % embedding_dimension] += 1.0f;
    v[(h >> 32) % embedding_dimension] += 0.5f;
  }
  double norm = 0;
  for (float x : v) norm += static_cast<double>(x) * x;
  if (norm > 0) {
    for (float& x : v) x = static_cast<float>(x / std::sqrt(norm));
  }
  return v;
}

namespace {

// The full-text projection: the fields of the payload the index is configured with.
projection fulltext_projection() {
  return [](std::string_view payload, const record_info&) -> projection_result {
    std::vector<std::pair<std::string, std::string>> fields;
    for (const char* f : {"name", "text", "category", "brand"}) {
      if (auto v = field_of(payload, f); v && !v->empty()) fields.emplace_back(f, std::string(*v));
    }
    if (fields.empty()) return unindexable{"no_text"};
    return encode_fields(fields);
  };
}

// The vector projection: embed(text); a product without text is unindexable.
projection similar_projection() {
  return [](std::string_view payload, const record_info&) -> projection_result {
    auto text = field_of(payload, "text");
    if (!text || text->empty()) return unindexable{"no_text"};
    const auto v = embed(*text);
    return encode_vector(v.data(), v.size());
  };
}

result<void> register_one(runtime& rt, std::shared_ptr<backend> b, projection p, const std::optional<runner_options>& options) {
  const std::string id = b->id();
  registration r;
  r.backend = std::move(b);
  r.projections[table_ref{"main", products_table}] = std::move(p);
  r.projection_version = "demo-v1";
  r.options = options;
  auto handle = rt.register_index(std::move(r));
  if (!handle) return error{handle.error().value(), "registering " + id + ": " + handle.error().message()};
  return {};
}

}  // namespace

result<std::shared_ptr<backend>> make_catalogue_backend(const std::string& kind, const std::string& id,
                                                        const std::filesystem::path& path) {
  if (kind == "rocksdb") {
    rocksdb_index_options o;
    o.path = path;
    auto b = rocksdb_index_backend::create(id, o);
    if (!b) return b.error();
    return std::shared_ptr<backend>(*b);
  }
  if (kind == "xapian") {
    xapian_options xo;
    xo.path = path;
    xo.fields = {{"name", {"N", 1}}, {"text", {"T", 2}}, {"category", {"C", 1}}, {"brand", {"B", 1}}};
    auto b = xapian_backend::create(id, xo);
    if (!b) return b.error();
    return std::shared_ptr<backend>(*b);
  }
  if (kind == "hnsw") {
    hnsw_options ho;
    ho.state_dir = path;
    ho.dimension = embedding_dimension;
    ho.space = hnsw_space::cosine;
    auto b = hnsw_backend::create(id, ho);
    if (!b) return b.error();
    return std::shared_ptr<backend>(*b);
  }
  return error{errc::invalid_argument, "--kind " + kind + ": expected rocksdb, xapian or hnsw"};
}

remote_query_handler make_catalogue_query_handler(std::shared_ptr<backend> served) {
  return [served](const remote_query& q) -> result<remote_rows> { return served->query(q); };
}

std::optional<catalogue_node_kind> node_kind_of(std::string_view id) {
  if (id == "by-category" || id == "by-brand") return catalogue_node_kind{"rocksdb", "rocksdb_index"};
  if (id == fulltext_id) return catalogue_node_kind{"xapian", "xapian"};
  if (id == similar_id) return catalogue_node_kind{"hnsw", "hnsw"};
  return std::nullopt;
}

result<std::map<std::string, listen_address>> parse_backend_hosts(const std::string& spec) {
  std::map<std::string, listen_address> out;
  std::size_t from = 0;
  while (from <= spec.size()) {
    auto comma = spec.find(',', from);
    auto item = spec.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    auto eq = item.find('=');
    if (eq == std::string::npos) return error{errc::invalid_argument, "\"" + item + "\": expected ID=HOST:PORT"};
    auto id = item.substr(0, eq);
    if (!node_kind_of(id)) {
      return error{errc::invalid_argument, "\"" + id + "\": expected by-category, by-brand, fulltext or similar"};
    }
    if (out.count(id) != 0) return error{errc::invalid_argument, id + " is named twice"};
    auto at = parse_listen_address(item.substr(eq + 1));
    if (!at) return error{errc::invalid_argument, id + ": " + at.error().message()};
    if (at->port == 0) return error{errc::invalid_argument, id + ": the node's port is needed (not 0)"};
    out.emplace(id, *at);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return out;
}

result<void> register_catalogue_remote(runtime& rt, const std::string& id, std::shared_ptr<backend> remote,
                                       std::optional<runner_options> options) {
  if (id == fulltext_id) return register_one(rt, std::move(remote), fulltext_projection(), options);
  if (id == similar_id) return register_one(rt, std::move(remote), similar_projection(), options);
  if (id == "by-category") return register_one(rt, std::move(remote), by_field("category"), options);
  if (id == "by-brand") return register_one(rt, std::move(remote), by_field("brand"), options);
  return error{errc::invalid_argument, "no catalogue index " + id};
}

result<catalogue_search> make_catalogue_search(const std::filesystem::path& dir, const std::set<std::string>& leave_out) {
  catalogue_search out;
  if (leave_out.count(fulltext_id) == 0) {
    xapian_options xo;
    xo.path = dir / fulltext_id;
    xo.fields = {{"name", {"N", 1}}, {"text", {"T", 2}}, {"category", {"C", 1}}, {"brand", {"B", 1}}};
    auto fulltext = xapian_backend::create(fulltext_id, xo);
    if (!fulltext) {
      return error{fulltext.error().value(), std::string("creating ") + fulltext_id + ": " + fulltext.error().message()};
    }
    out.fulltext = *fulltext;
  }
  if (leave_out.count(similar_id) == 0) {
    hnsw_options ho;
    ho.state_dir = dir / similar_id;
    ho.dimension = embedding_dimension;
    ho.space = hnsw_space::cosine;
    auto similar = hnsw_backend::create(similar_id, ho);
    if (!similar) {
      return error{similar.error().value(), std::string("creating ") + similar_id + ": " + similar.error().message()};
    }
    out.similar = *similar;
  }
  return out;
}

result<void> register_catalogue_search(runtime& rt, const catalogue_search& search, std::optional<runner_options> options) {
  if (search.fulltext) {
    if (auto ok = register_one(rt, search.fulltext, fulltext_projection(), options); !ok) return ok.error();
  }
  if (search.similar) {
    if (auto ok = register_one(rt, search.similar, similar_projection(), options); !ok) return ok.error();
  }
  return {};
}

result<catalogue_search> register_catalogue_search(runtime& rt, const std::filesystem::path& dir,
                                                   std::optional<runner_options> options,
                                                   const std::set<std::string>& leave_out) {
  auto made = make_catalogue_search(dir, leave_out);
  if (!made) return made.error();
  if (auto ok = register_catalogue_search(rt, *made, options); !ok) return ok.error();
  return made;
}

result<void> write_catalogue(primary_store& store, std::uint64_t seed, std::uint64_t existing,
                             std::uint64_t records, std::uint64_t rate, const std::atomic<bool>& stop,
                             writer_progress& progress) {
  catalogue workload(seed + existing, existing);
  catalogue::counts counts;
  auto start = std::chrono::steady_clock::now();
  std::uint64_t written = 0;
  while (written < records && !stop.load()) {
    auto n = std::min<std::uint64_t>(10, records - written);
    auto txn = store.begin();
    workload.fill(txn, n, counts);
    auto done = txn.commit();
    if (!done) return done.error();
    written += n;
    progress.last_commit = done->sequence;
    progress.written = written;
    if (rate > 0) std::this_thread::sleep_until(start + std::chrono::microseconds(written * 1'000'000 / rate));
  }
  return {};
}

}  // namespace dix::cli
