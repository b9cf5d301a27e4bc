// records.cpp: the pieces the generated record writers of records.h put
// together (records_format.h, from kit/records.py).
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

std::string json_fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string json_strings(const std::vector<std::string>& texts) {
  std::string list;
  for (const auto& t : texts) list += (list.empty() ? "" : ",") + json_string(t);
  return "[" + list + "]";
}

std::string json_values(const std::vector<double>& values) {
  std::string list;
  char number[32];
  for (double v : values) {
    // JSON has no NaN or infinity: null, which matches no recorded value.
    if (std::isfinite(v)) std::snprintf(number, sizeof number, "%.17g", v);
    else std::snprintf(number, sizeof number, "null");
    list += (list.empty() ? "" : ",") + std::string(number);
  }
  return "[" + list + "]";
}

std::string json_failures(const std::vector<std::pair<int, std::string>>& failures) {
  std::string list;
  for (const auto& [rank, message] : failures)
    list += std::string(list.empty() ? "" : ",") + "{\"rank\":" + std::to_string(rank) +
            ",\"message\":" + json_string(message) + "}";
  return "[" + list + "]";
}

std::string json_calls(const std::vector<TrafficCall>& calls) {
  std::string list;
  for (const auto& c : calls)
    list += std::string(list.empty() ? "" : ",") + "[" + json_string(c.op) + "," + std::to_string(c.count) + "," +
            std::to_string(c.ranks) + "," + std::to_string(c.times) + "]";
  return "[" + list + "]";
}

}  // namespace records
