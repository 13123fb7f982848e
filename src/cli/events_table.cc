#include "cli/events_table.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "pod/status.h"

namespace podvisor::cli {
namespace {

std::string ObjectColumn(const std::string& object, const std::string& pod) {
  return object == "pod" ? "pod/" + pod : object;
}

std::string Ago(const std::optional<WallTime>& t, WallTime now) {
  return t ? pod::HumanDuration(now - *t) : "<unknown>";
}

}  // namespace

std::optional<WallTime> ParseRfc3339(const std::string& text) {
  UtcFields f;
  char frac[16] = {};
  if (std::sscanf(text.c_str(), "%4d-%2u-%2uT%2u:%2u:%2u.%15[0-9]Z", &f.year, &f.month, &f.day,
                  &f.hour, &f.minute, &f.second, frac) < 6) {
    return std::nullopt;
  }
  long long fraction = 0;
  const std::string digits(frac);
  if (!digits.empty()) fraction = std::atoll(digits.substr(0, 9).c_str());
  for (size_t i = std::min<size_t>(digits.size(), 9); i < 9; ++i) fraction *= 10;
  auto whole = FromUtcFields(f);
  if (!whole) return std::nullopt;
  return *whole +
         std::chrono::duration_cast<WallTime::duration>(std::chrono::nanoseconds(fraction));
}

std::optional<EventRecord> ParseEventLine(std::string_view line) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  auto text = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  EventRecord e;
  e.time = ParseRfc3339(text("time"));
  e.type = text("type");
  e.reason = text("reason");
  e.object = text("object");
  e.message = text("message");
  return e;
}

std::vector<std::string> EventHeader(bool wide) {
  std::vector<std::string> h{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"};
  if (wide) {
    h.emplace_back("FIRST SEEN");
    h.emplace_back("COUNT");
  }
  return h;
}

std::vector<std::string> EventRow(const EventRecord& e, const std::string& pod, WallTime now,
                                  bool wide) {
  std::vector<std::string> row{Ago(e.time, now), e.type, e.reason, ObjectColumn(e.object, pod),
                               e.message};
  if (wide) {
    row.push_back(Ago(e.time, now));
    row.emplace_back("1");
  }
  return row;
}

std::vector<std::vector<std::string>> EventTable(const std::vector<EventRecord>& events,
                                                 const std::string& pod, WallTime now, bool wide) {
  struct Group {
    const EventRecord* first;
    std::optional<WallTime> first_seen, last_seen;
    int count = 0;
  };
  std::vector<Group> groups;
  std::map<std::tuple<std::string, std::string, std::string, std::string>, size_t> index;
  for (const EventRecord& e : events) {
    auto key = std::make_tuple(e.type, e.reason, e.object, e.message);
    auto [it, fresh] = index.emplace(key, groups.size());
    if (fresh) groups.push_back({&e, e.time, e.time, 0});
    Group& g = groups[it->second];
    ++g.count;
    if (e.time && (!g.first_seen || *e.time < *g.first_seen)) g.first_seen = e.time;
    if (e.time && (!g.last_seen || *e.time > *g.last_seen)) g.last_seen = e.time;
  }
  std::vector<std::vector<std::string>> rows{EventHeader(wide)};
  for (const Group& g : groups) {
    // kubectl's printEvent: "<last> (x<count> over <first>)" for repeats.
    std::string last = Ago(g.last_seen, now);
    if (g.count > 1) {
      last += " (x" + std::to_string(g.count) + " over " + Ago(g.first_seen, now) + ")";
    }
    std::vector<std::string> row{last, g.first->type, g.first->reason,
                                 ObjectColumn(g.first->object, pod), g.first->message};
    if (wide) {
      row.push_back(Ago(g.first_seen, now));
      row.push_back(std::to_string(g.count));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace podvisor::cli
