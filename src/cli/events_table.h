// `podvisor events` as `kubectl get events` prints them: the rows of the
// table from the lines of events.jsonl (docs/INTERFACE.md "Events").
//
// Like the kubelet's event recorder, identical events (same type, reason,
// object and message) count as one that happened several times: one row,
// placed where it first happened, LAST SEEN as kubectl prints a repeated
// event ("5s (x3 over 2m)"). OBJECT is "pod/<name>" for the pod and
// "container/<name>" for a container — podvisor runs one pod, so the
// container is the object worth naming (kubectl would print the pod and
// hide the container in `-o wide`'s SUBOBJECT).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"

namespace podvisor::cli {

struct EventRecord {
  std::optional<WallTime> time;  // absent when unreadable
  std::string type;
  std::string reason;
  std::string object;
  std::string message;
};

// One line of events.jsonl; nullopt for a line that is not a JSON object.
std::optional<EventRecord> ParseEventLine(std::string_view line);

// "2026-11-22T10:04:05.123456789Z" (any number of fraction digits).
std::optional<WallTime> ParseRfc3339(const std::string& text);

// The table, header row first. `wide` adds FIRST SEEN and COUNT.
std::vector<std::vector<std::string>> EventTable(const std::vector<EventRecord>& events,
                                                 const std::string& pod, WallTime now, bool wide);

// One row for one event as it arrives (`events -f`), with no aggregation,
// as `kubectl get events -w` prints each update.
std::vector<std::string> EventRow(const EventRecord& event, const std::string& pod, WallTime now,
                                  bool wide);
std::vector<std::string> EventHeader(bool wide);

}  // namespace podvisor::cli
