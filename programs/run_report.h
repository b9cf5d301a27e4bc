// run_report.h: the one-line JSON summary a training program writes with
// --report PATH, read by the configuration explorer (kit/explore.py) and the
// bench (staff/bench.py).
#pragma once

#include <sys/resource.h>

#include <cstdio>
#include <fstream>
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
  long train_rows = 0, test_rows = 0;
  double model_heap_bytes = 0;  // the largest rank's heap rise for the model and its training
  double collective_seconds = 0;  // rank 0's time inside the collectives, waiting for others included
  std::string data_dir;           // where the data set was read from
  // The collective ledger's cost (comm.h): calls it recorded, and what one
  // record costs, measured at the end of the run.
  std::uint64_t ledger_calls = 0;
  double ledger_seconds_per_call = 0;
};

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
                               const std::string& data_dir) {
  RunReport r;
  r.data_dir = data_dir;
  r.iterations = iterations;
  r.epoch_seconds = epoch_seconds;
  r.test_accuracy = test_accuracy.empty() ? 0.0 : test_accuracy.back();
  r.train_rows = train_rows;
  r.test_rows = test_rows;
  r.model_heap_bytes = model_heap_bytes;
  r.collective_seconds = CommAccess::seconds_in_collectives();  // the run has no others before training
  r.ledger_calls = ledger::calls_recorded();
  r.ledger_seconds_per_call = ledger::seconds_per_record();
  return r;
}

// The largest resident set of any rank, in bytes. Collective.
inline double max_rss_over_ranks(Communicator& world) {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(CommAccess::max_over_ranks(world, usage.ru_maxrss)) * 1024.0;  // ru_maxrss is in KiB
}

// The report as JSON (nlohmann::json escapes every string, a data path with
// quotes or backslashes included).
inline nlohmann::json report_json(const RunReport& r, double peak_rss_bytes) {
  return {{"strategy", r.strategy},
          {"mp_size", r.mp_size},
          {"dp_size", r.dp_size},
          {"ranks", r.mp_size * r.dp_size},
          {"iterations", r.iterations},
          {"mp_bytes_per_iteration", r.mp_bytes_per_iteration},
          {"dp_bytes_per_iteration", r.dp_bytes_per_iteration},
          {"epoch_seconds", r.epoch_seconds},
          {"test_accuracy", r.test_accuracy},
          {"peak_rss_bytes", peak_rss_bytes},
          {"model_heap_bytes", r.model_heap_bytes},
          {"train_rows", r.train_rows},
          {"test_rows", r.test_rows},
          {"collective_seconds", r.collective_seconds},
          {"data_dir", r.data_dir},
          {"ledger_calls", r.ledger_calls},
          {"ledger_seconds_per_call", r.ledger_seconds_per_call}};
}

// Writes the report on rank 0; returns false (with a message) if it cannot.
inline bool write_report(const std::string& path, const RunReport& r, double peak_rss_bytes) {
  std::ofstream out(path);
  out << report_json(r, peak_rss_bytes).dump() << "\n";
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
  const double peak_rss = max_rss_over_ranks(world);
  if (world.rank() != 0) return 0;
  std::printf("peak heap of the largest rank for the model and its training: %.1f MiB\n",
              report.model_heap_bytes / 1048576.0);
  std::printf("peak resident memory of the largest rank (data set included): %.1f MiB\n", peak_rss / 1048576.0);
  double training = 0;
  for (double s : report.epoch_seconds) training += s;
  std::printf("time of rank 0 inside collectives (waiting included): %.2f s of %.2f s of training\n",
              report.collective_seconds, training);
  std::printf("Test Acc: %.4f\n", report.test_accuracy);
  std::fflush(stdout);
  return report_path.empty() || write_report(report_path, report, peak_rss) ? 0 : 1;
}

}  // namespace dtrain
