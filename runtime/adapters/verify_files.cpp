#include "adapters/verify_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "adapters/posix_files.hpp"
#include "adapters/readiness_segment.hpp"
#include "core/names.hpp"

namespace dix {

namespace {

namespace fs = std::filesystem;
constexpr std::string_view subject = "dix verify";
constexpr std::string_view request_magic = "dix-verify-request 1";
constexpr std::string_view report_magic = "dix-verify-report 1";

fs::path verify_dir(const fs::path& dix_dir) { return dix_dir / "verify"; }

std::string hex(std::string_view bytes) {
  static const char* const digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::optional<std::string> unhex(std::string_view text) {
  if (text.size() % 2 != 0) return std::nullopt;
  auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); i += 2) {
    const int hi = value(text[i]), lo = value(text[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

// One line, whatever a message holds.
std::string one_line(std::string text) {
  for (auto& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

// Writes `text` to `<dir>/<name>` aside (a temporary beside it) and renames it into place.
result<void> write_aside(const fs::path& dix_dir, const std::string& name, const std::string& text) {
  const auto dir = verify_dir(dix_dir);
  if (auto ok = make_private_directory(dir, subject); !ok) return ok.error();
  const auto final_path = dir / name;
  const auto temp = dir / (name + ".tmp." + std::to_string(::getpid()));
  auto fd = open_private_file(temp, subject);
  if (!fd) return fd.error();
  if (::ftruncate(fd->get(), 0) != 0) return posix_error(subject, "truncating", temp, errno);
  std::size_t at = 0;
  while (at < text.size()) {
    const auto n = ::write(fd->get(), text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return posix_error(subject, "writing", temp, errno);
    at += static_cast<std::size_t>(n);
  }
  if (::rename(temp.c_str(), final_path.c_str()) != 0) {
    const int code = errno;
    ::unlink(temp.c_str());
    return posix_error(subject, "renaming into place", final_path, code);
  }
  return {};
}

// The file's lines, or nullopt when it does not exist.
result<std::optional<std::vector<std::string>>> read_lines(const fs::path& path) {
  struct ::stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::optional<std::vector<std::string>>{};
    return posix_error(subject, "reading", path, errno);
  }
  if (!S_ISREG(st.st_mode)) return error{errc::io_error, std::string(subject) + ": " + path.string() + " is not a regular file"};
  if (auto ok = check_private(st, path, subject); !ok) return ok.error();
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return std::optional<std::vector<std::string>>{};  // taken meanwhile
    return posix_error(subject, "reading", path, errno);
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return std::optional<std::vector<std::string>>(std::move(lines));
}

error corrupt(const fs::path& path, const std::string& why) {
  return error{errc::record_corrupt, std::string(subject) + ": " + path.string() + ": " + why};
}

// "key value" → value when the line's key is `key`.
std::optional<std::string> value_of(const std::string& line, std::string_view key) {
  if (line.size() < key.size() + 1 || line.compare(0, key.size(), key) != 0 || line[key.size()] != ' ') return std::nullopt;
  return line.substr(key.size() + 1);
}

std::optional<std::uint64_t> number(const std::string& text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

const char* outcome_name(const verify_report& r) {
  if (r.result) return r.result->equal ? "equal" : "drift";
  return "not-verified";
}

std::optional<drift_kind> kind_named(std::string_view name) {
  for (auto k : {drift_kind::missing, drift_kind::extra, drift_kind::stale, drift_kind::wrong_projection}) {
    if (to_string(k) == name) return k;
  }
  return std::nullopt;
}

std::optional<errc> errc_named(std::string_view name) {
  for (std::uint8_t v = 0; v < errc_count; ++v) {
    if (to_string(static_cast<errc>(v)) == name) return static_cast<errc>(v);
  }
  return std::nullopt;
}

std::string new_nonce() {
  std::random_device device;
  std::mt19937_64 rng((static_cast<std::uint64_t>(device()) << 32) ^ device() ^
                      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                      static_cast<std::uint64_t>(::getpid()));
  std::string bytes(8, '\0');
  for (auto& b : bytes) b = static_cast<char>(rng() & 0xff);
  return hex(bytes);
}

}  // namespace

namespace {

fs::path request_path(const fs::path& dix_dir, std::string_view id, std::string_view nonce, const char* suffix) {
  return verify_dir(dix_dir) / (std::string(id) + "." + std::string(nonce) + suffix);
}

result<verify_file_request> parse_request(const fs::path& path, const std::vector<std::string>& l) {
  if (l.size() < 6 || l[0] != request_magic) return corrupt(path, "not a verify request");
  verify_file_request r;
  auto nonce = value_of(l[1], "nonce");
  auto report_only = value_of(l[2], "report_only");
  auto rate = value_of(l[3], "entries_per_s");
  auto limit = value_of(l[4], "limit");
  auto deadline = value_of(l[5], "deadline_ms");
  if (!nonce || nonce->empty() || !report_only || !rate || !number(*rate) || !limit || !number(*limit) || !deadline ||
      !number(*deadline) || (*report_only != "0" && *report_only != "1") || *number(*limit) > 1000000 ||
      *number(*deadline) == 0 || *number(*deadline) > 86400000) {
    return corrupt(path, "a field is missing or out of range");
  }
  r.nonce = *nonce;
  r.options.report_only = *report_only == "1";
  r.options.entries_per_s = *number(*rate);
  r.options.limit = static_cast<std::uint32_t>(*number(*limit));
  r.options.deadline = std::chrono::milliseconds(*number(*deadline));
  return r;
}

bool is_nonce(std::string_view text) {
  return text.size() == 16 && std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

std::vector<std::string> waiting_verify_requests(const fs::path& dix_dir, std::string_view id) {
  std::vector<std::string> nonces;
  std::error_code ec;
  const std::string prefix = std::string(id) + ".";
  const std::string suffix = ".request";
  for (fs::directory_iterator it(verify_dir(dix_dir), ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name.size() != prefix.size() + 16 + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const auto nonce = name.substr(prefix.size(), 16);
    // Only a regular file of dix's naming is a request: a directory, a symlink or another name
    // planted here is never renamed or removed.
    if (is_nonce(nonce) && it->symlink_status(ec).type() == fs::file_type::regular) nonces.push_back(nonce);
  }
  return nonces;
}

result<std::optional<verify_file_request>> take_verify_request(const fs::path& dix_dir, std::string_view id,
                                                               std::string_view nonce) {
  const auto waiting = request_path(dix_dir, id, nonce, ".request");
  const auto taken = request_path(dix_dir, id, nonce, ".taken");
  // The rename is the take: of a watcher and the requester withdrawing, exactly one succeeds.
  if (::rename(waiting.c_str(), taken.c_str()) != 0) {
    if (errno == ENOENT) return std::optional<verify_file_request>{};
    return posix_error(subject, "taking", waiting, errno);
  }
  // Removed only once read as a request: anything else stays, as `.taken`, for the operator.
  auto lines = read_lines(taken);
  if (!lines) return lines.error();
  if (!*lines) return std::optional<verify_file_request>{};
  auto r = parse_request(taken, **lines);
  if (!r) return r.error();
  if (r->nonce != nonce) return corrupt(taken, "its nonce is not its name's");
  ::unlink(taken.c_str());
  return std::optional<verify_file_request>(std::move(*r));
}

result<void> write_verify_request(const fs::path& dix_dir, std::string_view id, const verify_file_request& r) {
  std::ostringstream out;
  out << request_magic << "\n"
      << "nonce " << r.nonce << "\n"
      << "report_only " << (r.options.report_only ? 1 : 0) << "\n"
      << "entries_per_s " << r.options.entries_per_s << "\n"
      << "limit " << r.options.limit << "\n"
      << "deadline_ms " << r.options.deadline.count() << "\n";
  return write_aside(dix_dir, std::string(id) + "." + r.nonce + ".request", out.str());
}

result<void> write_verify_report(const fs::path& dix_dir, std::string_view id, const verify_report& r) {
  std::ostringstream out;
  out << report_magic << "\n"
      << "nonce " << r.nonce << "\n"
      << "outcome " << outcome_name(r) << "\n"
      << "code " << to_string(r.code) << "\n"
      << "message " << one_line(r.message) << "\n";
  if (r.result) {
    const auto& v = *r.result;
    out << "through " << (v.through ? hex(v.through->bytes()) : std::string()) << "\n"
        << "records " << v.records << "\n"
        << "differences " << v.differences << "\n"
        << "condemned " << (v.condemned ? 1 : 0) << "\n";
    for (const auto& d : v.drifts) {
      out << "drift " << to_string(d.kind) << " " << hex(d.log) << " " << d.table << " " << hex(d.record_id) << " "
          << d.index_version << " " << d.primary_version << "\n";
    }
  }
  return write_aside(dix_dir, std::string(id) + "." + r.nonce + ".report", out.str());
}

result<std::optional<verify_report>> read_verify_report_at(const fs::path& dix_dir, std::string_view id,
                                                          std::string_view nonce) {
  const auto path = request_path(dix_dir, id, nonce, ".report");
  auto lines = read_lines(path);
  if (!lines) return lines.error();
  if (!*lines) return std::optional<verify_report>{};
  const auto& l = **lines;
  if (l.size() < 5 || l[0] != report_magic) return corrupt(path, "not a verify report");
  verify_report r;
  auto stored_nonce = value_of(l[1], "nonce");
  auto outcome = value_of(l[2], "outcome");
  auto code = value_of(l[3], "code");
  auto message = l[4].rfind("message", 0) == 0 ? std::optional<std::string>(l[4].size() > 8 ? l[4].substr(8) : "") : std::nullopt;
  if (!stored_nonce || !outcome || !code || !errc_named(*code) || !message) return corrupt(path, "a field is missing");
  if (*stored_nonce != nonce) return corrupt(path, "its nonce is not its name's");
  r.nonce = *stored_nonce;
  r.code = *errc_named(*code);
  r.message = *message;
  if (*outcome == "not-verified") return std::optional<verify_report>(std::move(r));
  if ((*outcome != "equal" && *outcome != "drift") || l.size() < 9) return corrupt(path, "an unknown outcome");
  verify_result v;
  v.equal = *outcome == "equal";
  auto through = value_of(l[5], "through");
  auto records = value_of(l[6], "records");
  auto differences = value_of(l[7], "differences");
  auto condemned = value_of(l[8], "condemned");
  if (!through || !records || !number(*records) || !differences || !number(*differences) || !condemned) {
    return corrupt(path, "a field of the result is missing");
  }
  if (auto bytes = unhex(*through); bytes && !bytes->empty()) {
    auto c = cursor::decode(*bytes);
    if (!c) return corrupt(path, "its cursor: " + c.error().message());
    v.through = std::move(*c);
  }
  v.records = *number(*records);
  v.differences = *number(*differences);
  v.condemned = *condemned == "1";
  for (std::size_t i = 9; i < l.size(); ++i) {
    std::istringstream in(l[i]);
    std::string word, kind, log, table, record, index_version, primary_version;
    in >> word >> kind >> log >> table >> record >> index_version >> primary_version;
    auto k = kind_named(kind);
    auto log_bytes = unhex(log);
    auto id_bytes = unhex(record);
    if (word != "drift" || !k || !log_bytes || !id_bytes || !number(table) || !number(index_version) || !number(primary_version)) {
      return corrupt(path, "line " + std::to_string(i + 1) + " is not a drift");
    }
    drift d;
    d.kind = *k;
    d.log = *log_bytes;
    d.table = static_cast<std::uint32_t>(*number(table));
    d.record_id = *id_bytes;
    d.index_version = *number(index_version);
    d.primary_version = *number(primary_version);
    v.drifts.push_back(std::move(d));
  }
  r.result = std::move(v);
  return std::optional<verify_report>(std::move(r));
}

result<std::string> request_verify(const fs::path& home_db, std::string_view id, const verify_options& options) {
  if (auto ok = check_backend_id(id, "request_verify"); !ok) return ok.error();
  if (options.limit > 1000000 || options.deadline.count() <= 0 || options.deadline.count() > 86400000) {
    return error{errc::invalid_argument, "request_verify: limit must be in [0, 1000000] and deadline in [1, 86400000] ms"};
  }
  auto view = segment_view::open(home_db, segment_view::access::read_write);
  if (!view) return view.error();
  if (!*view) return error{errc::not_registered, "request_verify: " + home_db.string() + " has no readiness segment"};
  auto index = (*view)->find(id);
  if (!index) {
    return error{errc::not_registered, "request_verify: backend id \"" + std::string(id) +
                                           "\" has no slot in the readiness segment of " + home_db.string()};
  }
  verify_file_request r{new_nonce(), options};
  if (auto ok = write_verify_request((*view)->directory(), id, r); !ok) return ok.error();
  (*view)->slot(*index)->poke();  // the owner's watcher looks
  return r.nonce;
}

namespace {

result<fs::path> dix_dir_of(const fs::path& home_db, std::string_view id, const char* context) {
  if (auto ok = check_backend_id(id, context); !ok) return ok.error();
  std::error_code ec;
  const auto home = fs::canonical(home_db, ec);
  if (ec) return posix_error(subject, "resolving", home_db, ec.value());
  return home / "dix";
}

}  // namespace

result<std::optional<verify_report>> take_verify_report(const fs::path& home_db, std::string_view id,
                                                       std::string_view nonce) {
  auto dir = dix_dir_of(home_db, id, "take_verify_report");
  if (!dir) return dir.error();
  auto r = read_verify_report_at(*dir, id, nonce);
  if (r && *r) ::unlink(request_path(*dir, id, nonce, ".report").c_str());
  return r;
}

result<bool> verify_request_waiting(const fs::path& home_db, std::string_view id, std::string_view nonce) {
  auto dir = dix_dir_of(home_db, id, "verify_request_waiting");
  if (!dir) return dir.error();
  struct ::stat st {};
  const auto path = request_path(*dir, id, nonce, ".request");
  if (::lstat(path.c_str(), &st) == 0) return true;
  if (errno == ENOENT) return false;
  return posix_error(subject, "looking at", path, errno);
}

result<bool> withdraw_verify_request(const fs::path& home_db, std::string_view id, std::string_view nonce) {
  auto dir = dix_dir_of(home_db, id, "withdraw_verify_request");
  if (!dir) return dir.error();
  const auto path = request_path(*dir, id, nonce, ".request");
  if (::unlink(path.c_str()) == 0) return true;
  if (errno == ENOENT) return false;  // taken
  return posix_error(subject, "withdrawing", path, errno);
}

}  // namespace dix
