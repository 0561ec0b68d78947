#include "core/drift.hpp"

#include <algorithm>
#include <optional>
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

}  // namespace

struct drift_merge::state {
  enum class phase : std::uint8_t { begin, next_log, extra_log, merge_log, drain, leftover, complete };

  state(entry_source& index_in, std::vector<std::string> logs_in, primary_source_of primary_of_in, std::size_t limit)
      : logs(std::move(logs_in)),
        projected(logs.begin(), logs.end()),
        primary_of(std::move(primary_of_in)),
        report(out, limit),
        index(index_in),
        idx(index_in, "index", out.index) {}

  drift_report out;
  std::vector<std::string> logs;
  std::set<std::string> projected;
  primary_source_of primary_of;
  reporter report;
  entry_source& index;
  std::uint64_t slice = 1;  // the preparation's share of the running step
  side idx;
  phase at = phase::begin;
  std::set<std::string> done;      // logs merged (or begun)
  std::string log;                 // the log being merged
  std::unique_ptr<entry_source> primary_source;
  std::optional<side> primary;
  std::size_t leftover = 0;        // the next of `logs` to look at once the index is read
  std::uint64_t read = 0;

  result<bool> advance(side& s) {
    ++read;
    return s.advance();
  }
  result<void> open_primary(const std::string& of) {
    if (auto asked = ask(); !asked) return asked.error();  // the tickets are the old source's
    primary.reset();
    auto source = primary_of(of);
    if (!source) return source.error();
    primary_source = std::move(*source);
    primary.emplace(*primary_source, "projection", out.primary);
    if (auto ok = advance(*primary); !ok) return ok.error();
    return {};
  }

  // A difference found, in merge order: reported, or held behind a question still to ask.
  struct held_note {
    drift_kind kind;
    digest_entry at;
    std::uint64_t index_version = 0, primary_version = 0;
    std::optional<std::uint64_t> ticket;  // a missing entry the backend may leave out
  };
  std::vector<held_note> held;
  std::size_t questions = 0;  // of `held`, those with a ticket

  void note(drift_kind kind, const digest_entry& where, std::uint64_t index_version, std::uint64_t primary_version) {
    if (held.empty()) report.note(kind, where, index_version, primary_version);
    else held.push_back(held_note{kind, where, index_version, primary_version, std::nullopt});
  }
  // The primary's current entry, which the index lacks: missing, unless the backend leaves it
  // out — a question the primary's source holds, asked with others (held_questions_max at most).
  result<void> note_missing() {
    const auto& p = primary->current();
    auto ticket = primary_source->hold();
    if (!ticket) {
      note(drift_kind::missing, p, 0, p.version);
      return {};
    }
    held.push_back(held_note{drift_kind::missing, p, 0, p.version, ticket});
    if (++questions >= held_questions_max) return ask();
    return {};
  }
  // Asks the held questions and reports what they held back, in order.
  result<void> ask() {
    if (held.empty()) return {};
    std::vector<bool> out_of_index;
    if (questions != 0) {
      std::vector<std::uint64_t> tickets;
      tickets.reserve(questions);
      for (const auto& h : held) {
        if (h.ticket) tickets.push_back(*h.ticket);
      }
      auto answers = primary_source->left_out(tickets);
      if (!answers) return answers.error();
      if (answers->size() != tickets.size()) {
        return error{errc::io_error, "the backend answered " + std::to_string(answers->size()) + " questions of " +
                                         std::to_string(tickets.size())};
      }
      out_of_index = std::move(*answers);
    }
    std::size_t next = 0;
    for (auto& h : held) {
      if (h.ticket && out_of_index[next++]) {
        out.primary.remove(h.at.hash);  // left out: in neither sum
      } else {
        report.note(h.kind, h.at, h.index_version, h.primary_version);
      }
    }
    held.clear();
    questions = 0;
    return {};
  }

  // One unit of work: at most two entries read.
  result<void> turn() {
    switch (at) {
      case phase::begin: {
        // The index side's preparation first, a slice of the step's allowance at a time.
        auto did = index.prepare(slice);
        if (!did) return did.error();
        read += *did;
        if (*did != 0) return {};
        if (auto ok = advance(idx); !ok) return ok.error();
        at = phase::next_log;
        return {};
      }
      case phase::next_log:
        if (!idx.has()) {
          at = phase::leftover;
          return {};
        }
        log = idx.current().log;
        if (!done.insert(log).second) return error{errc::io_error, "the index's entries of log " + log + " are not together"};
        if (projected.count(log) == 0) {  // a log the registration does not project: all extra
          at = phase::extra_log;
          return {};
        }
        if (auto ok = open_primary(log); !ok) return ok.error();
        at = phase::merge_log;
        return {};
      case phase::extra_log:
        if (!idx.has() || idx.current().log != log) {
          at = phase::next_log;
          return {};
        }
        note(drift_kind::extra, idx.current(), idx.current().version, 0);
        if (auto ok = advance(idx); !ok) return ok.error();
        return {};
      case phase::merge_log: {
        if (!idx.has() || idx.current().log != log) {
          at = phase::drain;
          return {};
        }
        const auto& i = idx.current();
        const int c = primary->has() ? compare(i, primary->current()) : -1;
        if (c < 0) {
          note(drift_kind::extra, i, i.version, 0);
          if (auto ok = advance(idx); !ok) return ok.error();
          return {};
        }
        const auto& p = primary->current();
        if (c > 0) {
          if (auto ok = note_missing(); !ok) return ok.error();
        } else if (i.version != p.version) {
          note(drift_kind::stale, i, i.version, p.version);
        } else if (i.hash != p.hash) {
          note(drift_kind::wrong_projection, i, i.version, p.version);
        }
        if (c == 0) {
          if (auto ok = advance(idx); !ok) return ok.error();
        }
        if (auto ok = advance(*primary); !ok) return ok.error();
        return {};
      }
      case phase::drain:  // the rest of a projected log the index has nothing (more) of: missing
        if (!primary->has()) {
          if (auto asked = ask(); !asked) return asked.error();
          primary.reset();
          primary_source.reset();
          at = idx.has() ? phase::next_log : phase::leftover;
          return {};
        }
        if (auto ok = note_missing(); !ok) return ok.error();
        if (auto ok = advance(*primary); !ok) return ok.error();
        return {};
      case phase::leftover:  // projected logs the index holds nothing of
        while (leftover < logs.size() && done.count(logs[leftover]) != 0) ++leftover;
        if (leftover == logs.size()) {
          at = phase::complete;
          return {};
        }
        done.insert(logs[leftover]);
        if (auto ok = open_primary(logs[leftover]); !ok) return ok.error();
        at = phase::drain;
        return {};
      case phase::complete:
        return {};
    }
    return {};
  }
};

drift_merge::drift_merge(entry_source& index, std::vector<std::string> logs, primary_source_of primary_of, std::size_t limit)
    : state_(std::make_unique<state>(index, std::move(logs), std::move(primary_of), limit)) {}

drift_merge::~drift_merge() = default;

result<bool> drift_merge::step(std::uint64_t entries) {
  if (failed_) return error{errc::io_error, "the merge failed before"};
  auto& st = *state_;
  constexpr auto most = ~std::uint64_t{0};
  const auto until = entries > most - st.read ? most : st.read + entries;
  while (st.at != state::phase::complete && st.read < until) {
    st.slice = until - st.read;
    if (auto ok = st.turn(); !ok) {
      failed_ = true;
      return ok.error();
    }
  }
  // Each step ends with its questions asked: report() is whole up to where it read.
  if (auto asked = st.ask(); !asked) {
    failed_ = true;
    return asked.error();
  }
  return st.at == state::phase::complete;
}

bool drift_merge::done() const noexcept { return state_->at == state::phase::complete; }
std::uint64_t drift_merge::read() const noexcept { return state_->read; }
const drift_report& drift_merge::report() const noexcept { return state_->out; }

result<drift_report> find_drift(entry_source& index, const std::vector<std::string>& logs,
                                const primary_source_of& primary_of, std::size_t limit) {
  drift_merge merge(index, logs, primary_of, limit);
  auto done = merge.step(~std::uint64_t{0});
  if (!done) return done.error();
  return merge.report();
}

}  // namespace dix
