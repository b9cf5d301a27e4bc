// trace.cpp: see trace.h. Times are microseconds from the earliest entry of
// any rank; the ranks of one host share one clock.
#include "trace.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "comm_runtime.h"

namespace dtrain {

namespace {

nlohmann::json events_of(const std::vector<LedgerEntry>& entries, int rank) {
  nlohmann::json events = nlohmann::json::array();
  for (const LedgerEntry& e : entries) {
    nlohmann::json args = {{"function", e.function}};
    if (e.collective) {
      args["op"] = e.kind;
      args["bytes"] = e.bytes;
      args["elements"] = e.count;
      args["communicator"] = e.comm;
      args["seq"] = e.seq;
      if (!e.reduction.empty()) args["reduction"] = e.reduction;
    }
    events.push_back({{"name", e.collective ? e.kind + " on " + e.comm : e.kind},
                      {"cat", e.collective ? "collective" : "phase"},
                      {"ph", "X"},
                      {"pid", rank},
                      {"tid", 0},
                      {"ts", e.start * 1e6},
                      {"dur", std::max(0.0, (e.end - e.start) * 1e6)},
                      {"args", args}});
  }
  return events;
}

}  // namespace

bool write_trace(Communicator& comm, const std::string& path, std::uint64_t bytes_counted) {
  const nlohmann::json mine = {{"rank", comm.rank()},
                               {"bytes", bytes_counted},
                               {"events", events_of(ledger::take_entries(), comm.rank())}};
  const std::vector<std::string> all = CommAccess::gather_text(comm, mine.dump(), 0);
  if (comm.rank() != 0) return true;
  nlohmann::json events = nlohmann::json::array();
  nlohmann::json bytes = nlohmann::json::array();
  double origin = std::numeric_limits<double>::infinity();
  std::vector<nlohmann::json> ranks;
  for (const std::string& text : all) ranks.push_back(nlohmann::json::parse(text));
  for (const auto& r : ranks)
    for (const auto& e : r["events"]) origin = std::min(origin, e["ts"].get<double>());
  for (const auto& r : ranks) {
    const int rank = r["rank"].get<int>();
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"args", {{"name", "rank " + std::to_string(rank)}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", rank}, {"args", {{"sort_index", rank}}}});
    for (auto e : r["events"]) {
      e["ts"] = e["ts"].get<double>() - origin;
      events.push_back(std::move(e));
    }
    bytes.push_back(r["bytes"]);
  }
  const nlohmann::json trace = {{"traceEvents", events},
                                {"displayTimeUnit", "ms"},
                                {"otherData", {{"ranks", ranks.size()}, {"bytes_transferred", bytes}}}};
  std::ofstream out(path);
  out << trace.dump() << "\n";
  out.close();
  return static_cast<bool>(out);
}

}  // namespace dtrain
