// request_progress (Part 13, an extension part): does an iallreduce move on
// while its rank computes, or only while the rank is inside a call of the
// MPI? Each rank starts an iallreduce, then either waits at once, or
// computes for --compute_ms without calling the MPI, or computes as long
// while calling test() every --test_every_ms; then it waits, and the time
// that wait takes says how much of the allreduce was left. The kit's
// Communicator only; no student code.
//   make mpi-demo CASE=progress            (2 ranks; the trace: build/progress.json and .png)
//   tools/kitrun -n 2 build/student/request_progress --trace build/progress.json
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli.h"
#include "comm_runtime.h"
#include "program_main.h"
#include "trace.h"

using namespace dtrain;

namespace {

volatile double g_sink = 0;  // keeps the arithmetic below from being optimized away

// Arithmetic that calls nothing for `seconds` (what a layer's backward is
// to the MPI), calling test() every `test_every` seconds if that is > 0.
void compute(double seconds, Request* request, double test_every) {
  const ledger::Phase phase("compute");
  const double start = CommAccess::wall_time();
  double x = 1.0, last_test = start;
  for (double now = start; now - start < seconds; now = CommAccess::wall_time()) {
    for (int i = 0; i < 2000; ++i) x = x * 1.0000001 + 1e-9;
    if (request && test_every > 0 && now - last_test >= test_every) {
      request->test();
      last_test = now;
    }
  }
  g_sink = x;
}

// Of a few runs, on a host that may be busy with other work: the middle one.
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Mode {
  bool computes;
  bool tests;
};

int run(Communicator& world, int argc, char** argv) {
  Flags flags("request_progress",
              "Measures whether an iallreduce moves on while its rank computes without calling the MPI.");
  int& repeats = flags.add_int("--repeats", 7, "runs of each size and mode (the median is shown)");
  double& compute_ms = flags.add_double("--compute_ms", 50, "how long a rank computes after starting the request");
  double& test_every_ms = flags.add_double("--test_every_ms", 1, "the test() mode: a test() this often");
  std::string& trace_path = flags.add_string("--trace", "", "write every rank's calls and spans here (Chrome trace)");
  if (const int status = flags.parse(argc, argv, world.rank()); status >= 0) return status;
  if (repeats < 1 || compute_ms <= 0 || test_every_ms <= 0) {
    if (world.rank() == 0) std::fprintf(stderr, "request_progress: need --repeats >= 1 and positive times\n");
    return 2;
  }
  if (!trace_path.empty()) start_trace(world);
  const bool lead = world.rank() == 0;
  const Mode modes[] = {{false, false}, {true, false}, {true, true}};  // the table's three columns
  if (lead)
    std::printf("request_progress: %d ranks; each starts an iallreduce, then waits for it at once, or after "
                "computing %.0f ms (with no call, or with a test() every %.1f ms); rank 0's wait() in ms, the median "
                "of %d runs\n  %-10s %10s %26s %30s\n",
                world.size(), compute_ms, test_every_ms, repeats, "elements", "at once", "after computing, no call",
                "after computing with test()");
  constexpr long kSizes[] = {1000L, 100000L, 1000000L};
  for (const long elements : kSizes) {
    const Vector src = Vector::Constant(elements, 1.0 + world.rank());
    Vector dst(elements);  // (elements)
    std::vector<double> waits;  // per mode: the median wait, seconds
    for (const Mode& mode : modes) {
      std::vector<double> waited;  // per run, seconds
      for (int i = 0; i < repeats; ++i) {
        // The trace keeps one run of each mode, of the largest size, past the first (which warms the buffers up).
        if (!trace_path.empty()) ledger::set_tracing(elements == kSizes[2] && i == std::min(1, repeats - 1));
        CommAccess::rendezvous(world);
        Request request = world.iallreduce(src, dst);
        if (mode.computes) compute(compute_ms / 1e3, &request, mode.tests ? test_every_ms / 1e3 : 0);
        const double before = CommAccess::wall_time();
        request.wait();
        waited.push_back(CommAccess::wall_time() - before);
      }
      waits.push_back(median(waited));
    }
    if (lead) std::printf("  %-10ld %10.3f %26.3f %30.3f\n", elements, waits[0] * 1e3, waits[1] * 1e3, waits[2] * 1e3);
  }
  if (lead)
    std::printf("a request that moves while its rank computes leaves nothing to wait for after it (as with test()); "
                "one that moves only inside calls of the MPI (test(), wait(), any other) leaves about what waiting "
                "at once takes\n");
  if (!trace_path.empty()) ledger::set_tracing(true);
  if (!trace_path.empty() && write_trace(world, trace_path, world.bytes_transferred()) && lead)
    std::printf("trace: %s (python3 -m kit trace %s draws it)\n", trace_path.c_str(), trace_path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return program_main("request_progress", argc, argv, run); }
