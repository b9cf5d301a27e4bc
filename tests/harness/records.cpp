// records.cpp: the record builders of records.h, and the one reader the
// harness itself needs (roll-call answers).
#include "records.h"

#include <cmath>
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

std::string plan(int ranks, const std::vector<std::string>& cases, const std::string& syscall_filter) {
  std::string list;
  for (const auto& name : cases) list += (list.empty() ? "" : ",") + json_string(name);
  return "{\"event\":\"plan\",\"ranks\":" + std::to_string(ranks) + ",\"cases\":[" + list +
         "],\"syscall_filter\":" + json_string(syscall_filter) + "}";
}

std::string traffic(const std::string& name, int rank, const std::vector<TrafficCall>& calls, long overflow,
                    bool after) {
  std::string list;
  for (const auto& c : calls)
    list += std::string(list.empty() ? "" : ",") + "[" + json_string(c.op) + "," + std::to_string(c.count) + "," +
            std::to_string(c.ranks) + "," + std::to_string(c.times) + "]";
  return "{\"event\":\"traffic\",\"case\":" + json_string(name) + ",\"rank\":" + std::to_string(rank) +
         ",\"calls\":[" + list + "],\"overflow\":" + std::to_string(overflow) +
         (after ? ",\"section\":\"after\"}" : "}");
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

std::string value(const std::string& name, int rank, const std::string& label, long rows, long cols, long stride,
                  const std::vector<double>& values) {
  std::string list;
  char number[32];
  for (double v : values) {
    // JSON has no NaN or infinity: null, which matches no recorded value.
    if (std::isfinite(v)) std::snprintf(number, sizeof number, "%.17g", v);
    else std::snprintf(number, sizeof number, "null");
    list += (list.empty() ? "" : ",") + std::string(number);
  }
  return "{\"event\":\"value\",\"case\":" + json_string(name) + ",\"rank\":" + std::to_string(rank) +
         ",\"label\":" + json_string(label) + ",\"rows\":" + std::to_string(rows) + ",\"cols\":" +
         std::to_string(cols) + ",\"stride\":" + std::to_string(stride) + ",\"values\":[" + list + "]}";
}

std::string rollcall_wait(const std::string& op, int to, int send_tag, int from, int recv_tag) {
  return "{\"op\":" + json_string(op) + ",\"to\":" + std::to_string(to) + ",\"send_tag\":" + std::to_string(send_tag) +
         ",\"from\":" + std::to_string(from) + ",\"recv_tag\":" + std::to_string(recv_tag) + "}";
}

std::string rollcall(const std::string& name, int rank, const std::string& state, double seconds,
                     const std::string& wait_json, const std::string& phase) {
  char timing[32];
  std::snprintf(timing, sizeof timing, "%.1f", seconds);
  return "{\"event\":\"rollcall\",\"case\":" + json_string(name) + ",\"rank\":" + std::to_string(rank) + ",\"state\":" + json_string(state) + ",\"seconds\":" + timing +
         ",\"phase\":" + json_string(phase) + (wait_json.empty() ? "" : ",\"wait\":" + wait_json) + "}";
}

std::string abort_prefix(const std::string& name, int rank) {
  return "{\"event\":\"abort\",\"case\":" + json_string(name) + ",\"rank\":" + std::to_string(rank) + ",\"why\":\"";
}

}  // namespace records
