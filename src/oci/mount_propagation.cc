#include "oci/mount_propagation.h"

#include <system_error>

namespace podvisor::oci {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string DecodeOctalEscapes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
        s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(
          static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t pos = 0;
  while (pos < line.size()) {
    std::size_t end = line.find(' ', pos);
    if (end == std::string_view::npos) end = line.size();
    if (end > pos) fields.push_back(line.substr(pos, end - pos));
    pos = end + 1;
  }
  return fields;
}

bool Contains(const std::filesystem::path& mount_point, const std::filesystem::path& path) {
  auto m = mount_point.begin();
  auto p = path.begin();
  for (; m != mount_point.end(); ++m, ++p) {
    if (m->empty()) continue;  // a trailing separator
    if (p == path.end() || *m != *p) return false;
  }
  return true;
}

}  // namespace

std::string_view PropagationOption(std::string_view mount_propagation) {
  if (mount_propagation == "HostToContainer") return "rslave";
  if (mount_propagation == "Bidirectional") return "rshared";
  return "rprivate";
}

std::vector<MountInfoEntry> ParseMountInfo(std::string_view text) {
  std::vector<MountInfoEntry> entries;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::vector<std::string_view> fields = SplitFields(text.substr(pos, end - pos));
    pos = end + 1;
    // id parent major:minor root mount-point options [optional...] - ...
    if (fields.size() < 7) continue;
    MountInfoEntry entry;
    entry.mount_point = DecodeOctalEscapes(fields[4]);
    for (std::size_t i = 6; i < fields.size() && fields[i] != "-"; ++i) {
      if (fields[i].starts_with("shared:")) entry.shared = true;
      if (fields[i].starts_with("master:")) entry.slave = true;
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

const MountInfoEntry* MountContaining(const std::vector<MountInfoEntry>& mounts,
                                      const std::filesystem::path& path) {
  const MountInfoEntry* best = nullptr;
  std::size_t best_depth = 0;
  for (const MountInfoEntry& m : mounts) {
    std::filesystem::path mp(m.mount_point);
    if (!Contains(mp, path)) continue;
    std::size_t depth = static_cast<std::size_t>(std::distance(mp.begin(), mp.end()));
    // A later line with the same depth is a mount stacked over the
    // earlier one: it is the one visible at the path.
    if (!best || depth >= best_depth) {
      best = &m;
      best_depth = depth;
    }
  }
  return best;
}

Status CheckPropagationSource(std::string_view mountinfo, const std::filesystem::path& source,
                              std::string_view mount_propagation, const std::string& field) {
  if (mount_propagation != "HostToContainer" && mount_propagation != "Bidirectional") return {};
  std::error_code ec;
  std::filesystem::path resolved = std::filesystem::weakly_canonical(source, ec);
  if (ec) resolved = source.lexically_normal();
  std::vector<MountInfoEntry> mounts = ParseMountInfo(mountinfo);
  const MountInfoEntry* m = MountContaining(mounts, resolved);
  if (!m) {
    return Error(field + ".mountPropagation: " + std::string(mount_propagation) + ": no mount in " +
                 "/proc/self/mountinfo contains " + resolved.string());
  }
  const bool bidirectional = mount_propagation == "Bidirectional";
  if (m->shared || (!bidirectional && m->slave)) return {};
  return Error(field + ".mountPropagation: " + std::string(mount_propagation) + ": " +
               resolved.string() + " is on the mount " + m->mount_point + ", which is not a " +
               (bidirectional ? "shared" : "shared or slave") +
               " mount, so nothing would propagate (make it one with `mount --make-" +
               (bidirectional ? "rshared " : "rslave ") + m->mount_point +
               "`, or drop mountPropagation)");
}

}  // namespace podvisor::oci
