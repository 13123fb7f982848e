#include "common/pod_id_blocks.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "common/file_io.h"

namespace podvisor {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kIdSpace = uint64_t{1} << 32;

std::optional<uint64_t> ParseDecimal(std::string_view text) {
  uint64_t value = 0;
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// One file's entry for the user, read; nullopt when the file or the entry
// is missing.
Result<std::optional<std::pair<uint32_t, uint64_t>>> EntryIn(const fs::path& file,
                                                             std::string_view user,
                                                             std::optional<uint32_t> uid) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::optional<std::pair<uint32_t, uint64_t>>();
  auto text = ReadFileBounded(file);
  if (!text) return text.take_error();
  return FindSubordinateIds(*text, user, uid);
}

}  // namespace

uint64_t PodIdRange::BlockCount() const {
  uint64_t count = length / kPodIdBlockSize;
  // A block ending at 2^32 holds (uid_t)-1.
  if (count > 0 && uint64_t{first} + count * kPodIdBlockSize >= kIdSpace) {
    count = (kIdSpace - 1 - first) / kPodIdBlockSize;
  }
  return count;
}

uint32_t PodIdRange::BlockStart(uint64_t index) const {
  return static_cast<uint32_t>(first + index * kPodIdBlockSize);
}

std::optional<std::pair<uint32_t, uint64_t>> FindSubordinateIds(std::string_view text,
                                                                std::string_view user,
                                                                std::optional<uint32_t> uid) {
  const std::string uid_text = uid ? std::to_string(*uid) : std::string();
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    const std::size_t c1 = line.find(':');
    if (c1 == std::string_view::npos) continue;
    const std::size_t c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    const std::string_view name = line.substr(0, c1);
    if (name != user && (uid_text.empty() || name != uid_text)) continue;
    auto start = ParseDecimal(line.substr(c1 + 1, c2 - c1 - 1));
    auto count = ParseDecimal(line.substr(c2 + 1));
    if (!start || !count || *start >= kIdSpace || *count == 0) continue;
    return std::pair{static_cast<uint32_t>(*start), *count};
  }
  return std::nullopt;
}

Result<PodIdRange> ReadPodIdRange(const fs::path& subuid, const fs::path& subgid,
                                  std::string_view user, std::optional<uint32_t> uid) {
  auto uids = EntryIn(subuid, user, uid);
  if (!uids) return uids.take_error();
  auto gids = EntryIn(subgid, user, uid);
  if (!gids) return gids.take_error();
  if (!*uids && !*gids) return PodIdRange{};
  const std::string who = "user " + std::string(user);
  if (!*uids || !*gids) {
    return Error((*uids ? subgid : subuid).string() + " has no entry for " + who + " but " +
                     (*uids ? subuid : subgid).string() +
                     " has: pods in user namespaces need the same range of both",
                 EINVAL);
  }
  const auto [start, count] = **uids;
  if (**gids != **uids) {
    return Error("the ranges of " + who + " in " + subuid.string() + " and " + subgid.string() +
                     " differ: pods in user namespaces need the same range of both",
                 EINVAL);
  }
  if (start % kPodIdBlockSize != 0 || count % kPodIdBlockSize != 0 || count < kPodIdBlockSize ||
      start + count > kIdSpace) {
    return Error(subuid.string() + ": the range of " + who + " (" + std::to_string(start) + ", " +
                     std::to_string(count) +
                     " ids) must start at a multiple of 65536 and hold a multiple of 65536 ids",
                 EINVAL);
  }
  return PodIdRange{start, count, subuid.string() + " and " + subgid.string() + " for " + who};
}

std::optional<uint32_t> UidInPasswd(std::string_view text, std::string_view user) {
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    // name:password:uid:...
    const std::size_t c1 = line.find(':');
    if (c1 == std::string_view::npos || line.substr(0, c1) != user) continue;
    const std::size_t c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    const std::size_t c3 = line.find(':', c2 + 1);
    auto uid = ParseDecimal(line.substr(c2 + 1, c3 == std::string_view::npos ? c3 : c3 - c2 - 1));
    if (uid && *uid < kIdSpace) return static_cast<uint32_t>(*uid);
  }
  return std::nullopt;
}

Result<PodIdRange> HostPodIdRange() {
  // /etc/passwd itself, not getpwnam: the static build must not load NSS
  // modules of whatever glibc the host has. A user missing from it still
  // matches by name, as in shadow's files.
  std::optional<uint32_t> uid;
  if (auto passwd = ReadFileBounded("/etc/passwd")) uid = UidInPasswd(*passwd, kPodIdRangeUser);
  return ReadPodIdRange("/etc/subuid", "/etc/subgid", kPodIdRangeUser, uid);
}

Result<PodIdBlock> PodIdBlock::Claim(const fs::path& claims_root, const PodIdRange& range,
                                     const ClaimOwner& owner) {
  HostClaim::ReleaseAllOf(claims_root, kPodIdClaims, owner);
  const uint64_t count = range.BlockCount();
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t start = range.BlockStart(i);
    const std::string key = std::to_string(start);
    auto claim =
        HostClaim::Take(claims_root, kPodIdClaims, key, owner, StaleClaim::kFreeWhenUnlocked);
    if (claim) {
      return PodIdBlock(start, std::move(*claim), claims_root / std::string(kPodIdClaims) / key);
    }
    if (claim.error().code() != EBUSY) return claim.take_error().Wrap("claiming host ids");
  }
  return Error("every block of 65536 host ids of " + range.source + " (" + std::to_string(count) +
                   ") is held by a running pod",
               EBUSY);
}

Result<PodIdBlock> PodIdBlock::Resume(const fs::path& claims_root, uint32_t start,
                                      const ClaimOwner& owner) {
  const std::string key = std::to_string(start);
  auto claim =
      HostClaim::Take(claims_root, kPodIdClaims, key, owner, StaleClaim::kFreeWhenUnlocked);
  if (claim) {
    // Nobody held it: the holder is gone; it is this process's now.
    return PodIdBlock(start, std::move(*claim), claims_root / std::string(kPodIdClaims) / key);
  }
  const fs::path path = claims_root / std::string(kPodIdClaims) / key;
  // Held: by the pod's holder, if the file names this pod.
  auto text = ReadFileBounded(path);
  const std::string expected = owner.state_root.string() + "\n" + owner.pod + "\n";
  if (!text || *text != expected) {
    return Error(
        "host ids " + PodIdBlockText(start, kPodIdBlockSize) + ": " + claim.error().message(),
        EBUSY);
  }
  return PodIdBlock(start, HostClaim(), path);
}

void PodIdBlock::Release() {
  if (claim_.held()) {
    claim_.Release();
  } else if (!path_.empty()) {
    ::unlink(path_.c_str());
  }
  path_.clear();
  size_ = 0;
}

std::string PodIdBlockText(uint32_t start, uint32_t size) {
  return std::to_string(start) + "-" + std::to_string(uint64_t{start} + size - 1);
}

std::optional<std::pair<uint32_t, uint32_t>> ParseRootIdMap(std::string_view text) {
  // "         0      65536      65536\n"
  uint64_t fields[3];
  int n = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    if (i >= text.size() || text[i] == '\n') break;
    std::size_t j = i;
    while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
    if (j == i || n == 3) return std::nullopt;
    auto v = ParseDecimal(text.substr(i, j - i));
    if (!v) return std::nullopt;
    fields[n++] = *v;
    i = j;
  }
  // One line only.
  while (i < text.size() && (text[i] == '\n' || text[i] == ' ')) ++i;
  if (n != 3 || i != text.size() || fields[0] != 0 || fields[1] == 0 || fields[2] == 0 ||
      fields[1] + fields[2] > kIdSpace) {
    return std::nullopt;
  }
  return std::pair{static_cast<uint32_t>(fields[1]), static_cast<uint32_t>(fields[2])};
}

}  // namespace podvisor
