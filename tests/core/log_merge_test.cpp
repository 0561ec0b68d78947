// Tests of log_merge (protocol.md §3.7) over an in-memory log_source fake: header-time order,
// ties by attach order, caught-up logs resuming, errors naming their log.
#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/log_merge.hpp"
#include "ports/log_source.hpp"

namespace {

using dix::errc;

dix::wal_transaction txn(std::uint64_t sequence, dix::index_time_t time,
                         std::uint32_t count = 1) {
  dix::wal_transaction t;
  t.sequence = sequence;
  t.count = count;
  t.time = time;
  t.ops.resize(count);
  return t;
}

// A log held in memory, following the port's state machine: closed until open(), next() returns
// the transactions after the last one returned, nullopt when caught up (later appends are then
// returned by the same "iterator"), and any error closes the source.
class fake_log_source final : public dix::log_source {
 public:
  fake_log_source(std::string name, std::string identity)
      : name_(std::move(name)), identity_(std::move(identity)) {}

  // Appends a transaction at the log's end (sequence follows the previous one).
  void append(dix::index_time_t time, std::uint32_t count = 1) {
    std::uint64_t sequence = log_.empty() ? 1 : log_.back().end_sequence() + 1;
    log_.push_back(txn(sequence, time, count));
  }
  // The next call to open() or next() fails with this error and closes the source.
  void fail_next(errc code, std::string message) { failure_ = dix::error{code, std::move(message)}; }

  bool is_open() const noexcept { return open_; }
  std::size_t next_calls() const noexcept { return next_calls_; }

  const std::string& log_name() const noexcept override { return name_; }
  const std::string& identity() const noexcept override { return identity_; }

  dix::result<dix::wal_transaction> open(std::uint64_t sequence, dix::index_time_t time) override {
    open_ = false;
    if (auto e = take_failure()) return *e;
    if (log_.empty() || sequence < log_.front().sequence) {
      return dix::error{errc::log_retention, "sequence " + std::to_string(sequence) + " purged"};
    }
    for (std::size_t i = 0; i < log_.size(); ++i) {
      if (log_[i].sequence > sequence) break;
      if (log_[i].sequence == sequence) {
        if (time != 0 && log_[i].time != time) {
          return dix::error{errc::log_retention, "time differs at sequence " +
                                                     std::to_string(sequence)};
        }
        open_ = true;
        position_ = i + 1;
        return log_[i];
      }
    }
    return dix::error{errc::log_retention, "no batch starts at " + std::to_string(sequence)};
  }

  dix::result<std::optional<dix::wal_transaction>> next() override {
    ++next_calls_;
    if (auto e = take_failure()) {
      open_ = false;
      return *e;
    }
    if (!open_) return dix::error{errc::io_error, "not open"};
    if (position_ == log_.size()) return std::optional<dix::wal_transaction>{};
    return std::optional<dix::wal_transaction>{log_[position_++]};
  }

  dix::result<std::uint64_t> latest_sequence() const override {
    return log_.empty() ? std::uint64_t{0} : log_.back().end_sequence();
  }

  dix::result<dix::wal_retention> retention(std::uint64_t, std::uint64_t) const override {
    dix::wal_retention r;
    r.wal_oldest_sequence = log_.empty() ? 0 : log_.front().sequence;
    return r;
  }

  std::uint64_t reopens() const noexcept override { return 0; }

 private:
  std::optional<dix::error> take_failure() {
    auto e = std::move(failure_);
    failure_.reset();
    return e;
  }

  std::string name_;
  std::string identity_;
  std::vector<dix::wal_transaction> log_;
  std::optional<dix::error> failure_;
  bool open_ = false;
  std::size_t position_ = 0;
  std::size_t next_calls_ = 0;
};

// Opens a fake at its first transaction (the anchor, which the caller skips).
void open_at_start(fake_log_source& s) {
  auto anchor = s.open(1, 0);
  REQUIRE(anchor);
  REQUIRE(s.is_open());
}

// Drains the merge: (source index, time) pairs until caught up.
std::vector<std::pair<std::size_t, dix::index_time_t>> drain(dix::log_merge& merge) {
  std::vector<std::pair<std::size_t, dix::index_time_t>> out;
  for (;;) {
    auto r = merge.next();
    REQUIRE(r);
    if (!*r) return out;
    out.emplace_back((*r)->source, (*r)->txn.time);
  }
}

}  // namespace

TEST_CASE("log_merge fake: follows the log_source contract", "[core][log_merge]") {
  fake_log_source s("a", "id-a");
  s.append(10, 2);  // 1..2
  s.append(20);     // 3
  CHECK(s.latest_sequence().value() == 3);
  {
    auto r = s.next();  // not opened yet
    REQUIRE_FALSE(r);
    CHECK(r.error().value() == errc::io_error);
  }
  CHECK_FALSE(s.open(2, 0));       // not a batch start
  CHECK_FALSE(s.open(1, 11));      // other time
  auto anchor = s.open(1, 10);
  REQUIRE(anchor);
  CHECK(anchor->end_sequence() == 2);
  auto n = s.next();
  REQUIRE(n);
  REQUIRE(*n);
  CHECK((*n)->sequence == 3);
  n = s.next();
  REQUIRE(n);
  CHECK_FALSE(*n);
  s.append(30);
  n = s.next();
  REQUIRE(n);
  REQUIRE(*n);
  CHECK((*n)->sequence == 4);
}

TEST_CASE("log_merge: transactions come in header-time order, ties by attach order",
          "[core][log_merge]") {
  fake_log_source a("a", "id-a"), b("b", "id-b"), c("c", "id-c");
  // Each log starts with an anchor at time 1, skipped by open_at_start.
  for (auto* s : {&a, &b, &c}) s->append(1);
  for (dix::index_time_t t : {10, 30, 50}) a.append(t);
  for (dix::index_time_t t : {20, 30, 40}) b.append(t);
  for (dix::index_time_t t : {5, 30}) c.append(t);
  for (auto* s : {&a, &b, &c}) open_at_start(*s);

  dix::log_merge merge({&a, &b, &c});
  std::vector<std::pair<std::size_t, dix::index_time_t>> expected{
      {2, 5}, {0, 10}, {1, 20}, {0, 30}, {1, 30}, {2, 30}, {1, 40}, {0, 50}};
  CHECK(drain(merge) == expected);
}

TEST_CASE("log_merge: per-log sequence order is kept", "[core][log_merge]") {
  fake_log_source a("a", "id-a"), b("b", "id-b");
  a.append(1);
  b.append(1);
  for (dix::index_time_t t : {3, 4, 7, 8}) a.append(t);
  for (dix::index_time_t t : {2, 5, 6, 9}) b.append(t);
  open_at_start(a);
  open_at_start(b);
  dix::log_merge merge({&a, &b});
  std::vector<std::uint64_t> seq_a, seq_b;
  std::vector<dix::index_time_t> times;
  for (;;) {
    auto r = merge.next();
    REQUIRE(r);
    if (!*r) break;
    times.push_back((*r)->txn.time);
    ((*r)->source == 0 ? seq_a : seq_b).push_back((*r)->txn.sequence);
  }
  CHECK(seq_a == std::vector<std::uint64_t>{2, 3, 4, 5});
  CHECK(seq_b == std::vector<std::uint64_t>{2, 3, 4, 5});
  CHECK(times == std::vector<dix::index_time_t>{2, 3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("log_merge: a caught-up log that later gets data is picked up", "[core][log_merge]") {
  fake_log_source a("a", "id-a"), b("b", "id-b");
  a.append(1);
  b.append(1);
  a.append(10);
  open_at_start(a);
  open_at_start(b);
  dix::log_merge merge({&a, &b});

  auto first = merge.next();
  REQUIRE(first);
  REQUIRE(*first);
  CHECK((*first)->source == 0);
  CHECK((*first)->txn.time == 10);
  auto none = merge.next();
  REQUIRE(none);
  CHECK_FALSE(*none);

  b.append(20);
  a.append(30);
  CHECK(drain(merge) == std::vector<std::pair<std::size_t, dix::index_time_t>>{{1, 20}, {0, 30}});

  // And again, with only the second log resuming.
  b.append(40);
  CHECK(drain(merge) == std::vector<std::pair<std::size_t, dix::index_time_t>>{{1, 40}});
}

TEST_CASE("log_merge: a pulled look-ahead is not lost while another log is ahead",
          "[core][log_merge]") {
  fake_log_source a("a", "id-a"), b("b", "id-b");
  a.append(1);
  b.append(1);
  a.append(100);
  b.append(10);
  open_at_start(a);
  open_at_start(b);
  dix::log_merge merge({&a, &b});
  auto r = merge.next();
  REQUIRE(r);
  REQUIRE(*r);
  CHECK((*r)->source == 1);
  // a's transaction at 100 was pulled as look-ahead; b appends an earlier-looking one (the merge
  // cannot reorder what it already holds, but must still deliver both).
  b.append(50);
  CHECK(drain(merge) ==
        std::vector<std::pair<std::size_t, dix::index_time_t>>{{1, 50}, {0, 100}});
}

TEST_CASE("log_merge: an error names the log it came from", "[core][log_merge]") {
  fake_log_source a("a", "id-a"), b("b", "id-b");
  a.append(1);
  b.append(1);
  a.append(10);
  b.append(20);
  open_at_start(a);
  open_at_start(b);
  b.fail_next(errc::log_retention, "sequence 5 purged (oldest retained 9)");
  dix::log_merge merge({&a, &b});
  auto r = merge.next();
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::log_retention);
  CHECK(r.error().message() == "log b: sequence 5 purged (oldest retained 9)");
  CHECK_FALSE(b.is_open());
}

TEST_CASE("log_merge: an error of the first log names it too", "[core][log_merge]") {
  fake_log_source a("main.log", "id-a"), b("b", "id-b");
  a.append(1);
  b.append(1);
  open_at_start(a);
  open_at_start(b);
  a.fail_next(errc::log_corrupt, "sequence 7 follows 5");
  dix::log_merge merge({&a, &b});
  auto r = merge.next();
  REQUIRE_FALSE(r);
  CHECK(r.error().value() == errc::log_corrupt);
  CHECK(r.error().message() == "log main.log: sequence 7 follows 5");
}

TEST_CASE("log_merge: all logs caught up gives nullopt, repeatedly", "[core][log_merge]") {
  fake_log_source a("a", "id-a"), b("b", "id-b");
  a.append(1);
  b.append(1);
  open_at_start(a);
  open_at_start(b);
  dix::log_merge merge({&a, &b});
  for (int i = 0; i < 3; ++i) {
    auto r = merge.next();
    REQUIRE(r);
    CHECK_FALSE(*r);
  }
  // Every call asks every caught-up log again.
  CHECK(a.next_calls() == 3);
  CHECK(b.next_calls() == 3);

  dix::log_merge empty({});
  auto r = empty.next();
  REQUIRE(r);
  CHECK_FALSE(*r);
}
