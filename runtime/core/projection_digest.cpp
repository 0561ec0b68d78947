#include "core/projection_digest.hpp"

#include <utility>

#include "core/record_projection.hpp"

namespace dix {

projection_entries::projection_entries(store_snapshot& snapshot, std::string log, std::map<std::uint32_t, projection> tables,
                                       skip_filter skipped, skip_questions questions)
    : snapshot_(snapshot),
      tables_(std::move(tables)),
      table_(tables_.begin()),
      skipped_(std::move(skipped)),
      questions_(std::move(questions)) {
  e_.log = std::move(log);
  record_.log = e_.log;
}

result<const digest_entry*> projection_entries::next() {
  while (table_ != tables_.end()) {
    if (!sought_) {
      if (auto ok = snapshot_.seek(table_->first, {}); !ok) return ok.error();
      sought_ = true;
    }
    auto next = snapshot_.next();
    if (!next) return next.error();
    if (!*next) {  // this table is done
      ++table_;
      sought_ = false;
      continue;
    }
    const auto& record = **next;
    const auto table = table_->first;
    record_.table = table;
    record_.record_id.assign(record.id);
    if (!project_stored(table_->second, e_.log, table, record.id, record.value, record_.state)) {
      return error{errc::invalid_argument, "the projection of log " + e_.log + " table " + std::to_string(table) + " threw"};
    }
    // Record-corrupt or unindexable: not an entry, as the tailer delivers it.
    if (record_.state.kind != state_kind::record) continue;
    if (skipped_ && skipped_(record_)) {
      ++skipped_count_;
      continue;
    }
    e_.table = table;
    e_.record_id.assign(record.id);
    e_.version = record_.state.version;
    e_.hash = entry_hash(e_.log, table, e_.record_id, e_.version, record_.state.projection);
    return &e_;
  }
  return static_cast<const digest_entry*>(nullptr);
}

std::optional<std::uint64_t> projection_entries::hold() {
  if (!questions_) return std::nullopt;
  held_.push_back(record_);
  return held_.size() - 1;
}

result<std::vector<bool>> projection_entries::left_out(const std::vector<std::uint64_t>& tickets) {
  std::vector<record_entry> asked;
  asked.reserve(tickets.size());
  for (auto t : tickets) {
    if (t >= held_.size()) return error{errc::io_error, "a question about a record no longer held"};
    asked.push_back(std::move(held_[t]));
  }
  held_.clear();
  if (asked.empty()) return std::vector<bool>{};
  auto answers = questions_(asked);
  if (!answers) return answers.error();
  for (bool out : *answers) skipped_count_ += out ? 1 : 0;
  return answers;
}

result<void> add_projection_digest(store_snapshot& snapshot, const std::string& log, std::uint32_t table,
                                   const projection& fn, index_digest& into,
                                   const std::function<bool(const digest_entry&)>& each) {
  projection_entries entries(snapshot, log, {{table, fn}});
  for (;;) {
    auto e = entries.next();
    if (!e) return e.error();
    if (*e == nullptr) return {};
    into.add((*e)->hash);
    if (each && !each(**e)) return {};
  }
}

}  // namespace dix
