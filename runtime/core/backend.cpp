#include <dix/backend.hpp>
#include <dix/projection.hpp>

namespace dix {

completion& completion::operator=(completion&& other) noexcept {
  if (this != &other) {
    if (fn_) std::exchange(fn_, nullptr)(error{errc::backend_failed, "completion dropped"});
    fn_ = std::exchange(other.fn_, nullptr);
  }
  return *this;
}

completion::~completion() {
  if (fn_) fn_(error{errc::backend_failed, "completion dropped uncalled"});
}

void completion::operator()(result<void> outcome) && {
  if (auto fn = std::exchange(fn_, nullptr)) fn(std::move(outcome));
}

void backend::reset(epoch_t epoch, completion done) {
  (void)epoch;
  std::move(done)(error{errc::not_supported, "backend " + id() + " does not support reset"});
}

result<query_rows> backend::query(const index_query& q) {
  (void)q;
  return error{errc::not_supported, "backend " + id() + " (" + std::string(kind()) + ") answers no queries"};
}

result<void> digest_view::for_each_entry(const std::function<bool(const digest_entry&)>& each) {
  for (;;) {
    auto e = next();
    if (!e) return e.error();
    if (*e == nullptr || !each(**e)) return {};
  }
}

result<std::unique_ptr<digest_view>> backend::open_digest() {
  return error{errc::not_supported, "backend " + id() + " (" + std::string(kind()) + ") keeps no digest"};
}

std::optional<std::string> backend::skips(const record_entry&) const { return std::nullopt; }

std::string normalize_unindexable_reason(std::string_view reason) {
  bool ok = !reason.empty() && reason.size() <= 48;
  for (char c : reason) {
    bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '_' || c == '.' || c == ':' || c == '-';
    ok = ok && allowed;
  }
  return ok ? std::string(reason) : std::string("invalid-reason");
}

}  // namespace dix
