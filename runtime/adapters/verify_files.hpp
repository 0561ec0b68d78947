// dix verify across processes (formats.md §8, decision 0057): the request a `dix verify` leaves in
// `<home>/dix/verify/<id>.<nonce>.request` and the report the owner leaves in
// `<id>.<nonce>.report`, each written aside and renamed into place, private to the user (0600 in the 0700 `dix/verify/`). The public
// side (request_verify, read_verify_report) is in <dix/verify.hpp>; the owner's side is here.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dix/result.hpp>
#include <dix/verify.hpp>

namespace dix {

struct verify_file_request {
  std::string nonce;
  verify_options options;
};

// `dix_dir`: `<home>/dix` (readiness_segment::directory()). One file per request and per report,
// named by the request's nonce: `<id>.<nonce>.request`, `.report`.
result<void> write_verify_request(const std::filesystem::path& dix_dir, std::string_view id, const verify_file_request& r);
// The nonces of the requests waiting for `id` (none when the directory is missing).
std::vector<std::string> waiting_verify_requests(const std::filesystem::path& dix_dir, std::string_view id);
// Takes the request `nonce` of `id` by renaming it (atomic: of two takers, or a taker and the
// requester withdrawing it, one wins) and reads it; nullopt when someone else won. A malformed
// request is record_corrupt (and gone).
result<std::optional<verify_file_request>> take_verify_request(const std::filesystem::path& dix_dir, std::string_view id,
                                                               std::string_view nonce);
result<void> write_verify_report(const std::filesystem::path& dix_dir, std::string_view id, const verify_report& r);
result<std::optional<verify_report>> read_verify_report_at(const std::filesystem::path& dix_dir, std::string_view id,
                                                          std::string_view nonce);

}  // namespace dix
