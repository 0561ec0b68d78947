// dix verify across processes (formats.md §8, decision 0057): the request a `dix verify` leaves in
// `<home>/dix/verify/<id>.request` and the report the owner leaves in `<id>.report`, each written
// aside and renamed into place, private to the user (0600 in the 0700 `dix/verify/`). The public
// side (request_verify, read_verify_report) is in <dix/verify.hpp>; the owner's side is here.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <dix/result.hpp>
#include <dix/verify.hpp>

namespace dix {

struct verify_file_request {
  std::string nonce;
  verify_options options;
};

// `dix_dir`: `<home>/dix` (readiness_segment::directory()).
// The request waiting for `id`, or nullopt (none). A malformed request is record_corrupt.
result<std::optional<verify_file_request>> read_verify_request(const std::filesystem::path& dix_dir, std::string_view id);
result<void> write_verify_request(const std::filesystem::path& dix_dir, std::string_view id, const verify_file_request& r);
// Takes (removes) the request for `id` if it is still the one with `nonce` (a newer one stays);
// true when this call removed it.
bool take_verify_request(const std::filesystem::path& dix_dir, std::string_view id, std::string_view nonce);
result<void> write_verify_report(const std::filesystem::path& dix_dir, std::string_view id, const verify_report& r);
result<std::optional<verify_report>> read_verify_report_at(const std::filesystem::path& dix_dir, std::string_view id);

}  // namespace dix
