// The keeper protocol: how a supervisor hands descriptors to its pod's
// sandbox holder and fetches them back (issue 30: a pod outlives its
// supervisor, and a later supervisor adopts the containers' log pipes and
// pidfds from the holder).
//
// One unix SOCK_SEQPACKET connection; each message is one short line of
// text with up to kMaxFds descriptors attached (SCM_RIGHTS). SEQPACKET
// keeps the boundaries, so a message and its descriptors arrive together
// or not at all, and no framing is needed.
//
//   supervisor                       holder
//   keep KEY      + 1..8 fds   ->    ok | error WHY   (replaces KEY's fds)
//   drop KEY                   ->    ok               (closes KEY's fds)
//   fetch                      ->    kept KEY + its fds, one per key, then end
//
// A KEY is 1 to kMaxKey printable bytes without spaces. The holder
// answers anything else with `error`, closes what came attached, and goes
// on; a zero-length message reads as the end of the connection
// (SEQPACKET's recv returns 0 for both), which closes that connection.
//
// This file only frames and parses; the holder (holder.cc) and the
// supervisor's side (keeper_client.cc) own the sockets.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/fd.h"
#include "common/result.h"

namespace podvisor::supervisor::sandbox::keeper {

// A container's log pipes and its init's pidfd are three; eight leaves
// room without letting one message pin many descriptors.
inline constexpr std::size_t kMaxFds = 8;
inline constexpr std::size_t kMaxKey = 255;
// "kept " + a key, with room: anything longer is malformed.
inline constexpr std::size_t kMaxMessage = 512;

bool ValidKey(std::string_view key);

struct Message {
  std::string text;
  std::vector<Fd> fds;  // close-on-exec
  // The text or the descriptors did not fit (MSG_TRUNC, MSG_CTRUNC: more
  // than kMaxFds, or the receiver is out of descriptors); what did arrive
  // is in text and fds, to be closed.
  bool truncated = false;
};

// sendmsg with `fds` attached, MSG_NOSIGNAL: a peer that went away is an
// EPIPE error, never a SIGPIPE. Blocks at most the socket's SO_SNDTIMEO.
Status SendMessage(int sock, std::string_view text, std::span<const int> fds = {});

// One message; an Error with ECONNRESET when the peer closed (or sent a
// zero-length message). Blocks at most the socket's SO_RCVTIMEO, then
// EAGAIN.
Result<Message> ReceiveMessage(int sock);

// Whether a send's or receive's error means the peer is gone (EPIPE,
// ECONNRESET, ENOTCONN) rather than slow or refusing.
bool IsEndOfConnection(const Error& error);

// "verb rest" -> {verb, rest}; rest is empty without a space.
std::pair<std::string_view, std::string_view> SplitVerb(std::string_view text);

}  // namespace podvisor::supervisor::sandbox::keeper
