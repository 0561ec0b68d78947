// The index node's digest views (issue 31, backends.md §4.6): dix verify of a remote index reads
// the wrapped backend's digest view through its node. Each view the owner opens lives in a reader
// actor of its own, on its own thread (a view's reads may take long and must never hold up the
// host actor's deliveries and barriers), which answers the owner directly. The host actor checks
// the session and epoch of every step and forwards it; it ends the readers with their session.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <dix/backend.hpp>

namespace dix {

// Views open at once per session, at most (dix verify opens one per verify).
inline constexpr std::size_t max_remote_digest_views = 2;
// What one step may ask at most: entries of a read, rows of a preparation, records of a skips.
inline constexpr std::uint64_t max_remote_digest_entries = 4096;
inline constexpr std::uint64_t max_remote_digest_rows = 1u << 20;
// A read answers no more than about this many bytes of entries (a message well under the
// middleman's limit, whatever the record ids' length).
inline constexpr std::size_t max_remote_digest_bytes = 4u << 20;

// A reader of view `view` of session `session` on the wrapped backend `b`, answering `client`
// (rb_digest_reply). It takes rb_digest messages — the first must be `open` — and quits at
// `close`, at an exit message, or with its actor system; its view is destroyed before its
// reference to the backend. Once `cancelled` is set (the host sets it before it sends the close
// or the exit, which queue behind the steps already sent) it takes no more steps: a step queued
// behind the session's end never opens or reads the backend after the host shut it down.
caf::actor spawn_digest_reader(caf::actor_system& sys, std::shared_ptr<backend> b, caf::actor client,
                               std::uint64_t session, std::uint64_t view, std::shared_ptr<std::atomic<bool>> cancelled);

}  // namespace dix
