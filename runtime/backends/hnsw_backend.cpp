#include <dix/backends/hnsw_backend.hpp>
#include <dix/applier.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <queue>
#include <shared_mutex>
#include <system_error>
#include <tuple>
#include <unordered_map>
#include <variant>

// hnswlib 0.6.2 is header-only but defines functions and variables with external linkage in its
// headers (cpuid, xgetbv, AVXCapable, L2SqrSIMD16Ext, InnerProductSIMD16Ext, ...): a program that
// includes hnswlib itself (`dix bench vector`'s baseline, an application) would not link beside
// dix_backends. So it is included inside an unnamed namespace — every name internal to this file
// — after the standard and intrinsic headers it includes, whose guards keep them out of it.
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cassert>
#include <fstream>
#include <iostream>
#include <list>
#include <random>
#include <stdexcept>
#include <unordered_set>
#include <vector>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#include <x86intrin.h>
#endif

namespace {
#include <hnswlib/hnswlib.h>
}  // namespace

#include "backends/hnsw_probe.hpp"
#include "backends/index_dir.hpp"
#include "backends/index_space.hpp"
#include "core/bytes.hpp"
#include "core/crc32.hpp"
#include "core/names.hpp"

namespace dix {
namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

constexpr std::size_t max_dimension = 4096;
constexpr auto max_spacing = std::chrono::milliseconds(60000);
constexpr std::string_view cursor_magic = "DIXHNSWC";
constexpr std::string_view labels_magic = "DIXHNSWL";
constexpr std::uint32_t format_version = 1;         // the cursor file's; labels files written before digests
constexpr std::uint32_t labels_format_hashed = 2;   // labels with each record's entry hash and the digest
constexpr const char* cursor_name = "cursor";
constexpr const char* cursor_tmp_name = "cursor.tmp";

// ---- files -----------------------------------------------------------------------------------

std::string errno_text(int e) { return std::generic_category().message(e); }

error io_failure(const std::string& what, int e) { return error{errc::io_error, what + ": " + errno_text(e)}; }

result<void> fsync_path(const fs::path& path, bool directory) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  if (fd < 0) return io_failure("open " + path.string(), errno);
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (rc != 0) return io_failure("fsync " + path.string(), e);
  return {};
}

// Writes `bytes` to a fresh `path` and syncs it.
result<void> write_synced(const fs::path& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_failure("create " + path.string(), errno);
  std::size_t at = 0;
  while (at < bytes.size()) {
    const auto n = ::write(fd, bytes.data() + at, bytes.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      return io_failure("write " + path.string(), e);
    }
    at += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int e = errno;
    ::close(fd);
    return io_failure("fsync " + path.string(), e);
  }
  if (::close(fd) != 0) return io_failure("close " + path.string(), errno);
  return {};
}

struct file_check {
  std::uint64_t length = 0;
  std::uint32_t crc = 0;
  friend bool operator==(const file_check& a, const file_check& b) noexcept { return a.length == b.length && a.crc == b.crc; }
  friend bool operator!=(const file_check& a, const file_check& b) noexcept { return !(a == b); }
};

// Reads the file in pieces of up to `piece` bytes, handing each to `take`. False: it does not
// exist (when `missing_ok`; else that is an error too).
template <class Take>
result<bool> read_pieces(const fs::path& path, std::size_t piece, bool missing_ok, Take take) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && missing_ok) return false;
  if (fd < 0) return io_failure("open " + path.string(), errno);
  std::string buffer(piece, '\0');
  for (;;) {
    const auto n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      return io_failure("read " + path.string(), e);
    }
    if (n == 0) break;
    take(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
  }
  ::close(fd);
  return true;
}

// The length and CRC-32 of the file's bytes as they read back now; nullopt when it does not exist.
result<std::optional<file_check>> check_existing(const fs::path& path) {
  file_check out;
  auto read = read_pieces(path, 1u << 20, true, [&](std::string_view bytes) {
    out.crc = crc32_ieee(bytes, out.crc);
    out.length += bytes.size();
  });
  if (!read) return read.error();
  if (!*read) return std::optional<file_check>{};
  return std::optional<file_check>{out};
}

// As check_existing, ENOENT an error too.
result<file_check> check_file(const fs::path& path) {
  auto check = check_existing(path);
  if (!check) return check.error();
  if (!*check) return io_failure("open " + path.string(), ENOENT);
  return **check;
}

// The whole file; nullopt when it does not exist.
result<std::optional<std::string>> read_whole(const fs::path& path) {
  std::string out;
  auto read = read_pieces(path, 1u << 16, true, [&](std::string_view bytes) { out.append(bytes); });
  if (!read) return read.error();
  if (!*read) return std::optional<std::string>{};
  return std::optional<std::string>{std::move(out)};
}

result<void> rename_file(const fs::path& from, const fs::path& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) return io_failure("rename " + from.string() + " to " + to.string(), errno);
  return {};
}

fs::path index_path(const fs::path& dir, std::uint64_t g) { return dir / ("index." + std::to_string(g)); }
fs::path labels_path(const fs::path& dir, std::uint64_t g) { return dir / ("labels." + std::to_string(g)); }
fs::path tmp_of(const fs::path& p) { return fs::path(p.string() + ".tmp"); }

// The generation a file of ours carries (`index.<g>`, `labels.<g>`, either with `.tmp`), or 0.
std::uint64_t generation_of(const std::string& name) {
  std::string_view rest(name);
  if (rest.substr(0, 6) == "index.") rest.remove_prefix(6);
  else if (rest.substr(0, 7) == "labels.") rest.remove_prefix(7);
  else return 0;
  if (rest.size() > 4 && rest.substr(rest.size() - 4) == ".tmp") rest.remove_suffix(4);
  if (rest.empty() || rest.size() > 19) return 0;
  std::uint64_t g = 0;
  for (char c : rest) {
    if (c < '0' || c > '9') return 0;
    g = g * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return g;
}

// ---- formats (docs/formats.md, "hnsw_backend") --------------------------------------------

using ref_key = std::tuple<std::string, std::uint32_t, std::string>;  // log, table, record id

struct slot {
  std::uint64_t label = 0;
  std::uint64_t version = 0;
  hash128 hash;  // the record's entry hash (formats.md §7); unset in a map read from format 1
};

// What the cursor file says.
struct cursor_file {
  std::uint64_t generation = 0;
  file_check index;
  file_check labels;
  std::string cursor_bytes;
};

std::string encode_cursor_file(const cursor_file& c) {
  std::string out(cursor_magic);
  put_le<std::uint32_t>(out, format_version);
  put_le<std::uint64_t>(out, c.generation);
  put_le<std::uint64_t>(out, c.index.length);
  put_le<std::uint32_t>(out, c.index.crc);
  put_le<std::uint64_t>(out, c.labels.length);
  put_le<std::uint32_t>(out, c.labels.crc);
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(c.cursor_bytes.size()));
  out += c.cursor_bytes;
  put_le<std::uint32_t>(out, crc32_ieee(out));
  return out;
}

constexpr std::size_t cursor_fixed_bytes = 8 + 4 + 8 + 8 + 4 + 8 + 4 + 4;

std::optional<cursor_file> decode_cursor_file(std::string_view in) {
  if (in.size() < cursor_fixed_bytes + 4 || in.substr(0, 8) != cursor_magic) return std::nullopt;
  if (get_le<std::uint32_t>(in, in.size() - 4) != crc32_ieee(in.substr(0, in.size() - 4))) return std::nullopt;
  if (get_le<std::uint32_t>(in, 8) != format_version) return std::nullopt;
  cursor_file c;
  c.generation = get_le<std::uint64_t>(in, 12);
  c.index.length = get_le<std::uint64_t>(in, 20);
  c.index.crc = get_le<std::uint32_t>(in, 28);
  c.labels.length = get_le<std::uint64_t>(in, 32);
  c.labels.crc = get_le<std::uint32_t>(in, 40);
  const auto n = get_le<std::uint32_t>(in, 44);
  if (in.size() != cursor_fixed_bytes + n + 4 || c.generation == 0) return std::nullopt;
  c.cursor_bytes.assign(in.substr(cursor_fixed_bytes, n));
  return c;
}

// The label map as a barrier writes it. `hashed`: every slot carries its entry hash and
// `digest` is their sum (formats.md §6.4, §7); false only for a map read from a format 1 file,
// written before digests, until a reset empties it.
struct label_map {
  std::uint64_t next_label = 0;
  std::map<ref_key, slot> by_ref;
  bool hashed = true;
  index_digest digest;
};

std::string encode_labels(const label_map& m, std::size_t dimension, hnsw_space space) {
  std::string out(labels_magic);
  put_le<std::uint32_t>(out, m.hashed ? labels_format_hashed : format_version);
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(dimension));
  out.push_back(static_cast<char>(space));
  put_le<std::uint64_t>(out, m.next_label);
  put_le<std::uint64_t>(out, m.by_ref.size());
  if (m.hashed) out += m.digest.encode();
  for (const auto& [key, s] : m.by_ref) {
    const auto& [log, table, record_id] = key;
    put_le<std::uint64_t>(out, s.label);
    put_le<std::uint64_t>(out, s.version);
    if (m.hashed) {
      put_le<std::uint64_t>(out, s.hash.lo);
      put_le<std::uint64_t>(out, s.hash.hi);
    }
    out.push_back(static_cast<char>(log.size()));
    out += log;
    put_le<std::uint32_t>(out, table);
    put_le<std::uint32_t>(out, static_cast<std::uint32_t>(record_id.size()));
    out += record_id;
  }
  return out;
}

std::optional<label_map> decode_labels(std::string_view in, std::size_t dimension, hnsw_space space) {
  constexpr std::size_t header = 8 + 4 + 4 + 1 + 8 + 8;
  if (in.size() < header || in.substr(0, 8) != labels_magic) return std::nullopt;
  const auto format = get_le<std::uint32_t>(in, 8);
  if ((format != format_version && format != labels_format_hashed) || get_le<std::uint32_t>(in, 12) != dimension ||
      static_cast<std::uint8_t>(in[16]) != static_cast<std::uint8_t>(space)) {
    return std::nullopt;
  }
  label_map m;
  m.hashed = format == labels_format_hashed;
  m.next_label = get_le<std::uint64_t>(in, 17);
  const auto count = get_le<std::uint64_t>(in, 25);
  std::size_t at = header;
  index_digest stored;
  if (m.hashed) {
    if (in.size() - at < index_digest::encoded_size) return std::nullopt;
    stored = *index_digest::decode(in.substr(at, index_digest::encoded_size));
    at += index_digest::encoded_size;
  }
  const std::size_t hash_bytes = m.hashed ? 16 : 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (in.size() - at < 8 + 8 + hash_bytes + 1) return std::nullopt;
    slot s{get_le<std::uint64_t>(in, at), get_le<std::uint64_t>(in, at + 8), {}};
    at += 16;
    if (m.hashed) {
      s.hash = hash128{get_le<std::uint64_t>(in, at), get_le<std::uint64_t>(in, at + 8)};
      at += 16;
      m.digest.add(s.hash);
    }
    const auto log_length = static_cast<std::uint8_t>(in[at++]);
    if (in.size() - at < log_length + 4u + 4u) return std::nullopt;
    std::string log(in.substr(at, log_length));
    at += log_length;
    const auto table = get_le<std::uint32_t>(in, at);
    const auto id_length = get_le<std::uint32_t>(in, at + 4);
    at += 8;
    if (in.size() - at < id_length) return std::nullopt;
    std::string record_id(in.substr(at, id_length));
    at += id_length;
    if (s.label >= m.next_label) return std::nullopt;
    if (!m.by_ref.emplace(ref_key{std::move(log), table, std::move(record_id)}, s).second) return std::nullopt;
  }
  if (at != in.size()) return std::nullopt;
  if (m.hashed && m.digest != stored) return std::nullopt;  // the digest is the sum of the hashes it stores
  return m;
}

// What validation of a vector found: nothing, or the unindexable code.
const char* check_vector(std::vector<float>& v, std::size_t dimension, hnsw_space space) {
  if (v.size() != dimension) return "dimension";
  double norm = 0;
  for (float x : v) {
    if (!std::isfinite(x)) return "non_finite";
    norm += static_cast<double>(x) * static_cast<double>(x);
  }
  if (space == hnsw_space::cosine) {
    if (!(norm > 0) || !std::isfinite(norm)) return "non_finite";
    const double scale = 1.0 / std::sqrt(norm);
    for (float& x : v) x = static_cast<float>(static_cast<double>(x) * scale);
  }
  return nullptr;
}

// The byte length saveIndex writes for `g` (hnswalg.h 0.6.2): the header fields, the level-0
// block of every element, then per element a u32 size and its upper-level link lists.
std::uint64_t expected_index_length(const hnswlib::HierarchicalNSW<float>& g) {
  std::uint64_t n = sizeof g.offsetLevel0_ + sizeof g.max_elements_ + sizeof g.cur_element_count +
                    sizeof g.size_data_per_element_ + sizeof g.label_offset_ + sizeof g.offsetData_ + sizeof g.maxlevel_ +
                    sizeof g.enterpoint_node_ + sizeof g.maxM_ + sizeof g.maxM0_ + sizeof g.M_ + sizeof g.mult_ +
                    sizeof g.ef_construction_;
  n += static_cast<std::uint64_t>(g.cur_element_count) * g.size_data_per_element_;
  for (std::size_t i = 0; i < g.cur_element_count; ++i) {
    n += sizeof(unsigned int);
    if (g.element_levels_[i] > 0) n += g.size_links_per_element_ * static_cast<std::uint64_t>(g.element_levels_[i]);
  }
  return n;
}

std::unique_ptr<hnswlib::SpaceInterface<float>> make_space(const hnsw_options& o) {
  if (o.space == hnsw_space::l2) return std::make_unique<hnswlib::L2Space>(o.dimension);
  return std::make_unique<hnswlib::InnerProductSpace>(o.dimension);
}

// A verified `cursor` file: what it says and the cursor it commits.
struct committed {
  cursor_file file;
  cursor position;
};

// The `cursor` file of `dir` as the backend's open and hnsw_reader verify it: nullopt when it does
// not exist, or when its CRC, its fields or its cursor blob do not verify (cursorless). io_error
// when it cannot be read.
result<std::optional<committed>> read_committed(const fs::path& dir) {
  auto bytes = read_whole(dir / cursor_name);
  if (!bytes) return bytes.error();
  if (!*bytes) return std::optional<committed>{};
  auto file = decode_cursor_file(**bytes);
  if (!file) return std::optional<committed>{};
  auto decoded = cursor::decode(file->cursor_bytes);
  if (!decoded) return std::optional<committed>{};
  return std::optional<committed>{committed{std::move(*file), std::move(*decoded)}};
}

// A generation's graph and label map, as load_generation verified them.
struct loaded_generation {
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> graph;
  label_map labels;
};
// Why a generation did not load. missing: a file the cursor names does not exist (an owner's
// barrier or reset removed it); invalid: a file does not verify or does not load.
enum class load_failure : std::uint8_t { missing, invalid };

// Generation `file.generation` of `dir`, verified against the cursor that names it: both files'
// lengths and CRC-32s, the labels decode for these options, the graph loads over `space` with one
// element per label allocated. The backend's open and hnsw_reader load it alike.
std::variant<loaded_generation, load_failure> load_generation(const fs::path& dir, const cursor_file& file,
                                                              hnswlib::SpaceInterface<float>* space,
                                                              const hnsw_options& o) {
  const auto ip = index_path(dir, file.generation);
  const auto lp = labels_path(dir, file.generation);
  auto index_check = check_existing(ip);
  if (index_check && !*index_check) return load_failure::missing;
  if (!index_check || **index_check != file.index) return load_failure::invalid;
  auto labels_bytes = read_whole(lp);
  if (labels_bytes && !*labels_bytes) return load_failure::missing;
  if (!labels_bytes || file_check{(*labels_bytes)->size(), crc32_ieee(**labels_bytes)} != file.labels) {
    return load_failure::invalid;
  }
  auto map = decode_labels(**labels_bytes, o.dimension, o.space);
  if (!map) return load_failure::invalid;
  try {
    // Between the CRC and this read the owner may have removed the file: that is `missing`.
    auto g = std::make_unique<hnswlib::HierarchicalNSW<float>>(space, ip.string());
    // loadIndex adds the deleted marks it finds to a counter it never zeroes: count again.
    g->num_deleted_ = 0;
    for (std::size_t i = 0; i < g->cur_element_count; ++i) {
      if (g->isMarkedDeleted(static_cast<hnswlib::tableint>(i))) ++g->num_deleted_;
    }
    // loadIndex keeps the saved capacity only above the element count: an empty graph loads
    // with none, and gets the configured initial one back.
    if (g->cur_element_count == 0 && g->max_elements_ == 0) g->resizeIndex(std::max<std::size_t>(1, o.initial_capacity));
    if (g->cur_element_count != map->next_label || g->max_elements_ < 1) return load_failure::invalid;
    return loaded_generation{std::move(g), std::move(*map)};
  } catch (const std::exception&) {
    return ::access(ip.c_str(), F_OK) != 0 && errno == ENOENT ? load_failure::missing : load_failure::invalid;
  }
}

// The query a search takes (normalised under cosine); invalid_argument when it is not one.
result<std::vector<float>> query_vector(const float* query, std::size_t n, const hnsw_options& o, const std::string& id) {
  if (n != o.dimension) {
    return error{errc::invalid_argument, "knn: the query has " + std::to_string(n) + " components, index " + id +
                                             " holds vectors of " + std::to_string(o.dimension)};
  }
  std::vector<float> q(query, query + n);
  if (check_vector(q, o.dimension, o.space) != nullptr) {
    return error{errc::invalid_argument, "knn: the query has a non-finite component (or is zero under cosine)"};
  }
  return q;
}

// A graph and its label map: what a search and a listing read. The backend's graph is one
// (applies change it under the backend's exclusive lock; searches hold that lock shared), and
// each generation an hnsw_reader loads is one (never changed once loaded). hnswlib's searchKnn is
// const, its visited-list pool locks itself and its metrics are atomic; the one mutable state a
// search reads is the breadth ef_, one per graph: a search with another ef waits until no search
// runs before setEf, so the value never changes under a running search.
struct graph_view {
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> graph;
  label_map labels;
  std::unordered_map<std::uint64_t, const ref_key*> by_label;  // points into labels.by_ref

  void set_graph(std::unique_ptr<hnswlib::HierarchicalNSW<float>> g) {
    graph = std::move(g);
    std::lock_guard lock(ef_mutex);
    ef_current = 0;
  }
  void index_labels() {
    by_label.clear();
    for (const auto& [key, s] : labels.by_ref) by_label.emplace(s.label, &key);
  }

  // The k nearest live records to q (as query_vector made it), ascending by distance, searched
  // with ef. The caller keeps the graph from changing meanwhile.
  result<std::vector<scored_ref>> search(const std::vector<float>& q, std::size_t k, std::size_t ef,
                                         const std::string& id) {
    std::priority_queue<std::pair<float, hnswlib::labeltype>> found;
    {
      std::unique_lock ef_lock(ef_mutex);
      ef_cv.wait(ef_lock, [&] { return ef_current == ef || searching == 0; });
      if (ef_current != ef) {
        graph->setEf(ef);
        ef_current = ef;
      }
      ++searching;
    }
    try {
      found = graph->searchKnn(q.data(), k);
    } catch (const std::exception& e) {
      std::lock_guard ef_lock(ef_mutex);
      --searching;
      ef_cv.notify_all();
      return error{errc::io_error, "hnsw index " + id + ": searchKnn: " + e.what()};
    }
    {
      std::lock_guard ef_lock(ef_mutex);
      --searching;
      ef_cv.notify_all();
    }
    std::vector<scored_ref> rows(found.size());
    for (std::size_t i = found.size(); i-- > 0;) {  // the heap yields the farthest first
      const auto [distance, label] = found.top();
      found.pop();
      auto& row = rows[i];
      row.score = static_cast<double>(distance);
      if (auto it = by_label.find(label); it != by_label.end()) {
        const auto& [log, table, record_id] = *it->second;
        row.ref = record_ref{log, table, record_id, labels.by_ref.at(*it->second).version};
      }
    }
    return rows;
  }

  // Every record with its version, in (log, table, record_id) order.
  std::vector<record_ref> records() const {
    std::vector<record_ref> out;
    out.reserve(labels.by_ref.size());
    for (const auto& [key, s] : labels.by_ref) {
      const auto& [log, table, record_id] = key;
      out.push_back(record_ref{log, table, record_id, s.version});
    }
    return out;
  }

 private:
  std::mutex ef_mutex;
  std::condition_variable ef_cv;
  std::size_t ef_current = 0;  // 0: unknown (a new graph)
  std::size_t searching = 0;
};

}  // namespace

// ---------------------------------------------------------------------------------------------

// The backend's graph is a graph_view (the search and listing hnsw_reader shares) plus the files,
// an engine under the applier skeleton (<dix/applier.hpp>, decision 0050), which owns the queue,
// the applier thread, fencing, barrier coalescing, poisoning and the callbacks.
struct hnsw_backend::impl : graph_view, applier_engine {
  std::string id;
  hnsw_options options;
  backend_host* host() const { return skeleton->host(); }

  clock_type::time_point now() const { return options.clock ? options.clock() : clock_type::now(); }

  // The graph and its label map. Queries hold index_mutex shared; apply (capacity growth
  // included), open, close and reset hold it exclusively; a barrier saves under it shared (the
  // applier, the only writer, is the thread saving).
  mutable std::shared_mutex index_mutex;
  bool is_open = false;
  // Opened by an owner's call (durable_cursor, apply, reset) rather than by a query. A graph a
  // query loaded after a shutdown is a snapshot another owner may have moved past since: the
  // owner's first call loads the directory again.
  bool owner_open = false;
  std::unique_ptr<hnswlib::SpaceInterface<float>> space;
  // What the files hold, and what the next barrier commits. Written under the exclusive lock
  // (open, reset, apply) or by the barrier on the applier.
  std::atomic<std::uint64_t> saved_generation{0};  // the generation `cursor` names (0: cursorless); atomic for the probe
  std::uint64_t next_generation = 1;
  file_check saved_index, saved_labels;
  bool dirty = false;                            // changed since the saved generation
  std::optional<cursor> commit_cursor;           // the last applied `through` (or the loaded one)
  std::optional<std::string> written_cursor;     // the cursor bytes `cursor` holds
  epoch_t commit_epoch = 0;                      // the epoch of the last applied batch
  // The saved generation when this index generation last asked for a rebuild (decision 0023):
  // asked again only after a later save, so a request the runtime absorbed is not lost.
  std::optional<std::uint64_t> rebuild_asked_at;

  // What the applier's hooks and the probes share with the barrier: the step hook, the bytes
  // accepted since the last save.
  mutable std::mutex hooks_mutex;
  // Free space (decision 0013, issue 34): a barrier writes the whole graph anew beside the
  // generation it replaces, so a delivery is deferred while the filesystem would keep less than
  // the reserve after a generation of today's size plus the batch; the hold last reported.
  std::unique_ptr<index_space> disk;
  std::uint64_t accepted_since_save = 0;  // under hooks_mutex: twice the bytes accepted since
  // The files of the saved generation (0: none), which the next one will about equal.
  // Set with saved_generation from the lengths its cursor file records: no file system call on
  // the delivery path.
  std::atomic<std::uint64_t> generation_bytes{0};
  // What a batch adds to the next generation: per record hnswlib's level-0 element (the vector,
  // 2M links, their count, the label) with room for upper levels, and its labels entry.
  std::uint64_t batch_disk_bytes(const batch& b) const {
    const std::uint64_t per_record = 4 * options.dimension + 8 * options.m + 16 + 128;
    return per_record * b.records.size() + 2 * std::max<std::uint64_t>(b.bytes, 1);
  }
  // The next save, once anything was accepted, counts as used until it is written.
  void saved() {
    std::lock_guard lock(hooks_mutex);
    accepted_since_save = 0;
    disk->set_unflushed(0);
  }
  std::function<void(hnsw_step)> step_hook;  // under hooks_mutex

  // Barrier spacing (applier-only but the atomic).
  std::optional<clock_type::time_point> last_save_end;
  std::atomic<std::int64_t> spacing_ms{0};

  // Durable cursor as of the last barrier (or as read at open); valid while is_open.
  mutable std::mutex durable_mutex;
  std::optional<cursor> durable;

  // Last member: destroyed (its thread stopped) before the graph it applies to.
  std::unique_ptr<applier> skeleton;
  ~impl() override {
    if (skeleton) skeleton->stop();
  }
  void step(hnsw_step s) {
    std::function<void(hnsw_step)> hook;
    {
      std::lock_guard lock(hooks_mutex);
      hook = step_hook;
    }
    if (hook) hook(s);
  }

  // Caller holds index_mutex exclusively.
  result<void> open_index();
  void close_index();
  void fresh_graph();
  result<void> ensure_open(bool for_owner) {
    {
      std::shared_lock lock(index_mutex);
      if (is_open && (owner_open || !for_owner)) return {};
    }
    std::unique_lock lock(index_mutex);
    return open_for(for_owner);
  }
  // Caller holds index_mutex exclusively.
  result<void> open_for(bool for_owner) {
    if (is_open && for_owner && !owner_open) close_index();
    if (auto ok = open_index(); !ok) return ok;
    owner_open = owner_open || for_owner;
    return {};
  }
  result<void> remove_generations(std::uint64_t keep);

  result<void> apply(const batch& b);
  result<bool> run_barrier();
  // The files' checks go to the out-parameters; they count once `cursor` names g.
  result<void> save_generation(std::uint64_t g, file_check& index_out, file_check& labels_out);
  result<void> run_reset();

  // applier_engine
  result<std::optional<cursor>> load_cursor() override {
    if (auto ok = ensure_open(true); !ok) return ok.error();
    std::lock_guard g(durable_mutex);
    return durable;
  }
  result<apply_outcome> apply_batch(const batch& b) override {
    if (auto ok = apply(b); !ok) return ok.error();
    return apply_outcome::applied;
  }
  result<bool> commit(const std::optional<cursor>&, epoch_t) override { return run_barrier(); }
  result<void> close() override {
    std::unique_lock lock(index_mutex);
    close_index();
    return {};
  }
  result<void> reset_index() override { return run_reset(); }
  // Below the reserve nothing is queued (decision 0013): the runner retries the batch after its
  // deferral timer (poll_interval 0: no watch), and the host hears of the hold.
  backend_hold hold_for(const batch& b) override {
    const bool room = disk->admits(index_space::level::deliver, generation_bytes.load() + batch_disk_bytes(b) + (64u << 10));
    return room ? backend_hold::none : backend_hold::low_disk_space;
  }
  // Under the skeleton's lock: the next save counts as used from the moment it was accepted.
  void on_accepted(const batch& b) override {
    std::lock_guard lock(hooks_mutex);
    accepted_since_save += batch_disk_bytes(b);
    disk->set_unflushed(generation_bytes.load() + accepted_since_save);
  }
  // Barriers are spaced by three times the last save (decision 0023); the first is never held.
  std::chrono::milliseconds barrier_delay() override {
    if (!last_save_end) return std::chrono::milliseconds{0};
    const auto left = *last_save_end + std::chrono::milliseconds(spacing_ms.load()) - now();
    return std::max(std::chrono::milliseconds{0}, std::chrono::duration_cast<std::chrono::milliseconds>(left));
  }
  void on_barrier_held() override { step(hnsw_step::held); }
};

void hnsw_backend::impl::fresh_graph() {
  set_graph(std::make_unique<hnswlib::HierarchicalNSW<float>>(space.get(), options.initial_capacity, options.m,
                                                              options.ef_construction));
  labels = label_map{};
  by_label.clear();
}

result<void> hnsw_backend::impl::open_index() {
  if (is_open) return {};
  std::error_code ec;
  if (auto ok = index_dir::claim(options.state_dir, "hnsw", id); !ok) return ok;  // made again if it vanished
  // Generations only grow, past any file a crash or a corrupt cursor left behind.
  for (const auto& entry : fs::directory_iterator(options.state_dir, ec)) {
    next_generation = std::max(next_generation, generation_of(entry.path().filename().string()) + 1);
  }
  if (ec) return error{errc::io_error, "hnsw index " + id + ": listing " + options.state_dir.string() + ": " + ec.message()};
  space = make_space(options);

  // A cursor counts only when its own CRC, its cursor blob and both files it names verify, and
  // the files load; anything else is a cursorless start over an empty graph.
  auto read = read_committed(options.state_dir);
  if (!read) return read.error();
  auto& file = *read;
  bool loaded = false;
  if (file) {
    auto generation = load_generation(options.state_dir, file->file, space.get(), options);
    if (auto* g = std::get_if<loaded_generation>(&generation)) {
      set_graph(std::move(g->graph));
      labels = std::move(g->labels);
      loaded = true;
    }
  }
  try {
    if (!loaded) fresh_graph();
  } catch (const std::exception& e) {
    return error{errc::io_error, "hnsw index " + id + ": allocating the graph: " + e.what()};
  }
  index_labels();
  dirty = false;
  commit_epoch = 0;
  if (loaded) {
    saved_generation = file->file.generation;
    saved_index = file->file.index;
    saved_labels = file->file.labels;
    generation_bytes = saved_index.length + saved_labels.length;
    commit_cursor = file->position;
    written_cursor = file->position.bytes();
  } else {
    saved_generation = 0;
    generation_bytes = 0;
    commit_cursor.reset();
    written_cursor.reset();
  }
  is_open = true;
  std::lock_guard g(durable_mutex);
  durable = loaded ? std::optional<cursor>{file->position} : std::nullopt;
  return {};
}

void hnsw_backend::impl::close_index() {
  set_graph(nullptr);
  space.reset();
  labels = label_map{};
  by_label.clear();
  is_open = false;
  owner_open = false;
  commit_cursor.reset();
  written_cursor.reset();
  dirty = false;
  std::lock_guard g(durable_mutex);
  durable.reset();  // the next open reads it from disk again
}

result<void> hnsw_backend::impl::apply(const batch& b) {
  std::unique_lock lock(index_mutex);
  if (auto ok = open_for(true); !ok) return ok;
  try {
    step(hnsw_step::apply);
    for (const auto& r : b.records) {
      std::optional<std::vector<float>> vector;
      if (r.state.kind == state_kind::record) {
        auto decoded = decode_vector(r.state.projection);
        const char* code = decoded ? check_vector(*decoded, options.dimension, options.space) : "dimension";
        if (code == nullptr) vector = std::move(*decoded);
        else if (auto* h = host(); h != nullptr) h->note_unindexable(code);
      }
      ref_key key{r.log, r.table, r.record_id};
      auto it = labels.by_ref.find(key);
      if (labels.hashed && it != labels.by_ref.end()) labels.digest.remove(it->second.hash);
      if (vector) {
        const auto h = labels.hashed ? entry_hash(r.log, r.table, r.record_id, r.state.version, r.state.projection) : hash128{};
        if (labels.hashed) labels.digest.add(h);
        if (it != labels.by_ref.end()) {
          graph->addPoint(vector->data(), it->second.label);  // an existing label: replaced in place
          it->second.version = r.state.version;
          it->second.hash = h;
        } else {
          if (graph->cur_element_count >= graph->max_elements_) graph->resizeIndex(std::max<std::size_t>(1, 2 * graph->max_elements_));
          const auto label = labels.next_label;
          graph->addPoint(vector->data(), label);
          ++labels.next_label;
          auto placed = labels.by_ref.emplace(std::move(key), slot{label, r.state.version, h}).first;
          by_label.emplace(label, &placed->first);
        }
        dirty = true;
      } else if (it != labels.by_ref.end()) {
        graph->markDelete(it->second.label);
        by_label.erase(it->second.label);
        labels.by_ref.erase(it);
        dirty = true;
      }
    }
  } catch (const std::exception& e) {
    return error{errc::backend_failed, "hnsw index " + id + ": applying a batch: " + e.what()};
  }
  if (b.through) {
    commit_cursor = b.through;
  }
  commit_epoch = b.epoch;
  // Compaction (decision 0023): a rebuild writes the graph again without deleted slots.
  const auto total = labels.next_label;
  const auto deleted = total - labels.by_ref.size();
  const auto saved = saved_generation.load();
  if (rebuild_asked_at != saved && total > 0 &&
      static_cast<double>(deleted) / static_cast<double>(total) > options.max_deleted_ratio) {
    rebuild_asked_at = saved;
    lock.unlock();
    if (auto* h = host(); h != nullptr) h->request_rebuild();
  }
  return {};
}

result<void> hnsw_backend::impl::remove_generations(std::uint64_t keep) {
  std::error_code ec;
  std::vector<fs::path> doomed;
  for (const auto& entry : fs::directory_iterator(options.state_dir, ec)) {
    const auto g = generation_of(entry.path().filename().string());
    if (g != 0 && (g != keep || entry.path().extension() == ".tmp")) doomed.push_back(entry.path());
  }
  if (ec) return error{errc::io_error, "hnsw index " + id + ": listing " + options.state_dir.string() + ": " + ec.message()};
  for (const auto& p : doomed) {
    if (::unlink(p.c_str()) != 0 && errno != ENOENT) return io_failure("hnsw index " + id + ": unlink " + p.string(), errno);
  }
  return {};
}

// Writes generation g (index and labels), verified and renamed into place, directory synced.
result<void> hnsw_backend::impl::save_generation(std::uint64_t g, file_check& index_out, file_check& labels_out) {
  const auto& dir = options.state_dir;
  const auto ip = index_path(dir, g);
  const auto lp = labels_path(dir, g);
  step(hnsw_step::save_index);
  try {
    graph->saveIndex(tmp_of(ip).string());
  } catch (const std::exception& e) {
    return error{errc::io_error, "hnsw index " + id + ": saveIndex " + tmp_of(ip).string() + ": " + e.what()};
  }
  // saveIndex writes through an unchecked std::ofstream: sync, then read back what is on disk.
  if (auto ok = fsync_path(tmp_of(ip), false); !ok) return ok;
  auto index_check = check_file(tmp_of(ip));
  if (!index_check) return index_check.error();
  if (const auto expected = expected_index_length(*graph); index_check->length != expected) {
    return error{errc::io_error, "hnsw index " + id + ": " + tmp_of(ip).string() + " holds " +
                                     std::to_string(index_check->length) + " bytes, saveIndex should have written " +
                                     std::to_string(expected)};
  }
  step(hnsw_step::write_labels);
  const auto bytes = encode_labels(labels, options.dimension, options.space);
  if (auto ok = write_synced(tmp_of(lp), bytes); !ok) return ok;
  const file_check labels_expected{bytes.size(), crc32_ieee(bytes)};
  auto labels_check = check_file(tmp_of(lp));
  if (!labels_check) return labels_check.error();
  if (*labels_check != labels_expected) {
    return error{errc::io_error, "hnsw index " + id + ": " + tmp_of(lp).string() + " reads back other bytes than were written"};
  }
  step(hnsw_step::rename_files);
  if (auto ok = rename_file(tmp_of(ip), ip); !ok) return ok;
  if (auto ok = rename_file(tmp_of(lp), lp); !ok) return ok;
  if (auto ok = fsync_path(dir, true); !ok) return ok;
  index_out = *index_check;
  labels_out = *labels_check;
  return {};
}

// A barrier (applier_engine::commit). True: commit_cursor is the durable one.
result<bool> hnsw_backend::impl::run_barrier() {
  std::shared_lock lock(index_mutex);
  // Closed: nothing applied since it was (shut down or never) opened. No cursor to commit: a scan
  // in progress or an empty start; its state becomes durable with the first `through`.
  if (!is_open || !commit_cursor || commit_epoch == 0) return false;
  if (!dirty && written_cursor == commit_cursor->bytes()) return true;
  // Files of another owner's epoch are not ours to write (protocol.md §9.4).
  auto* host = this->host();
  if (host == nullptr || !host->is_owner_epoch(commit_epoch)) return false;
  const auto& dir = options.state_dir;
  std::uint64_t g = saved_generation.load();
  file_check index_check = saved_index, labels_check = saved_labels;
  // No generation on disk yet (a fresh or reset index whose batches changed nothing: a
  // cursor-only batch, a delete of a record never indexed, an empty scan): a cursor file must
  // name one (generation 0 reads back as no cursor), so the empty graph is saved with it.
  if (dirty || g == 0) {
    g = next_generation++;
    const auto start = now();
    if (auto ok = save_generation(g, index_check, labels_check); !ok) return ok.error();
    const auto end = now();
    last_save_end = end;
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(end - start);
    spacing_ms.store(std::min<std::int64_t>(3 * took.count(), max_spacing.count()));
  }
  step(hnsw_step::write_cursor);
  cursor_file file{g, index_check, labels_check, commit_cursor->bytes()};
  if (auto ok = write_synced(dir / cursor_tmp_name, encode_cursor_file(file)); !ok) return ok.error();
  if (!host->is_owner_epoch(commit_epoch)) {
    ::unlink((dir / cursor_tmp_name).c_str());
    return false;
  }
  step(hnsw_step::rename_cursor);
  if (auto ok = rename_file(dir / cursor_tmp_name, dir / cursor_name); !ok) return ok.error();
  if (auto ok = fsync_path(dir, true); !ok) return ok.error();
  saved_generation = g;
  saved_index = index_check;
  saved_labels = labels_check;
  generation_bytes = index_check.length + labels_check.length;
  dirty = false;
  saved();
  written_cursor = commit_cursor->bytes();
  {
    std::lock_guard d(durable_mutex);
    durable = commit_cursor;
  }
  step(hnsw_step::delete_old);
  if (auto ok = remove_generations(g); !ok) return ok.error();
  step(hnsw_step::finished);
  return true;
}

result<void> hnsw_backend::impl::run_reset() {
  std::unique_lock lock(index_mutex);
  const auto& dir = options.state_dir;
  if (auto ok = index_dir::claim(dir, "hnsw", id); !ok) return ok;  // made again if it vanished
  // The cursor goes first, durably: a crash from here on leaves a cursorless directory.
  if (::unlink((dir / cursor_name).c_str()) != 0 && errno != ENOENT) {
    return io_failure("hnsw index " + id + ": unlink " + (dir / cursor_name).string(), errno);
  }
  if (auto ok = fsync_path(dir, true); !ok) return ok;
  {
    std::lock_guard g(durable_mutex);
    durable.reset();
  }
  commit_cursor.reset();
  written_cursor.reset();
  saved_generation = 0;
  generation_bytes = 0;
  if (::unlink((dir / cursor_tmp_name).c_str()) != 0 && errno != ENOENT) {
    return io_failure("hnsw index " + id + ": unlink " + (dir / cursor_tmp_name).string(), errno);
  }
  if (auto ok = remove_generations(0); !ok) return ok;
  if (!space) space = make_space(options);
  try {
    fresh_graph();
  } catch (const std::exception& e) {
    is_open = false;
    return error{errc::io_error, "hnsw index " + id + ": allocating the graph: " + e.what()};
  }
  is_open = true;
  owner_open = true;
  dirty = false;
  saved();  // nothing of the old generation will be written again
  commit_epoch = 0;
  rebuild_asked_at.reset();  // a new generation of the index
  return {};
}

// ---------------------------------------------------------------------------------------------

result<void> validate(const hnsw_options& o) {
  auto bad = [](const std::string& field, const std::string& value, const char* rule) {
    return result<void>{errc::invalid_argument, "hnsw_options." + field + " = " + value + ": " + rule};
  };
  if (o.state_dir.empty()) return bad("state_dir", "\"\"", "must name a directory");
  if (o.dimension < 1 || o.dimension > max_dimension) return bad("dimension", std::to_string(o.dimension), "must be in [1, 4096]");
  if (o.space != hnsw_space::l2 && o.space != hnsw_space::ip && o.space != hnsw_space::cosine) {
    return bad("space", std::to_string(static_cast<int>(o.space)), "must be l2, ip or cosine");
  }
  if (o.m < 2 || o.m > 100) return bad("m", std::to_string(o.m), "must be in [2, 100]");
  if (o.ef_construction < 1 || o.ef_construction > 10000) {
    return bad("ef_construction", std::to_string(o.ef_construction), "must be in [1, 10000]");
  }
  if (o.initial_capacity < 1 || o.initial_capacity > (1ull << 32)) {
    return bad("initial_capacity", std::to_string(o.initial_capacity), "must be in [1, 4294967296]");
  }
  if (o.max_queued_bytes < 1024 || o.max_queued_bytes > (16ull << 30)) {
    return bad("max_queued_bytes", std::to_string(o.max_queued_bytes), "must be in [1024, 17179869184]");
  }
  if (!(o.max_deleted_ratio > 0 && o.max_deleted_ratio <= 1)) {
    return bad("max_deleted_ratio", std::to_string(o.max_deleted_ratio), "must be in (0, 1]");
  }
  return check_reserve_option("hnsw_options.free_space_reserve_bytes", o.free_space_reserve_bytes);
}

std::string encode_vector(const float* v, std::size_t n) {
  std::string out;
  out.reserve(4 * n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &v[i], 4);
    put_le<std::uint32_t>(out, bits);
  }
  return out;
}

result<std::vector<float>> decode_vector(std::string_view bytes) {
  if (bytes.size() % 4 != 0) return error{errc::invalid_argument, "dimension"};
  std::vector<float> out(bytes.size() / 4);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto bits = get_le<std::uint32_t>(bytes, 4 * i);
    std::memcpy(&out[i], &bits, 4);
  }
  return out;
}

hnsw_backend::hnsw_backend(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

result<std::shared_ptr<hnsw_backend>> hnsw_backend::create(std::string id, hnsw_options options) {
  if (auto ok = check_backend_id(id); !ok) return ok.error();
  if (auto ok = validate(options); !ok) return ok.error();
  // Nothing of another program's, or a user's, is adopted (decision 0038).
  if (auto ok = index_dir::claim(options.state_dir, "hnsw", id); !ok) return ok.error();
  auto p = std::make_unique<impl>();
  p->id = std::move(id);
  p->options = std::move(options);
  p->disk = std::make_unique<index_space>(p->options.state_dir, p->options.free_space_reserve_bytes);
  p->skeleton = std::make_unique<applier>(p->id, *p, applier_limits{p->options.max_queued_bytes, 0});
  return std::shared_ptr<hnsw_backend>(new hnsw_backend(std::move(p)));
}

// Queued work is dropped (never durable: a restart replays it); ~impl stops the applier first.
hnsw_backend::~hnsw_backend() = default;

const std::string& hnsw_backend::id() const noexcept { return impl_->id; }

void hnsw_backend::attach(backend_host& host) { impl_->skeleton->attach(host); }

result<void> hnsw_backend::open() { return impl_->ensure_open(true); }

result<std::optional<cursor>> hnsw_backend::durable_cursor() { return impl_->skeleton->durable_cursor(); }
delivery_result hnsw_backend::deliver(std::shared_ptr<const batch> b) { return impl_->skeleton->deliver(std::move(b)); }
void hnsw_backend::flush(flush_reason reason, completion done) { impl_->skeleton->flush(reason, std::move(done)); }
void hnsw_backend::shutdown(epoch_t epoch, completion done) { impl_->skeleton->shutdown(epoch, std::move(done)); }
void hnsw_backend::reset(epoch_t epoch, completion done) { impl_->skeleton->reset(epoch, std::move(done)); }
subscription hnsw_backend::on_state_change(std::function<void(state_change)> callback) {
  return impl_->skeleton->on_state_change(std::move(callback));
}

std::chrono::milliseconds hnsw_backend::min_barrier_interval() const noexcept {
  return std::chrono::milliseconds(impl_->spacing_ms.load());
}

result<query_result<std::vector<scored_ref>>> hnsw_backend::knn(const float* query, std::size_t n, std::size_t k,
                                                                const coverage_mode& mode, std::size_t ef) {
  auto& p = *impl_;
  auto q = query_vector(query, n, p.options, p.id);
  if (!q) return q.error();
  auto* host = p.host();
  if (host == nullptr) return error{errc::unavailable, "hnsw index " + p.id + " is not registered"};
  auto admitted = host->admit_query(mode);
  if (!admitted) return admitted.error();
  if (auto ok = p.ensure_open(false); !ok) return ok.error();
  query_result<std::vector<scored_ref>> out;
  out.coverage = *admitted;
  if (k == 0) return out;
  std::shared_lock lock(p.index_mutex);
  if (!p.is_open) return error{errc::unavailable, "hnsw index " + p.id + " is closed"};
  auto rows = p.search(*q, k, ef, p.id);
  if (!rows) return rows.error();
  out.rows = std::move(*rows);
  return out;
}

result<query_rows> hnsw_backend::query(const index_query& q) {
  if (q.kind != query_kind::knn) return error{errc::not_supported, "an hnsw index answers knn only"};
  return knn(q.vector.data(), q.vector.size(), q.limit, q.mode, q.ef);
}

namespace {

class labels_digest_view final : public digest_view {
 public:
  const std::optional<cursor>& through() const noexcept override { return through_; }
  const index_digest& digest() const noexcept override { return digest_; }
  result<const digest_entry*> next() override {  // by_ref is ordered by (log, table, record id)
    if (!started_) at_ = labels_.by_ref.begin();
    else if (at_ != labels_.by_ref.end()) ++at_;
    started_ = true;
    if (at_ == labels_.by_ref.end()) return static_cast<const digest_entry*>(nullptr);
    std::tie(e_.log, e_.table, e_.record_id) = at_->first;
    e_.version = at_->second.version;
    e_.hash = at_->second.hash;
    return &e_;
  }

  std::optional<cursor> through_;
  index_digest digest_;
  label_map labels_;

 private:
  std::map<ref_key, slot>::const_iterator at_;
  bool started_ = false;
  digest_entry e_;
};

}  // namespace

// As apply() decides: a projection that does not decode as a vector of the index's dimension, or
// does not validate (check_vector), is skipped.
std::optional<std::string> hnsw_backend::skips(const record_entry& r) const {
  if (r.state.kind != state_kind::record) return std::nullopt;
  auto decoded = decode_vector(r.state.projection);
  const char* code = decoded ? check_vector(*decoded, impl_->options.dimension, impl_->options.space) : "dimension";
  if (code == nullptr) return std::nullopt;
  return std::string(code);
}

// Read from the committed generation's files, never from the graph in memory (which holds applied
// work not yet durable): the cursor file, then the labels file it names, verified by its CRC-32.
result<std::unique_ptr<digest_view>> hnsw_backend::open_digest() {
  const auto& p = *impl_;
  for (int attempt = 0; attempt < 8; ++attempt) {
    auto view = std::make_unique<labels_digest_view>();
    auto c = read_committed(p.options.state_dir);
    if (!c) return c.error();
    if (!*c) return std::unique_ptr<digest_view>(std::move(view));  // cursorless: an empty index
    auto bytes = read_whole(labels_path(p.options.state_dir, (*c)->file.generation));
    if (!bytes) return bytes.error();
    if (!*bytes) continue;  // a barrier replaced the generation meanwhile: read the newer one
    if (file_check{(*bytes)->size(), crc32_ieee(**bytes)} != (*c)->file.labels) continue;
    auto map = decode_labels(**bytes, p.options.dimension, p.options.space);
    if (!map) return error{errc::io_error, "hnsw index " + p.id + ": its labels file does not decode"};
    if (!map->hashed) {
      return error{errc::not_supported, "hnsw index " + p.id + " was written before digests (formats.md §7): a rebuild adds them"};
    }
    view->through_ = std::move((*c)->position);
    view->digest_ = map->digest;
    view->labels_ = std::move(*map);
    return std::unique_ptr<digest_view>(std::move(view));
  }
  return error{errc::io_error, "hnsw index " + p.id + ": its generation changed under every attempt to read its digest"};
}

result<std::vector<record_ref>> hnsw_backend::stored_records() {
  auto& p = *impl_;
  if (auto ok = p.ensure_open(false); !ok) return ok.error();
  std::shared_lock lock(p.index_mutex);
  return p.records();
}

double hnsw_backend::deleted_ratio() const {
  std::shared_lock lock(impl_->index_mutex);
  const auto total = impl_->labels.next_label;
  if (!impl_->is_open || total == 0) return 0;
  return static_cast<double>(total - impl_->labels.by_ref.size()) / static_cast<double>(total);
}

// ---- the query-only handle -------------------------------------------------------------------

namespace {

// A generation a reader loaded: never changed once loaded, held by the queries searching it
// while the reader moves on to a newer one.
struct reader_generation : graph_view {
  cursor_file file;
};

bool same_files(const cursor_file& a, const cursor_file& b) noexcept {
  return a.generation == b.generation && a.index == b.index && a.labels == b.labels;
}

}  // namespace

struct hnsw_reader::impl {
  std::string id;
  hnsw_options options;
  std::shared_ptr<backend_host> host;
  std::unique_ptr<hnswlib::SpaceInterface<float>> space;  // every generation's graph uses it

  std::mutex load_mutex;  // one load at a time; held across it
  std::function<void(std::uint64_t)> load_hook;  // under load_mutex: the probe's test point
  mutable std::mutex current_mutex;
  std::shared_ptr<reader_generation> current;  // under current_mutex; null: nothing loaded

  std::shared_ptr<reader_generation> loaded() const {
    std::lock_guard lock(current_mutex);
    return current;
  }
  void set_current(std::shared_ptr<reader_generation> g) {
    std::lock_guard lock(current_mutex);
    current = std::move(g);
  }

  // The generation the cursor names now, loaded if it is not the one held; null when there is no
  // cursor. Each attempt reads the cursor again, so a generation removed by the owner's next
  // barrier is followed to the one that barrier committed.
  result<std::shared_ptr<reader_generation>> refresh() {
    // The common case: the cursor still names the loaded generation.
    {
      auto read = read_committed(options.state_dir);
      if (!read) return read.error();
      auto held = loaded();
      if (*read && held && same_files(held->file, (*read)->file)) return held;
    }
    std::lock_guard lock(load_mutex);
    std::uint64_t failed_generation = 0;
    load_failure failure = load_failure::invalid;
    for (std::size_t attempt = 0; attempt < max_load_attempts; ++attempt) {
      auto read = read_committed(options.state_dir);
      if (!read) return read.error();
      if (!*read) {
        set_current(nullptr);  // cursorless (a reset in progress, or never committed)
        return std::shared_ptr<reader_generation>{};
      }
      const auto& file = (*read)->file;
      if (auto held = loaded(); held && same_files(held->file, file)) return held;  // another query loaded it
      if (load_hook) load_hook(file.generation);
      auto generation = load_generation(options.state_dir, file, space.get(), options);
      if (auto* g = std::get_if<loaded_generation>(&generation)) {
        auto made = std::make_shared<reader_generation>();
        made->set_graph(std::move(g->graph));
        made->labels = std::move(g->labels);
        made->index_labels();
        made->file = file;
        set_current(made);  // the previous one goes once its last query is done with it
        return made;
      }
      failed_generation = file.generation;
      failure = std::get<load_failure>(generation);
    }
    return error{errc::io_error, "hnsw index " + id + ": generation " + std::to_string(failed_generation) +
                                     " named by " + (options.state_dir / cursor_name).string() +
                                     (failure == load_failure::missing ? " was removed before it was read"
                                                                       : " does not verify") +
                                     ", " + std::to_string(max_load_attempts) + " cursor reads in a row; retry"};
  }
};

hnsw_reader::hnsw_reader(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
hnsw_reader::~hnsw_reader() = default;

result<std::shared_ptr<hnsw_reader>> hnsw_reader::open(std::string id, hnsw_options options,
                                                       std::shared_ptr<backend_host> host) {
  if (auto ok = check_backend_id(id); !ok) return ok.error();
  if (auto ok = validate(options); !ok) return ok.error();
  if (!host) return error{errc::invalid_argument, "hnsw_reader " + id + ": host is null"};
  std::error_code ec;
  const auto status = fs::status(options.state_dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return error{errc::io_error, "hnsw_reader " + id + ": " + options.state_dir.string() + ": " + ec.message()};
  }
  if (fs::exists(status) && !fs::is_directory(status)) {
    return error{errc::io_error, "hnsw_reader " + id + ": " + options.state_dir.string() + " is not a directory"};
  }
  auto p = std::make_unique<impl>();
  p->id = std::move(id);
  p->options = std::move(options);
  p->host = std::move(host);
  p->space = make_space(p->options);
  std::shared_ptr<hnsw_reader> reader(new hnsw_reader(std::move(p)));
  if (auto first = reader->impl_->refresh(); !first) return first.error();
  return reader;
}

const std::string& hnsw_reader::id() const noexcept { return impl_->id; }

result<query_result<std::vector<scored_ref>>> hnsw_reader::knn(const float* query, std::size_t n, std::size_t k,
                                                               const coverage_mode& mode, std::size_t ef) {
  auto& p = *impl_;
  auto q = query_vector(query, n, p.options, p.id);
  if (!q) return q.error();
  // Admission first, then the refresh (qo_shared's order): what the admission certified is
  // durable before it answered, so the cursor read after it names at least that.
  auto admitted = p.host->admit_query(mode);
  if (!admitted) return admitted.error();
  auto generation = p.refresh();
  if (!generation) return generation.error();
  query_result<std::vector<scored_ref>> out;
  out.coverage = *admitted;
  if (k == 0 || !*generation) return out;
  auto rows = (*generation)->search(*q, k, ef, p.id);
  if (!rows) return rows.error();
  out.rows = std::move(*rows);
  return out;
}

result<std::vector<record_ref>> hnsw_reader::stored_records() {
  auto generation = impl_->refresh();
  if (!generation) return generation.error();
  if (!*generation) return std::vector<record_ref>{};
  return (*generation)->records();
}

// ---------------------------------------------------------------------------------------------

std::string_view to_string(hnsw_step step) noexcept {
  switch (step) {
    case hnsw_step::apply: return "apply";
    case hnsw_step::held: return "held";
    case hnsw_step::save_index: return "save_index";
    case hnsw_step::write_labels: return "write_labels";
    case hnsw_step::rename_files: return "rename_files";
    case hnsw_step::write_cursor: return "write_cursor";
    case hnsw_step::rename_cursor: return "rename_cursor";
    case hnsw_step::delete_old: return "delete_old";
    case hnsw_step::finished: return "finished";
  }
  return "unknown";
}

void hnsw_probe::on_step(hnsw_backend& b, std::function<void(hnsw_step)> hook) {
  std::lock_guard lock(b.impl_->hooks_mutex);
  b.impl_->step_hook = std::move(hook);
}
void hnsw_probe::wake(hnsw_backend& b) {
  b.impl_->skeleton->wake();
}
void hnsw_probe::set_space_probe(hnsw_backend& b, space_probe probe, std::chrono::milliseconds max_age) {
  b.impl_->disk->set_probe(std::move(probe), max_age);
}
std::uint64_t hnsw_probe::saved_generation(const hnsw_backend& b) {
  return b.impl_->saved_generation.load();
}
std::uint64_t hnsw_probe::applied_batches(const hnsw_backend& b) { return b.impl_->skeleton->applied_batches(); }
std::uint64_t hnsw_probe::dropped_batches(const hnsw_backend& b) { return b.impl_->skeleton->dropped_batches(); }
void hnsw_probe::on_reader_load(hnsw_reader& r, std::function<void(std::uint64_t)> hook) {
  std::lock_guard lock(r.impl_->load_mutex);
  r.impl_->load_hook = std::move(hook);
}
std::uint64_t hnsw_probe::loaded_generation(const hnsw_reader& r) {
  auto held = r.impl_->loaded();
  return held ? held->file.generation : 0;
}
std::size_t hnsw_probe::capacity(const hnsw_backend& b) {
  std::shared_lock lock(b.impl_->index_mutex);
  return b.impl_->graph ? b.impl_->graph->max_elements_ : 0;
}

}  // namespace dix
