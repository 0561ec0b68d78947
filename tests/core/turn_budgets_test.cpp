// turn_budgets (protocol.md §4.1): made from runner_options field by field.
#include <catch2/catch.hpp>

#include <chrono>

#include "core/turn_budgets.hpp"

using namespace dix;

TEST_CASE("turn budgets: they are made from the runner options, and the defaults of both agree", "[core][tailer]") {
  const auto defaults = make_turn_budgets(runner_options{});
  const turn_budgets plain;
  CHECK(defaults.max_transactions_per_turn == plain.max_transactions_per_turn);
  CHECK(defaults.max_bytes_per_turn == plain.max_bytes_per_turn);
  CHECK(defaults.max_milliseconds_per_turn == plain.max_milliseconds_per_turn);
  CHECK(defaults.max_chunk_records == plain.max_chunk_records);
  CHECK(defaults.max_chunk_bytes == plain.max_chunk_bytes);
  runner_options o;
  o.max_transactions_per_turn = 3;
  o.max_bytes_per_turn = 4'096;
  o.max_milliseconds_per_turn = std::chrono::milliseconds(9);
  o.max_chunk_records = 17;
  o.max_chunk_bytes = 2'048;
  const auto b = make_turn_budgets(o);
  CHECK(b.max_transactions_per_turn == 3);
  CHECK(b.max_bytes_per_turn == 4'096);
  CHECK(b.max_milliseconds_per_turn == std::chrono::milliseconds(9));
  CHECK(b.max_chunk_records == 17);
  CHECK(b.max_chunk_bytes == 2'048);
}
