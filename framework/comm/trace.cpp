// trace.cpp: see trace.h.
#include "trace.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "comm_runtime.h"

namespace dtrain {

namespace {

// This rank's host clock against rank 0's, from start_trace; zero on rank 0's host.
CommAccess::ClockOffset g_clock;

bool point_to_point(const LedgerEntry& e) { return e.dest >= 0 || e.source >= 0; }

// The id that ties a message's send to its recv, computed alike on both
// ranks: MPI delivers the messages of one (source, dest, tag, communicator)
// in order, so the k-th send of such a key matches the k-th recv (FNV-1a,
// kept within the 53 bits a JSON number holds exactly).
class FlowIds {
 public:
  std::uint64_t next(int source, int dest, int tag, const std::string& comm) {
    const std::string key = std::to_string(source) + ">" + std::to_string(dest) + ":" + std::to_string(tag) + ":" + comm;
    const long k = seen_[key]++;
    std::uint64_t h = 1469598103934665603ull;
    for (const char c : key + "#" + std::to_string(k)) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h & ((1ull << 53) - 1);
  }

 private:
  std::map<std::string, long> seen_;
};

// A flow event: "s" where a message leaves (its send's start), "f" where it
// arrives (its recv's end); a trace viewer draws an arrow between them.
nlohmann::json flow(const char* phase, std::uint64_t id, int rank, double ts_us) {
  nlohmann::json f = {{"name", "message"}, {"cat", "p2p"}, {"ph", phase}, {"id", id},
                      {"pid", rank},       {"tid", 0},     {"ts", ts_us}};
  if (phase[0] == 'f') f["bp"] = "e";  // bound to the span that encloses it: the recv
  return f;
}

// Times in microseconds on rank 0's host clock.
nlohmann::json events_of(const std::vector<LedgerEntry>& entries, int rank) {
  nlohmann::json events = nlohmann::json::array();
  FlowIds sent, received;
  for (const LedgerEntry& e : entries) {
    nlohmann::json args = {{"function", e.function}};
    std::string name = e.op != 0 ? facts::kOpNames[e.op] : e.phase;
    const double start_us = (e.start - g_clock.seconds) * 1e6, end_us = (e.end - g_clock.seconds) * 1e6;
    // A request runs beside the rank's other spans (it overlaps them): its own track, tid 1.
    const bool request = e.request != 0 && e.collective, waiting = e.op == facts::kWait;
    const bool p2p = point_to_point(e), call = p2p || e.collective || waiting;
    if (call) {
      args["op"] = facts::kOpNames[e.op];
      args["bytes"] = e.bytes;
      args["elements"] = e.count;
      args["communicator"] = e.comm;
    }
    if (p2p) {
      if (e.dest >= 0) {
        args["dest"] = e.dest;
        args["send_tag"] = e.send_tag;
        name += " to " + std::to_string(e.dest);
        if (!e.pending) events.push_back(flow("s", sent.next(rank, e.dest, e.send_tag, e.comm), rank, start_us));
      }
      if (e.source >= 0) {
        args["source"] = e.source;
        args["recv_tag"] = e.recv_tag;
        name += " from " + std::to_string(e.source);
        // Just inside the recv's end, so that the arrow binds to the recv and not to what follows it.
        const double arrival_us = std::max(start_us, end_us - 0.5);
        if (!e.pending) events.push_back(flow("f", received.next(e.source, rank, e.recv_tag, e.comm), rank, arrival_us));
      }
    } else if (e.collective) {
      args["seq"] = e.seq;
      args["ranks"] = e.ranks;
      if (!e.reduction.empty()) args["reduction"] = e.reduction;
      name += " on " + e.comm;
      if (!e.refused.empty()) {
        args["mismatch"] = e.refused;
        name = "MISMATCH: " + name + " (ranks disagree)";
      }
    }
    if (request) {
      args["request"] = e.request;
      args["completed_by"] = e.completed_by;
      name = "request: " + name + " (from its start to the kit's seeing it complete, by " + e.completed_by + ")";
    }
    if (waiting) {
      args["op"] = "wait";
      args["request"] = e.request;
      args["seq"] = e.seq;
      name = "wait for " + e.comm + "'s #" + std::to_string(e.seq);
    }
    if (call && e.pending) {
      args["pending"] = true;
      name += " (still waiting when stopped)";
    }
    events.push_back({{"name", name},
                      {"cat", p2p ? "p2p" : request ? "request" : waiting ? "wait" : e.collective ? "collective" : "phase"},
                      {"ph", "X"},
                      {"pid", rank},
                      {"tid", request ? 1 : 0},
                      {"ts", start_us},
                      {"dur", std::max(0.0, end_us - start_us)},
                      {"args", args}});
  }
  return events;
}

nlohmann::json clock_of(int rank) {
  return {{"rank", rank},
          {"host", g_clock.host},
          {"offset_us", g_clock.seconds * 1e6},
          {"uncertainty_us", g_clock.uncertainty * 1e6}};
}

const char* const kClockSource =
    "steady_clock (CLOCK_MONOTONIC) of each host, shifted by the host's offset from rank 0's host";

}  // namespace

void start_trace(Communicator& comm) {
  g_clock = CommAccess::clock_offset(comm);
  ledger::set_tracing(true);
}

std::string trace_text(Communicator& comm, std::uint64_t bytes_counted) {
  const nlohmann::json mine = {{"rank", comm.rank()},
                               {"bytes", bytes_counted},
                               {"clock", clock_of(comm.rank())},
                               {"events", events_of(ledger::take_entries(), comm.rank())}};
  const std::vector<std::string> all = CommAccess::gather_text(comm, mine.dump(), 0);
  if (comm.rank() != 0) return "";
  nlohmann::json events = nlohmann::json::array();
  nlohmann::json bytes = nlohmann::json::array();
  nlohmann::json clocks = nlohmann::json::array();
  double origin = std::numeric_limits<double>::infinity(), uncertainty = 0;
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
    clocks.push_back(r["clock"]);
    uncertainty = std::max(uncertainty, r["clock"]["uncertainty_us"].get<double>());
  }
  const nlohmann::json trace = {{"traceEvents", events},
                                {"displayTimeUnit", "ms"},
                                {"otherData",
                                 {{"ranks", ranks.size()},
                                  {"bytes_transferred", bytes},
                                  {"clock", kClockSource},
                                  {"clock_uncertainty_us", uncertainty},
                                  {"clocks", clocks}}}};
  return trace.dump() + "\n";
}

bool write_trace(Communicator& comm, const std::string& path, std::uint64_t bytes_counted) {
  const std::string text = trace_text(comm, bytes_counted);
  if (comm.rank() != 0) return true;
  std::ofstream out(path);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

bool write_trace_part(const std::string& path, int rank) {
  std::vector<LedgerEntry> entries = ledger::take_entries();
  LedgerEntry now;
  if (ledger::in_flight(now)) entries.push_back(std::move(now));
  // Times stay on the shared clock, not from this rank's first entry: the
  // merge takes the earliest entry of any rank as 0.
  const nlohmann::json part = {{"rank", rank},
                               {"clock", clock_of(rank)},
                               {"clock_source", kClockSource},
                               {"events", events_of(entries, rank)}};
  std::ofstream out(path);
  out << part.dump() << "\n";
  out.close();
  return static_cast<bool>(out);
}

}  // namespace dtrain
