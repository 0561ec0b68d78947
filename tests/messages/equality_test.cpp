// messages/*.hpp and <dix/caf/messages.hpp>: every message type compares member-wise (operator==
// and !=), which CAF's test DSL needs for expect(...).with(...). A type of the type-ID block
// without them fails to compile here (the static_assert over the block); for every type of the
// block, a copy compares equal and a change of any one field its inspect() lists compares unequal,
// nested fields included (the perturber below walks a value the way its inspect() does).
// register_index, outside the block, says what it compares and is tested by hand.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/meta/annotation.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/sec.hpp>
#include <caf/type_id.hpp>

#include <dix/caf/messages.hpp>

#include "messages/type_ids.hpp"
#include "support/caf_fixture.hpp"
#include "support/sim_backend.hpp"

namespace {

// -- every type of the block has == and != --------------------------------------------------------

template <class T, class = void>
struct equality_comparable : std::false_type {};

template <class T>
struct equality_comparable<T, std::void_t<decltype(bool{std::declval<const T&>() == std::declval<const T&>()}),
                                          decltype(bool{std::declval<const T&>() != std::declval<const T&>()})>>
    : std::true_type {};

template <caf::type_id_t... Ids>
constexpr bool all_comparable(std::integer_sequence<caf::type_id_t, Ids...>) {
  return (equality_comparable<typename caf::type_by_id<caf::id_block::dix::begin + Ids>::type>::value && ...);
}

using block_offsets = std::make_integer_sequence<caf::type_id_t, caf::id_block::dix::end - caf::id_block::dix::begin>;

static_assert(all_comparable(block_offsets{}),
              "every message type of the dix type-ID block needs operator== and operator!= (member-wise, next to its "
              "inspect())");
static_assert(equality_comparable<dix::register_index>::value && equality_comparable<dix::supervise>::value,
              "the messages outside the block compare too");

// -- the perturber ---------------------------------------------------------------------------------

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};
template <class T>
struct is_map : std::false_type {};
template <class K, class V>
struct is_map<std::map<K, V>> : std::true_type {};
template <class T>
struct is_array : std::false_type {};
template <class T, std::size_t N>
struct is_array<std::array<T, N>> : std::true_type {};
template <class T>
struct is_duration : std::false_type {};
template <class R, class P>
struct is_duration<std::chrono::duration<R, P>> : std::true_type {};
template <class T>
struct is_optional_field : std::false_type {};
template <class T>
struct is_optional_field<dix::wire::optional_field<T>> : std::true_type {};
template <class T>
struct is_load_callback : std::false_type {};
template <class F>
struct is_load_callback<caf::meta::load_callback_t<F>> : std::true_type {};

dix::cursor sample_cursor(std::uint64_t sequence) {
  return dix::cursor::make({{"main", "identity-main", sequence, 1'000 + sequence}}).value();
}

template <class T>
T sample() {
  if constexpr (std::is_same<T, dix::cursor>::value) {
    return sample_cursor(1);
  } else {
    return T{};
  }
}

// Walks a value the way its inspect() lists the fields (a reading inspector: CAF 0.17 hands it
// the fields by reference) and changes the leaf field number `target` in pre-order, or every leaf
// with `all`. A leaf is a scalar, a string, an error, an actor handle, a cursor, or the presence
// or length of an optional, vector or map (whose elements are walked after it). Load callbacks
// run, as a loader runs them: inspect() functions that hand out a local copy (tailer_chunk's
// batch) write it back there.
class perturber {
 public:
  using result_type = void;
  static constexpr bool reads_state = true;
  static constexpr bool writes_state = false;
  static constexpr std::size_t all = static_cast<std::size_t>(-1);

  perturber(std::size_t target, caf::strong_actor_ptr sample_actor)
      : target_(target), sample_actor_(std::move(sample_actor)) {}

  std::size_t leaves() const { return index_; }

  template <class... Ts>
  void operator()(Ts&&... xs) {
    (visit(xs), ...);
  }

  template <class T>
  void visit(T& x) {
    if constexpr (std::is_same<T, caf::meta::type_name_t>::value) {
    } else if constexpr (is_load_callback<T>::value) {
      static_cast<void>(x.fun());
    } else if constexpr (std::is_base_of<caf::meta::annotation, T>::value) {
    } else if constexpr (std::is_same<T, bool>::value) {
      if (hit()) x = !x;
    } else if constexpr (std::is_enum<T>::value) {
      using u = std::underlying_type_t<T>;
      if (hit()) x = static_cast<T>(static_cast<u>(static_cast<u>(x) + 1));
    } else if constexpr (std::is_arithmetic<T>::value) {
      if (hit()) x = static_cast<T>(x + 1);
    } else if constexpr (is_duration<T>::value) {
      if (hit()) x += T{1};
    } else if constexpr (std::is_same<T, std::string>::value) {
      if (hit()) x += "x";
    } else if constexpr (std::is_same<T, caf::error>::value) {
      if (hit()) x = x ? caf::error{} : caf::make_error(caf::sec::runtime_error);
    } else if constexpr (std::is_same<T, caf::strong_actor_ptr>::value) {
      if (hit()) x = x ? nullptr : sample_actor_;
    } else if constexpr (std::is_same<T, dix::cursor>::value) {
      if (hit()) x = x == sample_cursor(1) ? sample_cursor(2) : sample_cursor(1);
    } else if constexpr (std::is_same<T, dix::batch_msg>::value) {
      // The batch is shared with the original: change a copy, never the pointee.
      if (hit()) {
        x.value = x.value ? nullptr : std::make_shared<const dix::batch>();
      }
      if (x.value) {
        auto copy = std::make_shared<dix::batch>(*x.value);
        visit(*copy);
        x.value = std::move(copy);
      }
    } else if constexpr (is_optional_field<T>::value) {
      visit(*x.value);
    } else if constexpr (is_optional<T>::value) {
      if (hit()) {
        if (x) {
          x.reset();
        } else {
          x = sample<typename T::value_type>();
        }
      }
      if (x) visit(*x);
    } else if constexpr (is_vector<T>::value) {
      if (hit()) x.push_back(sample<typename T::value_type>());
      for (auto& element : x) visit(element);
    } else if constexpr (is_map<T>::value) {
      static_assert(std::is_same<typename T::key_type, std::string>::value, "string-keyed maps only");
      if (hit()) x.emplace("k" + std::to_string(x.size()), typename T::mapped_type{});
      for (auto& element : x) visit(element.second);
    } else if constexpr (is_array<T>::value) {
      for (auto& element : x) visit(element);
    } else {
      inspect(*this, x);  // a struct: its fields
    }
  }

 private:
  bool hit() { return target_ == all || index_++ == target_; }

  std::size_t target_;
  caf::strong_actor_ptr sample_actor_;
  std::size_t index_ = 0;
};

// The perturber's own check: a type whose == forgets a field.
struct forgetful {
  std::uint64_t a = 0;
  std::string b;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, forgetful& x) {
  return f(caf::meta::type_name("forgetful"), x.a, x.b);
}

bool operator==(const forgetful& x, const forgetful& y) { return x.a == y.a; }

class equality_fixture : public dix::test::caf_fixture {
 public:
  caf::strong_actor_ptr sample_actor() {
    if (!actor_) actor_ = sys.spawn([]() -> caf::behavior { return {[](int) {}}; });
    return caf::actor_cast<caf::strong_actor_ptr>(actor_);
  }
  ~equality_fixture() override {
    if (actor_) caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown);
  }

  // For `base` and every single-leaf change of it: equal to a copy of itself, unequal to base.
  // Returns the number of leaves changed.
  template <class T>
  std::size_t check_every_field(const T& base, const char* name) {
    INFO(name);
    T copy = base;
    CHECK(copy == base);
    CHECK_FALSE(copy != base);
    perturber counter{perturber::all - 1, sample_actor()};
    counter.visit(copy);
    const auto leaves = counter.leaves();
    for (std::size_t k = 0; k < leaves; ++k) {
      T changed = base;
      perturber p{k, sample_actor()};
      p.visit(changed);
      INFO("leaf " << k << " of " << leaves << ": " << caf::deep_to_string(changed));
      CHECK(changed != base);
      CHECK_FALSE(changed == base);
      T again = changed;
      CHECK(again == changed);
    }
    return leaves;
  }

  // A default value and a full one (every leaf changed once), each checked field by field.
  template <class T>
  void check_type(const char* name) {
    T plain{};
    auto plain_leaves = check_every_field(plain, name);
    T full{};
    perturber everything{perturber::all, sample_actor()};
    everything.visit(full);
    auto full_leaves = check_every_field(full, name);
    // A type whose inspect() lists no field compares equal always; every other type was changed.
    if (plain_leaves > 0) {
      CHECK(full != plain);
      CHECK(full_leaves >= plain_leaves);
    }
    ++checked;
  }

  template <caf::type_id_t... Ids>
  void check_block(std::integer_sequence<caf::type_id_t, Ids...>) {
    (check_type<typename caf::type_by_id<caf::id_block::dix::begin + Ids>::type>(
         caf::type_name_by_id<caf::id_block::dix::begin + Ids>::value),
     ...);
  }

  std::size_t checked = 0;

 private:
  caf::actor actor_;
};

}  // namespace

TEST_CASE_METHOD(equality_fixture,
                 "messages: every type of the block equals its copy and differs when any one field differs",
                 "[actor][messages]") {
  check_block(block_offsets{});
  CHECK(checked == caf::id_block::dix::end - caf::id_block::dix::begin);
}

TEST_CASE_METHOD(equality_fixture, "messages: a shared batch compares by value, not by pointer",
                 "[actor][messages]") {
  auto b = std::make_shared<dix::batch>();
  b->epoch = 3;
  b->through = sample_cursor(4);
  dix::deliver shared{1, dix::batch_msg{b}};
  dix::deliver copied{1, dix::batch_msg{std::make_shared<const dix::batch>(*b)}};
  CHECK(shared == copied);  // a loaded copy says the same as the sender's batch
  auto other = std::make_shared<dix::batch>(*b);
  other->bytes = 1;
  CHECK(shared != dix::deliver{1, dix::batch_msg{other}});
  CHECK(shared != dix::deliver{1, dix::batch_msg{}});
  CHECK(dix::deliver{1, dix::batch_msg{}} == dix::deliver{1, dix::batch_msg{}});
}

TEST_CASE("messages: register_index compares its backend by identity and its tables, not its projections",
          "[actor][messages]") {
  auto backend = std::make_shared<dix::test::sim_backend>("idx");
  auto make = [&](std::uint32_t table) {
    dix::registration r;
    r.backend = backend;
    r.projections[dix::table_ref{"main", table}] = [](std::string_view payload,
                                                      const dix::record_info&) -> dix::projection_result {
      return std::string(payload);
    };
    return dix::register_index{std::move(r)};
  };
  const auto base = make(1);
  CHECK(base == make(1));  // another projection function for the same table: equal
  CHECK(base != make(2));
  auto other_backend = make(1);
  other_backend.value.backend = std::make_shared<dix::test::sim_backend>("idx");
  CHECK(base != other_backend);
  auto other_version = make(1);
  other_version.value.projection_version = "v2";
  CHECK(base != other_version);
  auto with_options = make(1);
  with_options.value.options = dix::runner_options{};
  CHECK(base != with_options);
  auto other_options = with_options;
  other_options.value.options->max_lag = std::chrono::milliseconds{5};
  CHECK(with_options != other_options);
  auto two_tables = make(1);
  two_tables.value.projections[dix::table_ref{"main", 2}] = base.value.projections.begin()->second;
  CHECK(base != two_tables);
}

TEST_CASE("messages: the field-by-field check catches an operator== that forgets a field", "[actor][messages]") {
  forgetful base;
  perturber counter{perturber::all - 1, nullptr};
  counter.visit(base);
  REQUIRE(counter.leaves() == 2);
  std::vector<bool> caught;
  for (std::size_t k = 0; k < 2; ++k) {
    forgetful changed = base;
    perturber p{k, nullptr};
    p.visit(changed);
    caught.push_back(!(changed == base));
  }
  CHECK(caught == std::vector<bool>{true, false});  // b's change goes unseen by this ==
}
