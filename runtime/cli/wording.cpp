#include "wording.hpp"

#include <algorithm>

namespace dix::cli {

std::string duration_text(std::uint64_t ms) {
  if (ms < 10'000) return std::to_string(ms / 1000) + "." + std::to_string(ms % 1000 / 100) + " s";
  const auto s = ms / 1000;
  if (s < 120) return std::to_string(s) + " s";
  if (s < 3600) return std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
  return std::to_string(s / 3600) + " h " + std::to_string(s % 3600 / 60) + " min";
}

namespace {

// Thousandths of the estimate rebuilt, capped at 1000; 0 without an estimate.
std::uint64_t permille(const rebuild_progress& p) {
  if (p.scan_ended) return 1000;
  if (p.estimated_records == 0) return 0;
  return std::min<std::uint64_t>(1000, p.rebuilt_records * 1000 / p.estimated_records);
}

}  // namespace

std::string progress_text(const rebuild_progress& p) {
  const auto rate = std::to_string(p.scan_records_per_s) + " records/s";
  if (p.scan_ended) {
    return "scan done: " + std::to_string(p.rebuilt_records) + " records at " + rate +
           ", replaying the log from the boundary";
  }
  std::string text = std::to_string(p.rebuilt_records) + "/" + std::to_string(p.estimated_records) + " records";
  if (p.estimated_records > 0) text += " (" + std::to_string(permille(p) / 10) + "%)";
  if (p.scan_records_per_s > 0) text += ", " + rate + ", ETA " + duration_text(p.rebuild_eta_ms);
  return text;
}

std::string progress_bar(const rebuild_progress& p, std::size_t cells) {
  const auto full = static_cast<std::size_t>(permille(p) * cells / 1000);
  return "[" + std::string(full, '#') + std::string(cells - full, '-') + "]";
}

std::string ids_with_slots(const readiness_table& t) {
  if (t.entries.empty()) return "; no id has a slot yet";
  std::string out = "; the ids with a slot: ";
  for (std::size_t i = 0; i < t.entries.size(); ++i) out += (i == 0 ? "" : ", ") + t.entries[i].id;
  return out;
}

}  // namespace dix::cli
