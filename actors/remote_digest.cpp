#include "actors/remote_digest.hpp"

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/remote_system.hpp"
#include "messages/remote.hpp"
#include "messages/type_ids.hpp"

namespace dix {

namespace {

struct reader_state {
  static inline const char* name = "dix.remote_digest_reader";
  std::shared_ptr<backend> b;
  std::unique_ptr<digest_view> view;  // declared after `b`: destroyed first
  caf::actor client;
  std::uint64_t session = 0;
  std::uint64_t id = 0;
  std::shared_ptr<std::atomic<bool>> cancelled;
};

using reader_actor = caf::stateful_actor<reader_state>;

rb_digest_reply reply_to(const reader_state& st, rb_digest_op op) {
  rb_digest_reply r;
  r.session = st.session;
  r.view = st.id;
  r.op = op;
  return r;
}

void fail(rb_digest_reply& r, const error& e) {
  r.code = remote_detail::code_of(e);
  r.text = e.message();
}

void open(reader_state& st, rb_digest_reply& r) {
  if (st.view) return fail(r, error{errc::message_invalid, "digest view " + std::to_string(st.id) + " is open already"});
  auto v = st.b->open_digest();
  if (!v) return fail(r, v.error());
  st.view = std::move(*v);
  r.through = st.view->through();
  r.sum_lo = st.view->digest().sum.lo;
  r.sum_hi = st.view->digest().sum.hi;
  r.records = st.view->digest().records;
  r.amount = st.view->preparation_rows();
}

void read(reader_state& st, std::uint64_t amount, rb_digest_reply& r) {
  const auto most = std::clamp<std::uint64_t>(amount, 1, max_remote_digest_entries);
  std::size_t bytes = 0;
  while (r.entries.size() < most && bytes < max_remote_digest_bytes) {
    auto e = st.view->next();
    if (!e) return fail(r, e.error());
    if (*e == nullptr) {
      r.end = true;
      return;
    }
    const auto& x = **e;
    r.entries.push_back(rb_digest_row{x.log, x.table, x.record_id, x.version, x.hash.lo, x.hash.hi});
    bytes += x.log.size() + x.record_id.size() + 32;
  }
}

void step(reader_actor* self, rb_digest& m) {
  auto& st = self->state;
  if (m.op == rb_digest_op::close || st.cancelled->load()) {
    st.view.reset();  // at once: it pins the backend's state
    self->quit();
    return;
  }
  auto r = reply_to(st, m.op);
  try {
    if (m.op == rb_digest_op::open) {
      open(st, r);
    } else if (!st.view) {
      fail(r, error{errc::message_invalid, "digest view " + std::to_string(st.id) + " is not open"});
    } else if (m.op == rb_digest_op::prepare) {
      auto did = st.view->prepare(std::clamp<std::uint64_t>(m.amount, 1, max_remote_digest_rows));
      if (did) r.amount = *did;
      else fail(r, did.error());
    } else if (m.op == rb_digest_op::read) {
      read(st, m.amount, r);
    } else {  // skips
      r.left_out.reserve(m.records.size());
      for (const auto& record : m.records) r.left_out.push_back(st.b->skips(record).has_value() ? '\1' : '\0');
    }
  } catch (const std::exception& e) {
    r = reply_to(st, m.op);
    fail(r, error{errc::backend_failed, std::string("the digest view threw: ") + e.what()});
  } catch (...) {
    r = reply_to(st, m.op);
    fail(r, error{errc::backend_failed, "the digest view threw"});
  }
  caf::anon_send(st.client, std::move(r));
}

caf::behavior reader_fun(reader_actor* self, std::shared_ptr<backend> b, caf::actor client, std::uint64_t session,
                         std::uint64_t id, std::shared_ptr<std::atomic<bool>> cancelled) {
  auto& st = self->state;
  st.cancelled = std::move(cancelled);
  st.b = std::move(b);
  st.client = std::move(client);
  st.session = session;
  st.id = id;
  self->set_default_handler(caf::drop);
  return {
      [self](rb_digest& m) { step(self, m); },
  };
}

}  // namespace

caf::actor spawn_digest_reader(caf::actor_system& sys, std::shared_ptr<backend> b, caf::actor client,
                               std::uint64_t session, std::uint64_t view, std::shared_ptr<std::atomic<bool>> cancelled) {
  return sys.spawn<caf::detached>(reader_fun, std::move(b), std::move(client), session, view, std::move(cancelled));
}

}  // namespace dix
