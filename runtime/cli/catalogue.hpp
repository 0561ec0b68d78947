// The demo workload: a product catalogue in table 1 — inserts, updates and deletes of records
// whose payload names a category and a brand — shared by `dix write` and `dix demo`.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <dix/backends/hnsw_backend.hpp>
#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/backends/xapian_backend.hpp>
#include <dix/primary_store.hpp>
#include <dix/remote.hpp>
#include <dix/runtime.hpp>

#include "metrics_server.hpp"
#include "tool/catalogue_ids.hpp"

namespace dix::cli {

inline constexpr std::uint32_t products_table = 1;

class catalogue {
 public:
  // Continues numbering after the `existing` records a store already holds.
  catalogue(std::uint64_t seed, std::uint64_t existing) : rng_(seed), next_id_(existing + 1) {}

  struct counts {
    std::uint64_t inserts = 0, updates = 0, deletes = 0;
  };
  // Adds `n` operations to `txn` (70 % inserts, 20 % updates, 10 % deletes).
  void fill(transaction& txn, std::uint64_t n, counts& c);

  static std::string id(std::uint64_t n);

 private:
  std::string payload(std::uint64_t n);
  std::mt19937_64 rng_;
  std::uint64_t next_id_;
};

// What the store's table 1 holds: the highest product number (ids sort numerically; deleted
// products leave gaps, so it is not a count) and how many products there are. 0, 0 when empty.
struct catalogue_extent {
  std::uint64_t highest_id = 0;
  std::uint64_t products = 0;
};
result<catalogue_extent> extent_of(const primary_store& store);
// extent_of(store).highest_id.
result<std::uint64_t> highest_id(const primary_store& store);

// The value of "field":"…" in a catalogue payload, or nullopt.
std::optional<std::string_view> field_of(std::string_view payload, std::string_view field);

// The catalogue's secondary indexes, shared by `dix demo` and `dix serve`: `by-category` and
// `by-brand`, each a rocksdb_index_backend in `<dir>/<id>` indexing one payload field of table 1
// of the store logged as "main".
struct catalogue_index {
  std::string id;
  std::string field;
  std::shared_ptr<rocksdb_index_backend> backend;
};
// Creates both backends (databases not opened yet), but those whose id is in `leave_out` (served
// by an index node instead, or not served). The error names the index that failed.
result<std::vector<catalogue_index>> make_catalogue_indexes(const std::filesystem::path& dir,
                                                            const std::set<std::string>& leave_out = {});
// Registers them with `rt` (projection version "demo-v1", `options` for both when given).
result<void> register_catalogue_indexes(runtime& rt, const std::vector<catalogue_index>& indexes,
                                        std::optional<runner_options> options = {});
// Both in one step.
result<std::vector<catalogue_index>> register_catalogue_indexes(runtime& rt, const std::filesystem::path& dir,
                                                                std::optional<runner_options> options = {});

// The demo's search indexes beside the secondary ones: `fulltext`, a
// xapian_backend over the product's name, text, category and brand (prefixes N, T, C, B: the
// query `category:books portable` works), and `similar`, an hnsw_backend (cosine) over
// embed(text). A product without those fields is unindexable there, never a failure.
struct catalogue_search {
  std::shared_ptr<xapian_backend> fulltext;
  std::shared_ptr<hnsw_backend> similar;
};
using tool::fulltext_id;
using tool::similar_id;
// The four indexes by id, in the order `dix serve` lists them: by-category, by-brand, fulltext,
// similar (its --indexes and `dix bench failover --indexes` choose among them; one list,
// tool/catalogue_ids.hpp).
using tool::catalogue_ids;
// Creates both in `<dir>/<id>` (nothing read yet). An id in `leave_out` is left out (its
// pointer stays null): an index node serves it, or nobody.
result<catalogue_search> make_catalogue_search(const std::filesystem::path& dir,
                                               const std::set<std::string>& leave_out = {});
// Registers those made with `rt` (projection version "demo-v1", `options` for both when given).
result<void> register_catalogue_search(runtime& rt, const catalogue_search& search,
                                       std::optional<runner_options> options = {});
// Both in one step (`dix demo`).
result<catalogue_search> register_catalogue_search(runtime& rt, const std::filesystem::path& dir,
                                                   std::optional<runner_options> options = {},
                                                   const std::set<std::string>& leave_out = {});

// The catalogue's indexes on index nodes (`dix serve --backend-host`, `dix demo --remote`): for
// each of the four ids, the `dix serve-backend --kind` of its node and its backend's kind().
struct catalogue_node_kind {
  std::string node;     // rocksdb, xapian, hnsw
  std::string backend;  // rocksdb_index, xapian, hnsw
};
std::optional<catalogue_node_kind> node_kind_of(std::string_view id);
// "ID=HOST:PORT[,ID=HOST:PORT…]": each ID one of the four, at most once; HOST:PORT as
// parse_listen_address takes it, the port not 0. invalid_argument naming what is wrong.
result<std::map<std::string, listen_address>> parse_backend_hosts(const std::string& spec);
// Registers `remote` (a remote_backend) as the catalogue index `id`, with that id's projection.
result<void> register_catalogue_remote(runtime& rt, const std::string& id, std::shared_ptr<backend> remote,
                                       std::optional<runner_options> options = {});

// The backend an index node serves for the demo (`dix serve-backend --kind K`): a RocksDB index
// ("rocksdb"), the catalogue's full text ("xapian", fields as in `fulltext`) or its vectors
// ("hnsw", as in `similar`), over `path` with the id `id`. invalid_argument for another kind.
result<std::shared_ptr<backend>> make_catalogue_backend(const std::string& kind, const std::string& id,
                                                        const std::filesystem::path& path);

// An index node's queries on that backend (remote_host_options::query): lookup and range on the
// RocksDB index, search on Xapian, knn on hnsw; another kind of query is not_supported.
remote_query_handler make_catalogue_query_handler(std::shared_ptr<backend> served);

// A deterministic hashing embedding (no model to download): every lower-cased word of `text`
// adds 1 and 0.5 to two of embedding_dimension components its FNV-1a hash picks; the sum is
// normalised. Texts sharing words are close under cosine; the zero vector only for a text
// without a word (unindexable under cosine).
inline constexpr std::size_t embedding_dimension = 16;
std::vector<float> embed(std::string_view text);

// What a catalogue writer has done so far, readable from any thread.
struct writer_progress {
  std::atomic<std::uint64_t> written{0};      // operations committed
  std::atomic<std::uint64_t> last_commit{0};  // first sequence of the last transaction
};
// Commits catalogue operations in transactions of 10, numbering after `existing` records, paced
// to `rate` per second (0 = full speed), until `records` operations are written or `stop` is
// set. Returns the first failed commit.
result<void> write_catalogue(primary_store& store, std::uint64_t seed, std::uint64_t existing,
                             std::uint64_t records, std::uint64_t rate, const std::atomic<bool>& stop,
                             writer_progress& progress);

}  // namespace dix::cli
