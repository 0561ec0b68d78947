// xapian_backend: a full-text index in a Xapian 1.4 database (backends.md §2, decision 0022). A
// projection encodes a record's text fields with encode_fields(); each configured field is
// indexed by Xapian's TermGenerator with the stemmer, under its term prefix and weight (and also
// unprefixed, so free text finds every field). One document per record, keyed by the unique
// term `Q` + base64url(record ref); its data is the record ref and version (docs/formats.md).
//
// Threads: deliver/flush/shutdown/reset enqueue; one applier thread per instance applies the
// queue inside a Xapian transaction (begin_transaction(true)), so Xapian never commits on its
// own. A barrier is commit_transaction(): the documents and the user metadata `dix.cursor` (the
// last applied `through`) become durable together. Queries and stored_records() may run on any
// thread at any time; they read committed state through a read-only Xapian::Database.
//
// STATES of the writer (applier-only): closed → (first batch) open, or lock-busy while another
// WritableDatabase holds the lock (deliveries `deferred`; retried 10 ms doubling to 1 s without
// a time limit; `changed` after the open) → open → (shutdown, reset, apply error) closed.
// An apply error cancels the transaction, closes the writer and emits accepted_work_lost for the
// epoch; while that notice is outstanding the epoch's deliveries are `deferred` until the runtime
// reads durable_cursor() again (then `changed`); the third error in a row without a successful
// barrier emits `failed` and drops work until shutdown or reset.
// Crash contract: the committed `dix.cursor` always describes exactly the committed documents.
//
// xapian_reader is the query-only handle (backends.md §0) for a process with no runtime: the
// same search over the same committed state, admitted through a backend_host of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dix/backend.hpp>
#include <dix/query.hpp>

namespace dix {

struct xapian_field {
  std::string prefix;       // term prefix: "" (unprefixed) or 1…8 of [A-Z], not starting with 'Q'
  std::uint32_t weight = 1;  // within-document frequency increment, [1, 100]. Default: 1
};

struct xapian_options {
  std::filesystem::path path;  // the Xapian database directory. Default: none (required)
  // Field name ([a-z0-9_], 1…64 bytes) → prefix and weight; 1…64 fields. Default: none (required)
  std::map<std::string, xapian_field> fields;
  std::string stemmer = "english";  // a Xapian::Stem language, or "none". Default: "english"
  std::size_t max_queued_batches = 16;         // [1, 1048576]; deliveries are deferred above. Default: 16
  std::uint64_t max_queued_bytes = 64u << 20;  // [1 KiB, 16 GiB]; deferred above. Default: 64 MiB
  // Free space left on the filesystem of `path` (decision 0013), 0 = automatic (as
  // rocksdb_index_options: half the store's automatic rule); else [1 MiB, 1 TiB]. A delivery is
  // deferred (the host hears backend_hold::low_disk_space) while the filesystem would keep less
  // than this after what the batch makes the database write (8 times its bytes, plus 64 KiB).
  // Default: 0
  std::uint64_t free_space_reserve_bytes = 0;
};
// invalid_argument naming the field and the allowed range (an unknown stemmer included).
result<void> validate(const xapian_options& options);

// The projection encoding: u32 count, then per field (u16 name length, name, u32 value length,
// value), little-endian. Names must be configured in xapian_options::fields; the backend treats
// an unknown name (`unknown_field`) or a malformed encoding (`bad_encoding`) as unindexable,
// never as a failure.
std::string encode_fields(const std::vector<std::pair<std::string, std::string>>& fields);
// The fields, or `bad_encoding` in the error message (errc::invalid_argument).
result<std::vector<std::pair<std::string, std::string>>> decode_fields(std::string_view bytes);

// A record's document as the backend writes it (docs/formats.md), for programs that write such a
// database themselves to compare with the backend (`dix bench fulltext`'s baseline): the unique
// id term `Q` + base64url(u8 log length, log, u32 BE table, record id), and the document data.
std::string xapian_id_term(std::string_view log, std::uint32_t table, std::string_view record_id);
std::string xapian_document_data(const record_ref& ref);

// search() rows are <dix/query.hpp>'s scored_ref: the record and, as its score, Xapian's BM25
// weight; rows come in descending weight.

class xapian_backend final : public backend {
 public:
  // invalid_argument for bad options or id. The writer is opened lazily by the applier.
  static result<std::shared_ptr<xapian_backend>> create(std::string id, xapian_options options);
  ~xapian_backend() override;  // stops the applier; cancels an open transaction; closes the writer

  const std::string& id() const noexcept override;
  std::string_view kind() const noexcept override { return "xapian"; }
  void attach(backend_host& host) override;
  // Read through a read-only Database (no writer lock): none for a missing database or an empty
  // `dix.cursor`; cursor_invalid for undecodable bytes; io_error when the database cannot be read.
  result<std::optional<cursor>> durable_cursor() override;
  delivery_result deliver(std::shared_ptr<const batch> b) override;
  void flush(flush_reason reason, completion done) override;
  void shutdown(epoch_t epoch, completion done) override;
  subscription on_state_change(std::function<void(state_change)> callback) override;
  bool supports_reset() const noexcept override { return true; }
  void reset(epoch_t epoch, completion done) override;

  // Ranked full-text search over committed documents: `query_string` in Xapian::QueryParser
  // syntax (field names as prefixes, `title:word`; AND, OR, NOT, phrases), stemmed like the
  // documents; rows [offset, offset + limit) by descending weight. host.admit_query(mode) first;
  // invalid_argument for a query the parser rejects; io_error when the database cannot be read.
  // An index with no committed database yet answers no rows.
  result<query_result<std::vector<scored_ref>>> search(std::string_view query_string, std::size_t offset,
                                                       std::size_t limit, const coverage_mode& mode = {});
  // backend::query: search (q.text, q.offset, q.limit).
  result<query_rows> query(const index_query& q) override;
  // The digest (formats.md §7) of the last committed revision, read through a read-only Database
  // with its entries (each document's entry hash, value slot 0) loaded and sorted: the view holds
  // them in memory (about 40 bytes and the ids per document). not_supported for a database written
  // before digests (a rebuild adds them); io_error when unreadable.
  result<std::unique_ptr<digest_view>> open_digest() override;
  std::optional<std::string> skips(const record_entry& r) const override;
  // Every committed document's record ref and version, ordered by (log, table, record_id). For
  // tests, tools and the conformance kit: needs no attach and no admission, and works before the
  // first and after the last owner (a missing database has none). io_error when unreadable.
  result<std::vector<record_ref>> stored_records() const;
  // Transactions committed by barriers since create (the commit cadence). Thread-safe.
  std::uint64_t commits() const noexcept;

  struct impl;

 private:
  friend struct xapian_probe;  // runtime/backends/xapian_probe.hpp: what tests observe and inject
  explicit xapian_backend(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

// The query-only handle of a Xapian index (backends.md §0, decision 0022): a read-only Database
// on options.path, for a process with no runtime, beside an owner in another process that writes
// it. Its answers are computed by the backend's own search code over the same committed state.
class xapian_reader {
 public:
  // Opens the index at options.path read-only: never takes the writer's lock, never writes a
  // byte there (not even a missing directory), works while an owner in another process writes.
  // invalid_argument for bad options, id or a null host; io_error when the database is there but
  // unreadable. An index with no committed database yet answers no rows. The reader keeps `host`
  // (normally make_query_host(home_db, id), <dix/query_host.hpp>).
  static result<std::shared_ptr<xapian_reader>> open(std::string id, xapian_options options,
                                                     std::shared_ptr<backend_host> host);
  ~xapian_reader();

  const std::string& id() const noexcept;
  // xapian_backend::search's contract, in this order: host->admit_query(mode) (a refusal is
  // returned unchanged and nothing is read), then the handle is brought to the latest commit
  // (reopen(); opened afresh when a reset replaced the database), then the read. The answer holds
  // at least what the admission certified: an owner publishes coverage after the commit that made
  // it durable. A reset or commits racing the read give an answer from some commit at or after
  // the admission, or a retryable io_error naming the index. Thread-safe (queries serialize).
  result<query_result<std::vector<scored_ref>>> search(std::string_view query_string, std::size_t offset,
                                                       std::size_t limit, const coverage_mode& mode = {});
  // xapian_backend::stored_records(): every committed document, without admission.
  result<std::vector<record_ref>> stored_records() const;

  struct impl;

 private:
  friend struct xapian_probe;
  explicit xapian_reader(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace dix
