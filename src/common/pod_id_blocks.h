// Pod id blocks (docs/SEMANTICS.md S20.3-S20.6): each pod with
// `hostUsers: false` gets its own block of 65536 host ids, the same block
// for uids and gids, container id 0 mapped to the block's first id, as the
// kubelet allocates them (pkg/kubelet/userns). Blocks are cut from a range
// of host ids: the entries of the user `podvisor` in /etc/subuid and
// /etc/subgid when it has both, else the kubelet's default, every id from
// 65536 up.
//
// A block is a host-wide claim (common/host_claim.h) under
// <claims root>/userns/<first id>, so pods of every state directory that
// run at the same time never share one. The claim's lock is held by the
// supervisor and inherited by the pod's sandbox holder, the owner of the
// user namespace: an unlocked claim has nobody left using its ids and is
// taken by the next pod that needs a block. Not here: the user namespace
// itself (supervisor/sandbox) and the idmapped mounts (hostfs/idmap.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "common/host_claim.h"
#include "common/result.h"

namespace podvisor {

// The kubelet's block: the 16-bit id space every image assumes.
constexpr uint32_t kPodIdBlockSize = 65536;
// The user whose subordinate ids, when configured, are podvisor's range.
constexpr std::string_view kPodIdRangeUser = "podvisor";
// The host claims' kind (<claims root>/userns/).
constexpr std::string_view kPodIdClaims = "userns";

// The host ids blocks are cut from.
struct PodIdRange {
  uint32_t first = kPodIdBlockSize;
  uint64_t length = (uint64_t{1} << 32) - kPodIdBlockSize;
  // Where it came from, for messages: "the default range" or the files.
  std::string source = "the default range";

  // How many whole blocks it holds. A block holding 4294967295, which is
  // (uid_t)-1 and no id, is left out.
  uint64_t BlockCount() const;
  // The first host id of block `index` (< BlockCount()).
  uint32_t BlockStart(uint64_t index) const;
};

// The first "name:start:count" entry of a subordinate id file's text
// whose name is `user` or `uid` (decimal), like shadow's subid lookup;
// nullopt when there is none. Malformed lines are skipped, as shadow does.
std::optional<std::pair<uint32_t, uint64_t>> FindSubordinateIds(std::string_view text,
                                                                std::string_view user,
                                                                std::optional<uint32_t> uid);

// The uid of `user` in an /etc/passwd text; nullopt when it is not there.
std::optional<uint32_t> UidInPasswd(std::string_view text, std::string_view user);

// The range from `subuid` and `subgid` for `user` (with its `uid` when the
// user exists): both entries or neither. Like the kubelet's, a configured
// range must start at a multiple of 65536, hold a multiple of 65536 ids (at
// least one block), and be the same for uids and gids; anything else is an
// error naming the file. Neither entry (or neither file): the default.
Result<PodIdRange> ReadPodIdRange(const std::filesystem::path& subuid,
                                  const std::filesystem::path& subgid, std::string_view user,
                                  std::optional<uint32_t> uid);
// The same for the host's /etc/subuid and /etc/subgid and kPodIdRangeUser.
Result<PodIdRange> HostPodIdRange();

// One pod's block, claimed host-wide.
class PodIdBlock {
 public:
  // The lowest block of `range` no running pod holds, for `owner`. What
  // `owner` left unlocked (a SIGKILLed supervisor's, whose holder is gone
  // too) is released first. EBUSY when every block is held.
  static Result<PodIdBlock> Claim(const std::filesystem::path& claims_root, const PodIdRange& range,
                                  const ClaimOwner& owner);
  // The block starting at `start` that `owner` holds already (adoption, an
  // upgrade in place: the pod's holder still has the lock). Its claim must
  // name `owner`; it is locked again when the holder is gone.
  static Result<PodIdBlock> Resume(const std::filesystem::path& claims_root, uint32_t start,
                                   const ClaimOwner& owner);

  PodIdBlock() = default;
  PodIdBlock(PodIdBlock&&) = default;
  PodIdBlock& operator=(PodIdBlock&&) = default;

  bool valid() const { return size_ != 0; }
  uint32_t start() const { return start_; }
  uint32_t size() const { return size_; }
  // The claim's locked descriptor, for the sandbox holder to inherit; -1
  // when the holder kept it and this process has none (Resume).
  int lock_fd() const { return claim_.fd(); }
  // The pod is done with its ids (its holder and containers are gone).
  void Release();

 private:
  PodIdBlock(uint32_t start, HostClaim claim, std::filesystem::path path)
      : start_(start), size_(kPodIdBlockSize), claim_(std::move(claim)), path_(std::move(path)) {}
  uint32_t start_ = 0;
  uint32_t size_ = 0;
  HostClaim claim_;
  std::filesystem::path path_;  // for Release when claim_ is not held
};

// "65536-131071": a block as status, describe and events say it.
std::string PodIdBlockText(uint32_t start, uint32_t size);

// The block an /proc/<pid>/uid_map text maps container id 0 to: one line
// "0 <start> <size>"; nullopt for anything else.
std::optional<std::pair<uint32_t, uint32_t>> ParseRootIdMap(std::string_view text);

}  // namespace podvisor
