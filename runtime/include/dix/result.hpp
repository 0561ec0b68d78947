// result<T>: a value or a dix::error (std::expected-like). Operating errors are values in dix;
// programmer errors are assertions. Every function returning a result is [[nodiscard]].
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include <dix/errc.hpp>

namespace dix {

using epoch_t = std::uint64_t;       // owner epoch, formats.md §4.3
using index_time_t = std::uint64_t;  // ns since the Unix epoch, formats.md §1.4; 0 is never valid

class error {
 public:
  error(errc code, std::string message = {}) : code_(code), message_(std::move(message)) {}

  errc value() const noexcept { return code_; }
  std::error_code code() const noexcept { return make_error_code(code_); }
  const std::string& message() const noexcept { return message_; }

  // "log_retention: sequence 1 purged (oldest retained 201)"; just the code name without text.
  std::string to_string() const;

  friend bool operator==(const error& a, const error& b) noexcept {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  errc code_;
  std::string message_;
};

class bad_result_access : public std::logic_error {  // what() = the error's message
 public:
  explicit bad_result_access(dix::error e)
      : std::logic_error(e.message()), error_(std::move(e)) {}
  const dix::error& error() const noexcept { return error_; }

 private:
  dix::error error_;
};

template <class T>
class [[nodiscard]] result {
  static_assert(!std::is_same_v<std::decay_t<T>, dix::error>, "result<error> is meaningless");

 public:
  result(T value) : storage_(std::in_place_index<0>, std::move(value)) {}
  result(dix::error e) : storage_(std::in_place_index<1>, std::move(e)) {}
  result(errc code, std::string message)
      : storage_(std::in_place_index<1>, dix::error{code, std::move(message)}) {}

  bool has_value() const noexcept { return storage_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & { check(); return std::get<0>(storage_); }
  const T& value() const& { check(); return std::get<0>(storage_); }
  T&& value() && { check(); return std::get<0>(std::move(storage_)); }

  // Precondition: !has_value().
  const dix::error& error() const { return std::get<1>(storage_); }

  // Precondition: has_value().
  T& operator*() { return *std::get_if<0>(&storage_); }
  const T& operator*() const { return *std::get_if<0>(&storage_); }
  T* operator->() { return std::get_if<0>(&storage_); }
  const T* operator->() const { return std::get_if<0>(&storage_); }

 private:
  void check() const {
    if (!has_value()) throw bad_result_access(std::get<1>(storage_));
  }
  std::variant<T, dix::error> storage_;
};

template <>
class [[nodiscard]] result<void> {
 public:
  result() = default;
  result(dix::error e) : error_(std::move(e)), failed_(true) {}
  result(errc code, std::string message) : error_(code, std::move(message)), failed_(true) {}

  bool has_value() const noexcept { return !failed_; }
  explicit operator bool() const noexcept { return has_value(); }
  void value() const {
    if (failed_) throw bad_result_access(error_);
  }
  // Precondition: !has_value().
  const dix::error& error() const { return error_; }

 private:
  dix::error error_{errc::none};
  bool failed_ = false;
};

template <class T>
using future = std::future<result<T>>;
template <class T>
using shared_future = std::shared_future<result<T>>;

// Cooperative cancellation. A default token is never cancelled. cancel() is seen by every copy
// of the source's tokens, and it wakes every thread waiting on one of them (api.md §1): waiting
// code registers a wake with on_cancel for as long as it sleeps on something else.
class cancel_callback;

class cancel_token {
 public:
  cancel_token() = default;
  bool cancelled() const noexcept { return state_ && state_->flag.load(std::memory_order_acquire); }
  // Calls `wake` once, from the thread that cancels, when the source is cancelled while the
  // returned handle lives; at once, in this thread, when it already is. A default token never
  // calls it. `wake` must not throw and must not block.
  cancel_callback on_cancel(std::function<void()> wake) const;

 private:
  friend class cancel_source;
  friend class cancel_callback;
  struct state {
    std::atomic<bool> flag{false};
    std::mutex mutex;  // guards what follows
    std::map<std::uint64_t, std::function<void()>> wakes;
    std::uint64_t next = 1;
  };
  explicit cancel_token(std::shared_ptr<state> s) : state_(std::move(s)) {}
  std::shared_ptr<state> state_;
};

// Unregisters its wake when destroyed (move-only); after that the wake is never called.
class cancel_callback {
 public:
  cancel_callback() = default;
  cancel_callback(cancel_callback&& o) noexcept : state_(std::move(o.state_)), id_(o.id_) { o.id_ = 0; }
  cancel_callback& operator=(cancel_callback&& o) noexcept {
    if (this != &o) {
      reset();
      state_ = std::move(o.state_);
      id_ = o.id_;
      o.id_ = 0;
    }
    return *this;
  }
  ~cancel_callback() { reset(); }
  void reset() noexcept {
    if (state_ && id_ != 0) {
      std::lock_guard<std::mutex> g(state_->mutex);
      state_->wakes.erase(id_);
    }
    state_.reset();
    id_ = 0;
  }

 private:
  friend class cancel_token;
  cancel_callback(std::shared_ptr<cancel_token::state> s, std::uint64_t id) : state_(std::move(s)), id_(id) {}
  std::shared_ptr<cancel_token::state> state_;
  std::uint64_t id_ = 0;
};

class cancel_source {
 public:
  cancel_token token() const { return cancel_token(state_); }
  // Sets the flag, then calls every registered wake (under the source's mutex, so a wake is
  // never called after its handle was destroyed).
  void cancel() noexcept {
    state_->flag.store(true, std::memory_order_release);
    std::lock_guard<std::mutex> g(state_->mutex);
    for (auto& [id, wake] : state_->wakes) wake();
    state_->wakes.clear();
  }

 private:
  std::shared_ptr<cancel_token::state> state_ = std::make_shared<cancel_token::state>();
};

inline cancel_callback cancel_token::on_cancel(std::function<void()> wake) const {
  if (!state_) return {};
  {
    std::lock_guard<std::mutex> g(state_->mutex);
    if (!state_->flag.load(std::memory_order_acquire)) {
      auto id = state_->next++;
      state_->wakes.emplace(id, std::move(wake));
      return cancel_callback(state_, id);
    }
  }
  wake();
  return {};
}

// Spells out a deliberate ignore of a result; `why` documents the reason at the call site.
template <class T>
void ignore_result(result<T>&&, const char* why) noexcept {
  (void)why;
}

}  // namespace dix
