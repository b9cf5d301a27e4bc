// run_report.h: the one-line JSON summary a training program writes with
// --report PATH, read by the configuration explorer (kit/explore.py) and the
// bench (staff/bench.py).
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm_runtime.h"
#include "layer_profiler.h"

namespace dtrain {

struct RunReport {
  std::string strategy;  // "naive", "megatron", "dp", "zero3"
  int mp_size = 1, dp_size = 1;
  long iterations = 0;
  double mp_bytes_per_iteration = 0, dp_bytes_per_iteration = 0;  // rank 0's
  std::vector<double> epoch_seconds;
  double test_accuracy = 0;
  double final_loss = 0;  // rank 0's loss in the last iteration: runs that compute alike agree on it
  long train_rows = 0, test_rows = 0;
  double model_heap_bytes = 0;  // the largest rank's heap rise for the model and its training
  double collective_seconds = 0;  // rank 0's time inside the collectives during the epochs, waiting included
  // Rank 0's bytes by kind (make explore's memory chart): what persists
  // between iterations, and the peak of what an iteration adds on top.
  double parameter_bytes = 0, gradient_bytes = 0, optimizer_bytes = 0, transient_bytes = 0;
  std::string data_dir;           // where the data set was read from
  // The collective ledger's cost (comm.h): calls it recorded, and what one
  // record costs, measured at the end of the run.
  std::uint64_t ledger_calls = 0;
  double ledger_seconds_per_call = 0;
  nlohmann::json extra = nlohmann::json::object();  // a trainer's own keys (pipeline_train's "pipeline")
};

// Sets the persistent kinds, and the transient as what the heap's peak held
// beyond them.
inline void set_memory(RunReport& r, double parameters, double gradients, double optimizer) {
  r.parameter_bytes = parameters;
  r.gradient_bytes = gradients;
  r.optimizer_bytes = optimizer;
  r.transient_bytes = std::max(0.0, r.model_heap_bytes - parameters - gradients - optimizer);
}

// The heap a rank uses for the model and its training: the highest the heap
// rose above its level once the data was loaded. Start it before building
// the model.
class ModelHeap {
 public:
  ModelHeap() : base_(tracked_heap_bytes()) { heap_reset_high_water(); }
  double max_over_ranks(Communicator& world) const {
    return static_cast<double>(CommAccess::max_over_ranks(world, static_cast<long>(heap_high_water() - base_)));
  }

 private:
  std::int64_t base_;
};

// The fields every trainer fills the same way.
inline RunReport common_report(const std::vector<double>& test_accuracy, const std::vector<double>& epoch_seconds,
                               long iterations, long train_rows, long test_rows, double model_heap_bytes,
                               const std::string& data_dir, double collective_seconds) {
  RunReport r;
  r.data_dir = data_dir;
  r.iterations = iterations;
  r.epoch_seconds = epoch_seconds;
  r.test_accuracy = test_accuracy.empty() ? 0.0 : test_accuracy.back();
  r.train_rows = train_rows;
  r.test_rows = test_rows;
  r.model_heap_bytes = model_heap_bytes;
  r.collective_seconds = collective_seconds;
  r.ledger_calls = ledger::calls_recorded();
  r.ledger_seconds_per_call = ledger::seconds_per_record();
  return r;
}

// Every rank's peak resident set, in bytes, on rank 0 (empty elsewhere).
// Collective.
inline std::vector<double> peak_rss_of_ranks(Communicator& world) {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  std::vector<double> bytes;
  for (const std::string& text : CommAccess::gather_text(world, std::to_string(usage.ru_maxrss), 0))
    bytes.push_back(std::stod(text) * 1024.0);  // ru_maxrss is in KiB
  return bytes;
}

// The report as JSON (nlohmann::json escapes every string, a data path with
// quotes or backslashes included).
inline nlohmann::json report_json(const RunReport& r, const std::vector<double>& rss) {
  const double peak_rss_bytes = *std::max_element(rss.begin(), rss.end());
  nlohmann::json j = {{"strategy", r.strategy},
          {"mp_size", r.mp_size},
          {"dp_size", r.dp_size},
          {"ranks", r.mp_size * r.dp_size},
          {"iterations", r.iterations},
          {"mp_bytes_per_iteration", r.mp_bytes_per_iteration},
          {"dp_bytes_per_iteration", r.dp_bytes_per_iteration},
          {"epoch_seconds", r.epoch_seconds},
          {"test_accuracy", r.test_accuracy},
          {"final_loss", r.final_loss},
          {"peak_rss_bytes", peak_rss_bytes},
          {"peak_rss_bytes_per_rank", rss},
          {"peak_rss_bytes_total", std::accumulate(rss.begin(), rss.end(), 0.0)},
          {"model_heap_bytes", r.model_heap_bytes},
          {"train_rows", r.train_rows},
          {"test_rows", r.test_rows},
          {"collective_seconds", r.collective_seconds},
          {"data_dir", r.data_dir},
          {"memory", {{"parameters", r.parameter_bytes},
                      {"gradients", r.gradient_bytes},
                      {"optimizer", r.optimizer_bytes},
                      {"transient", r.transient_bytes}}},
          {"ledger_calls", r.ledger_calls},
          {"ledger_seconds_per_call", r.ledger_seconds_per_call}};
  j.update(r.extra);
  return j;
}

// Writes the report on rank 0; returns false (with a message) if it cannot.
inline bool write_report(const std::string& path, const RunReport& r, const std::vector<double>& rss) {
  std::ofstream out(path);
  out << report_json(r, rss).dump() << "\n";
  out.close();
  if (!out) std::fprintf(stderr, "cannot write --report %s\n", path.c_str());
  return static_cast<bool>(out);
}

// Rank 0's per-layer table of LayerProfiler's peaks.
inline void print_layer_peaks(const LayerProfiler& profiler) {
  std::printf("peak heap of rank 0 above each call's start:\n");
  std::printf("  %-6s %14s %14s\n", "layer", "forward KiB", "backward KiB");
  for (const auto& [name, peaks] : profiler.peaks())
    std::printf("  %-6s %14.1f %14.1f\n", name.c_str(), static_cast<double>(peaks.forward) / 1024.0,
                static_cast<double>(peaks.backward) / 1024.0);
}

// The closing lines every trainer prints (on rank 0), and the --report file
// when a path is given. Collective: every rank calls it. Returns the exit status.
inline int finish_run(Communicator& world, const std::string& report_path, const RunReport& report) {
  const std::vector<double> rss = peak_rss_of_ranks(world);
  if (world.rank() != 0) return 0;
  std::printf("peak heap of the largest rank for the model and its training: %.1f MiB\n",
              report.model_heap_bytes / 1048576.0);
  std::string each;
  for (double b : rss) each += (each.empty() ? "" : " ") + std::to_string(static_cast<long>(b / 1048576.0 + 0.5));
  std::printf("peak resident memory per rank (data set included): %s MiB; all %zu ranks: %.1f MiB\n", each.c_str(),
              rss.size(), std::accumulate(rss.begin(), rss.end(), 0.0) / 1048576.0);
  double training = 0;
  for (double s : report.epoch_seconds) training += s;
  std::printf("time of rank 0 inside %s (waiting included): %.2f s of %.2f s of training\n",
              report.strategy == "pipeline" ? "point-to-point calls" : "collectives", report.collective_seconds,
              training);
  std::printf("Test Acc: %.4f\n", report.test_accuracy);
  std::fflush(stdout);
  return report_path.empty() || write_report(report_path, report, rss) ? 0 : 1;
}

}  // namespace dtrain
