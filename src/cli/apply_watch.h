// `podvisor apply --watch` (docs/SEMANTICS.md S18.11): a pass at start,
// then one after each change of the manifest directory, settled by a
// debounce so that one editor save is one pass, and one every `rescan` as
// the kubelet's static-pod file source rescans. Ends on SIGTERM or SIGINT
// and leaves the pods running.
#pragma once

#include <filesystem>
#include <functional>

#include "common/clock.h"

namespace podvisor::cli::apply {

// What a change waits for before its pass: an editor's save is a burst
// (vim: write 4913, rename the old file to x~, write x; others write a
// temporary file and rename it into place), one pass once it is quiet.
inline constexpr Duration kDebounce = std::chrono::milliseconds(100);

// `pass(first, interrupt)` runs one apply pass; `interrupt` is a
// descriptor that becomes readable on SIGTERM or SIGINT, for its waits.
// `path` is the directory, or the one file, `apply -f` was given.
int WatchAndApply(const std::filesystem::path& path, Duration rescan,
                  const std::function<int(bool first, int interrupt)>& pass);

// Whether an inotify event's name is a change of what apply reads: a
// manifest file of the directory, or the one file given.
bool IsRelevantChange(const std::filesystem::path& watched_file, std::string_view name);

}  // namespace podvisor::cli::apply
