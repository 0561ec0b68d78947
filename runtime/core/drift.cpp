#include "core/drift.hpp"

#include <algorithm>
#include <set>
#include <utility>

namespace dix {

std::string_view to_string(drift_kind k) noexcept {
  switch (k) {
    case drift_kind::missing: return "missing";
    case drift_kind::extra: return "extra";
    case drift_kind::stale: return "stale";
    case drift_kind::wrong_projection: return "wrong-projection";
  }
  return "unknown";
}

namespace {

// (table, record id) within one log.
int compare(const digest_entry& a, const digest_entry& b) noexcept {
  if (a.table != b.table) return a.table < b.table ? -1 : 1;
  const int c = a.record_id.compare(b.record_id);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

// One side's reader: the current entry (copied, so the source may move on), the order checked.
class side {
 public:
  side(entry_source& source, const char* name, index_digest& sum) : source_(source), name_(name), sum_(sum) {}

  // Reads the next entry; false at the end.
  result<bool> advance() {
    auto e = source_.next();
    if (!e) return e.error();
    if (*e == nullptr) {
      has_ = false;
      return false;
    }
    const auto& next = **e;
    if (has_ && next.log == current_.log && compare(current_, next) >= 0) {
      return error{errc::io_error, std::string("the ") + name_ + "'s entries are out of order at " + next.log + "/" +
                                       std::to_string(next.table) + "/" + next.record_id};
    }
    current_ = next;
    has_ = true;
    sum_.add(current_.hash);
    return true;
  }
  bool has() const noexcept { return has_; }
  const digest_entry& current() const noexcept { return current_; }

 private:
  entry_source& source_;
  const char* name_;
  index_digest& sum_;
  digest_entry current_;
  bool has_ = false;
};

class reporter {
 public:
  reporter(drift_report& r, std::size_t limit) : r_(r), limit_(limit) {}
  void note(drift_kind kind, const digest_entry& at, std::uint64_t index_version, std::uint64_t primary_version) {
    ++r_.differences;
    if (r_.drifts.size() < limit_) r_.drifts.push_back(drift{kind, at.log, at.table, at.record_id, index_version, primary_version});
  }

 private:
  drift_report& r_;
  std::size_t limit_;
};

// The rest of a projected log the index has nothing (more) of: missing.
result<void> drain_missing(side& primary, reporter& report) {
  while (primary.has()) {
    report.note(drift_kind::missing, primary.current(), 0, primary.current().version);
    auto more = primary.advance();
    if (!more) return more.error();
  }
  return {};
}

}  // namespace

result<drift_report> find_drift(entry_source& index, const std::vector<std::string>& logs,
                                const primary_source_of& primary_of, std::size_t limit) {
  drift_report out;
  reporter report(out, limit);
  const std::set<std::string> projected(logs.begin(), logs.end());
  std::set<std::string> done;
  side idx(index, "index", out.index);
  if (auto ok = idx.advance(); !ok) return ok.error();
  while (idx.has()) {
    const std::string log = idx.current().log;
    if (!done.insert(log).second) return error{errc::io_error, "the index's entries of log " + log + " are not together"};
    if (projected.count(log) == 0) {  // a log the registration does not project: all extra
      while (idx.has() && idx.current().log == log) {
        report.note(drift_kind::extra, idx.current(), idx.current().version, 0);
        if (auto ok = idx.advance(); !ok) return ok.error();
      }
      continue;
    }
    auto source = primary_of(log);
    if (!source) return source.error();
    side primary(**source, "projection", out.primary);
    if (auto ok = primary.advance(); !ok) return ok.error();
    while (idx.has() && idx.current().log == log) {
      const auto& i = idx.current();
      const int c = primary.has() ? compare(i, primary.current()) : -1;
      if (c < 0) {
        report.note(drift_kind::extra, i, i.version, 0);
        if (auto ok = idx.advance(); !ok) return ok.error();
        continue;
      }
      const auto& p = primary.current();
      if (c > 0) {
        report.note(drift_kind::missing, p, 0, p.version);
      } else if (i.version != p.version) {
        report.note(drift_kind::stale, i, i.version, p.version);
      } else if (i.hash != p.hash) {
        report.note(drift_kind::wrong_projection, i, i.version, p.version);
      }
      if (c == 0) {
        if (auto ok = idx.advance(); !ok) return ok.error();
      }
      if (auto ok = primary.advance(); !ok) return ok.error();
    }
    if (auto ok = drain_missing(primary, report); !ok) return ok.error();
  }
  for (const auto& log : logs) {  // projected logs the index holds nothing of
    if (done.count(log) != 0) continue;
    done.insert(log);
    auto source = primary_of(log);
    if (!source) return source.error();
    side primary(**source, "projection", out.primary);
    if (auto ok = primary.advance(); !ok) return ok.error();
    if (auto ok = drain_missing(primary, report); !ok) return ok.error();
  }
  return out;
}

}  // namespace dix
