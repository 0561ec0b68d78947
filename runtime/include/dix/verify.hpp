// dix verify (issue 31, protocol.md §4.9, decision 0057): the proof, online, that an index equals
// the projection of its primary store at a sequence, or the records where it does not.
// runtime::verify asks the index's owner in this process; `dix verify` asks it from any process.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dix/cursor.hpp>
#include <dix/errc.hpp>
#include <dix/result.hpp>

namespace dix {

// verify_options::entries_per_s's default: a quarter of the rate the scan itself measures, read
// as fast as it goes, over its first verify_calibration_entries entries (a verify that reads
// fewer is never paced), so that a verify leaves most of the store's bandwidth to its users.
inline constexpr std::uint64_t verify_rate_measured = ~std::uint64_t{0};
inline constexpr std::uint64_t verify_calibration_entries = 65536;

struct verify_options {
  // Differences are reported only; by default they condemn the index (needs-rebuild,
  // verify-failed), and the rebuild that follows makes it equal again.
  bool report_only = false;
  // The scan's pace in entries per second, the index's and the primary's together: 0 as fast as
  // it goes, verify_rate_measured (the default) a quarter of the rate it measures unpaced.
  std::uint64_t entries_per_s = verify_rate_measured;
  std::uint32_t limit = 100;  // differing records named, at most (all are counted)
  // How long the index may take to become durable at the verify's fence and open its digest
  // (writers are never blocked meanwhile); the scan itself is bounded by its pace.
  std::chrono::milliseconds deadline{60000};
};

// One record where index and projection differ (core/drift.hpp finds them).
enum class drift_kind : std::uint8_t {
  missing,           // the primary projects the record; the index lacks it
  extra,             // the index holds a record the primary does not project
  stale,             // both hold it, at different versions
  wrong_projection,  // both hold it at the same version, with different entry hashes
};
std::string_view to_string(drift_kind k) noexcept;  // "missing", "extra", "stale", "wrong-projection"

struct drift {
  drift_kind kind = drift_kind::missing;
  std::string log;
  std::uint32_t table = 0;
  std::string record_id;
  std::uint64_t index_version = 0;    // 0 when missing
  std::uint64_t primary_version = 0;  // 0 when extra
};

// A verify that ran to its end. Equal: the index holds exactly `records` entries, the projection
// of the primary store at `through`. Otherwise `differences` records differ, the first `limit` of
// them named; `condemned` unless report-only.
struct verify_result {
  bool equal = false;
  std::optional<cursor> through;  // the fence: set in every result
  std::uint64_t records = 0;  // the index's entries
  std::uint64_t differences = 0;
  std::vector<drift> drifts;
  bool condemned = false;
};

// -- from any process (dix verify; formats.md §8) --------------------------------------------

// What the owner wrote when a verify asked by request_verify ended: `result` when it ran to its
// end (equal or not), otherwise why it did not (`code`, `message`: refused, failed, interrupted).
struct verify_report {
  std::string nonce;  // request_verify's
  std::optional<verify_result> result;
  errc code = errc::none;
  std::string message;
};

// Asks the owner of backend `id`, in whichever process holds its runner lock, for a verify: writes
// the request to `<home_db>/dix/verify/<id>.<nonce>.request` and notifies the watchers through the
// id's slot. The owner's watcher takes the request (renames it away) at once and the owner writes
// `<id>.<nonce>.report` when the verify ended; a request nobody takes means no owner runs. Returns
// the nonce. Fails invalid_argument (id outside the name rules, options out of range),
// not_registered (no segment, or no slot for `id`), segment_layout_mismatch, io_error. It does
// not check that an owner is attached: dix verify reads the segment first.
result<std::string> request_verify(const std::filesystem::path& home_db, std::string_view id, const verify_options& options);

// Whether the request `nonce` still waits for an owner (true), or an owner took it (false: its
// report follows when the verify ends). Fails io_error.
result<bool> verify_request_waiting(const std::filesystem::path& home_db, std::string_view id, std::string_view nonce);
// Withdraws the request `nonce` unless an owner took it already; true when withdrawn.
result<bool> withdraw_verify_request(const std::filesystem::path& home_db, std::string_view id, std::string_view nonce);

// The owner's report for the request `nonce`, removed once read; nullopt while there is none.
// Fails io_error (unreadable), record_corrupt (not a report).
result<std::optional<verify_report>> take_verify_report(const std::filesystem::path& home_db, std::string_view id,
                                                       std::string_view nonce);

}  // namespace dix
