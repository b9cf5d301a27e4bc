// records.cpp: the record builders of records.h, and the one reader the
// harness itself needs (roll-call answers).
#include "records.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace records {

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string plan(int ranks, const std::vector<std::string>& cases) {
  std::string list;
  for (const auto& name : cases) list += (list.empty() ? "" : ",") + json_string(name);
  return "{\"event\":\"plan\",\"ranks\":" + std::to_string(ranks) + ",\"cases\":[" + list + "]}";
}

std::string result(const std::string& name, bool passed, double seconds,
                   const std::vector<std::pair<int, std::string>>& failures) {
  std::string list;
  for (const auto& [rank, message] : failures)
    list += std::string(list.empty() ? "" : ",") + "{\"rank\":" + std::to_string(rank) +
            ",\"message\":" + json_string(message) + "}";
  char timing[32];
  std::snprintf(timing, sizeof timing, "%.3f", seconds);
  return "{\"event\":\"result\",\"case\":" + json_string(name) + ",\"status\":\"" + (passed ? "pass" : "fail") +
         "\",\"seconds\":" + timing + ",\"failures\":[" + list + "]}";
}

std::string rank_failure(const std::string& name, int rank, const std::string& message) {
  return "{\"event\":\"rank_failure\",\"case\":" + json_string(name) + ",\"rank\":" + std::to_string(rank) +
         ",\"message\":" + json_string(message) + "}";
}

std::string rollcall_prefix(const std::string& name) {
  return "{\"event\":\"rollcall\",\"case\":" + json_string(name) + ",\"rank\":";
}

std::string rollcall(const std::string& name, int rank, const std::string& state, double seconds) {
  char timing[32];
  std::snprintf(timing, sizeof timing, "%.1f", seconds);
  return rollcall_prefix(name) + std::to_string(rank) + ",\"state\":" + json_string(state) + ",\"seconds\":" + timing +
         "}";
}

std::string abort_prefix(const std::string& name, int rank) {
  return "{\"event\":\"abort\",\"case\":" + json_string(name) + ",\"rank\":" + std::to_string(rank) + ",\"why\":\"";
}

int rollcall_rank(const std::string& line, const std::string& name) {
  const nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
  if (!record.is_object() || record.value("event", "") != "rollcall" || record.value("case", "") != name) return -1;
  const auto rank = record.find("rank");
  return rank != record.end() && rank->is_number_integer() ? rank->get<int>() : -1;
}

}  // namespace records
